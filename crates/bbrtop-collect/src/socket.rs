//! The kernel's end of a SOCK_DIAG conversation, behind a trait: requests out, datagrams in. The
//! real one is a NETLINK_SOCK_DIAG socket; tests put scripted bytes in its place, a test double
//! of the kernel that can interrupt a dump or fail it midway.

use crate::error::CollectError;
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_SOCK_DIAG};

/// The socket's receive buffer: room for the kernel to queue several datagrams of a dump ahead.
const SOCK_RCVBUF: usize = 1 << 20;

pub trait DiagSocket: Send + Sync {
    fn send(&self, request: &[u8]) -> std::io::Result<()>;
    /// Appends one datagram to `buf`, retried on EINTR.
    fn recv_append(&self, buf: &mut Vec<u8>) -> std::io::Result<()>;
}

impl DiagSocket for Socket {
    fn send(&self, request: &[u8]) -> std::io::Result<()> {
        Socket::send(self, request, 0).map(drop)
    }

    fn recv_append(&self, buf: &mut Vec<u8>) -> std::io::Result<()> {
        loop {
            match self.recv(buf, 0) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// A NETLINK_SOCK_DIAG socket in the calling thread's namespace.
pub fn open() -> Result<Socket, CollectError> {
    let mut sock = Socket::new(NETLINK_SOCK_DIAG).map_err(|e| match e.raw_os_error() {
        Some(libc::EPROTONOSUPPORT) => CollectError::Unsupported(e.to_string()),
        _ => CollectError::Io(e),
    })?;
    sock.bind_auto()?;
    sock.connect(&SocketAddr::new(0, 0))?;
    // A bigger socket buffer lets the kernel batch more sockets per recv; best effort.
    let _ = sock.set_rx_buf_sz(SOCK_RCVBUF);
    Ok(sock)
}

/// Scripted replies: each request is answered by the next list of datagrams.
#[cfg(test)]
pub mod scripted {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    #[derive(Default)]
    pub struct Scripted {
        replies: Mutex<VecDeque<Vec<Vec<u8>>>>,
        pending: Mutex<VecDeque<Vec<u8>>>,
        /// Requests received, in order.
        pub requests: Mutex<Vec<Vec<u8>>>,
    }

    impl Scripted {
        pub fn new(replies: Vec<Vec<Vec<u8>>>) -> Scripted {
            Scripted { replies: Mutex::new(replies.into()), ..Scripted::default() }
        }
    }

    impl super::DiagSocket for Scripted {
        fn send(&self, request: &[u8]) -> std::io::Result<()> {
            self.requests.lock().unwrap().push(request.to_vec());
            let reply = self.replies.lock().unwrap().pop_front().unwrap_or_default();
            self.pending.lock().unwrap().extend(reply);
            Ok(())
        }

        fn recv_append(&self, buf: &mut Vec<u8>) -> std::io::Result<()> {
            let d = self.pending.lock().unwrap().pop_front();
            let d = d.ok_or_else(|| std::io::Error::other("the script has no more datagrams"))?;
            buf.extend_from_slice(&d);
            Ok(())
        }
    }
}
