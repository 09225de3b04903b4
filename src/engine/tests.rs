//! Engine scenarios driven by a hand-held clock.

use super::*;
use crate::model::{BbrInfo, Phase, ProbeBwStep, TcpState};

fn sock(cookie: u64, cc: &str, srtt: u32, min_rtt: u32, acked: u64) -> SocketRecord {
    let mut r = SocketRecord::new(
        cookie,
        format!("10.0.0.1:{}", 40000 + cookie).parse().unwrap(),
        "10.0.0.2:5201".parse().unwrap(),
        TcpState::Established,
    );
    r.cc = Some(cc.into());
    r.tcp_info.set_srtt_us(srtt);
    r.tcp_info.set_min_rtt_us(min_rtt);
    r.tcp_info.set_last_ack_recv_ms(0);
    r.tcp_info.set_bytes_acked(acked);
    r.tcp_info.set_total_retrans_segs(0);
    r.tcp_info.set_delivery_rate_bytes_per_sec(1_000_000);
    if cc == "bbr" {
        r.bbr = Some(BbrInfo {
            bw_bytes_per_sec: 2_500_000,
            min_rtt_us: min_rtt,
            pacing_gain: 1.0,
            cwnd_gain: 2.0,
        });
    }
    r
}

fn dump(sockets: Vec<SocketRecord>) -> Update {
    Update::Dump(Dump { sockets: sockets.into_iter().map(Arc::new).collect(), stats: DumpStats::default() })
}

#[test]
fn rates_phase_and_pruning() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    e.apply(dump(vec![sock(1, "bbr", 20_000, 20_000, 0), sock(2, "cubic", 20_000, 20_000, 0)]), t0);
    let s = e.tick(t0);
    assert_eq!(s.sockets.len(), 2);
    assert_eq!(s.sockets[0].derived.rates.goodput_bytes_per_sec, None);
    assert_eq!(s.sockets[0].derived.phase, Some(Phase::ProbeBw(ProbeBwStep::Cruise)));
    assert_eq!(s.sockets[0].derived.phase_source, Some(Source::Inferred));
    assert_eq!(s.sockets[1].derived.phase, None);

    let t1 = t0.after(Duration::from_secs(2));
    e.apply(dump(vec![sock(1, "bbr", 20_000, 20_000, 4_000_000)]), t1);
    let s = e.tick(t1);
    assert_eq!(s.sockets.len(), 1, "the closed cubic socket is pruned");
    assert_eq!(s.sockets[0].derived.rates.goodput_bytes_per_sec, Some(2_000_000.0));
    assert_eq!(s.sockets[0].history.len(), 2);
    assert_eq!(s.sockets[0].derived.seen_for_seconds, 2.0);
    assert_eq!(s.by_cc.len(), 1);
    assert_eq!(s.by_cc[0].phases.get("probe_bw"), Some(&1));
}

#[test]
fn inflation_fires_after_hold_and_resolves_on_close() {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let at = |s: u64| t0.after(Duration::from_secs(s));
    for sec in 0..=5 {
        e.apply(dump(vec![sock(7, "cubic", 90_000, 20_000, sec * 1000)]), at(sec));
        let snap = e.tick(at(sec));
        let d = &snap.sockets[0].derived;
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

    // The socket closes: its alert resolves and moves to the recent list.
    e.apply(dump(vec![]), at(6));
    let snap = e.tick(at(6));
    assert!(snap.sockets.is_empty());
    assert_eq!(snap.firing().count(), 0);
    assert_eq!(snap.alerts.len(), 1);
    assert_eq!(snap.alerts[0].status, AlertStatus::Resolved);
    assert_eq!(snap.alerts[0].resolved_at, Some(at(6).wall));
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
    e.apply(
        Update::Dump(Dump {
            sockets: vec![Arc::new(sock(1, "bbr", 1, 1, 0)), Arc::new(sock(2, "cubic", 1, 1, 0))],
            stats,
        }),
        t0,
    );
    e.apply(Update::DumpFailed { error: "boom".into(), duration: Duration::ZERO }, t0);
    let s = e.tick(t0);
    assert_eq!(s.sockets.len(), 1);
    let c = &s.collectors[0];
    assert_eq!(
        (c.polls_total, c.errors_total, c.dump_intr_retries_total, c.tcp_info_short_total),
        (2, 1, 2, 3)
    );
    assert!(!c.last_success);
    assert_eq!(c.reason.as_deref(), Some("boom"));
}
