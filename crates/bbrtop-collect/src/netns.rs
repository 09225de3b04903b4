//! Network namespaces: `--netns NAME|PATH`, and running code inside one. A leaf: the netlink
//! collector, the lab, doctor and the TUI's header all enter namespaces through it.

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
    use std::os::fd::AsRawFd;
    let path = ns.0.display().to_string();
    let file =
        std::fs::File::open(&ns.0).map_err(|source| NetnsError::Open { path: path.clone(), source })?;
    let handle = std::thread::Builder::new()
        .name("bbrtop-netns".into())
        .spawn(move || -> Result<T, NetnsError> {
            #[allow(unsafe_code)]
            // SAFETY: setns takes a valid open fd (kept alive by `file`) and a flag; it changes only
            // this thread's namespace, and the thread ends when `f` returns.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            if rc != 0 {
                let err = std::io::Error::last_os_error();
                return Err(if err.raw_os_error() == Some(libc::EPERM) {
                    NetnsError::Privilege(path)
                } else {
                    NetnsError::Open { path, source: err }
                });
            }
            Ok(f())
        })
        .map_err(NetnsError::Thread)?;
    handle.join().map_err(|_| NetnsError::Thread(std::io::Error::other("namespace thread panicked")))?
}
