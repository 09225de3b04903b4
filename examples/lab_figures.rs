//! Prints a lab's figures: per second, the rate a flow achieves and its srtt / min rtt per `ss`,
//! for CUBIC then BBR, each alone through the default lab (20 Mbit/s tbf, 1.5 MB queue).
//! Needs CAP_NET_ADMIN and CAP_SYS_ADMIN: `cargo run --example lab_figures [SECONDS]`.

use bbrtop::lab::ss::parse_ss_tin;
use bbrtop::lab::{Lab, LabConfig};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secs: u32 = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(15);
    for cc in ["cubic", "bbr"] {
        let mut lab = Lab::new(LabConfig::default())?;
        let flow = lab.start_flow(cc)?;
        let mut last = (Instant::now(), 0u64);
        for i in 1..=secs {
            std::thread::sleep(Duration::from_secs(1));
            let out = lab.run_in_sender(|| std::process::Command::new("ss").args(["-tinH"]).output())??;
            let ss = parse_ss_tin(&String::from_utf8_lossy(&out.stdout));
            let Some(s) = ss.iter().find(|s| s.local == Some(flow.local)) else { continue };
            // Goodput from bytes acked between two samples.
            let acked = s.bytes_acked.unwrap_or(0);
            let mbit = acked.saturating_sub(last.1) as f64 * 8.0 / last.0.elapsed().as_secs_f64() / 1e6;
            last = (Instant::now(), acked);
            println!(
                "{cc:5} t={i:2}s {mbit:5.2} Mbit/s srtt {:7.2} ms min rtt {:.3} ms cwnd {}",
                s.rtt_ms.unwrap_or(f64::NAN),
                s.minrtt_ms.unwrap_or(f64::NAN),
                s.cwnd.unwrap_or(0)
            );
        }
    }
    Ok(())
}
