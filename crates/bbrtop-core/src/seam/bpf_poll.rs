//! What one eBPF poll saw, as the collector reports it at every poll: its programs, its losses,
//! why it is off or limited, and each feature's state. The snapshot's
//! [`crate::snapshot::CollectorStatus`] keeps it.

use super::features::FeatureState;
use super::health::Reason;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// One poll of the eBPF collector, as it reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BpfPoll {
    /// When the poll was made.
    pub at: Option<SystemTime>,
    pub programs_attached: u32,
    /// tcp_probe is attached: the kernel judges every socket's prompt RTT samples, so a socket
    /// it says nothing of is calm (not left to the netlink path's judgement).
    pub judges_inflation: bool,
    pub ringbuf_lost_total: u64,
    pub undecodable_events_total: u64,
    pub recursion_misses_total: BTreeMap<&'static str, u64>,
    /// This poll failed (or, with nothing attached, why eBPF is off).
    pub failure: Option<Reason>,
    /// What the attached programs cannot do on this kernel; the collector still works.
    pub limit: Option<Reason>,
    /// Each feature of the eBPF collector, on or off and why (empty: eBPF off altogether, or a
    /// build that does not report them).
    pub features: Vec<FeatureState>,
}
