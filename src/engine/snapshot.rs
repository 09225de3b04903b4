//! The immutable snapshot the engine publishes on each tick. Consumers only ever read these.

pub use super::aggregate::CcAggregate;
use super::history::HistoryView;
pub use super::status::CollectorStatus;
use bbrtop_core::model::derive::{LimitedBy, Rates};
use bbrtop_core::model::{Cookie, Phase, SocketRecord, Source};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::units::serde_time;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

/// Values derived for one socket at one tick.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Derived {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Whether `phase` was read from the kernel (eBPF) or inferred from the gains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_source: Option<Source>,
    /// The min RTT inflation is measured against (see `--alert.baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_rtt_us: Option<u32>,
    /// srtt - baseline: the delay the bottleneck queue adds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_delay_us: Option<u32>,
    /// srtt / baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflation_ratio: Option<f64>,
    /// Inflated by the alert rule now.
    pub inflated: bool,
    /// Seconds the present spell of inflation has lasted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflated_for_seconds: Option<f64>,
    pub alert_firing: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<LimitedBy>,
    /// ECN: negotiated, seen, CE marks (absent for a socket with neither ECN nor marks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bbrtop_core::model::Ecn>,
    /// Bytes retransmitted over bytes sent, over the socket's life.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrans_ratio: Option<f64>,
    #[serde(flatten)]
    pub rates: Rates,
    /// Seconds since bbrtop first saw the socket.
    pub seen_for_seconds: f64,
    /// The kernel's own state of this socket (eBPF), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<Arc<super::kernel::KernelSocket>>,
}

/// One socket's record, inside the dump it came from. A dump's records stay in the one vector
/// the parser filled, shared by the engine and every snapshot built from that dump.
#[derive(Clone)]
pub struct RecordRef {
    dump: Arc<Vec<SocketRecord>>,
    idx: u32,
}

impl RecordRef {
    /// The `idx`th record of `dump`. Panics if there is none: callers index what they hold.
    pub fn new(dump: Arc<Vec<SocketRecord>>, idx: u32) -> RecordRef {
        assert!((idx as usize) < dump.len(), "record {idx} of a dump of {}", dump.len());
        RecordRef { dump, idx }
    }

    /// A record on its own (tests, and sources with one socket at a time).
    pub fn single(r: SocketRecord) -> RecordRef {
        RecordRef { dump: Arc::new(vec![r]), idx: 0 }
    }
}

impl std::ops::Deref for RecordRef {
    type Target = SocketRecord;
    fn deref(&self) -> &SocketRecord {
        &self.dump[self.idx as usize]
    }
}

impl std::fmt::Debug for RecordRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for RecordRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// One socket in a snapshot: what the kernel said, what follows from it, and its history.
#[derive(Clone, Debug, Serialize)]
pub struct SocketView {
    #[serde(flatten)]
    pub record: RecordRef,
    pub derived: Derived,
    #[serde(skip)]
    pub history: HistoryView,
}

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
    pub sockets: Vec<SocketView>,
    pub by_cc: Vec<CcAggregate>,
    /// Firing alerts, then recently resolved ones, newest first.
    pub alerts: Vec<AlertView>,
    pub collectors: Vec<CollectorStatus>,
    /// Inflation onsets since start, per cc.
    pub inflation_onsets_total: Vec<(String, u64)>,
    pub rule: RuleConfig,
    /// Recently closed flows (eBPF), newest first.
    pub closed: Vec<super::kernel::ClosedFlow>,
    /// Closed flows since start, per cc.
    pub closed_by_cc: Vec<super::kernel::ClosedAggregate>,
    /// Counts since start per cc and peer group, closed sockets included; never falling.
    pub totals: Vec<super::totals::CcTotals>,
}

impl Snapshot {
    pub fn empty(rule: RuleConfig) -> Snapshot {
        Snapshot {
            seq: 0,
            taken_at: SystemTime::UNIX_EPOCH,
            sockets: Vec::new(),
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

    pub fn socket(&self, cookie: Cookie) -> Option<&SocketView> {
        self.sockets.iter().find(|s| s.record.cookie == cookie)
    }

    pub fn firing(&self) -> impl Iterator<Item = &AlertView> {
        self.alerts.iter().filter(|a| a.status == AlertStatus::Firing)
    }
}
