//! The values derived for one socket at a tick: on first sight, again after it moved, or kept
//! from the last snapshot with its clocks brought forward when it did not.

use crate::tracked::{Tracked, evaluate};
use bbrtop_core::model::derive::{self, Counters, Rates};
use bbrtop_core::model::{SocketRecord, Source};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::kernel::{KernelOnset, KernelSocket};
use bbrtop_core::snapshot::{Derived, HistoryView, RecordRef, SocketView};
use std::sync::Arc;
use std::time::Instant;

/// The view the engine would publish of a socket it sees for the first time, without tracking
/// it: for one-shot reads that stream sockets while the kernel is still dumping them.
pub(crate) fn first_sight(rule: &RuleConfig, record: RecordRef, now: Instant) -> SocketView {
    let mut t = Tracked::new(&record, Counters::of(&record.tcp_info), now, 0, Default::default());
    evaluate(rule, &mut t, &record, KernelOnset::Untimed, now);
    SocketView { derived: derived(rule, &t, &record, now), history: HistoryView::none(), record }
}

/// The view of a socket that did not move since `v` was made: the same, with no rate, and its
/// clocks (how long seen, how long inflated) and history window brought to `now`.
pub(crate) fn quiet_view(v: &SocketView, t: &Tracked, history: HistoryView, now: Instant) -> SocketView {
    let mut d = v.derived.clone();
    d.rates = Rates::default();
    d.seen_for_seconds = now.saturating_duration_since(t.first_seen).as_secs_f64();
    d.inflated_for_seconds = t.alert.onset.map(|o| now.saturating_duration_since(o).as_secs_f64());
    SocketView { record: v.record.clone(), derived: d, history }
}

pub(crate) fn derived(rule: &RuleConfig, t: &Tracked, r: &SocketRecord, now: Instant) -> Derived {
    let baseline = rule.baseline.of(r);
    let srtt = r.tcp_info.srtt_us();
    let phase = derive::netlink_phase(r);
    Derived {
        phase: phase.map(|(p, _)| p),
        phase_source: phase.map(|(_, s)| s),
        baseline_rtt_us: baseline,
        queue_delay_us: srtt.zip(baseline).map(|(s, b)| s.saturating_sub(b)),
        inflation_ratio: derive::inflation_ratio(srtt, baseline),
        inflated: t.alert.onset.is_some(),
        inflated_for_seconds: t.alert.onset.map(|o| now.saturating_duration_since(o).as_secs_f64()),
        alert_firing: t.alert.firing(),
        limited_by: t.limited_by,
        ecn: bbrtop_core::model::Ecn::of(&r.tcp_info),
        retrans_ratio: r.tcp_info.retrans_ratio(),
        rates: t.rates,
        seen_for_seconds: now.saturating_duration_since(t.first_seen).as_secs_f64(),
        kernel: None,
    }
}

/// Overlays kernel values on what netlink inferred: the phase says where it came from. BBR's
/// state at the socket's latest ACK (the RTT window read with the dump) is the freshest; the last
/// mode-change event stands in when there is no window. A phase the kernel said over netlink
/// (v2alpha, v3) stays: it was read with the same dump and names REFILL, which eBPF's reading
/// of v1's `struct bbr` cannot. So does a phase the gains imply that the kernel's read does not
/// match: the gains shown beside the phase are netlink's, read at the dump, after the ACK or
/// mode change eBPF read (or with a policer's pacing, which the mode does not show), and a
/// phase that contradicts them (BW:UP next to 0.75/2.00) would be the stale one.
pub(crate) fn overlay(mut d: Derived, k: Option<&Arc<KernelSocket>>, r: &SocketRecord) -> Derived {
    let from_window = r.kernel_rtt.and_then(|w| w.bbr).and_then(|b| b.phase());
    let from_kernel = from_window.or_else(|| k.and_then(|k| k.bbr).and_then(|b| b.phase()));
    let fits = |p: &bbrtop_core::model::Phase| {
        d.phase_source != Some(Source::Netlink) && d.phase.is_none_or(|gains| gains == *p)
    };
    if let Some(p) = from_kernel.filter(fits) {
        d.phase = Some(p);
        d.phase_source = Some(Source::Kernel);
    }
    d.kernel = k.cloned();
    d
}
