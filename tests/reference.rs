//! The reference test: a BBR flow and a CUBIC flow through a 20 Mbit/s tbf with a deep buffer,
//! and bbrtop's values for them checked against `ss -tin` on the same sockets, in the same
//! namespace, at the same moment. `ss` is read just before and just after bbrtop, so the only
//! slack allowed is what changed between the two reads (plus ss's printed precision).

mod support;

use bbrtop::lab::ss::SsSocket;
use bbrtop::lab::{Flow, Lab, LabConfig};
use bbrtop_collect::InetDiag;
use bbrtop_collect::netns::NetnsSpec;
use bbrtop_core::model::{Phase, StateSet};
use bbrtop_core::seam::Now;
use bbrtop_core::snapshot::{Snapshot, SocketView};
use bbrtop_engine::{Engine, EngineConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::guard;
use support::lab::ss_established;

fn of<'a>(socks: &'a [SsSocket], f: &Flow) -> &'a SsSocket {
    socks.iter().find(|s| s.local == Some(f.local) && s.peer == Some(f.peer)).expect("flow in ss")
}

fn view(snap: &Snapshot, f: &Flow) -> SocketView {
    snap.sockets
        .iter()
        .find(|s| s.record.local == f.local && s.record.peer == f.peer)
        .expect("flow in bbrtop")
}

/// `ours` must lie between the two ss readings, widened by `abs` (ss's printed precision) and
/// `rel` of the larger reading.
fn between(what: &str, ours: f64, a: Option<f64>, b: Option<f64>, abs: f64, rel: f64) {
    let (a, b) =
        (a.unwrap_or_else(|| panic!("ss has no {what}")), b.unwrap_or_else(|| panic!("ss has no {what}")));
    let (lo, hi) = (a.min(b), a.max(b));
    let slack = abs + rel * hi.abs();
    assert!(
        ours >= lo - slack && ours <= hi + slack,
        "{what}: bbrtop {ours} outside ss [{lo}, {hi}] ± {slack}"
    );
}

struct Reading {
    before: Vec<SsSocket>,
    snap: Arc<Snapshot>,
    after: Vec<SsSocket>,
}

fn read(lab: &Lab, diag: &mut InetDiag, engine: &mut Engine) -> Reading {
    let before = ss_established(lab);
    let now = Now::system();
    diag.dump_into(engine, now).unwrap();
    let snap = engine.tick(now);
    let after = ss_established(lab);
    Reading { before, snap, after }
}

#[test]
fn root_bbrtop_agrees_with_ss_on_bbr_and_cubic_flows() {
    if !guard::lab("reference test") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).unwrap();
    let bbr = lab.start_flow("bbr").unwrap();
    let cubic = lab.start_flow("cubic").unwrap();
    let mut diag =
        InetDiag::open(Some(&NetnsSpec(lab.sender_netns().to_path_buf())), StateSet::default_filter())
            .unwrap();
    let mut engine = Engine::new(EngineConfig::default());
    // Let both flows leave slow start and the queue build, and BBR leave STARTUP and DRAIN:
    // with CUBIC's queue in the path a round trip is long, and DRAIN can last seconds.
    std::thread::sleep(Duration::from_secs(8));
    let settle = Instant::now();
    loop {
        let phase = view(&read(&lab, &mut diag, &mut engine).snap, &bbr).derived.phase;
        if matches!(phase, Some(Phase::ProbeBw(_) | Phase::ProbeRtt)) {
            break;
        }
        assert!(settle.elapsed() < Duration::from_secs(40), "BBR never left {phase:?} in 48 s");
        std::thread::sleep(Duration::from_millis(250));
    }

    let mut probe_bw = 0;
    const READS: usize = 10;
    for i in 0..READS {
        let r = read(&lab, &mut diag, &mut engine);
        for (f, cc) in [(&bbr, "bbr"), (&cubic, "cubic")] {
            let (b, a, v) = (of(&r.before, f), of(&r.after, f), view(&r.snap, f));
            let info = &v.record.tcp_info;
            assert_eq!(v.record.cc.as_deref(), Some(cc));
            assert_eq!(b.cc.as_deref(), Some(cc));
            let ms = |us: Option<u32>| us.unwrap() as f64 / 1000.0;
            between("rtt", ms(info.srtt_us()), b.rtt_ms, a.rtt_ms, 0.001, 0.02);
            between("minrtt", ms(info.min_rtt_us()), b.minrtt_ms, a.minrtt_ms, 0.001, 0.0);
            between(
                "cwnd",
                info.snd_cwnd_segs().unwrap() as f64,
                b.cwnd.map(f64::from),
                a.cwnd.map(f64::from),
                0.0,
                0.1,
            );
            let wnd = |s: &SsSocket| s.snd_wnd.map(f64::from);
            let ours = bbrtop_core::columns::SND_WND.base_value(&v).expect("snd_wnd");
            between("snd_wnd", ours, wnd(b), wnd(a), 0.0, 0.0);
            let bps = |v: Option<u64>| v.unwrap() as f64 * 8.0;
            between(
                "pacing_rate",
                bps(info.pacing_rate_bytes_per_sec()),
                b.pacing_rate_bps,
                a.pacing_rate_bps,
                8.0,
                0.05,
            );
            between(
                "delivery_rate",
                bps(info.delivery_rate_bytes_per_sec()),
                b.delivery_rate_bps,
                a.delivery_rate_bps,
                8.0,
                0.1,
            );
        }
        let (b, a, v) = (of(&r.before, &bbr), of(&r.after, &bbr), view(&r.snap, &bbr));
        let info = v.record.bbr.expect("bbr info over netlink");
        between("bbr bw", info.bw_bytes_per_sec as f64 * 8.0, b.bbr_bw_bps, a.bbr_bw_bps, 8.0, 0.05);
        between("bbr mrtt", info.min_rtt_us as f64 / 1000.0, b.bbr_mrtt_ms, a.bbr_mrtt_ms, 0.001, 0.0);
        between("bbr cwnd_gain", info.cwnd_gain, b.bbr_cwnd_gain, a.bbr_cwnd_gain, 0.001, 0.0);
        match v.derived.phase {
            Some(Phase::ProbeBw(_)) => probe_bw += 1,
            Some(Phase::ProbeRtt) => {}
            p => panic!("read {i}: a settled BBR flow is in PROBE_BW (or its periodic PROBE_RTT), got {p:?}"),
        }
        let c = view(&r.snap, &cubic);
        let ratio = c.derived.inflation_ratio.expect("cubic inflation ratio");
        assert!(ratio > 1.5, "read {i}: CUBIC through a deep buffer is inflated, got {ratio:.2}x");
        std::thread::sleep(Duration::from_millis(300));
    }
    // PROBE_RTT interrupts PROBE_BW every 10 s for 200 ms plus a round trip, and a round trip
    // through CUBIC's standing queue is long: PROBE_BW must still hold most reads.
    assert!(probe_bw > READS / 2, "BBR in PROBE_BW at {probe_bw} of {READS} reads");
}
