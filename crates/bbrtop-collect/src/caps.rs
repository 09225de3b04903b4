//! Capabilities: checked, never the uid. Read from /proc/self/status and named when missing.

use std::fmt;

/// The capabilities bbrtop asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cap {
    NetAdmin = 12,
    SysAdmin = 21,
    Perfmon = 38,
    Bpf = 39,
}

impl Cap {
    pub fn name(self) -> &'static str {
        match self {
            Cap::NetAdmin => "CAP_NET_ADMIN",
            Cap::SysAdmin => "CAP_SYS_ADMIN",
            Cap::Perfmon => "CAP_PERFMON",
            Cap::Bpf => "CAP_BPF",
        }
    }
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An effective capability set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapSet(pub u64);

impl CapSet {
    /// The effective set of this process (empty if /proc cannot be read).
    pub fn effective() -> CapSet {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| CapSet::parse_status(&s))
            .unwrap_or(CapSet(0))
    }

    /// Parses the `CapEff:` line of a /proc/PID/status text.
    pub fn parse_status(status: &str) -> Option<CapSet> {
        let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim();
        u64::from_str_radix(hex, 16).ok().map(CapSet)
    }

    pub fn has(self, c: Cap) -> bool {
        self.0 & (1 << c as u64) != 0
    }

    /// The ones of `wanted` this set lacks.
    pub fn missing(self, wanted: &[Cap]) -> Vec<Cap> {
        wanted.iter().copied().filter(|&c| !self.has(c)).collect()
    }
}

/// "CAP_BPF and CAP_PERFMON", for messages.
pub fn names(caps: &[Cap]) -> String {
    let n: Vec<&str> = caps.iter().map(|c| c.name()).collect();
    match n.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Removes `caps` from this thread's effective and permitted sets, for good: once the eBPF
/// programs are attached, the links, ring buffer and maps are open file descriptors, and using
/// them needs no capability. Threads started later inherit
/// the reduced sets; call it before starting them.
#[allow(unsafe_code)]
pub fn drop(caps: &[Cap]) -> std::io::Result<()> {
    let mut hdr = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two CapData (version 3 layout) into `data` and reads `hdr`; both
    // live across the call and have the kernel's layout (repr(C), three u32s per word).
    if unsafe { libc::syscall(libc::SYS_capget, &mut hdr as *mut CapHeader, data.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    for &c in caps {
        let (word, bit) = ((c as usize) / 32, 1u32 << ((c as u32) % 32));
        data[word].effective &= !bit;
        data[word].permitted &= !bit;
    }
    // SAFETY: as above; capset only reads `hdr` and `data`.
    if unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cap_eff() {
        let s = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000000c000201000\n";
        let c = CapSet::parse_status(s).unwrap();
        assert!(c.has(Cap::NetAdmin) && c.has(Cap::SysAdmin) && c.has(Cap::Bpf) && c.has(Cap::Perfmon));
        assert_eq!(CapSet(1 << 39).missing(&[Cap::Bpf, Cap::Perfmon]), vec![Cap::Perfmon]);
        assert_eq!(CapSet::parse_status("CapEff:\tzz"), None);
        assert_eq!(names(&[Cap::Bpf, Cap::Perfmon]), "CAP_BPF and CAP_PERFMON");
    }
}
