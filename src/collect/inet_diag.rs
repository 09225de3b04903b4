//! The inet_diag collector (placeholder API: the netlink I/O lands with the wire parser).

use super::netns::NetnsSpec;
use crate::engine::{Dump, Update};
use crate::model::StateSet;
use crate::runtime::Source;

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// A capability is missing, e.g. CAP_SYS_ADMIN to enter another namespace.
    #[error("{0}")]
    Privilege(String),
    /// The namespace could not be opened or entered.
    #[error("network namespace {path}: {source}")]
    Netns { path: String, source: std::io::Error },
    /// The kernel has no inet_diag for TCP.
    #[error("inet_diag unavailable: {0} (is tcp_diag built in or loaded? try `modprobe tcp_diag`)")]
    Unsupported(String),
    #[error("netlink: {0}")]
    Io(#[from] std::io::Error),
    #[error("inet_diag is not built yet")]
    NotBuilt,
}

pub struct InetDiag {
    _states: StateSet,
}

impl InetDiag {
    /// Opens a NETLINK_SOCK_DIAG socket, inside `netns` if given.
    pub fn open(_netns: Option<&NetnsSpec>, states: StateSet) -> Result<InetDiag, CollectError> {
        let _ = states;
        Err(CollectError::NotBuilt)
    }

    /// One full dump of IPv4 and IPv6 TCP sockets.
    pub fn dump(&mut self) -> Result<Dump, CollectError> {
        Err(CollectError::NotBuilt)
    }
}

impl Source for InetDiag {
    fn poll(&mut self, out: &mut Vec<Update>) {
        let _ = out;
    }
}
