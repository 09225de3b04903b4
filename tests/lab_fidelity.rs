//! The lab's path measured as a path: delay error, the bottleneck's rate over 10 ms windows and
//! the bursts that leave it (src/lab/fidelity.rs), and the meter every run carries
//! (src/lab/meter.rs) naming a machine too loaded to keep the path. Privileged. The figures are
//! printed (docs/lab.md, "How faithful the lab is"); the checks are on what the configuration bounds,
//! not on speed. The tests take turns: the loaded one would disturb the other.

mod support;

use bbrtop::lab::fidelity::{self, Fidelity};
use bbrtop::lab::meter::Meter;
use bbrtop::lab::path_check::PathCheck;
use bbrtop::lab::run::lab_config;
use bbrtop::lab::scenario::Scenario;
use bbrtop::lab::{Lab, LabConfig};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use support::guard;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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

/// Threads that spin until dropped: four per core, so the delay line's threads wait their turn.
struct Busy {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Busy {
    fn start() -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        let threads = (0..4 * cores)
            .map(|_| {
                let s = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !s.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Busy { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A run's meter on a machine whose cores are taken: the delay line falls behind, and the check
/// says so in words (issue 38: BBR's median 88 ms beside a virtual machine, 51.9 ms without,
/// and no warning). Some 5 s.
#[test]
fn root_a_loaded_machine_is_named_as_the_paths_lag() {
    if !guard::lab("lab fidelity test") {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new(lab_config(&Scenario::Ab.plan())).expect("lab");
    let meter = Meter::start(&lab).expect("meter");
    let busy = Busy::start();
    std::thread::sleep(Duration::from_secs(3));
    drop(busy);
    let c = PathCheck::of(lab.target(), &[meter.finish(&lab)]);
    eprintln!("{}", c.summary());
    assert!(c.probes_sent > 100, "{c:?}");
    assert!(c.fell_behind, "the loaded machine passed: {}", c.summary());
    assert!(c.why.iter().any(|w| w.starts_with("the delay line added")), "{:?}", c.why);
}
