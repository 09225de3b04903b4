//! What a snapshot keeps of one socket, and the view derived from it when a reader asks.
//!
//! An entry holds the socket's record as last read and the few facts the engine adds (when it
//! was first seen, when its inflation began, whether its alert fires, its rates over the last
//! interval). Nothing in it changes with time alone: what grows with time (seconds seen, seconds
//! inflated, tcp_info's milliseconds since the last ACK, the history window) is stored as the
//! instant or poll it counts from and worked out for the snapshot being read. So a socket that
//! did not move keeps its entry, shared, from one snapshot to the next, and a tick pays only for
//! the sockets that moved.

use super::history::{self, History, HistoryView};
use super::kernel::KernelSocket;
use super::socket::{Derived, RecordRef, SocketView};
use crate::model::derive::{self, LimitedBy, Rates};
use crate::model::packed::Packed;
use crate::model::{Cookie, Ecn, Phase, SocketRecord, Source};
use crate::rule::RuleConfig;
use std::borrow::Cow;
use std::sync::Arc;

/// One socket as a snapshot keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub cookie: Cookie,
    pub record: Kept,
    pub facts: Facts,
    /// Its samples, one per poll; `None` while they are all its record's own sample (an idle
    /// socket's whole history), which then costs nothing.
    pub history: Option<Arc<History>>,
    /// The poll it was first seen at.
    pub first_poll: u64,
    /// Which change of the socket this is: an entry replaced by one of the same version (its
    /// record packed, say) did not change.
    pub version: u64,
}

/// A record as an entry keeps it: whole while the socket moves, packed once it has been quiet
/// for a while (a third of the memory; unpacked when read).
#[derive(Clone, Debug, PartialEq)]
pub enum Kept {
    Whole(Arc<SocketRecord>),
    Packed(Packed),
}

impl Kept {
    pub fn get(&self) -> Cow<'_, SocketRecord> {
        match self {
            Kept::Whole(r) => Cow::Borrowed(r),
            Kept::Packed(p) => Cow::Owned(p.unpack()),
        }
    }

    /// The same record, packed.
    pub fn packed(&self) -> Kept {
        match self {
            Kept::Whole(r) => Kept::Packed(Packed::pack(r)),
            p => p.clone(),
        }
    }

    pub fn is_packed(&self) -> bool {
        matches!(self, Kept::Packed(_))
    }
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
    /// Rates over the interval that ended at its last move; none once a poll passes without one
    /// (boxed: most sockets are idle and have none).
    pub rates: Option<Box<Rates>>,
    /// The kernel's own state of this socket (eBPF), when known.
    pub kernel: Option<Arc<KernelSocket>>,
    /// Its peer's lowest baseline of late, when below its own: a connection born into a queue
    /// takes its baseline from the path, not from the queue (the engine's `paths.rs`).
    pub baseline_floor_us: Option<u32>,
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
        let record = match (&self.record, idle_ms > 0) {
            (Kept::Whole(r), false) => RecordRef::shared(Arc::clone(r)),
            (kept, _) => {
                let mut r = kept.get().into_owned();
                r.tcp_info = r.tcp_info.aged(idle_ms.max(0) as u64);
                RecordRef::single(r)
            }
        };
        SocketView {
            derived: self.facts.derived(&record, at),
            history: HistoryView::new(self.history_ring(&record), self.first_poll, at.poll, at.history),
            record,
        }
    }

    /// The record as last read.
    pub fn record(&self) -> Cow<'_, SocketRecord> {
        self.record.get()
    }

    /// Its history ring, made whole where it was left out (`r` is its record).
    pub fn history_ring(&self, r: &SocketRecord) -> Arc<History> {
        match &self.history {
            Some(h) => Arc::clone(h),
            None => Arc::new(History::of_one(history::sample_of(r), self.first_poll)),
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
            rates: (d.rates != Rates::default()).then(|| Box::new(d.rates)),
            kernel: d.kernel.clone(),
            // The baseline it was shown with, the peer's where that was lower.
            baseline_floor_us: d.baseline_rtt_us,
        };
        let record = Kept::Whole(v.record.to_arc());
        Entry { cookie: v.record.cookie, record, facts, history: None, first_poll: 0, version: 0 }
    }
}

impl Facts {
    /// Its rates (all unknown when it has none).
    pub fn rates(&self) -> Rates {
        self.rates.as_deref().copied().unwrap_or_default()
    }

    /// Sets its rates; unknown ones take no memory.
    pub fn set_rates(&mut self, r: Rates) {
        self.rates = (r != Rates::default()).then(|| Box::new(r));
    }

    /// The baseline `rule` measures inflation against: the record's, or the peer's lower one.
    pub fn baseline(&self, rule: &RuleConfig, r: &SocketRecord) -> Option<u32> {
        let own = rule.baseline.of(r)?;
        Some(self.baseline_floor_us.map_or(own, |f| f.min(own)))
    }

    /// The values derived from record `r` and these facts, as of `at`.
    pub fn derived(&self, r: &SocketRecord, at: &ViewAt) -> Derived {
        let baseline = self.baseline(&at.rule, r);
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
            rates: self.rates(),
            seen_for_seconds: secs(self.first_seen_ms),
            kernel: self.kernel.clone(),
        }
    }
}

/// A socket's BBR phase and where it came from. A phase the kernel said over netlink (v2alpha,
/// v3) is read with the record and names REFILL, which eBPF's reading of v1's `struct bbr`
/// cannot: it stays. Otherwise BBR's state at the socket's latest ACK (the RTT window read with
/// the record) is the freshest, and the last mode-change event stands in when there is no
/// window; without either, the phase is inferred from the gains. A kernel phase the gains do not
/// imply gives way to theirs: the gains shown beside the phase are netlink's, read at the dump,
/// after the ACK or mode change eBPF read (or with a policer's pacing, which the mode does not
/// show), and a phase that contradicts them (BW:UP next to 0.75/2.00) would be the stale one.
pub fn phase(r: &SocketRecord, k: Option<&KernelSocket>) -> Option<(Phase, Source)> {
    let netlink = derive::netlink_phase(r);
    if netlink.is_some_and(|(_, s)| s == Source::Netlink) {
        return netlink;
    }
    let from_window = r.kernel_rtt.and_then(|w| w.bbr).and_then(|b| b.phase());
    let from_kernel = from_window.or_else(|| k.and_then(|k| k.bbr).and_then(|b| b.phase()));
    match (from_kernel, netlink) {
        (Some(p), gains) if gains.is_none_or(|(g, _)| g == p) => Some((p, Source::Kernel)),
        _ => netlink,
    }
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
        let e =
            Entry { cookie: 3, record: Kept::Whole(rec), facts, history: None, first_poll: 1, version: 1 };
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
        let e = Entry {
            cookie: 1,
            record: Kept::Whole(Arc::new(rec.clone())).packed(),
            facts,
            history: None,
            first_poll: 1,
            version: 1,
        };
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
