//! `bbrtop lab SCENARIO`: the guides' scenarios on this machine, with a report.

use super::Failure;
use super::args::parse_duration_in;
use crate::caps::{Cap, CapSet};
use crate::engine::snapshot::Snapshot;
use crate::lab::run;
use crate::lab::scenario::Report;
use crate::lab::scenario::Scenario;
use crate::rule::RuleConfig;
use crate::runtime::Published;
use anyhow::Context;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `--quick`'s duration per flow.
const QUICK: Duration = Duration::from_secs(20);

#[derive(Args, Debug)]
pub struct LabArgs {
    /// bufferbloat (10 Mbit/s, 40 ms, 1000-packet buffer), lossy (200 Mbit/s, 100 ms, 1% loss),
    /// ab (one BBR and one CUBIC flow sharing a path) or shallow (the two sharing 20 Mbit/s,
    /// 40 ms, a 7-packet buffer: BBR's retransmits and CUBIC's share).
    #[arg(value_parser = |s: &str| s.parse::<Scenario>(), required_unless_present = "cleanup")]
    pub scenario: Option<Scenario>,
    /// Remove the namespaces of labs whose process is gone (killed, or cut short), and run no
    /// scenario. A run does this too before it builds its own; a live lab's are never touched.
    #[arg(long, conflicts_with_all = ["scenario", "json", "tui"])]
    pub cleanup: bool,
    /// How long each flow runs (flows that share the path run together for this long). By
    /// default as long as the guide's run: 120 s (bufferbloat, ab) or 30 s (lossy).
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// A short run: 20 s per flow, enough for the shape of the result, not its figures.
    #[arg(long, conflicts_with = "duration")]
    pub quick: bool,
    /// Write SVG plots into DIR: RTT over time per flow, and the RTT CDF per congestion control.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Show the run live in the terminal UI (q ends the run early); the report follows.
    #[arg(long)]
    pub tui: bool,
}

/// Runs the scenario on a thread of its own and shows its snapshots in the UI; quitting the UI
/// stops the run (its report covers what ran).
fn with_tui(scenario: Scenario, duration: Duration, stop: &Arc<AtomicBool>) -> Result<Report, Failure> {
    let published = Published::new(Arc::new(Snapshot::empty(RuleConfig::default())));
    let (p, s) = (Arc::clone(&published), Arc::clone(stop));
    let runner = std::thread::Builder::new()
        .name("bbrtop-lab".into())
        .spawn(move || {
            let r = run::run(scenario, duration, &s, |t| p.publish(Arc::clone(t.snap)));
            // The run is over: let the UI end too.
            s.store(true, Ordering::Relaxed);
            r
        })
        .context("starting the lab")?;
    let sys = crate::system::SystemInfo::read(None);
    let ui = crate::tui::ui_loop(&published, stop, sys);
    stop.store(true, Ordering::Relaxed);
    let report = runner.join().map_err(|_| Failure::Runtime(anyhow::anyhow!("the lab thread panicked")))?;
    ui?;
    report.map_err(|e| Failure::Runtime(e.into()))
}

/// "bufferbloat [1/2] cubic  12/120 s  9.61 Mbit/s  RTT 1043 ms".
fn progress_line(
    scenario: Scenario,
    group: (usize, usize),
    elapsed: Duration,
    total: Duration,
    flows: &[run::LiveFlow],
) -> String {
    let mut s = format!(
        "{scenario} [{}/{}] {:>4}/{} s",
        group.0,
        group.1,
        elapsed.as_secs().min(total.as_secs()),
        total.as_secs()
    );
    for f in flows {
        let rate = f.rate_bits_per_sec.map_or("-".into(), |r| format!("{:.2} Mbit/s", r / 1e6));
        let rtt = f.rtt_ms.map_or("-".into(), |r| format!("{r:.0} ms"));
        s.push_str(&format!("  {}: {rate}, RTT {rtt}", f.cc));
    }
    s
}

fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    parse_duration_in(s, "duration", Duration::from_secs(1), Duration::from_secs(3600))
}

pub fn run(a: LabArgs) -> Result<(), Failure> {
    let missing = CapSet::effective().missing(&[Cap::NetAdmin, Cap::SysAdmin]);
    if !missing.is_empty() {
        return Err(Failure::Privilege(format!(
            "the lab builds network namespaces and shapes links: it needs {}",
            crate::caps::names(&missing)
        )));
    }
    let Some(scenario) = a.scenario else {
        for name in crate::lab::owner::remove_dead() {
            println!("removed {name}");
        }
        return Ok(());
    };
    let duration = match (a.quick, a.duration) {
        (true, _) => QUICK,
        (false, Some(d)) => d,
        (false, None) => scenario.guide_duration(),
    };
    let stop = super::startup::signals()?;
    let report = if a.tui {
        with_tui(scenario, duration, &stop)?
    } else {
        let runs = scenario.plan().flows.len();
        let mut err = std::io::stderr();
        // The progress line only on a terminal, and not beside JSON.
        let progress = !a.json && err.is_terminal();
        if !a.json {
            let each = if scenario.plan().sequential { "each flow in turn" } else { "flows together" };
            eprintln!(
                "bbrtop lab {scenario}: {} s, {each} ({runs} flows; Ctrl-C stops early and cleans up)",
                duration.as_secs()
            );
        }
        let report = run::run(scenario, duration, &stop, |t| {
            if progress {
                let _ =
                    write!(err, "\r{}\x1b[K", progress_line(scenario, t.group, t.elapsed, t.total, t.flows));
            }
        });
        if progress {
            let _ = write!(err, "\r\x1b[K");
        }
        report.map_err(|e| Failure::Runtime(e.into()))?
    };
    if let Some(dir) = &a.plot {
        let files =
            crate::lab::plot::write(&report, dir).map_err(|e| Failure::Runtime(anyhow::anyhow!(e)))?;
        if !a.json {
            for f in files {
                eprintln!("wrote {}", f.display());
            }
        }
    }
    if a.json {
        crate::output::json::write_line(&mut std::io::stdout().lock(), &report)
            .context("writing to stdout")?;
    } else {
        print!("{}", report.render());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_shows_the_flow_time_rate_and_rtt() {
        let flows = [
            run::LiveFlow { cc: "cubic".into(), rate_bits_per_sec: Some(9_610_000.0), rtt_ms: Some(1043.4) },
            run::LiveFlow { cc: "bbr".into(), rate_bits_per_sec: None, rtt_ms: None },
        ];
        let s = progress_line(
            Scenario::Ab,
            (1, 1),
            Duration::from_millis(12_400),
            Duration::from_secs(120),
            &flows,
        );
        assert_eq!(s, "ab [1/1]   12/120 s  cubic: 9.61 Mbit/s, RTT 1043 ms  bbr: -, RTT -");
        // The last sample can land just past the end.
        let s = progress_line(Scenario::Lossy, (2, 2), Duration::from_secs(31), Duration::from_secs(30), &[]);
        assert_eq!(s, "lossy [2/2]   30/30 s");
    }
}
