//! The snapshot: everything consumers read, published by the engine at each tick and never
//! changed after. Per-socket views, per-cc and closed-flow aggregates, counters that never fall,
//! alerts and collector health; and the tools that read them (history windows, the verdict in
//! words). Consumers import this module and the model; they never see the engine or the seam.

pub mod aggregate;
pub mod closed;
pub mod entry;
pub mod group_key;
pub mod hist;
pub mod history;
pub mod kernel;
pub mod loghist;
pub mod rebuilt;
pub mod responses;
pub mod socket;
pub mod sockets;
pub mod status;
pub mod totals;
pub mod verdict;

pub use aggregate::{CcAggregate, Recent};
pub use closed::ClosedAggregate;
pub use entry::{Entry, Facts, ViewAt};
pub use group_key::GroupKey;
pub use history::{HistoryView, Sample};
pub use kernel::KernelSocket;
pub use socket::{Derived, RecordRef, Role, SocketView};
pub use sockets::{Change, Sockets};
pub use status::{Cause, CollectorStatus, Health, Reason};
pub use totals::CcTotals;

use crate::model::{ClosedFlow, Cookie};
use crate::rule::RuleConfig;
use crate::units::serde_time;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::SystemTime;

/// The closed records kept in each snapshot.
pub const DEFAULT_KEEP_CLOSED: usize = 16384;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    Firing,
    Resolved,
}

/// A queue-delay alert on one socket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlertView {
    pub cookie: Cookie,
    pub cc: String,
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub status: AlertStatus,
    /// srtt, baseline and their ratio at the latest evaluation.
    pub srtt_us: u32,
    pub baseline_rtt_us: u32,
    pub ratio: f64,
    pub peak_ratio: f64,
    /// When inflation began.
    #[serde(with = "serde_time")]
    pub since: SystemTime,
    /// When it had lasted the hold time.
    #[serde(with = "serde_time")]
    pub fired_at: SystemTime,
    #[serde(skip_serializing_if = "Option::is_none", default, with = "serde_time::option")]
    pub resolved_at: Option<SystemTime>,
}

/// Everything consumers see at one tick.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    pub seq: u64,
    #[serde(with = "serde_time")]
    pub taken_at: SystemTime,
    pub sockets: Sockets,
    pub by_cc: Vec<CcAggregate>,
    /// Firing alerts, then recently resolved ones, newest first.
    pub alerts: Vec<AlertView>,
    pub collectors: Vec<CollectorStatus>,
    /// Inflation onsets since start, per cc.
    pub inflation_onsets_total: Vec<(String, u64)>,
    pub rule: RuleConfig,
    /// Recently closed flows (eBPF), newest first.
    pub closed: Vec<ClosedFlow>,
    /// Closed flows since start, per cc.
    pub closed_by_cc: Vec<ClosedAggregate>,
    /// Counts since start per cc and peer group, closed sockets included; never falling.
    pub totals: Vec<CcTotals>,
}

/// The flows of `closed` (newest first, as a snapshot keeps them) that closed after sequence
/// number `last` (all of them when None), oldest first, and how many closed between that were no
/// longer kept (more closed between two reads than a snapshot keeps).
pub fn closed_since(closed: &[ClosedFlow], last: Option<u64>) -> (Vec<&ClosedFlow>, u64) {
    let mut new: Vec<&ClosedFlow> = closed.iter().take_while(|f| last.is_none_or(|l| f.seq > l)).collect();
    new.reverse();
    let missed = match (new.first(), last) {
        (Some(oldest), Some(l)) => oldest.seq.saturating_sub(l + 1),
        _ => 0,
    };
    (new, missed)
}

impl Snapshot {
    pub fn empty(rule: RuleConfig) -> Snapshot {
        Snapshot {
            seq: 0,
            taken_at: SystemTime::UNIX_EPOCH,
            sockets: Sockets::default(),
            by_cc: Vec::new(),
            alerts: Vec::new(),
            collectors: Vec::new(),
            inflation_onsets_total: Vec::new(),
            rule,
            closed: Vec::new(),
            closed_by_cc: Vec::new(),
            totals: Vec::new(),
        }
    }

    pub fn socket(&self, cookie: Cookie) -> Option<SocketView> {
        self.sockets.get(cookie)
    }

    pub fn firing(&self) -> impl Iterator<Item = &AlertView> {
        self.alerts.iter().filter(|a| a.status == AlertStatus::Firing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flows(seqs: &[u64]) -> Vec<ClosedFlow> {
        seqs.iter().map(|s| ClosedFlow { seq: *s, ..ClosedFlow::example("bbr", 1, None) }).collect()
    }

    #[test]
    fn closed_since_gives_the_new_flows_oldest_first_and_counts_a_gap() {
        let closed = flows(&[9, 8, 7, 5]);
        let seqs = |(v, m): (Vec<&ClosedFlow>, u64)| (v.iter().map(|f| f.seq).collect::<Vec<_>>(), m);
        assert_eq!(seqs(closed_since(&closed, None)), (vec![5, 7, 8, 9], 0), "the first read takes all");
        assert_eq!(seqs(closed_since(&closed, Some(7))), (vec![8, 9], 0));
        assert_eq!(seqs(closed_since(&closed, Some(9))), (vec![], 0));
        // 3 and 4 closed after the last read and left the window before this one.
        assert_eq!(seqs(closed_since(&closed, Some(2))), (vec![5, 7, 8, 9], 2));
    }
}
