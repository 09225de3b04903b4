//! The snapshot: everything consumers read, published by the engine at each tick and never
//! changed after. Per-socket views, per-cc and closed-flow aggregates, counters that never fall,
//! alerts and collector health; and the tools that read them (history windows, the verdict in
//! words). Consumers import this module and the model; they never see the engine or the seam.

pub mod aggregate;
pub mod closed;
pub mod entry;
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
