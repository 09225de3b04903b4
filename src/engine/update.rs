//! What collectors hand the engine: plain values, never kernel bytes.

use crate::model::SocketRecord;
use std::time::Duration;

pub enum Update {
    /// A complete dump of one namespace's sockets. A tracked socket missing from it has closed.
    Dump(Dump),
    /// A poll that failed; the engine keeps its last state and reports the error.
    DumpFailed { error: String, duration: Duration },
    /// eBPF: a live socket's kernel state changed (BBR phase, inflation onset or end).
    Kernel(super::kernel::KernelUpdate),
    /// eBPF: a socket closed; its final record.
    Closed(Box<super::kernel::ClosedFlow>),
    /// eBPF collector health, sent at every poll: `reason` is a failed poll, `limit` what the
    /// programs cannot do on this kernel (the collector still works).
    BpfStatus {
        programs_attached: u32,
        ringbuf_lost_total: u64,
        reason: Option<String>,
        limit: Option<String>,
    },
}

#[derive(Clone, Debug, Default)]
pub struct Dump {
    /// The records, in one allocation: the engine keeps the vector whole and every snapshot built
    /// from it shares it, so a poll allocates once, not once per socket.
    pub sockets: Vec<SocketRecord>,
    pub stats: DumpStats,
}

/// What one netlink poll cost and noticed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpStats {
    pub duration: Duration,
    /// Netlink messages read (one per socket, plus control messages).
    pub messages: u64,
    /// Dumps restarted because the kernel flagged NLM_F_DUMP_INTR.
    pub intr_retries: u32,
    /// tcp_info payloads shorter than this build knows (older kernel).
    pub info_short: u64,
    /// tcp_info payloads longer than this build knows (newer kernel).
    pub info_long: u64,
    /// Sockets seen twice in one dump (same cookie) and dropped.
    pub duplicates: u64,
}
