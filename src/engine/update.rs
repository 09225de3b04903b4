//! What collectors hand the engine besides sockets (those come through [`super::sink`]): plain
//! values, never kernel bytes.

pub enum Update {
    /// eBPF: a live socket's kernel state changed (BBR phase, inflation onset or end).
    Kernel(super::kernel::KernelUpdate),
    /// eBPF: a socket closed; its final record.
    Closed(Box<super::kernel::ClosedFlow>),
    /// eBPF collector health, sent at every poll.
    BpfStatus(super::status::BpfPoll),
    /// The kernel walk: the sockets that moved since the last walk.
    Walked(Box<Walk>),
    /// The kernel walk failed; the sockets stay as they were.
    WalkFailed { error: String, duration: std::time::Duration },
}

/// One socket walk's records: every socket that moved since the last walk, of every network
/// namespace.
pub struct Walk {
    pub sockets: Vec<bbrtop_core::model::SocketRecord>,
    /// Sockets the walk saw enter CLOSE: gone, whether or not their close record comes.
    pub gone: Vec<bbrtop_core::model::Cookie>,
    pub stats: bbrtop_core::wire::walk::WalkStats,
    pub duration: std::time::Duration,
    /// When it was read.
    pub now: super::Now,
}
