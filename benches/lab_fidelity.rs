//! The highest rate whose delay error stays under 1 ms at the 99th percentile with the path 90%
//! loaded (the rate the lossy scenario runs at): the lab's delay line measured at 50 to 800
//! Mbit/s. Privileged (a lab); about a minute.
//!
//!     cargo bench --bench lab_fidelity
//!
//! It prints a table and asserts nothing about time.

#[path = "../tests/support/mod.rs"]
mod support;

use bbrtop::lab::fidelity;
use bbrtop::lab::{Lab, LabConfig};
use std::time::Duration;
use support::guard;

fn main() {
    if !guard::lab("lab fidelity sweep") {
        return;
    }
    let one_way = Duration::from_millis(50);
    println!("{:>10} {:>10} {:>10} {:>10} {:>10}", "Mbit/s", "p50 ms", "p99 ms", "max ms", "delivered");
    for mbit in [50u64, 100, 200, 300, 400, 800] {
        let rate = mbit * 1_000_000;
        let cfg = LabConfig {
            rate_bit_per_sec: rate,
            burst_bytes: bbrtop::lab::burst_for(rate),
            delay: Some(one_way),
            ..LabConfig::default()
        };
        let lab = Lab::new(cfg.clone()).expect("lab");
        let (d, delivered) =
            fidelity::delay_under_load(&lab, cfg.rate_bit_per_sec, one_way, 0.9, 2).expect("probe");
        let d = d.unwrap_or_default();
        println!("{mbit:>10} {:>10.3} {:>10.3} {:>10.3} {:>10.3}", d.p50, d.p99, d.max, delivered);
    }
}
