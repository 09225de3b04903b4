//! `bbrtop experiment`: a congestion control per new connection of one cgroup, drawn at random
//! by arm shares, for as long as the command runs, watched by the engine (its counters and
//! response times kept per arm) and by the harm guard; then a summary and a verdict per arm and
//! group. This module wires: its flags, the checks, the program, the pipeline, the server and the
//! TUI around the loop of `crate::experiment::watch`, and the summary printed.

pub use crate::experiment::summary::{Summary, text};

use super::Failure;
use super::args::parse_duration;
use super::peers::PeerArgs;
use crate::experiment::attach::{Plan, StartError, preflight};
use crate::experiment::status::Status;
use crate::experiment::{Arm, MAX_PORTS, Unit};
use bbrtop_core::sequential::Bounds;
use bbrtop_core::stats::Margin;
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
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// What one draw is for: each peer address (the default), each peer's /24 or /64, or each
    /// connection. A client's connections share its bottleneck: drawn per connection, one arm's
    /// traffic queues the other's, and the difference is charged to the wrong arm.
    #[arg(long, value_name = "UNIT", default_value_t = Unit::default())]
    pub unit: Unit,
    /// Only connections on this local port (repeatable, up to 8; default: all).
    #[arg(long = "port", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
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
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Watch it in the terminal UI (its Experiment view, key 6) while it runs; the summary is
    /// printed when the UI is left, which ends the experiment.
    #[arg(long)]
    pub tui: bool,
    #[command(flatten)]
    pub guard: GuardArgs,
    #[command(flatten)]
    pub peers: PeerArgs,
    /// Serve /metrics while the experiment runs (the exporter's families, the counters and
    /// response times with an `arm` label, and the experiment's own); off unless given.
    #[arg(long = "web.listen-address", value_name = "ADDR", value_parser = super::export::parse_listen)]
    pub listen: Option<String>,
    /// TLS and basic auth for that endpoint, as the exporter's (`--web.config.file`).
    #[arg(long = "web.config.file", value_name = "FILE", requires = "listen")]
    pub web_config: Option<PathBuf>,
}

/// The harm guard: when a test arm crosses a bound without a break for the hold time, its new
/// connections go to the control from then on (docs/experiment.md).
#[derive(Args, Clone, Debug)]
pub struct GuardArgs {
    /// The test arm's retransmitted/sent segments may not be surely above this (its confidence
    /// sequence's lower end).
    #[arg(long = "guard.retrans-ratio", value_name = "PERCENT", default_value = "1%", value_parser = parse_fraction)]
    pub retrans_ratio: f64,
    /// The test arm's p95 response delivery time may not be surely worse than the control's by
    /// more than this share of it (and 1 ms).
    #[arg(long = "guard.p95-margin", value_name = "PERCENT", default_value = "5%", value_parser = parse_fraction)]
    pub p95_margin: f64,
    /// The control's share of both arms' goodput per connection may not fall below this.
    #[arg(long = "guard.control-share", value_name = "PERCENT", default_value = "35%", value_parser = parse_fraction)]
    pub control_share: f64,
    /// How long a bound must be crossed without a break before the guard stops the arm.
    #[arg(long = "guard.hold", value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub hold: Duration,
}

impl GuardArgs {
    pub fn bounds(&self) -> Bounds {
        let base = Bounds::default();
        Bounds {
            max_retrans_ratio: self.retrans_ratio,
            p95_margin: Margin { rel: self.p95_margin, ..base.p95_margin },
            min_control_goodput_share: self.control_share,
            hold: self.hold,
            ..base
        }
    }
}

/// `1%` or `0.01`: a fraction between 0 and 1.
fn parse_fraction(s: &str) -> Result<f64, String> {
    let (num, scale) = match s.trim().strip_suffix('%') {
        Some(p) => (p, 100.0),
        None => (s.trim(), 1.0),
    };
    let v =
        num.parse::<f64>().map_err(|_| format!("{s:?} is not a percent (1%) or a fraction (0.01)"))? / scale;
    if (0.0..=1.0).contains(&v) { Ok(v) } else { Err(format!("{s:?} is not between 0% and 100%")) }
}

fn failure(e: StartError) -> Failure {
    match e {
        StartError::Usage(s) => Failure::Usage(s),
        StartError::Privilege(s) => Failure::Privilege(s),
        // Like a port in use: the path is taken for now.
        StartError::Conflict(s) | StartError::Kernel(s) => Failure::Runtime(anyhow::anyhow!(s)),
    }
}

pub fn run(a: ExperimentArgs) -> Result<(), Failure> {
    if a.ports.len() > MAX_PORTS {
        return Err(Failure::Usage(format!("at most {MAX_PORTS} --port")));
    }
    use std::io::IsTerminal;
    if a.tui && !(std::io::stdout().is_terminal() && std::io::stdin().is_terminal()) {
        return Err(Failure::Usage("--tui needs a terminal (stdin and stdout)".into()));
    }
    let dir = preflight(&a.arms, &a.cgroup, a.whole_host).map_err(failure)?;
    if let Some(w) = a.unit.warning() {
        tracing::warn!("{w}");
    }
    let stop = super::startup::signals()?;
    let plan = Plan {
        arms: a.arms.clone(),
        unit: a.unit,
        seed: a.seed.unwrap_or_else(|| fastrand::u64(..)),
        ports: a.ports.clone(),
        dry_run: a.dry_run,
    };
    let out = attached(&plan, &dir, &a, &stop)?;
    let summary = Summary {
        cgroup: dir,
        unit: plan.unit,
        seed: plan.seed,
        dry_run: plan.dry_run,
        seconds: out.seconds,
        arms: out.arms,
        figures: out.figures,
        stopped: out.stopped,
        verdicts: out.verdicts,
    };
    print(&summary, a.json)
}

/// The poll settings the experiment's engine runs with: the long-running commands' defaults
/// (every namespace through the walk where eBPF allows it, a poll a second).
#[cfg(feature = "bpf")]
fn poll_defaults() -> super::args::PollArgs {
    #[derive(clap::Parser)]
    struct Only {
        #[command(flatten)]
        poll: super::args::PollArgs,
    }
    <Only as clap::Parser>::parse_from(["bbrtop"]).poll
}

#[cfg(feature = "bpf")]
fn attached(
    plan: &Plan,
    dir: &std::path::Path,
    a: &ExperimentArgs,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Status, Failure> {
    use crate::experiment::status::Latest;
    use crate::experiment::watch::{End, Schedule, Watch};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (peers, geo_files) = a.peers.load()?;
    let web = web(a)?;
    let mut obj = std::mem::MaybeUninit::uninit();
    let mut running = crate::experiment::attach::start(&mut obj, plan, dir).map_err(failure)?;
    let arms = bbrtop_core::seam::Arms(Arc::new(running.arm_map().map_err(failure)?));
    tracing::info!(cgroup = %dir.display(), unit = %plan.unit, seed = plan.seed, dry_run = plan.dry_run, "experiment attached");
    let groups = Arc::clone(&peers.groups);
    let peers = super::peers::Peers { arms: Some(arms), ..peers };
    let geo = Arc::clone(&peers.geo);
    let started = super::startup::start(&poll_defaults(), peers, None, &mut |line| tracing::warn!("{line}"))?;
    // The AS and country databases are read again when their files change, as the exporter's.
    let reload = super::reload::start(geo_files, geo, Arc::clone(&started.stop))
        .map_err(|e| Failure::Runtime(anyhow::anyhow!("starting the database reloader: {e}")))?;
    let status = Arc::new(Latest::default());
    let server = match web {
        Some(w) => Some(serve(w, &started, groups, Arc::clone(&status))?),
        None => None,
    };
    let mut watch = Watch::new(&plan.arms, a.guard.bounds());
    let ended = AtomicBool::new(false);
    let stopping = || {
        stop.load(Ordering::Relaxed) || started.stop.load(Ordering::Relaxed) || ended.load(Ordering::Relaxed)
    };
    // The status is published only where something shows it.
    let shown = (server.is_some() || a.tui).then_some(&*status);
    let latest = || started.runtime.latest();
    let watched = std::thread::scope(|scope| -> Result<(), Failure> {
        // The TUI, when asked, draws on a thread of its own while the guard watches on this one;
        // either ending ends both.
        let ui = a.tui.then(|| {
            let sys = bbrtop_collect::host::system_info(started.netns.as_ref());
            let (published, status, ended) = (started.runtime.published(), &*status, &ended);
            scope.spawn(move || {
                let r = crate::tui::ui_loop_experiment(&published, ended, sys, status);
                ended.store(true, Ordering::Relaxed);
                r
            })
        });
        let schedule = Schedule { every: a.interval, until: a.duration };
        if watch.run(&mut running, schedule, stopping, latest, shown) == End::CgroupRemoved {
            tracing::warn!(cgroup = %dir.display(), "the cgroup was removed: the experiment ends");
        }
        ended.store(true, Ordering::Relaxed);
        match ui.map(|t| t.join()) {
            Some(Ok(Err(e))) => Err(Failure::Runtime(e)),
            Some(Err(_)) => Err(Failure::Runtime(anyhow::anyhow!("the terminal UI panicked"))),
            _ => Ok(()),
        }
    });
    let last = watch.last(&running, &latest().totals);
    drop(running);
    if let Some((stop, thread)) = server {
        stop.store(true, Ordering::Relaxed);
        let _ = thread.join();
    }
    started.stop.store(true, Ordering::Relaxed);
    if let Some(thread) = reload {
        let _ = thread.join();
    }
    drop(started);
    watched?;
    Ok(last)
}

/// The listeners and web configuration of `--web.listen-address`, bound before anything is
/// attached, so a port in use is a one-line error at once.
#[cfg(feature = "bpf")]
struct Web {
    listeners: Vec<std::net::TcpListener>,
    security: crate::export::web_config::Security,
}

#[cfg(feature = "bpf")]
fn web(a: &ExperimentArgs) -> Result<Option<Web>, Failure> {
    let Some(listen) = &a.listen else { return Ok(None) };
    let security = match &a.web_config {
        Some(p) => crate::export::web_config::WebConfig::load(p).map_err(Failure::Usage)?,
        None => Default::default(),
    };
    Ok(Some(Web { listeners: super::export::bind_all(std::slice::from_ref(listen))?, security }))
}

/// The exporter's server over the experiment's snapshots, with its status; stopped by the flag
/// it returns.
#[cfg(feature = "bpf")]
fn serve(
    w: Web,
    started: &super::startup::Started,
    groups: std::sync::Arc<bbrtop_core::peer_groups::PeerGroups>,
    status: std::sync::Arc<crate::experiment::status::Latest>,
) -> Result<(std::sync::Arc<std::sync::atomic::AtomicBool>, std::thread::JoinHandle<()>), Failure> {
    use crate::export::server::{App, Limits, Options};
    let options =
        Options { poll_interval: Duration::from_secs(1), experiment: Some(status), ..Options::default() };
    let app = std::sync::Arc::new(App::new(started.runtime.published(), groups, w.security, options));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&stop);
    let bound: Vec<String> =
        w.listeners.iter().filter_map(|l| l.local_addr().ok()).map(|a| a.to_string()).collect();
    tracing::info!(address = bound.join(","), "serving /metrics");
    let thread = std::thread::Builder::new()
        .name("bbrtop-http".into())
        .spawn(move || {
            if let Err(e) = super::export::serve_until(w.listeners, app, Limits::default(), flag, false) {
                tracing::error!("serving /metrics: {e}");
            }
        })
        .map_err(|e| Failure::Runtime(anyhow::anyhow!("starting the HTTP thread: {e}")))?;
    Ok((stop, thread))
}

#[cfg(not(feature = "bpf"))]
fn attached(
    _: &Plan,
    _: &std::path::Path,
    _: &ExperimentArgs,
    _: &std::sync::atomic::AtomicBool,
) -> Result<Status, Failure> {
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
        out.write_all(text(s).as_bytes())
    };
    res.map_err(|e| Failure::Runtime(anyhow::anyhow!("writing the summary: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_bounds_are_percents_or_fractions() {
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction("0.35"), Ok(0.35));
        assert_eq!(parse_fraction(" 5% "), Ok(0.05));
        for bad in ["", "x%", "150%", "-1%", "2"] {
            let e = parse_fraction(bad).unwrap_err();
            assert!(!e.contains('\n') && e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
        let a = GuardArgs {
            retrans_ratio: 0.02,
            p95_margin: 0.1,
            control_share: 0.3,
            hold: Duration::from_secs(9),
        };
        let b = a.bounds();
        assert_eq!((b.max_retrans_ratio, b.p95_margin.rel, b.min_control_goodput_share), (0.02, 0.1, 0.3));
        assert_eq!((b.p95_margin.abs, b.hold, b.alpha), (0.001, Duration::from_secs(9), 0.05));
    }
}
