//! What a snapshot keeps of one socket, and the view derived from it when a reader asks.
//!
//! An entry holds the socket's record as last read and the few facts the engine adds (when it
//! was first seen, when its inflation began, whether its alert fires, its rates over the last
//! interval). Nothing in it changes with time alone: what grows with time (seconds seen, seconds
//! inflated, tcp_info's milliseconds since the last ACK, the history window) is stored as the
//! instant or poll it counts from and worked out for the snapshot being read. So a socket that
//! did not move keeps its entry, shared, from one snapshot to the next, and a tick pays only for
//! the sockets that moved.

use super::history::{History, HistoryView};
use super::kernel::KernelSocket;
use super::socket::{Derived, RecordRef, SocketView};
use crate::model::derive::{self, LimitedBy, Rates};
use crate::model::{Ecn, Phase, SocketRecord, Source};
use crate::rule::RuleConfig;
use std::sync::Arc;

/// One socket as a snapshot keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub record: Arc<SocketRecord>,
    pub facts: Facts,
    /// Its samples, one per poll, and the poll it was first seen at.
    pub history: Arc<History>,
    pub first_poll: u64,
}

/// What bbrtop adds to a record: when things began, and what it worked out over the interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    /// When bbrtop first saw the socket, in ms since the epoch.
    pub first_seen_ms: i64,
    /// When the record was read (ms since the epoch): its ages count from then.
    pub read_at_ms: i64,
    /// When the present spell of inflation began (ms since the epoch), while inflated.
    pub inflated_since_ms: Option<i64>,
    pub alert_firing: bool,
    /// The verdict over the last interval, or over the socket's life when it was idle.
    pub limited_by: Option<LimitedBy>,
    /// Rates over the interval that ended at its last move; none once a poll passes without one.
    pub rates: Rates,
    /// The kernel's own state of this socket (eBPF), when known.
    pub kernel: Option<Arc<KernelSocket>>,
}

/// What a view is worked out for: the snapshot's time, its poll and history length, and the rule.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ViewAt {
    pub at_ms: i64,
    pub poll: u64,
    pub history: usize,
    pub rule: RuleConfig,
}

impl Entry {
    /// The socket's view as of `at`. A record read before `at` is shown with its ages grown by
    /// the time since: nothing moved in between, or it would have been read again.
    pub fn view(&self, at: &ViewAt) -> SocketView {
        let idle_ms = at.at_ms - self.facts.read_at_ms;
        let record = if idle_ms > 0 {
            RecordRef::single(SocketRecord {
                tcp_info: self.record.tcp_info.aged(idle_ms as u64),
                ..(*self.record).clone()
            })
        } else {
            RecordRef::shared(Arc::clone(&self.record))
        };
        SocketView {
            derived: self.facts.derived(&record, at),
            record,
            history: HistoryView::new(Arc::clone(&self.history), self.first_poll, at.poll, at.history),
        }
    }

    /// The entry a view was derived from, `at_ms` the time it was derived at (a recorded or
    /// remote socket, whose derived values came with it); its history starts empty.
    pub fn of_view(v: &SocketView, at_ms: i64) -> Entry {
        let d = &v.derived;
        let since = |secs: f64| at_ms - (secs * 1e3).round() as i64;
        let facts = Facts {
            first_seen_ms: since(d.seen_for_seconds),
            read_at_ms: at_ms,
            inflated_since_ms: d.inflated_for_seconds.map(since),
            alert_firing: d.alert_firing,
            limited_by: d.limited_by,
            rates: d.rates,
            kernel: d.kernel.clone(),
        };
        Entry { record: v.record.to_arc(), facts, history: Arc::default(), first_poll: 0 }
    }

    /// Its BBR phase (see [`phase`]).
    pub fn phase(&self) -> Option<(Phase, Source)> {
        phase(&self.record, self.facts.kernel.as_deref())
    }
}

impl Facts {
    /// The values derived from record `r` and these facts, as of `at`.
    pub fn derived(&self, r: &SocketRecord, at: &ViewAt) -> Derived {
        let baseline = at.rule.baseline.of(r);
        let srtt = r.tcp_info.srtt_us();
        let (phase, phase_source) = phase(r, self.kernel.as_deref()).unzip();
        let secs = |ms: i64| (at.at_ms - ms).max(0) as f64 / 1e3;
        Derived {
            phase,
            phase_source,
            baseline_rtt_us: baseline,
            queue_delay_us: srtt.zip(baseline).map(|(s, b)| s.saturating_sub(b)),
            inflation_ratio: derive::inflation_ratio(srtt, baseline),
            inflated: self.inflated_since_ms.is_some(),
            inflated_for_seconds: self.inflated_since_ms.map(secs),
            alert_firing: self.alert_firing,
            limited_by: self.limited_by,
            ecn: Ecn::of(&r.tcp_info),
            retrans_ratio: r.tcp_info.retrans_ratio(),
            rates: self.rates,
            seen_for_seconds: secs(self.first_seen_ms),
            kernel: self.kernel.clone(),
        }
    }
}

/// A socket's BBR phase and where it came from. A phase the kernel said over netlink (v2alpha,
/// v3) is read with the record and names REFILL, which eBPF's reading of v1's `struct bbr`
/// cannot: it stays. Otherwise BBR's state at the socket's latest ACK (the RTT window read with
/// the record) is the freshest, and the last mode-change event stands in when there is no
/// window; without either, the phase is inferred from the gains.
pub fn phase(r: &SocketRecord, k: Option<&KernelSocket>) -> Option<(Phase, Source)> {
    let netlink = derive::netlink_phase(r);
    if netlink.is_some_and(|(_, s)| s == Source::Netlink) {
        return netlink;
    }
    let from_window = r.kernel_rtt.and_then(|w| w.bbr).and_then(|b| b.phase());
    let from_kernel = from_window.or_else(|| k.and_then(|k| k.bbr).and_then(|b| b.phase()));
    from_kernel.map(|p| (p, Source::Kernel)).or(netlink)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::record;

    fn at() -> ViewAt {
        ViewAt { at_ms: 1_795_000_010_000, poll: 7, history: 60, rule: RuleConfig::default() }
    }

    /// A recorded view read back as an entry derives the same view again.
    #[test]
    fn a_view_and_its_entry_agree() {
        let at = at();
        let rec = Arc::new(record(3, "bbr").srtt_us(30_000).min_rtt_us(10_000).build());
        let facts = Facts {
            first_seen_ms: at.at_ms - 4_500,
            read_at_ms: at.at_ms,
            inflated_since_ms: Some(at.at_ms - 1_250),
            alert_firing: true,
            ..Facts::default()
        };
        let e = Entry { record: rec, facts, history: Arc::default(), first_poll: 1 };
        let v = e.view(&at);
        assert_eq!((v.derived.seen_for_seconds, v.derived.inflated_for_seconds), (4.5, Some(1.25)));
        assert_eq!(v.derived.inflation_ratio, Some(3.0));
        let back = Entry::of_view(&v, at.at_ms);
        assert_eq!(back.view(&at).derived, v.derived);
    }

    /// A record read 2.5 s before the snapshot shows its ages 2.5 s older, the rest as read.
    #[test]
    fn a_quiet_records_ages_grow() {
        let at = at();
        let rec = record(1, "cubic").srtt_us(20_000).last_ack_recv_ms(40).last_data_recv_ms(7).build();
        let facts = Facts { read_at_ms: at.at_ms - 2_500, ..Facts::default() };
        let e = Entry { record: Arc::new(rec.clone()), facts, history: Arc::default(), first_poll: 1 };
        let v = e.view(&at);
        let i = &v.record.tcp_info;
        assert_eq!(
            (i.last_ack_recv_ms(), i.last_data_recv_ms(), i.srtt_us()),
            (Some(2_540), Some(2_507), Some(20_000))
        );
        assert!(rec.same_but_ages(&v.record), "nothing but the ages moved");
        assert!(!rec.same_but_ages(&record(1, "cubic").srtt_us(21_000).build()));
    }
}
