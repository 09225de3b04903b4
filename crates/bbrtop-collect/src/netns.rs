//! Network namespaces: `--netns NAME|PATH`, and running code inside one. A leaf: the netlink
//! collector, the lab, doctor and the TUI's header all enter namespaces through it.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;

/// Why a namespace could not be entered.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Entering another namespace needs CAP_SYS_ADMIN.
    #[error("entering network namespace {0} needs CAP_SYS_ADMIN")]
    Privilege(String),
    /// The namespace could not be opened or entered.
    #[error("network namespace {path}: {source}")]
    Open { path: String, source: std::io::Error },
    /// The thread that enters it could not start, or died.
    #[error("network namespace thread: {0}")]
    Thread(std::io::Error),
}

/// A network namespace named as `ip netns` names it, or by a path such as /proc/PID/ns/net.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetnsSpec(pub PathBuf);

impl NetnsSpec {
    /// A bare name is looked up under /run/netns (where `ip netns add` puts it); anything with a
    /// slash is a path.
    pub fn parse(s: &str) -> NetnsSpec {
        if s.contains('/') {
            NetnsSpec(PathBuf::from(s))
        } else {
            NetnsSpec(PathBuf::from("/run/netns").join(s))
        }
    }
}

/// Runs `f` on a thread of its own that has entered `ns`, and returns what it returns. Sockets
/// that `f` opens stay in that namespace after the thread ends; /proc/sys/net read by `f` is the
/// namespace's.
pub fn run_in<T: Send + 'static>(
    ns: &NetnsSpec,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NetnsError> {
    let path = ns.0.display().to_string();
    let file = open(ns).map_err(|source| NetnsError::Open { path: path.clone(), source })?;
    let handle = std::thread::Builder::new()
        .name("bbrtop-netns".into())
        .spawn(move || -> Result<T, NetnsError> {
            // setns changes only this thread's namespace, and the thread ends when `f` returns.
            let moved = rustix::thread::move_into_link_name_space(
                file.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            );
            if let Err(e) = moved {
                return Err(if e == rustix::io::Errno::PERM {
                    NetnsError::Privilege(path)
                } else {
                    NetnsError::Open { path, source: e.into() }
                });
            }
            Ok(f())
        })
        .map_err(NetnsError::Thread)?;
    handle.join().map_err(|_| NetnsError::Thread(std::io::Error::other("namespace thread panicked")))?
}

/// Opens `ns` without blocking (opening a FIFO for reading would wait for a writer forever) and
/// checks that it is a network namespace: a file of nsfs, the namespaces' filesystem, whose kind
/// the kernel says is CLONE_NEWNET. Anything else is refused before setns sees it.
fn open(ns: &NetnsSpec) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&ns.0)?;
    let not = |what: &str| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("not a network namespace ({what})"))
    };
    let fs_type = rustix::fs::fstatfs(&file)?.f_type;
    // f_type and the magic are of types that differ by architecture.
    #[allow(clippy::unnecessary_cast)]
    let nsfs = fs_type as i64 == libc::NSFS_MAGIC as i64;
    if !nsfs {
        return Err(not(kind_of(&file)?));
    }
    #[allow(unsafe_code)]
    // SAFETY: NS_GET_NSTYPE takes no argument and only answers for the fd, which is open.
    let kind = unsafe { libc::ioctl(file.as_raw_fd(), libc::NS_GET_NSTYPE) };
    if kind != libc::CLONE_NEWNET {
        return Err(not("a namespace of another kind"));
    }
    Ok(file)
}

/// What a file that is no namespace is, in words, for the error.
fn kind_of(file: &File) -> std::io::Result<&'static str> {
    let ft = file.metadata()?.file_type();
    Ok(if ft.is_file() { "a regular file" } else { crate::files::describe(ft) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// What `run_in` answers for `path`, on a thread of the test's own: a FIFO once blocked the
    /// open forever, so a wait past 10 s fails the test rather than hanging it.
    fn entered(path: &Path) -> Result<bool, String> {
        let ns = NetnsSpec(path.to_path_buf());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(run_in(&ns, || true).map_err(|e| e.to_string())));
        rx.recv_timeout(std::time::Duration::from_secs(10)).expect("run_in returned instead of blocking")
    }

    #[test]
    fn only_a_network_namespace_is_entered_and_a_fifo_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        let cases = [
            (fifo.as_path(), "(a FIFO)"),
            (plain.as_path(), "(a regular file)"),
            (dir.path(), "(a directory)"),
            (Path::new("/proc/self/ns/mnt"), "(a namespace of another kind)"),
        ];
        for (path, why) in cases {
            let e = entered(path).unwrap_err();
            assert!(e.ends_with(&format!("not a network namespace {why}")) && !e.contains('\n'), "{e}");
        }
        // A network namespace passes: entered, or refused by setns alone without CAP_SYS_ADMIN.
        match entered(Path::new("/proc/self/ns/net")) {
            Ok(ran) => assert!(ran),
            Err(e) => assert!(e.contains("needs CAP_SYS_ADMIN"), "{e}"),
        }
    }
}
