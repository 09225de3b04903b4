//! How long from a CUBIC flow's start (through the lab's deep buffer) to its alert in a real
//! Alertmanager, over 10 onsets, with `bbrtop export` polling every 250 ms and the rule's 5 s
//! hold. Privileged (a lab) and it needs prometheus-alertmanager.
//!
//!     cargo bench --bench alert_latency
//!
//! It prints the latencies and asserts nothing about time.

#[path = "../tests/support/mod.rs"]
mod support;

use support::alert_rig::Rig;
use support::guard;
use support::tools::have;

fn main() {
    if !guard::lab("the alert latency benchmark") || !have("prometheus-alertmanager") {
        return;
    }
    let mut rig = Rig::start();
    let mut secs: Vec<f64> = (0..10)
        .map(|i| {
            let (_, took, flow) = rig.onset();
            rig.lab.stop_flow(&flow);
            rig.wait_resolved();
            println!("onset {i}: {:.2} s", took.as_secs_f64());
            took.as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    println!(
        "alert latency over 10 onsets (hold 5 s, poll 250 ms): min {:.2} s, median {:.2} s, max {:.2} s",
        secs[0], secs[5], secs[9]
    );
}
