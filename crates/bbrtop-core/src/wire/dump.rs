//! One dump of a namespace's sockets: the records the parser filled, and what reading them cost.

use crate::model::SocketRecord;
use std::time::Duration;

#[derive(Clone, Debug, Default)]
pub struct Dump {
    /// The records, in one allocation, when the reader kept them (a whole dump); a dump streamed
    /// into a sink handed each over as it came and keeps none.
    pub sockets: Vec<SocketRecord>,
    pub stats: DumpStats,
    /// The inode of the network namespace dumped, when known: the dump speaks for its sockets only.
    pub netns: Option<u64>,
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
