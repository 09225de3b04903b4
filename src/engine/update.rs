//! What collectors hand the engine besides sockets (those come through [`super::sink`]): plain
//! values, never kernel bytes.

pub enum Update {
    /// eBPF: a live socket's kernel state changed (BBR phase, inflation onset or end).
    Kernel(super::kernel::KernelUpdate),
    /// eBPF: a socket closed; its final record.
    Closed(Box<super::kernel::ClosedFlow>),
    /// eBPF collector health, sent at every poll: `reason` is a failed poll (or, with nothing
    /// attached, why eBPF is off), `limit` what the programs cannot do on this kernel (the
    /// collector still works).
    BpfStatus {
        programs_attached: u32,
        ringbuf_lost_total: u64,
        reason: Option<super::status::Reason>,
        limit: Option<super::status::Reason>,
    },
}
