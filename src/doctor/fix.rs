//! The lines that fix a sysctl: one applies it now, one keeps it across reboots. `--fix`'s output
//! gets run more than once (on a host, then again after a change), so the second replaces the
//! setting's line in bbrtop's own drop-in rather than appending another.

/// bbrtop's drop-in: read after the distribution's files, and no one else's to edit.
pub const SYSCTL_DROPIN: &str = "/etc/sysctl.d/90-bbrtop.conf";

/// Sets `key` now and in [`SYSCTL_DROPIN`].
pub fn sysctl(key: &str, value: &str) -> Vec<String> {
    vec![format!("sysctl -w {key}=\"{value}\""), persist(key, value, SYSCTL_DROPIN)]
}

/// The shell line that keeps `key = value` in `file`: every line of the file that sets `key`
/// goes, then the setting is appended, so running it again leaves one line. Keys and values are
/// doctor's own (sysctl names, numbers, a cc's name), never the user's, so plain quoting holds.
pub fn persist(key: &str, value: &str, file: &str) -> String {
    let pattern = key.replace('.', "\\.");
    format!(
        "touch {file} && sed -i '/^[[:space:]]*{pattern}[[:space:]]*=/d' {file} && echo '{key} = {value}' >> {file}"
    )
}
