//! The lab's path measured as a path: delay error, the bottleneck's rate over 10 ms windows and
//! the bursts that leave it (src/lab/fidelity.rs). Privileged. The figures are printed (README,
//! "How faithful the lab is"); the checks are on what the configuration bounds, not on speed.

mod support;

use bbrtop::lab::fidelity::{self, Fidelity};
use bbrtop::lab::run::lab_config;
use bbrtop::lab::scenario::Scenario;
use bbrtop::lab::{Lab, LabConfig};
use support::guard;

fn measure(cfg: LabConfig) -> Fidelity {
    let lab = Lab::new(cfg.clone()).expect("lab");
    let one_way = cfg.delay.unwrap_or_default();
    let f = fidelity::probe(&lab, cfg.rate_bit_per_sec, one_way, cfg.burst_bytes).expect("probe");
    eprintln!("{}", serde_json::to_string(&f).unwrap());
    f
}

#[test]
fn root_the_bufferbloat_path_is_what_it_claims() {
    if !guard::lab("lab fidelity test") {
        return;
    }
    let cfg = lab_config(&Scenario::Bufferbloat.plan());
    let f = measure(cfg.clone());
    assert!(f.received * 10 >= f.sent * 9, "most probes arrive: {} of {}", f.received, f.sent);
    // The line holds packets for the delay it is given: the median within 10% of 20 ms.
    let d = f.delay_error_ms.expect("delay figures");
    assert!(d.p50.abs() < 0.1 * f.one_way_ms, "median delay error {} ms", d.p50);
    // The bottleneck delivers its rate: the median 10 ms window within 15% of it.
    let w = f.window_rate.expect("rate figures");
    assert!((0.85..=1.15).contains(&w.p50), "median 10 ms rate {} of the link", w.p50);
    // No train leaves the bottleneck longer than its bucket holds (plus the packet that was
    // being sent when the bucket filled).
    let b = f.burst_packets.expect("burst figures");
    let bucket = f64::from(cfg.burst_bytes) / 1500.0;
    assert!(b.max <= bucket.ceil() + 1.0, "a train of {} packets from a {bucket:.1}-packet bucket", b.max);
}
