//! `bbrtop experiment`: a congestion control per new connection of one cgroup, drawn at random
//! by arm shares, for as long as the command runs; then a summary per arm.

use super::Failure;
use crate::experiment::attach::{Plan, StartError, preflight};
use crate::experiment::{Arm, ArmCount, MAX_PORTS, Unit};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// The cgroup v2 whose new connections take part: absolute, or relative to the cgroup2 mount
    /// (`system.slice/nginx.service`).
    #[arg(long, value_name = "PATH")]
    pub cgroup: PathBuf,
    /// An arm, CC=PERCENT (`bbr=10%`), 2 to 4 of them summing to 100%; the first is the control.
    #[arg(long = "arm", value_name = "CC=PERCENT", required = true, value_parser = |s: &str| s.parse::<Arm>())]
    pub arms: Vec<Arm>,
    /// Stop after this long (default: until SIGINT or SIGTERM).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// What one draw is for: each connection, each peer address, or each peer's /24 or /64.
    #[arg(long, value_name = "UNIT", default_value_t = Unit::Connection)]
    pub unit: Unit,
    /// Only connections on this local port (repeatable, up to 8; default: all).
    #[arg(long = "port", value_name = "N")]
    pub ports: Vec<u16>,
    /// The hash's seed (default: random); the same seed draws the same arms again.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Count the arms connections would get, and change no connection's cc.
    #[arg(long)]
    pub dry_run: bool,
    /// Allow the cgroup2 root, which is every process of the host.
    #[arg(long)]
    pub whole_host: bool,
    /// How often to log a status line.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = humantime::parse_duration)]
    pub interval: Duration,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The summary printed at the end.
#[derive(Debug, serde::Serialize)]
pub struct Summary {
    pub cgroup: PathBuf,
    pub unit: Unit,
    pub seed: u64,
    pub dry_run: bool,
    pub seconds: f64,
    pub arms: Vec<ArmCount>,
}

fn failure(e: StartError) -> Failure {
    match e {
        StartError::Usage(s) => Failure::Usage(s),
        StartError::Privilege(s) => Failure::Privilege(s),
        StartError::Kernel(s) => Failure::Runtime(anyhow::anyhow!(s)),
    }
}

pub fn run(a: ExperimentArgs) -> Result<(), Failure> {
    if a.ports.len() > MAX_PORTS {
        return Err(Failure::Usage(format!("at most {MAX_PORTS} --port")));
    }
    let dir = preflight(&a.arms, &a.cgroup, a.whole_host).map_err(failure)?;
    let stop = super::startup::signals()?;
    let plan = Plan {
        arms: a.arms.clone(),
        unit: a.unit,
        seed: a.seed.unwrap_or_else(|| fastrand::u64(..)),
        ports: a.ports.clone(),
        dry_run: a.dry_run,
    };
    let counts = attached(&plan, &dir, &a, &stop)?;
    let summary = Summary {
        cgroup: dir,
        unit: plan.unit,
        seed: plan.seed,
        dry_run: plan.dry_run,
        seconds: counts.1.as_secs_f64(),
        arms: counts.0,
    };
    print(&summary, a.json)
}

#[cfg(feature = "bpf")]
fn attached(
    plan: &Plan,
    dir: &std::path::Path,
    a: &ExperimentArgs,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(Vec<ArmCount>, Duration), Failure> {
    use std::sync::atomic::Ordering;
    let mut obj = std::mem::MaybeUninit::uninit();
    let running = crate::experiment::attach::start(&mut obj, plan, dir).map_err(failure)?;
    tracing::info!(cgroup = %dir.display(), unit = %plan.unit, seed = plan.seed, dry_run = plan.dry_run, "experiment attached");
    let started = std::time::Instant::now();
    let mut next = started + a.interval;
    while !stop.load(Ordering::Relaxed) && a.duration.is_none_or(|d| started.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        if std::time::Instant::now() >= next {
            next += a.interval;
            let line: Vec<String> =
                running.counts().iter().map(|c| format!("{}={}", c.cc, c.assigned)).collect();
            tracing::info!(assigned = %line.join(" "), "experiment running");
        }
    }
    let counts = running.counts();
    drop(running);
    Ok((counts, started.elapsed()))
}

#[cfg(not(feature = "bpf"))]
fn attached(
    _: &Plan,
    _: &std::path::Path,
    _: &ExperimentArgs,
    _: &std::sync::atomic::AtomicBool,
) -> Result<(Vec<ArmCount>, Duration), Failure> {
    Err(Failure::Runtime(anyhow::anyhow!(
        "experiments need eBPF: this bbrtop was built without the bpf feature"
    )))
}

fn print(s: &Summary, json: bool) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let res = if json {
        serde_json::to_writer_pretty(&mut out, s).map_err(std::io::Error::other).and_then(|()| writeln!(out))
    } else {
        let verb = if s.dry_run { "would have assigned" } else { "assigned" };
        let mut text = format!(
            "experiment on {} for {:.1}s, unit {}, seed {}{}\n{:<16} {:>8} {:>20} {:>12} {:>11}\n",
            s.cgroup.display(),
            s.seconds,
            s.unit,
            s.seed,
            if s.dry_run { " (dry run: no cc changed)" } else { "" },
            "arm",
            "share",
            verb,
            "setsockopt failed",
            "redirected"
        );
        for c in &s.arms {
            text += &format!(
                "{:<16} {:>7}% {:>20} {:>12} {:>11}\n",
                c.cc, c.percent, c.assigned, c.setsockopt_failures, c.redirected
            );
        }
        out.write_all(text.as_bytes())
    };
    res.map_err(|e| Failure::Runtime(anyhow::anyhow!("writing the summary: {e}")))
}
