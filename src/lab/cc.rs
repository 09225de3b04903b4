//! Choosing a socket's congestion control (TCP_CONGESTION), as iperf3 -C does.

use std::os::fd::AsRawFd;

/// Sets TCP_CONGESTION on a TCP socket. Fails with the kernel's error if `name` is not available
/// (ENOENT) or not allowed for an unprivileged caller in this namespace (EPERM).
pub fn set_congestion(sock: &impl AsRawFd, name: &str) -> std::io::Result<()> {
    #[allow(unsafe_code)]
    // SAFETY: the pointer and length describe `name`'s bytes, alive for the call; the fd is
    // borrowed from a live socket.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        let e = std::io::Error::last_os_error();
        Err(std::io::Error::new(e.kind(), format!("TCP_CONGESTION {name:?}: {e}")))
    }
}
