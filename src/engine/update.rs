//! What collectors hand the engine besides sockets (those come through [`super::sink`]): plain
//! values, never kernel bytes.

pub enum Update {
    /// eBPF: a live socket's kernel state changed (BBR phase, inflation onset or end).
    Kernel(super::kernel::KernelUpdate),
    /// eBPF: a socket closed; its final record.
    Closed(Box<super::kernel::ClosedFlow>),
    /// eBPF collector health, sent at every poll.
    BpfStatus(super::status::BpfPoll),
}
