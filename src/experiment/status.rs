//! What a running experiment shows beside the engine's per-arm counters, written by its loop at
//! every interval and read by the exporter's scrapes (`bbrtop experiment --web.listen-address`):
//! each arm's share and counts, whether the harm guard stopped it and on which bound, and the
//! verdict per group.

use super::ArmCount;
use super::verdict::GroupVerdict;
use bbrtop_core::sequential::Why;

#[derive(Clone, Debug, Default)]
pub struct Status {
    pub arms: Vec<ArmCount>,
    /// Per arm, the bound the guard stopped it on; None while it is open.
    pub stopped: Vec<Option<String>>,
    pub verdicts: Vec<GroupVerdict>,
}

/// A guard's bound as a label value.
pub fn reason(why: &Why) -> &'static str {
    match why {
        Why::RetransRatio { .. } => "retrans_ratio",
        Why::P95Worse(_) => "p95",
        Why::ControlGoodputShare { .. } => "control_share",
    }
}
