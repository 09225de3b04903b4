//! Why a netlink collector could not open or dump: one line each, with what to do where there
//! is something to do.

use crate::netns::NetnsError;
use bbrtop_core::wire::WireError;

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// The namespace could not be entered (a missing CAP_SYS_ADMIN among the reasons).
    #[error(transparent)]
    Netns(#[from] NetnsError),
    /// The kernel has no inet_diag for TCP.
    #[error("inet_diag unavailable: {0} (is tcp_diag built in or loaded? try `modprobe tcp_diag`)")]
    Unsupported(String),
    #[error("netlink: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Wire(#[from] WireError),
    #[error("the dump was interrupted {0} times in a row (sockets changing too fast); giving up")]
    Interrupted(u32),
}
