//! Network namespaces: `--netns NAME|PATH`.

use std::path::PathBuf;

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
) -> Result<T, super::CollectError> {
    use super::CollectError;
    use std::os::fd::AsRawFd;
    let path = ns.0.display().to_string();
    let file =
        std::fs::File::open(&ns.0).map_err(|source| CollectError::Netns { path: path.clone(), source })?;
    let handle = std::thread::Builder::new()
        .name("bbrtop-netns".into())
        .spawn(move || -> Result<T, CollectError> {
            #[allow(unsafe_code)]
            // SAFETY: setns takes a valid open fd (kept alive by `file`) and a flag; it changes only
            // this thread's namespace, and the thread ends when `f` returns.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            if rc != 0 {
                let err = std::io::Error::last_os_error();
                return Err(if err.raw_os_error() == Some(libc::EPERM) {
                    CollectError::Privilege(format!("entering network namespace {path} needs CAP_SYS_ADMIN"))
                } else {
                    CollectError::Netns { path, source: err }
                });
            }
            Ok(f())
        })
        .map_err(CollectError::Io)?;
    handle.join().map_err(|_| CollectError::Io(std::io::Error::other("namespace thread panicked")))?
}
