//! Engine scenarios driven by a hand-held clock.

use super::*;
use bbrtop_core::model::derive::Rates;
use bbrtop_core::model::{Phase, ProbeBwStep, Source};
use bbrtop_core::seam::{BpfPoll, DumpSink, KernelUpdate, feed_dump};
use bbrtop_core::snapshot::AlertStatus;
use bbrtop_core::snapshot::{Cause, Health, Reason};
use bbrtop_core::testing::record;
use bbrtop_core::wire::DumpStats;

fn sock(cookie: u64, cc: &str, srtt: u32, min_rtt: u32, acked: u64) -> SocketRecord {
    record(cookie, cc)
        .local(format!("10.0.0.1:{}", 40000 + cookie))
        .srtt_us(srtt)
        .min_rtt_us(min_rtt)
        .last_ack_recv_ms(0)
        .sending()
        .bytes_acked(acked)
        .total_retrans_segs(0)
        .delivery_rate_bytes_per_sec(1_000_000)
        .bbr(2_500_000, min_rtt, 1.0, 2.0)
        .build()
}

/// A whole dump through the seam, as a collector would hand it over.
fn dump(e: &mut Engine, sockets: Vec<SocketRecord>, now: Now) {
    seam::feed_dump(e, Dump { sockets, ..Dump::default() }, now);
}

#[test]
fn rates_phase_and_pruning() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    dump(&mut e, vec![sock(1, "bbr", 20_000, 20_000, 0), sock(2, "cubic", 20_000, 20_000, 0)], t0);
    let s = e.tick(t0);
    assert_eq!(s.sockets.len(), 2);
    let (bbr, cubic) = (s.socket(1).unwrap(), s.socket(2).unwrap());
    assert_eq!(bbr.derived.rates.goodput_bytes_per_sec, None);
    assert_eq!(bbr.derived.phase, Some(Phase::ProbeBw(ProbeBwStep::Cruise)));
    assert_eq!(bbr.derived.phase_source, Some(Source::Inferred));
    assert_eq!(cubic.derived.phase, None);

    let t1 = t0.after(Duration::from_secs(2));
    dump(&mut e, vec![sock(1, "bbr", 20_000, 20_000, 4_000_000)], t1);
    let s = e.tick(t1);
    assert_eq!(s.sockets.len(), 1, "the closed cubic socket is pruned");
    assert_eq!(s.sockets.to_vec()[0].derived.rates.goodput_bytes_per_sec, Some(2_000_000.0));
    assert_eq!(s.sockets.to_vec()[0].history.len(), 2);
    assert_eq!(s.sockets.to_vec()[0].derived.seen_for_seconds, 2.0);
    assert_eq!(s.by_cc.len(), 1);
    assert_eq!(s.by_cc[0].phases.get("probe_bw"), Some(&1));
}

/// Pruning keeps the state dense by moving the last socket into the gap: every survivor must keep
/// its own counters and first sighting, whatever order the dump lists it in.
#[test]
fn pruning_keeps_each_sockets_state() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    dump(&mut e, (1..=5).map(|c| sock(c, "cubic", 1000, 1000, 0)).collect(), at(0));
    // Sockets 1 and 3 close and 9 opens; then 2, 4 and 5 ack `cookie` MB in one second (9,
    // listed again unchanged, has no rate: nothing moved).
    let survivors = |acked: u64| -> Vec<SocketRecord> {
        [5, 9, 2, 4]
            .into_iter()
            .map(|c| sock(c, "cubic", 1000, 1000, if c == 9 { 0 } else { acked * c }))
            .collect()
    };
    dump(&mut e, survivors(0), at(1));
    dump(&mut e, survivors(1_000_000), at(2));
    let s = e.tick(at(2));
    let mut got: Vec<_> = s
        .sockets
        .iter()
        .map(|v| (v.record.cookie, v.derived.rates.goodput_bytes_per_sec, v.derived.seen_for_seconds))
        .collect();
    got.sort_by_key(|g| g.0);
    assert_eq!(
        got,
        vec![
            (2, Some(2_000_000.0), 2.0),
            (4, Some(4_000_000.0), 2.0),
            (5, Some(5_000_000.0), 2.0),
            (9, None, 1.0),
        ]
    );
}

#[test]
fn inflation_fires_after_hold_and_resolves_on_close() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    for sec in 0..=5 {
        dump(&mut e, vec![sock(7, "cubic", 90_000, 20_000, sec * 1000)], at(sec));
        let snap = e.tick(at(sec));
        let d = &snap.sockets.to_vec()[0].derived;
        assert!(d.inflated);
        assert_eq!(d.inflation_ratio, Some(4.5));
        assert_eq!(d.queue_delay_us, Some(70_000));
        assert_eq!(d.alert_firing, sec >= 5, "firing at {sec}s");
    }
    let snap = e.tick(at(5));
    assert_eq!(snap.firing().count(), 1);
    let a = snap.firing().next().unwrap();
    assert_eq!(a.since, at(0).wall);
    assert_eq!(a.fired_at, at(5).wall);
    assert_eq!(snap.by_cc[0].firing, 1);
    assert_eq!(snap.inflation_onsets_total, vec![("cubic".to_string(), 1)]);

    // The socket closes: after one dump of grace, its alert resolves and moves to the recent list.
    dump(&mut e, vec![], at(6));
    let snap = e.tick(at(6));
    assert!(snap.sockets.is_empty(), "a socket missing from a dump is not shown");
    assert_eq!(snap.firing().count(), 1, "one dump of grace");
    dump(&mut e, vec![], at(7));
    let snap = e.tick(at(7));
    assert_eq!(snap.firing().count(), 0);
    assert_eq!(snap.alerts.len(), 1);
    assert_eq!(snap.alerts[0].status, AlertStatus::Resolved);
    assert_eq!(snap.alerts[0].resolved_at, Some(at(7).wall));
}

/// A socket one dump missed (dumps are not atomic) keeps its firing alert, its onset and its
/// history when the next dump lists it; a socket eBPF saw close gets no grace.
#[test]
fn a_socket_missing_from_one_dump_keeps_its_alert_and_history() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    let inflated = |sec: u64| sock(7, "cubic", 90_000 + sec as u32, 20_000, sec * 1000);
    for sec in 0..=5 {
        dump(&mut e, vec![inflated(sec), sock(8, "bbr", 20_000, 20_000, 0)], at(sec));
    }
    assert_eq!(e.tick(at(5)).firing().count(), 1);
    dump(&mut e, vec![sock(8, "bbr", 20_000, 20_000, 0)], at(6));
    let snap = e.tick(at(6));
    assert_eq!((snap.sockets.len(), snap.firing().count()), (1, 1), "7 is unseen, its alert stands");
    dump(&mut e, vec![inflated(7), sock(8, "bbr", 20_000, 20_000, 0)], at(7));
    let snap = e.tick(at(7));
    let a = snap.firing().next().expect("still firing");
    assert_eq!((a.cookie, a.since, a.fired_at), (7, at(0).wall, at(5).wall), "the same alert");
    assert_eq!(snap.inflation_onsets_total, vec![("cubic".to_string(), 1)], "no second onset");
    let s = snap.socket(7).unwrap();
    assert_eq!(s.derived.seen_for_seconds, 7.0);
    assert_eq!(s.history.len(), 8, "every poll since it was first seen, the gap included");

    // eBPF's close record: the next dump that does not list it ends it at once.
    e.apply(Update::Closed(Box::new(bbrtop_core::model::ClosedFlow {
        seq: 0,
        cookie: 7,
        netns: 1,
        cc: "cubic".into(),
        local: "10.0.0.1:40007".parse().unwrap(),
        peer: "10.0.0.2:5201".parse().unwrap(),
        closed_at: at(8).wall,
        lifetime_seconds: Some(8.0),
        counts: Default::default(),
        srtt_us: 90_000,
        min_rtt_us: 20_000,
        delivery_rate_bytes_per_sec: None,
        bbr: None,
        peak_inflation_ratio: 4.5,
    })));
    dump(&mut e, vec![sock(8, "bbr", 20_000, 20_000, 0)], at(8));
    let snap = e.tick(at(8));
    assert_eq!(snap.firing().count(), 0);
    assert_eq!(snap.alerts[0].resolved_at, Some(at(8).wall));
}

#[test]
fn filter_and_collector_status() {
    let cfg = EngineConfig { filter: Filter::parse_words("cc bbr").unwrap(), ..EngineConfig::default() };
    let mut e = Engine::new(cfg);
    let t0 = Now::system();
    let stats = DumpStats {
        intr_retries: 2,
        info_short: 3,
        duration: Duration::from_millis(4),
        ..Default::default()
    };
    seam::feed_dump(
        &mut e,
        Dump { sockets: vec![sock(1, "bbr", 1, 1, 0), sock(2, "cubic", 1, 1, 0)], stats, netns: None },
        t0,
    );
    seam::Dumping::begin(&mut e, t0).fail("boom".into(), Duration::ZERO);
    let s = e.tick(t0);
    assert_eq!(s.sockets.len(), 1);
    let c = &s.collectors[0];
    assert_eq!(
        (c.polls_total, c.errors_total, c.dump_intr_retries_total, c.tcp_info_short_total),
        (2, 1, 2, 3)
    );
    assert_eq!(c.health, Health::Degraded(Reason::new(Cause::DumpFailed, "boom")));
    assert!(!c.health.last_success());
}

#[test]
fn kernel_state_overrides_inferred_phase_and_times_the_alert() {
    use bbrtop_core::model::BbrState;
    use bbrtop_core::model::ClosedFlow;
    use bbrtop_core::seam::KernelUpdate;
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    // Netlink alone: BBR gains that imply no phase, and the CUBIC socket is not inflated.
    let unclear = || {
        let mut r = sock(1, "bbr", 20_000, 20_000, 0);
        r.bbr = Some(bbrtop_core::model::BbrInfo::v1(2_500_000, 20_000, 1.0, 1.5));
        r
    };
    let socks = || vec![unclear(), sock(2, "cubic", 20_000, 20_000, 0)];
    e.apply(Update::Kernel(KernelUpdate::Phase {
        cookie: 1,
        netns: 7,
        bbr: BbrState { mode: 0, ..Default::default() },
        entered: 1,
    }));
    // The kernel timed an onset 6 s ago (longer than the 5 s hold).
    let onset = t0.mono - Duration::from_secs(6);
    e.apply(Update::Kernel(KernelUpdate::Inflation {
        cookie: 2,
        netns: 7,
        onset: Some(onset),
        peak_ratio: 3.0,
    }));
    dump(&mut e, socks(), t0);
    e.apply(Update::BpfStatus(BpfPoll { programs_attached: 2, ringbuf_lost_total: 5, ..BpfPoll::default() }));
    let s = e.tick(t0);
    let bbr = s.socket(1).unwrap();
    assert_eq!((bbr.derived.phase, bbr.derived.phase_source), (Some(Phase::Startup), Some(Source::Kernel)));
    assert_eq!(bbr.derived.kernel.as_ref().unwrap().netns, 7);
    let cubic = s.socket(2).unwrap();
    assert!(cubic.derived.alert_firing, "the kernel onset drives the alert");
    assert_eq!(cubic.derived.phase_source, None);
    let bpf = s.collectors.iter().find(|c| c.name == "bpf").unwrap();
    assert_eq!(
        (bpf.programs_attached, bpf.ringbuf_lost_total, bpf.health.enabled()),
        (Some(2), Some(5), true)
    );

    // The kernel says the spell ended: the alert resolves at the next poll.
    let t1 = t0.after(Duration::from_secs(1));
    e.apply(Update::Kernel(KernelUpdate::Inflation { cookie: 2, netns: 7, onset: None, peak_ratio: 3.0 }));
    dump(&mut e, socks(), t1);
    assert!(!e.tick(t1).socket(2).unwrap().derived.alert_firing);

    e.apply(Update::Closed(Box::new(ClosedFlow {
        seq: 0,
        cookie: 2,
        netns: 7,
        cc: "cubic".into(),
        local: "10.0.0.1:40002".parse().unwrap(),
        peer: "10.0.0.2:5201".parse().unwrap(),
        closed_at: t1.wall,
        lifetime_seconds: Some(7.0),
        counts: bbrtop_core::model::Tally::from_counts([(bbrtop_core::model::Count::BytesAcked, 1000)]),
        srtt_us: 20_000,
        min_rtt_us: 20_000,
        delivery_rate_bytes_per_sec: None,
        bbr: None,
        peak_inflation_ratio: 3.0,
    })));
    let s = e.tick(t1);
    assert_eq!(s.closed.len(), 1);
    assert_eq!((s.closed_by_cc[0].cc.as_str(), s.closed_by_cc[0].count), ("cubic", 1));
    assert!(s.socket(2).unwrap().derived.kernel.is_none(), "closed sockets' kernel state is dropped");
}

/// A dump fed record by record while the kernel dumps: one that fails midway leaves the last
/// complete dump in place, and one whose family restarted keeps only what it finally lists.
#[test]
fn observed_dumps_abort_and_restart() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    dump(&mut e, vec![sock(1, "bbr", 1000, 1000, 0), sock(2, "cubic", 1000, 1000, 0)], at(0));

    // Fails after seeing socket 2 and a new socket 3.
    e.begin(at(1));
    e.record(0, &sock(3, "bbr", 1000, 1000, 0));
    e.record(1, &sock(2, "cubic", 1000, 1000, 5000));
    e.abort(seam::Aborted::Dropped);
    let s = e.tick(at(1));
    let mut cookies: Vec<_> = s.sockets.iter().map(|v| v.record.cookie).collect();
    cookies.sort();
    assert_eq!(cookies, vec![1, 2], "3 was never in a complete dump");
    assert_eq!(s.socket(2).unwrap().record.tcp_info.bytes_acked(), Some(0), "still the last complete dump");

    // A restart: socket 1 was handed over in the interrupted part, then closed; the dump that
    // completes lists 2 where 1 had been. It ends streamed, with no records: the engine kept
    // each place's cookie.
    e.begin(at(2));
    e.record(0, &sock(1, "bbr", 1000, 1000, 0));
    e.record(0, &sock(2, "cubic", 1000, 1000, 7000));
    let stats = DumpStats { intr_retries: 1, ..DumpStats::default() };
    e.end(Dump { sockets: Vec::new(), stats, netns: None });
    let s = e.tick(at(2));
    assert_eq!(s.sockets.len(), 1);
    assert_eq!(s.sockets.to_vec()[0].record.cookie, 2);
    assert_eq!(s.sockets.to_vec()[0].record.tcp_info.bytes_acked(), Some(7000));
}

/// Kernel state of a socket no dump lists (its close record was lost, or it lives in another
/// namespace) is forgotten after a poll of grace; a listed socket's is kept however quiet.
#[test]
fn kernel_state_of_unlisted_sockets_is_pruned() {
    use bbrtop_core::model::BbrState;
    use bbrtop_core::seam::KernelUpdate;
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let phase = |cookie| {
        Update::Kernel(KernelUpdate::Phase { cookie, netns: 7, bbr: BbrState::default(), entered: 1 })
    };
    e.apply(phase(1));
    e.apply(phase(99));
    dump(&mut e, vec![sock(1, "bbr", 1000, 1000, 0)], t0);
    assert_eq!(e.kernel.held(), 2, "99's first event may beat its first dump");
    for s in 1..=3 {
        dump(&mut e, vec![sock(1, "bbr", 1000, 1000, 0)], t0.after(Duration::from_secs(s)));
    }
    assert_eq!(e.kernel.held(), 1);
    assert!(e.kernel.socket(1).is_some() && e.kernel.socket(99).is_none());
}

/// BBR's state read with the dump (the eBPF RTT window) gives the phase, PROBE_BW step
/// included, and outranks the last mode-change event.
#[test]
fn window_state_gives_the_kernel_phase() {
    use bbrtop_core::model::{BbrState, RttWindow};
    use bbrtop_core::seam::KernelUpdate;
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    // The last event said STARTUP; the window says PROBE_BW, draining (cycle_idx 1).
    e.apply(Update::Kernel(KernelUpdate::Phase {
        cookie: 1,
        netns: 7,
        bbr: BbrState::default(),
        entered: 1,
    }));
    let mut r = sock(1, "bbr", 20_000, 20_000, 0);
    r.bbr = Some(bbrtop_core::model::BbrInfo::v1(2_500_000, 20_000, 0.75, 2.0));
    r.kernel_rtt = Some(RttWindow {
        samples: 3,
        last_srtt_us: 20_000,
        min_srtt_us: Some(20_000),
        max_srtt_us: Some(20_000),
        bbr: Some(BbrState { mode: 2, cycle_idx: 1, full_bw_reached: true, ..BbrState::default() }),
        ..RttWindow::default()
    });
    dump(&mut e, vec![r, sock(2, "bbr", 20_000, 20_000, 0)], t0);
    let s = e.tick(t0);
    let d = &s.socket(1).unwrap().derived;
    assert_eq!((d.phase, d.phase_source), (Some(Phase::ProbeBw(ProbeBwStep::Down)), Some(Source::Kernel)));
    assert_eq!(d.kernel.as_ref().unwrap().mode_entered, 1, "the event's counts stay");
    let d = &s.socket(2).unwrap().derived;
    assert_eq!(d.phase_source, Some(Source::Inferred), "no window, no event: inferred");
}

/// The phase never contradicts the gains shown beside it: where the kernel's read (at the latest
/// ACK) names another phase than netlink's gains (read at the dump, later), the gains' phase is
/// shown, as inferred; where they agree, or the gains imply none, the kernel's.
#[test]
fn the_phase_fits_the_gains_shown() {
    use bbrtop_core::model::{BbrInfo, BbrState, RttWindow};
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    // The kernel read PROBE_BW up (cycle_idx 0) at the latest ACK.
    let up = RttWindow {
        samples: 1,
        last_srtt_us: 20_000,
        min_srtt_us: Some(20_000),
        max_srtt_us: Some(20_000),
        bbr: Some(BbrState { mode: 2, cycle_idx: 0, full_bw_reached: true, ..BbrState::default() }),
        ..RttWindow::default()
    };
    let with_gains = |cookie: u64, pacing: f64, cwnd: f64| {
        let mut r = sock(cookie, "bbr", 20_000, 20_000, 0);
        r.bbr = Some(BbrInfo::v1(2_500_000, 20_000, pacing, cwnd));
        r.kernel_rtt = Some(up);
        r
    };
    dump(&mut e, vec![with_gains(1, 0.75, 2.0), with_gains(2, 1.25, 2.0), with_gains(3, 1.0, 1.5)], t0);
    let s = e.tick(t0);
    let shown = |c: u64| {
        let d = &s.socket(c).unwrap().derived;
        (d.phase.map(|p| p.label()), d.phase_source)
    };
    assert_eq!(
        shown(1),
        (Some("BW:DOWN"), Some(Source::Inferred)),
        "0.75/2.00 is BW:DOWN, whatever the ACK said"
    );
    assert_eq!(shown(2), (Some("BW:UP"), Some(Source::Kernel)), "they agree: the kernel's");
    assert_eq!(shown(3), (Some("BW:UP"), Some(Source::Kernel)), "gains of no phase: the kernel's");
}

/// A v3 socket's phase is the one its netlink info names, even where eBPF reads `struct bbr`.
#[test]
fn v3_phase_from_netlink() {
    use bbrtop_core::model::bbr::fixtures;
    use bbrtop_core::model::{BbrInfo, BbrState, RttWindow};
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let v3 = |cookie: u64, window: Option<RttWindow>| {
        let mut r = sock(cookie, "bbr", 20_000, 20_000, 0);
        r.bbr = BbrInfo::parse(&fixtures::ext(3, 2, 7), Some("bbr"));
        r.kernel_rtt = window;
        r
    };
    let window = RttWindow {
        samples: 1,
        last_srtt_us: 20_000,
        min_srtt_us: Some(20_000),
        max_srtt_us: Some(20_000),
        bbr: Some(BbrState { mode: 2, cycle_idx: 3, ..BbrState::default() }),
        ..RttWindow::default()
    };
    dump(&mut e, vec![v3(1, None), v3(2, Some(window))], t0);
    let s = e.tick(t0);
    for c in [1, 2] {
        let d = &s.socket(c).unwrap().derived;
        assert_eq!(
            (d.phase, d.phase_source),
            (Some(Phase::ProbeBw(ProbeBwStep::Refill)), Some(Source::Netlink))
        );
    }
}

/// A limit (e.g. no BBR state on this kernel) shows as the collector's reason, but the
/// collector is up; a failed poll outranks it.
#[test]
fn a_bpf_limit_is_a_reason_not_a_failure() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let status = |reason: Option<&str>| {
        Update::BpfStatus(BpfPoll {
            programs_attached: 3,
            failure: reason.map(|r| Reason::new(Cause::RingBuffer, r)),
            limit: Some(Reason::new(Cause::BbrStateOff, "BBR state off")),
            ..BpfPoll::default()
        })
    };
    e.apply(status(None));
    let bpf = |s: &Snapshot| s.collectors.iter().find(|c| c.name == "bpf").unwrap().health.clone();
    let h = bpf(&e.tick(t0));
    assert_eq!(
        (h.enabled(), h.last_success(), h.reason().map(|r| r.detail.as_str())),
        (true, true, Some("BBR state off"))
    );
    e.apply(status(Some("ring buffer: EIO")));
    let h = bpf(&e.tick(t0));
    assert_eq!((h.last_success(), h.reason().map(|r| r.detail.as_str())), (false, Some("ring buffer: EIO")));
}

fn walk(e: &mut Engine, sockets: Vec<SocketRecord>, now: Now) {
    let stats =
        bbrtop_core::wire::walk::WalkStats { records: sockets.len() as u64, hz: 250, ..Default::default() };
    e.walked(Ok(Walk { sockets, gone: Vec::new(), stats, duration: Duration::ZERO, now }));
}

/// The socket walk hands over only the sockets that moved: the others stay, quiet (no rate), an
/// inflation of a quiet socket ends (no ACK came), a dump of one namespace ends only its own
/// sockets, and a socket eBPF saw close goes at the next walk.
#[test]
fn walked_sockets_stay_until_they_close() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    let a = |acked| record(1, "bbr").netns(10).srtt_us(20_000).min_rtt_us(20_000).bytes_acked(acked).build();
    let b =
        record(2, "cubic").netns(20).srtt_us(90_000).min_rtt_us(20_000).last_ack_recv_ms(0).sending().build();
    walk(&mut e, vec![a(0), b], at(0));
    let s = e.tick(at(0));
    assert_eq!(s.sockets.len(), 2);
    assert!(s.socket(2).unwrap().derived.inflated, "inflated while it moves");
    assert_eq!(s.collectors.last().unwrap().name, "walk");

    walk(&mut e, vec![a(2_000_000)], at(1));
    let s = e.tick(at(1));
    assert_eq!(s.sockets.len(), 2, "a quiet socket stays");
    assert_eq!(s.socket(1).unwrap().derived.rates.goodput_bytes_per_sec, Some(2_000_000.0));
    let quiet = s.socket(2).unwrap();
    assert_eq!(quiet.derived.rates, Rates::default(), "nothing moved, no rate");
    assert!(!quiet.derived.inflated, "no ACK since: no longer inflated");

    // Quiet again: its view is the last one's, with its clocks brought forward; a kernel event
    // (an eBPF inflation record) makes it derived afresh.
    walk(&mut e, vec![a(2_000_000)], at(2));
    let q = e.tick(at(2));
    assert_eq!(q.socket(2).unwrap().derived.seen_for_seconds, 2.0);
    assert_eq!(q.socket(2).unwrap().derived.kernel, None);
    e.apply(Update::Kernel(KernelUpdate::Inflation { cookie: 2, netns: 20, onset: None, peak_ratio: 4.5 }));
    let k = e.tick(at(2));
    assert!(k.socket(2).unwrap().derived.kernel.is_some(), "the kernel's state is shown at once");

    // Netlink reconciles namespace 10, which lists only socket 1: socket 2 is not its to end.
    seam::feed_dump(&mut e, Dump { sockets: vec![a(2_000_000)], netns: Some(10), ..Dump::default() }, at(2));
    seam::feed_dump(&mut e, Dump { sockets: vec![a(2_000_000)], netns: Some(10), ..Dump::default() }, at(3));
    assert_eq!(e.tick(at(3)).sockets.len(), 2);

    e.apply(Update::Closed(Box::new(bbrtop_core::model::ClosedFlow::example("bbr", 20_000, None))));
    walk(&mut e, vec![], at(4));
    let s = e.tick(at(4));
    assert_eq!(s.sockets.iter().map(|v| v.record.cookie).collect::<Vec<_>>(), [2], "closed at once");

    // A socket that opened, moved and closed between two walks: its close record comes first,
    // and the walk's record of its last move must not bring it back (it would stay for ever).
    let mut brief = bbrtop_core::model::ClosedFlow::example("cubic", 1000, None);
    brief.cookie = 3;
    e.apply(Update::Closed(Box::new(brief)));
    walk(&mut e, vec![record(3, "cubic").netns(20).build()], at(5));
    assert_eq!(e.tick(at(5)).sockets.len(), 1, "only socket 2");
    walk(&mut e, vec![record(3, "cubic").netns(20).build()], at(6));
    assert_eq!(e.tick(at(6)).sockets.len(), 2, "remembered for one walk only (cookies are not reused)");
}

/// A walk handed over in parts as it is read (the binary's poll) leaves the engine as the same
/// walk handed over whole: the same sockets, views, figures and collector status, poll after
/// poll, with sockets that move, go quiet and close.
#[test]
fn a_walk_in_parts_is_the_walk_whole() {
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    let a = |acked| record(1, "bbr").netns(10).srtt_us(20_000).min_rtt_us(20_000).bytes_acked(acked).build();
    let b = |srtt| record(2, "cubic").netns(20).srtt_us(srtt).min_rtt_us(20_000).sending().build();
    let c = || record(3, "bbr").netns(20).srtt_us(30_000).min_rtt_us(20_000).build();
    let polls: Vec<(Vec<SocketRecord>, Vec<Cookie>)> = vec![
        (vec![a(0), b(90_000), c()], vec![]),
        (vec![a(1_000_000), b(95_000)], vec![]),
        (vec![b(40_000)], vec![3]),
        (vec![], vec![]),
        (vec![a(3_000_000)], vec![2]),
    ];
    let stats =
        |n: usize| bbrtop_core::wire::walk::WalkStats { records: n as u64, hz: 250, ..Default::default() };
    let (mut whole, mut parts) = (Engine::new(EngineConfig::default()), Engine::new(EngineConfig::default()));
    for (i, (sockets, gone)) in polls.into_iter().enumerate() {
        let now = at(i as u64);
        let n = sockets.len() + gone.len();
        whole.walked(Ok(Walk {
            sockets: sockets.clone(),
            gone: gone.clone(),
            stats: stats(n),
            duration: Duration::ZERO,
            now,
        }));
        for s in sockets {
            DumpSink::walk_part(&mut parts, now, vec![s], vec![]);
        }
        DumpSink::walk_part(&mut parts, now, vec![], gone);
        parts.walked(Ok(Walk {
            sockets: vec![],
            gone: vec![],
            stats: stats(n),
            duration: Duration::ZERO,
            now,
        }));
        let json = |s: &Snapshot| serde_json::to_string(s).expect("json");
        let (w, p) = (whole.tick(now), parts.tick(now));
        assert!(w.sockets.len() <= 3);
        assert_eq!(json(&w), json(&p), "poll {i}");
    }
}

/// A walk that fails midway keeps the parts it handed over (they were read) and says it failed.
#[test]
fn a_walk_that_fails_midway_keeps_its_parts() {
    let mut e = Engine::new(EngineConfig::default());
    let now = Now::system();
    DumpSink::walk_part(&mut e, now, vec![record(1, "bbr").netns(10).build()], vec![]);
    e.walked(Err(WalkFailed { error: "reading the moved sockets: EIO".into(), duration: Duration::ZERO }));
    let s = e.tick(now);
    assert_eq!(s.sockets.len(), 1, "the part read stays");
    let walk = s.collectors.iter().find(|c| c.name == "walk").expect("the walk's status");
    assert_eq!(walk.health.reason().map(|r| r.detail.as_str()), Some("reading the moved sockets: EIO"));
}

/// The counters per cc only grow: a socket adds what it sent since its last record, its close
/// record the rest, a socket that lived and died between polls its whole life, and a socket
/// seen again (a dump that failed midway, a state that left the filter) nothing twice.
#[test]
fn counters_never_fall_as_sockets_close() {
    use bbrtop_core::model::{Count, Tally};
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    let acked = |s: &Snapshot, cc: &str| -> u64 {
        s.totals.iter().filter(|t| t.cc == cc).map(|t| t.counts[Count::BytesAcked]).sum()
    };
    let close = |cookie: u64, cc: &str, acked: u64| {
        let mut c = bbrtop_core::model::ClosedFlow::example(cc, 1000, None);
        (c.cookie, c.counts) = (cookie, Tally::from_counts([(Count::BytesAcked, acked)]));
        Update::Closed(Box::new(c))
    };
    dump(&mut e, vec![sock(1, "bbr", 1000, 1000, 1000), sock(2, "cubic", 1000, 1000, 500)], at(0));
    let s = e.tick(at(0));
    assert_eq!((acked(&s, "bbr"), acked(&s, "cubic")), (1000, 500), "their lives so far");
    dump(&mut e, vec![sock(1, "bbr", 1000, 1000, 1500), sock(2, "cubic", 1000, 1000, 500)], at(1));
    assert_eq!(acked(&e.tick(at(1)), "bbr"), 1500);

    // 1 closes having acked 300 more since the last poll; 9 opened and closed between polls.
    e.apply(close(1, "bbr", 1800));
    e.apply(close(9, "cubic", 300));
    // An aborted dump sees 2 grow; the next complete one does not count that growth again.
    e.begin(at(2));
    e.record(0, &sock(2, "cubic", 1000, 1000, 600));
    e.abort(seam::Aborted::Dropped);
    dump(&mut e, vec![sock(2, "cubic", 1000, 1000, 600)], at(3));
    let s = e.tick(at(3));
    assert_eq!((acked(&s, "bbr"), acked(&s, "cubic")), (1800, 500 + 300 + 100));
    assert!(s.socket(1).is_none(), "1 is gone, its counts stay");
    let bbr = s.by_cc.iter().find(|a| a.cc == "bbr").unwrap();
    assert_eq!((bbr.sockets, bbr.counts[Count::BytesAcked]), (0, 1800), "a cc of closed sockets stays");
    assert_eq!(bbr.recent.unwrap().goodput_bytes_per_sec, 800.0 / 3.0, "grown by 800 in 3 s");

    // 2 leaves the dumps without a close record (its state left the filter), then closes.
    dump(&mut e, vec![], at(4));
    dump(&mut e, vec![], at(5));
    assert!(e.tick(at(5)).socket(2).is_none());
    e.apply(close(2, "cubic", 650));
    assert_eq!(acked(&e.tick(at(6)), "cubic"), 950, "only the 50 it acked since");

    // Netlink reads one namespace: a close in another is not this host's view to count.
    seam::feed_dump(&mut e, Dump { netns: Some(1), ..Dump::default() }, at(7));
    let mut elsewhere = bbrtop_core::model::ClosedFlow::example("cubic", 1000, None);
    (elsewhere.cookie, elsewhere.netns) = (20, 2);
    elsewhere.counts = Tally::from_counts([(Count::BytesAcked, 10_000)]);
    e.apply(Update::Closed(Box::new(elsewhere)));
    e.apply(close(21, "cubic", 50));
    assert_eq!(acked(&e.tick(at(7)), "cubic"), 1000, "namespace 1's close only");
}

/// Snapshots without history, as a remote sends them, get the history the engine that made
/// them keeps.
#[test]
fn rebuilt_history_is_the_engines() {
    use bbrtop_core::snapshot::rebuilt::Rebuilt;
    use bbrtop_core::snapshot::{HistoryView, Sample, SocketView};
    use bbrtop_core::testing::record;
    let mut engine = Engine::new(EngineConfig { history: 5, ..EngineConfig::default() });
    let mut rebuilt = Rebuilt::new(5);
    let mut now = Now::system();
    for (poll, srtt) in [10_000, 12_000, 12_000, 15_000, 9_000, 9_000, 20_000].into_iter().enumerate() {
        // Socket 2 closes after the third poll; socket 3 opens at the fifth.
        let mut recs = vec![record(1, "bbr").srtt_us(srtt).build()];
        if poll < 3 {
            recs.push(record(2, "cubic").srtt_us(srtt * 2).build());
        }
        if poll >= 4 {
            recs.push(record(3, "cubic").srtt_us(srtt + 1).build());
        }
        now = now.after(Duration::from_secs(1));
        feed_dump(&mut engine, bbrtop_core::wire::Dump { sockets: recs, ..Default::default() }, now);
        let live = engine.tick(now);
        let mut bare = (*live).clone();
        let stripped = bare.sockets.iter().map(|v| SocketView { history: HistoryView::none(), ..v });
        bare.sockets = bbrtop_core::snapshot::Sockets::of_views(stripped, *live.sockets.at());
        rebuilt.add(&mut bare);
        let samples = |s: &Snapshot| {
            s.sockets.iter().map(|v| (v.record.cookie, v.history.iter().copied().collect())).collect()
        };
        let (want, got): (Vec<(u64, Vec<Sample>)>, Vec<_>) = (samples(&live), samples(&bare));
        assert_eq!(got, want, "poll {poll}");
    }
}

/// A socket that closed but has not moved since (its path gone with its namespace, its FIN
/// retransmitted into nothing) leaves the view after `CLOSING_QUIET`; an idle established one
/// stays, however long it is quiet.
#[test]
fn a_quiet_closing_socket_leaves_and_an_idle_one_stays() {
    use bbrtop_core::model::TcpState;
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    let mut closing = record(1, "cubic").netns(20).srtt_us(90_000).min_rtt_us(20_000).build();
    closing.state = TcpState::FinWait1;
    let idle = record(2, "cubic").netns(20).srtt_us(20_000).min_rtt_us(20_000).build();
    walk(&mut e, vec![closing, idle], at(0));
    let listed =
        |e: &mut Engine, s: u64| e.tick(at(s)).sockets.iter().map(|v| v.record.cookie).collect::<Vec<_>>();
    for s in [1, 10, 29] {
        walk(&mut e, vec![], at(s));
        assert_eq!(listed(&mut e, s), [1, 2], "at {s} s");
    }
    walk(&mut e, vec![], at(30));
    assert_eq!(listed(&mut e, 30), [2], "closing and quiet for 30 s: gone");
    walk(&mut e, vec![], at(3600));
    assert_eq!(listed(&mut e, 3600), [2], "established and idle: kept");
}

/// The per-cc figures kept as sockets change are the figures a pass over the snapshot's
/// sockets makes, poll after poll, whatever moves, opens, closes, goes quiet or is inflated.
#[test]
fn kept_figures_are_a_pass_over_the_sockets() {
    use bbrtop_core::snapshot::aggregate::by_cc;
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for loopback in [false, true] {
        let cfg =
            EngineConfig { rule: RuleConfig { loopback, ..RuleConfig::default() }, ..Default::default() };
        let mut e = Engine::new(cfg);
        let t0 = Now::system();
        let mut acked = [0u64; 40];
        for poll in 0..60u64 {
            let now = t0.after(Duration::from_secs(poll));
            let mut moved = Vec::new();
            for c in 0..40u64 {
                // A socket opens at a random poll, moves now and then, and closes for good.
                if rand(5) == 0 || poll == 0 {
                    acked[c as usize] += rand(3) * 100_000;
                    let cc = ["bbr", "cubic", "dctcp"][(c % 3) as usize];
                    let peer = if c % 7 == 0 { "127.0.0.1:9" } else { "10.0.0.2:5201" };
                    let mut r = record(c + 1, cc)
                        .peer(peer)
                        .srtt_us(20_000 + rand(60_000) as u32)
                        .min_rtt_us(20_000)
                        .last_ack_recv_ms(rand(3) as u32 * 1000)
                        .options(if c % 5 == 0 { 8 } else { 0 })
                        .delivered_segs(poll as u32 * 10)
                        .delivered_ce_segs(poll as u32)
                        .bytes_acked(acked[c as usize])
                        .delivery_rate_bytes_per_sec(rand(1_000_000))
                        .bbr(2_500_000, 20_000, 1.0 + rand(2) as f64 * 0.25, 2.0);
                    if rand(2) == 0 {
                        r = r.sending();
                    }
                    moved.push(r.build());
                }
            }
            if poll % 10 == 9 {
                let mut c = bbrtop_core::model::ClosedFlow::example("cubic", 1000, None);
                c.cookie = 1 + rand(40);
                e.apply(Update::Closed(Box::new(c)));
            }
            if poll % 3 == 0 {
                dump(&mut e, moved, now);
            } else {
                walk(&mut e, moved, now);
            }
            let s = e.tick(now);
            let mut want = by_cc(s.sockets.iter().collect::<Vec<_>>().iter(), loopback);
            let mut got = s.by_cc.clone();
            for a in got.iter_mut().chain(want.iter_mut()) {
                (a.counts, a.recent) = Default::default();
            }
            got.retain(|a| a.sockets > 0);
            assert_eq!(got, want, "poll {poll}, loopback {loopback}");
        }
    }
}

/// A socket that did not move keeps its entry, shared with the snapshot before: what changed
/// between two snapshots is what moved.
#[test]
fn quiet_sockets_share_their_entries() {
    use bbrtop_core::snapshot::Change;
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    let socks = |moving: u64, acked: u64| {
        (1..=100).map(|c| sock(c, "bbr", 20_000, 20_000, if c == moving { acked } else { 0 })).collect()
    };
    dump(&mut e, socks(0, 0), at(0));
    let first = e.tick(at(0));
    walk(&mut e, vec![], at(1));
    let second = e.tick(at(1));
    walk(&mut e, socks(7, 5000).into_iter().filter(|r| r.cookie == 7).collect(), at(2));
    let third = e.tick(at(2));
    let changed = |new: &Snapshot, old: &Snapshot| {
        new.sockets
            .changes_since(&old.sockets)
            .map(|c| match c {
                Change::Added(e) | Change::Changed { new: e, .. } | Change::Gone(e) => e.cookie,
            })
            .collect::<Vec<_>>()
    };
    assert!(changed(&second, &first).is_empty(), "nothing moved");
    assert_eq!(changed(&third, &second), [7]);
    assert_eq!(third.socket(3).unwrap().derived.seen_for_seconds, 2.0, "derived as of the snapshot");
    // A dump that lists everything, unchanged but for the ages, moves nothing either.
    dump(&mut e, socks(7, 5000), at(3));
    let fourth = e.tick(at(3));
    assert_eq!(changed(&fourth, &third), [7], "7 loses its rate; the rest did not move");
}

/// A connection born into a queue (netlink mode): its own min RTT is the queue's 12 ms, and
/// against it the queue is none. Another connection to the same peer saw the path at 1 ms, so
/// the new one is measured against 1 ms: inflated, shown with that baseline, and firing after the
/// hold. A connection to another peer keeps its own baseline.
#[test]
fn a_connection_born_into_a_queue_takes_its_peers_baseline() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    let to = |r: SocketRecord, peer: &str| SocketRecord { peer: peer.parse().unwrap(), ..r };
    let old = to(sock(1, "cubic", 1_000, 1_000, 0), "10.0.0.9:443");
    dump(&mut e, vec![old.clone()], at(0));
    for sec in 1..=6 {
        let born = to(sock(2, "cubic", 12_000, 12_000, sec * 1000), "10.0.0.9:443");
        let elsewhere = to(sock(3, "cubic", 12_000, 12_000, sec * 1000), "10.0.0.8:443");
        dump(&mut e, vec![old.clone(), born, elsewhere], at(sec));
    }
    let s = e.tick(at(6));
    let (born, elsewhere) = (&s.socket(2).unwrap().derived, &s.socket(3).unwrap().derived);
    assert_eq!((born.baseline_rtt_us, born.inflation_ratio), (Some(1_000), Some(12.0)));
    assert!(born.inflated && born.alert_firing, "{born:?}");
    assert_eq!((elsewhere.baseline_rtt_us, elsewhere.inflated), (Some(12_000), false));
    let cubic = &s.by_cc[0];
    assert_eq!((cubic.inflated, cubic.firing), (1, 1));
}

/// One eBPF poll whose programs judge inflation and call each of `cookies` calm.
fn kernel_calls_calm(e: &mut Engine, cookies: &[u64]) {
    use bbrtop_core::seam::{BpfPoll, KernelUpdate};
    e.apply(Update::BpfStatus(BpfPoll {
        programs_attached: 2,
        judges_inflation: true,
        ..BpfPoll::default()
    }));
    for &cookie in cookies {
        e.apply(Update::Kernel(KernelUpdate::Inflation { cookie, netns: 7, onset: None, peak_ratio: 1.0 }));
    }
}

/// The same with the eBPF programs judging: the kernel measures the born connection against its
/// own 12 ms and calls it calm, but the peer's floor says inflated, so the polls time it and it
/// fires after the hold. The old connection, calm on both counts, stays calm.
#[test]
fn a_connection_born_into_a_queue_fires_where_the_kernel_judges() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    let to = |r: SocketRecord| SocketRecord { peer: "10.0.0.9:443".parse().unwrap(), ..r };
    let old = to(sock(1, "cubic", 1_000, 1_000, 0));
    for sec in 0..=6 {
        kernel_calls_calm(&mut e, &[1, 2]);
        let born = to(sock(2, "cubic", 12_000, 12_000, sec * 1000));
        dump(&mut e, vec![old.clone(), born], at(sec));
    }
    let s = e.tick(at(6));
    let (old, born) = (&s.socket(1).unwrap().derived, &s.socket(2).unwrap().derived);
    assert_eq!((born.baseline_rtt_us, born.inflation_ratio), (Some(1_000), Some(12.0)));
    assert!(born.inflated && born.alert_firing, "{born:?}");
    assert!(!old.inflated && !old.alert_firing, "{old:?}");
}

/// tcp_probe fires in ESTABLISHED only, so the kernel's calm says nothing of a socket past it: a
/// server in CLOSE_WAIT still answering through a 12 ms queue over a 1 ms path is timed by the
/// polls and fires after the hold, while the same numbers on an ESTABLISHED socket the kernel
/// judges calm stay calm.
#[test]
fn a_socket_past_established_is_timed_by_the_polls_where_the_kernel_judges() {
    use bbrtop_core::model::TcpState;
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    for sec in 0..=6 {
        kernel_calls_calm(&mut e, &[1, 2]);
        let open = sock(1, "cubic", 12_000, 1_000, sec * 1000);
        let closing =
            SocketRecord { state: TcpState::CloseWait, ..sock(2, "cubic", 12_000, 1_000, sec * 1000) };
        dump(&mut e, vec![open, closing], at(sec));
    }
    let s = e.tick(at(6));
    let (open, closing) = (&s.socket(1).unwrap().derived, &s.socket(2).unwrap().derived);
    assert!(closing.inflated && closing.alert_firing, "{closing:?}");
    assert!(!open.inflated && !open.alert_firing, "{open:?}");
}
