//! Choosing a socket's congestion control (TCP_CONGESTION), as iperf3 -C does.

use std::os::fd::AsFd;

/// Sets TCP_CONGESTION on a TCP socket. Fails with the kernel's error if `name` is not available
/// (ENOENT) or not allowed for an unprivileged caller in this namespace (EPERM).
pub fn set_congestion(sock: &impl AsFd, name: &str) -> std::io::Result<()> {
    socket2::SockRef::from(sock)
        .set_tcp_congestion(name.as_bytes())
        .map_err(|e| std::io::Error::new(e.kind(), format!("TCP_CONGESTION {name:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's answer, named: a cc this kernel has is set and reads back; one it has not is
    /// ENOENT, with the name in the message.
    #[test]
    fn sets_a_cc_the_kernel_has_and_names_one_it_has_not() {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        set_congestion(&s, "reno").unwrap();
        assert!(s.tcp_congestion().unwrap().starts_with(b"reno\0"));
        let e = set_congestion(&s, "no-such-cc").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
        assert!(e.to_string().contains("TCP_CONGESTION \"no-such-cc\""), "{e}");
    }
}
