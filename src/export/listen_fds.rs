//! Socket activation (`--web.systemd-socket`): the listening sockets systemd passes, checked as
//! sd_listen_fds(3) checks them and more. They are meant for this process only if `LISTEN_PID` is
//! its pid; they are `LISTEN_FDS` fds from fd 3 up, at most [`MAX`] of them; and each must be an
//! open TCP socket that listens (`SO_TYPE`, `SO_DOMAIN`, `SO_ACCEPTCONN`), or the exporter would
//! accept on a connected socket and fail forever. Errors are one line.

use socket2::{Domain, SockRef, Type};
use std::net::TcpListener;
use std::ops::Range;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The first fd systemd passes (`SD_LISTEN_FDS_START`).
pub const FIRST: RawFd = 3;
/// More sockets than any `.socket` unit of an exporter names; a bound, so a wild `LISTEN_FDS`
/// costs nothing.
pub const MAX: usize = 64;

/// The fds systemd passed this process, from `LISTEN_PID` and `LISTEN_FDS` (unset: None).
pub fn passed(listen_pid: Option<&str>, listen_fds: Option<&str>, me: u32) -> Result<Range<RawFd>, String> {
    let (Some(pid), Some(fds)) = (listen_pid, listen_fds) else {
        return Err(
            "systemd passed no socket (no LISTEN_PID and LISTEN_FDS; start it from bbrtop.socket)".into()
        );
    };
    match pid.trim().parse::<u32>() {
        Ok(p) if p == me => {}
        Ok(p) => {
            return Err(format!("systemd passed no socket to this process (LISTEN_PID={p}, this is {me})"));
        }
        Err(_) => return Err(format!("LISTEN_PID={pid:?} is not a process id")),
    }
    match fds.trim().parse::<usize>() {
        Ok(n @ 1..=MAX) => Ok(FIRST..FIRST + n as RawFd),
        _ => Err(format!("LISTEN_FDS={fds:?}: expected 1 to {MAX} sockets")),
    }
}

/// What is wrong with `fd` as a listener, if anything.
fn unfit(fd: RawFd) -> Option<String> {
    // SAFETY: F_GETFD reads no memory; it fails (EBADF) unless the fd is open.
    #[allow(unsafe_code)]
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Some(format!("fd {fd} is not open"));
    }
    // SAFETY: the fd is open (above), and stays so while it is borrowed here.
    #[allow(unsafe_code)]
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    let s = SockRef::from(&borrowed);
    let Ok(ty) = s.r#type() else { return Some(format!("fd {fd} is not a socket")) };
    let tcp = ty == Type::STREAM && s.domain().is_ok_and(|d| d == Domain::IPV4 || d == Domain::IPV6);
    if !tcp {
        return Some(format!("fd {fd} is not a TCP socket"));
    }
    match s.is_listener() {
        Ok(true) => None,
        Ok(false) => Some(format!("fd {fd} is a TCP socket that is not listening")),
        Err(e) => Some(format!("fd {fd}: {e}")),
    }
}

/// The listeners on `fds`, each checked before any is taken (an fd refused is left open), made
/// close-on-exec and non-blocking.
pub fn take(fds: Range<RawFd>) -> Result<Vec<TcpListener>, String> {
    if let Some(why) = fds.clone().find_map(unfit) {
        return Err(why);
    }
    fds.map(|fd| {
        // SAFETY: an open listening socket (checked above) that systemd handed this process.
        #[allow(unsafe_code)]
        let l = TcpListener::from(unsafe { OwnedFd::from_raw_fd(fd) });
        SockRef::from(&l).set_cloexec(true).and_then(|()| l.set_nonblocking(true)).map(|()| l)
    })
    .collect::<std::io::Result<_>>()
    .map_err(|e| format!("a passed socket: {e}"))
}

/// The listeners systemd passed this process.
pub fn from_env() -> Result<Vec<TcpListener>, String> {
    let var = |k| std::env::var(k).ok();
    take(passed(var("LISTEN_PID").as_deref(), var("LISTEN_FDS").as_deref(), std::process::id())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::IntoRawFd;

    #[test]
    fn listen_fds_are_for_this_process_and_bounded() {
        assert_eq!(passed(Some("42"), Some("1"), 42), Ok(3..4));
        assert_eq!(passed(Some("42"), Some("64"), 42), Ok(3..67));
        for (pid, fds, why) in [
            (None, Some("1"), "systemd passed no socket"),
            (Some("42"), None, "systemd passed no socket"),
            (Some("41"), Some("1"), "LISTEN_PID=41, this is 42"),
            (Some("x"), Some("1"), "not a process id"),
            (Some("42"), Some("0"), "expected 1 to 64"),
            (Some("42"), Some("65"), "expected 1 to 64"),
            (Some("42"), Some("2147483647"), "expected 1 to 64"),
            (Some("42"), Some("-1"), "expected 1 to 64"),
        ] {
            let e = passed(pid, fds, 42).unwrap_err();
            assert!(e.contains(why) && !e.contains('\n'), "{pid:?} {fds:?}: {e}");
        }
    }

    /// Real sockets and files, as a bad LISTEN_FDS might point at them.
    #[test]
    fn only_an_open_listening_tcp_socket_is_taken() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connected = std::net::TcpStream::connect(addr).unwrap();
        let unbound = socket2::Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let unix = std::os::unix::net::UnixListener::bind(dir.path().join("s")).unwrap();
        let file = std::fs::File::open("/proc/self/status").unwrap();
        use std::os::fd::AsRawFd;
        for (fd, why) in [
            (connected.as_raw_fd(), "not listening"),
            (unbound.as_raw_fd(), "not listening"),
            (udp.as_raw_fd(), "not a TCP socket"),
            (unix.as_raw_fd(), "not a TCP socket"),
            (file.as_raw_fd(), "not a socket"),
            (1 << 20, "not open"),
        ] {
            let e = take(fd..fd + 1).unwrap_err();
            assert!(e.contains(why) && e.contains(&format!("fd {fd} ")), "{e}");
        }
        // A refused fd is left open (the file is still readable).
        assert!(std::fs::read_to_string(format!("/proc/self/fd/{}", file.as_raw_fd())).is_ok());
        let fd = listener.into_raw_fd();
        let taken = take(fd..fd + 1).unwrap();
        assert_eq!(taken[0].local_addr().unwrap(), addr);
        assert!(SockRef::from(&taken[0]).nonblocking().unwrap());
    }
}
