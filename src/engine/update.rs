//! What collectors hand the engine: plain values, never kernel bytes.

use crate::model::SocketRecord;
use std::sync::Arc;
use std::time::Duration;

pub enum Update {
    /// A complete dump of one namespace's sockets. A tracked socket missing from it has closed.
    Dump(Dump),
    /// A poll that failed; the engine keeps its last state and reports the error.
    DumpFailed { error: String, duration: Duration },
}

#[derive(Clone, Debug, Default)]
pub struct Dump {
    /// Each record is allocated once, by the parser, and shared from then on by the engine and
    /// every snapshot that shows it.
    pub sockets: Vec<Arc<SocketRecord>>,
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
