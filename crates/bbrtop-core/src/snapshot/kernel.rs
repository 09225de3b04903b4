//! What the eBPF programs said of one live socket: its true BBR state and the kernel's timing
//! of its inflation.

use crate::model::BbrState;
use serde::Serialize;
use std::time::Instant;

/// What the kernel's per-ACK timing says of one socket's inflation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelOnset {
    /// The kernel has not timed this socket: the netlink path evaluates the rule on its own.
    #[default]
    Untimed,
    /// Not inflated.
    Calm,
    /// Inflated since then (the kernel's onset is authoritative).
    Since(Instant),
}

impl KernelOnset {
    pub fn since(self) -> Option<Instant> {
        match self {
            KernelOnset::Since(t) => Some(t),
            _ => None,
        }
    }
}

/// The latest kernel state of one socket, shown in the snapshot's `derived.kernel`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct KernelSocket {
    pub netns: u32,
    pub bbr: Option<BbrState>,
    /// Mode-change events seen (PROBE_BW steps come with each dump, in the RTT window).
    pub phase_changes: u64,
    /// Times the present mode was entered.
    pub mode_entered: u32,
    #[serde(skip)]
    pub inflation: KernelOnset,
    pub peak_ratio: f64,
}
