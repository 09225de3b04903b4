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
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct LabArgs {
    /// bufferbloat (10 Mbit/s, 40 ms, 1000-packet buffer), lossy (100 Mbit/s, 100 ms, 1% loss),
    /// ab (one BBR and one CUBIC flow sharing a path) or shallow (the two sharing 20 Mbit/s,
    /// 40 ms, a 7-packet buffer: BBR's retransmits and CUBIC's share).
    #[arg(value_parser = |s: &str| s.parse::<Scenario>(), required_unless_present = "cleanup")]
    pub scenario: Option<Scenario>,
    /// Remove the namespaces of labs whose process is gone (killed, or cut short), and run no
    /// scenario. A run does this too before it builds its own; a live lab's are never touched.
    #[arg(long, conflicts_with_all = ["scenario", "json", "tui"])]
    pub cleanup: bool,
    /// How long each flow runs (flows that share the path run together for this long).
    #[arg(long, default_value = "20s", value_parser = parse_positive_duration)]
    pub duration: Duration,
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
            let r = run::run(scenario, duration, &s, |snap| p.publish(Arc::clone(snap)));
            // The run is over: let the UI end too.
            s.store(true, Ordering::Relaxed);
            r
        })
        .context("starting the lab")?;
    let sys = crate::tui::system::SystemInfo::read(None);
    let ui = crate::tui::ui_loop(&published, stop, sys);
    stop.store(true, Ordering::Relaxed);
    let report = runner.join().map_err(|_| Failure::Runtime(anyhow::anyhow!("the lab thread panicked")))?;
    ui?;
    report.map_err(|e| Failure::Runtime(e.into()))
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
    let stop = super::startup::signals()?;
    let report = if a.tui {
        with_tui(scenario, a.duration, &stop)?
    } else {
        eprintln!("bbrtop lab {scenario}: running (Ctrl-C stops early and cleans up)");
        run::run(scenario, a.duration, &stop, |_| {}).map_err(|e| Failure::Runtime(e.into()))?
    };
    if a.json {
        crate::output::json::write_line(&mut std::io::stdout().lock(), &report)
            .context("writing to stdout")?;
    } else {
        print!("{}", report.render());
    }
    Ok(())
}
