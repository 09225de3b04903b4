//! What a running experiment shows beside the engine's per-arm counters, written by its loop at
//! every interval and read by whoever shows it (its `/metrics`, its TUI view): each arm's share,
//! counts and figures, what the harm guard stopped and why, and the verdict per group. It is
//! published as snapshots are ([`Latest`]): readers take an `Arc` and draw or encode it with no
//! lock held, so a slow terminal or scraper never stalls the loop, and the harm guard with it.

use super::ArmCount;
use super::verdict::{ArmFigures, GroupVerdict};

/// The latest status: the loop publishes a new one at each look.
pub type Latest = crate::latest::Latest<Status>;

#[derive(Clone, Debug, Default)]
pub struct Status {
    pub arms: Vec<ArmCount>,
    pub figures: Vec<ArmFigures>,
    pub stopped: Vec<Stopped>,
    pub verdicts: Vec<GroupVerdict>,
    /// Seconds since the experiment began.
    pub seconds: f64,
}

impl Status {
    /// The guard's stop of `arm`, if it stopped it.
    pub fn stop_of(&self, arm: &str) -> Option<&Stopped> {
        self.stopped.iter().find(|s| s.arm == arm)
    }
}

/// The guard stopping an arm.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stopped {
    pub arm: String,
    /// Seconds into the experiment.
    pub at: f64,
    /// Seconds the bound had been crossed without a break.
    pub held: f64,
    /// The bound: `retrans_ratio`, `p95` or `control_share`.
    pub reason: String,
    /// The bound's figures, after the part of the arm that crossed it when that is a peer group
    /// or AS (`in asn=AS64500: ...`).
    pub why: String,
}
