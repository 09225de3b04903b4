//! Files a flag names (`--web.config.file`, `--peer-groups.file`, a password, CA, certificate or
//! key file, a recording's Parquet files), opened and read one way.
//!
//! A path can name a FIFO, which blocks `open` until a writer comes (forever, at start-up), or a
//! device such as `/dev/zero`, which never ends and would be read until memory runs out. So a
//! file is opened with `O_NONBLOCK` (which makes opening a FIFO return at once), must then be a
//! regular file, and is read with a bound chosen per kind of file: anything else is a one-line
//! error that names the flag and the path.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Kinds of file, each with its bound. docs/reference/exit-codes-and-files.md ("Files a flag
/// names") lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// YAML settings (`--web.config.file`, `--peer-groups.file`): hand-written, a few KiB.
    Config,
    /// PEM certificates and keys (`cert_file`, `key_file`, `--connect.ca.file`): a CA bundle
    /// such as Debian's is about 200 KiB.
    Pem,
    /// A password (`--connect.password.file`).
    Password,
    /// A pod list (`--kubernetes.pods PATH`): kubelet's `/pods` of a full node is a few MiB.
    Pods,
    /// A MaxMind-format database (`--peer-groups.asn.file`, `--peer-groups.country.file`):
    /// GeoLite2-City, the largest such, is some 60 MiB.
    Geo,
}

impl Kind {
    /// The most bytes read from a file of this kind.
    pub const fn max_bytes(self) -> u64 {
        match self {
            Kind::Config => 1 << 20,
            Kind::Pem => 4 << 20,
            Kind::Password => 4 << 10,
            Kind::Pods => 64 << 20,
            Kind::Geo => 256 << 20,
        }
    }
}

/// Opens `path` for reading without blocking and checks that it is a regular file. `flag` names
/// where the path came from, for the error.
pub fn open_regular(flag: &str, path: &Path) -> Result<File, String> {
    let err = |e: String| format!("{flag} {}: {e}", path.display());
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| err(e.to_string()))?;
    let ft = f.metadata().map_err(|e| err(e.to_string()))?.file_type();
    if !ft.is_file() {
        return Err(err(format!("not a regular file ({})", describe(ft))));
    }
    Ok(f)
}

/// The whole file, at most `kind`'s bound; a longer one is an error, not cut short.
pub fn read(flag: &str, path: &Path, kind: Kind) -> Result<Vec<u8>, String> {
    let f = open_regular(flag, path)?;
    let max = kind.max_bytes();
    let mut out = Vec::new();
    // One byte past the bound tells a file of exactly `max` bytes from a longer one.
    f.take(max + 1).read_to_end(&mut out).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if out.len() as u64 > max {
        return Err(format!("{flag} {}: larger than {} (the most read)", path.display(), human(max)));
    }
    Ok(out)
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(flag: &str, path: &Path, kind: Kind) -> Result<String, String> {
    String::from_utf8(read(flag, path, kind)?)
        .map_err(|_| format!("{flag} {}: not UTF-8 text", path.display()))
}

/// A file that is not a regular one, in words, for an error.
pub(crate) fn describe(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b >> 10),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_at_once_with_the_flag_named() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        for (path, what) in
            [(fifo.as_path(), "a FIFO"), (Path::new("/dev/zero"), "a device"), (dir.path(), "a directory")]
        {
            let e = read("--web.config.file", path, Kind::Config).unwrap_err();
            assert!(e.starts_with("--web.config.file ") && e.contains(what) && !e.contains('\n'), "{e}");
        }
        let e = read("--peer-groups.file", &dir.path().join("none"), Kind::Config).unwrap_err();
        assert!(e.starts_with("--peer-groups.file ") && e.contains("No such file"), "{e}");
    }

    #[test]
    fn a_file_is_read_whole_up_to_its_bound_and_refused_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pw");
        let max = Kind::Password.max_bytes() as usize;
        std::fs::write(&p, vec![b'a'; max]).unwrap();
        assert_eq!(read("--connect.password.file", &p, Kind::Password).unwrap().len(), max);
        std::fs::write(&p, vec![b'a'; max + 1]).unwrap();
        let e = read("--connect.password.file", &p, Kind::Password).unwrap_err();
        assert!(e.contains("larger than 4 KiB"), "{e}");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(read_to_string("--connect.password.file", &p, Kind::Password).unwrap_err().contains("UTF-8"));
    }
}
