//! `bbrtop lab SCENARIO`: the guides' scenarios on this machine, with a report.

use super::Failure;
use super::args::parse_duration_in;
use crate::lab::rollout::shape::{Mix, Shape};
use crate::lab::run;
use crate::lab::scenario::Report;
use crate::lab::scenario::Scenario;
use crate::record::{RecordOptions, Recorder};
use crate::runtime::Published;
use anyhow::Context;
use bbrtop_collect::caps::{Cap, CapSet};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `--quick`'s duration per flow.
const QUICK: Duration = Duration::from_secs(20);

/// What `bbrtop lab` runs: one of the guides' flow scenarios, or the rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Guide(Scenario),
    Rollout,
}

/// The rollout's line in `--help`.
const ROLLOUT: (&str, &str) = (
    "rollout",
    "the edge guide's rollout: four boxes (one BBR, three CUBIC) answering request/response \
     traffic to mobile, distant and local clients, with the response times per box and who got the \
     win per AS (--quick, --duration and --json apply)",
);

/// Every scenario the argument takes: the guides' (their one list) and the rollout.
const WHICH: [Which; Scenario::ALL.len() + 1] = {
    let mut all = [Which::Rollout; Scenario::ALL.len() + 1];
    let mut i = 0;
    while i < Scenario::ALL.len() {
        all[i] = Which::Guide(Scenario::ALL[i].0);
        i += 1;
    }
    all
};

impl clap::ValueEnum for Which {
    fn value_variants<'a>() -> &'a [Self] {
        &WHICH
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let (name, about) = match self {
            Which::Guide(s) => (s.name(), s.about()),
            Which::Rollout => ROLLOUT,
        };
        Some(clap::builder::PossibleValue::new(name).help(about))
    }
}

#[derive(Args, Debug)]
pub struct LabArgs {
    /// The scenario: one of the BBR guides' (each flow's RTT, throughput and retransmits set
    /// beside the guide's figures), or the edge guide's rollout.
    #[arg(value_enum, required_unless_present = "cleanup")]
    pub scenario: Option<Which>,
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
    /// Run each flow of the scenario as N parallel connections of its congestion control on the
    /// same path (1, the default, is the guide's run): several sockets per cc, which `bbrtop
    /// compare` needs to give a confidence interval over sockets.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=32))]
    pub flows: u16,
    /// Record the run's polls (every 100 ms sample of the sender namespace) into DIR, one
    /// recording per group of flows that ran together, named for its ccs: DIR/cubic and DIR/bbr
    /// for bufferbloat, so `bbrtop compare DIR/cubic DIR/bbr` compares the two.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Write SVG plots into DIR: RTT over time per flow, and the RTT CDF per congestion control.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when the emulated path fell behind its target while the run used it (the report
    /// says so with a WARNING line either way, and `fell_behind` in JSON).
    #[arg(long)]
    pub strict: bool,
    /// lab rollout: the client populations, from a YAML file (name, rate, rtt, loss, buffer,
    /// cross_traffic, asn each; the schema in docs/roll-out.md). By default the guide's mobile, distant and
    /// local.
    #[arg(long = "lab.populations.file", value_name = "FILE")]
    pub populations: Option<PathBuf>,
    /// lab rollout: the response sizes and their shares, e.g. 15kB=70%,200kB=25%,2MB=5%. By
    /// default the guide's 8kB=88%,50kB=10%,200kB=2%.
    #[arg(long, value_name = "MIX", value_parser = Mix::parse)]
    pub sizes: Option<Mix>,
    /// lab rollout: no population gets cross traffic (the guide's distant clients download a
    /// file from each box beside the responses).
    #[arg(long = "without-cross-traffic")]
    pub no_cross_traffic: bool,
    /// Show the run live in the terminal UI (q ends the run early); the report follows.
    #[arg(long)]
    pub tui: bool,
}

/// Runs the scenario on a thread of its own and shows its snapshots in the UI; quitting the UI
/// stops the run (its report covers what ran).
fn with_tui(
    scenario: Scenario,
    duration: Duration,
    per_cc: usize,
    stop: &Arc<AtomicBool>,
    mut recordings: Option<Recordings>,
) -> Result<(Report, Option<Recordings>), Failure> {
    let published = Published::new(Arc::new(Snapshot::empty(RuleConfig::default())));
    let (p, s) = (Arc::clone(&published), Arc::clone(stop));
    let runner = std::thread::Builder::new()
        .name("bbrtop-lab".into())
        .spawn(move || {
            let r = run::run(scenario, duration, per_cc, &s, |t| {
                p.publish(Arc::clone(t.snap));
                if let Some(rec) = &mut recordings {
                    rec.tick(t, &s);
                }
            });
            // The run is over: let the UI end too.
            s.store(true, Ordering::Relaxed);
            r.map(|r| (r, recordings))
        })
        .context("starting the lab")?;
    let sys = bbrtop_collect::host::system_info(None);
    let ui = crate::tui::ui_loop(&published, stop, sys);
    stop.store(true, Ordering::Relaxed);
    let report = runner.join().map_err(|_| Failure::Runtime(anyhow::anyhow!("the lab thread panicked")))?;
    ui?;
    report.map_err(|e| Failure::Runtime(e.into()))
}

/// The run's polls, a recording per group of flows (`--record DIR`): DIR/<ccs of the group>.
struct Recordings {
    /// Each group's recording directory, in run order.
    dirs: Vec<PathBuf>,
    /// The group being recorded (0-based) and its recorder.
    open: Option<(usize, Recorder)>,
    done: Vec<PathBuf>,
    sys: SystemInfo,
    /// The first failure: recording stops there, and so does the run.
    failed: Option<anyhow::Error>,
}

impl Recordings {
    /// A directory per group; none may hold a recording already (a second run would be mixed
    /// into the first).
    fn new(dir: &Path, scenario: Scenario, per_cc: usize) -> Result<Recordings, String> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for group in run::groups(&scenario.plan(), per_cc) {
            let d = dir.join(run::group_name(&group));
            if d.read_dir().is_ok_and(|mut e| e.next().is_some()) {
                return Err(format!(
                    "--record: {} is not empty (a recording of an earlier run?)",
                    d.display()
                ));
            }
            dirs.push(d);
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("--record {}: {e}", dir.display()))?;
        Ok(Recordings {
            dirs,
            open: None,
            done: Vec::new(),
            sys: bbrtop_collect::host::system_info(None),
            failed: None,
        })
    }

    fn tick(&mut self, t: &run::Tick, stop: &AtomicBool) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.write(t) {
            self.failed = Some(e);
            stop.store(true, Ordering::Relaxed);
        }
    }

    fn write(&mut self, t: &run::Tick) -> anyhow::Result<()> {
        let group = t.group.0 - 1;
        if self.open.as_ref().is_none_or(|(g, _)| *g != group) {
            self.close()?;
            let dir = self.dirs.get(group).context("a group the plan does not have")?;
            let rec = Recorder::create(dir, RecordOptions::default(), &self.sys)?;
            self.open = Some((group, rec));
        }
        let (g, rec) = self.open.as_mut().context("no recording open")?;
        rec.write(t.snap).with_context(|| format!("recording into {}", self.dirs[*g].display()))
    }

    fn close(&mut self) -> anyhow::Result<()> {
        if let Some((g, rec)) = self.open.take() {
            rec.finish().with_context(|| format!("finishing {}", self.dirs[g].display()))?;
            self.done.push(self.dirs[g].clone());
        }
        Ok(())
    }

    /// Closes the last recording; the directories written, or the first failure.
    fn finish(mut self) -> anyhow::Result<Vec<PathBuf>> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.close()?;
        Ok(self.done)
    }
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

/// The flags that shape a rollout, refused elsewhere.
fn rollout_only(a: &LabArgs) -> Option<&'static str> {
    let given = [
        (a.populations.is_some(), "--lab.populations.file"),
        (a.sizes.is_some(), "--sizes"),
        (a.no_cross_traffic, "--without-cross-traffic"),
    ];
    given.iter().find(|(g, _)| *g).map(|(_, flag)| *flag)
}

/// The rollout's shape: the guide's, or a file's populations (and mix), then the flags.
fn shape(a: &LabArgs) -> Result<Shape, Failure> {
    let mut shape = Shape::default();
    if let Some(path) = &a.populations {
        let flag = "--lab.populations.file";
        let text = bbrtop_collect::files::read_to_string(flag, path, bbrtop_collect::files::Kind::Config)
            .map_err(Failure::Usage)?;
        let file = crate::lab::rollout::shape::parse_file(&text)
            .map_err(|e| Failure::Usage(format!("{flag} {}: {e}", path.display())))?;
        shape.populations = file.populations;
        shape.mix = file.sizes.unwrap_or(shape.mix);
    }
    if let Some(mix) = &a.sizes {
        shape.mix = mix.clone();
    }
    Ok(if a.no_cross_traffic { shape.without_cross_traffic() } else { shape })
}

/// `--strict`: a report whose path fell behind is printed, then the run fails.
fn strict(a: &LabArgs, fell_behind: bool) -> Result<(), Failure> {
    if a.strict && fell_behind {
        return Err(Failure::Runtime(anyhow::anyhow!(
            "the emulated path fell behind its target (--strict): see the report's WARNING"
        )));
    }
    Ok(())
}

pub fn run(a: LabArgs) -> Result<(), Failure> {
    // Usage first: a bad flag or file is said before anything is built.
    let rollout_shape = match a.scenario {
        Some(Which::Rollout) => shape(&a)?,
        _ => match rollout_only(&a) {
            Some(flag) => return Err(Failure::Usage(format!("{flag} applies to lab rollout only"))),
            None => Shape::default(),
        },
    };
    let missing = CapSet::effective().missing(&[Cap::NetAdmin, Cap::SysAdmin]);
    if !missing.is_empty() {
        return Err(Failure::Privilege(format!(
            "the lab builds network namespaces and shapes links: it needs {}",
            bbrtop_collect::caps::names(&missing)
        )));
    }
    let scenario = match a.scenario {
        None => {
            for name in crate::lab::owner::remove_dead() {
                println!("removed {name}");
            }
            return Ok(());
        }
        Some(Which::Rollout) => return rollout(&a, &rollout_shape),
        Some(Which::Guide(s)) => s,
    };
    let duration = match (a.quick, a.duration) {
        (true, _) => QUICK,
        (false, Some(d)) => d,
        (false, None) => scenario.guide_duration(),
    };
    let per_cc = usize::from(a.flows);
    let mut recordings = match &a.record {
        Some(dir) => Some(Recordings::new(dir, scenario, per_cc).map_err(Failure::Usage)?),
        None => None,
    };
    let stop = super::startup::signals()?;
    let report = if a.tui {
        let (report, rec) = with_tui(scenario, duration, per_cc, &stop, recordings)?;
        recordings = rec;
        report
    } else {
        let runs = scenario.plan().flows.len() * per_cc;
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
        let report = run::run(scenario, duration, per_cc, &stop, |t| {
            if progress {
                let _ =
                    write!(err, "\r{}\x1b[K", progress_line(scenario, t.group, t.elapsed, t.total, t.flows));
            }
            if let Some(rec) = &mut recordings {
                rec.tick(t, &stop);
            }
        });
        if progress {
            let _ = write!(err, "\r\x1b[K");
        }
        report.map_err(|e| Failure::Runtime(e.into()))?
    };
    if let Some(rec) = recordings {
        for dir in rec.finish().map_err(Failure::Runtime)? {
            if !a.json {
                eprintln!("recorded {}", dir.display());
            }
        }
    }
    if let Some(dir) = &a.plot {
        let files =
            crate::lab::plot::write(&report, dir).map_err(|e| Failure::Runtime(anyhow::anyhow!(e)))?;
        if !a.json {
            for f in files {
                eprintln!("wrote {}", f.display());
            }
        }
    }
    super::print::report(a.json, &report, Report::render)?;
    // A partial report is printed, but the run did not do what was asked: not a success.
    if let Some(ran) = report.interrupted_after_seconds {
        return Err(Failure::Runtime(anyhow::anyhow!(
            "interrupted after {ran:.0} s of {} s per flow: the report is partial",
            duration.as_secs()
        )));
    }
    strict(&a, report.path_check.as_ref().is_some_and(|c| c.fell_behind))
}

/// `bbrtop lab rollout`.
fn rollout(a: &LabArgs, shape: &Shape) -> Result<(), Failure> {
    use crate::lab::rollout::{self, RolloutConfig};
    let refused = [(a.tui, "--tui"), (a.record.is_some(), "--record"), (a.flows != 1, "--flows")];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(Failure::Usage(format!(
            "{flag} does not apply to lab rollout (--quick, --duration, --plot and --json do)"
        )));
    }
    let mut cfg = if a.quick { RolloutConfig::quick() } else { RolloutConfig::full() };
    if let Some(d) = a.duration {
        cfg.duration = d;
    }
    let stop = super::startup::signals()?;
    let mut err = std::io::stderr();
    let progress = !a.json && err.is_terminal();
    if !a.json {
        eprintln!(
            "bbrtop lab rollout: {} s, 4 boxes x {} populations (Ctrl-C stops early and cleans up)",
            cfg.duration.as_secs(),
            shape.populations.len()
        );
    }
    let report = rollout::run(cfg, shape, &stop, |ran| {
        if progress {
            let _ = write!(
                err,
                "\rrollout {:>4}/{} s\x1b[K",
                ran.as_secs().min(cfg.duration.as_secs()),
                cfg.duration.as_secs()
            );
        }
    });
    if progress {
        let _ = write!(err, "\r\x1b[K");
    }
    let report = report.map_err(|e| Failure::Runtime(e.into()))?;
    if let Some(dir) = &a.plot {
        super::print::plot(dir, rollout::plot::FILE, rollout::plot::response_cdf(&report), a.json)?;
    }
    super::print::report(a.json, &report, rollout::report::Report::render)?;
    if let Some(ran) = report.interrupted_after_seconds {
        return Err(Failure::Runtime(anyhow::anyhow!(
            "interrupted after {ran:.0} s of {} s: the report is partial",
            cfg.duration.as_secs()
        )));
    }
    strict(a, report.path_fell_behind)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scenario is in `bbrtop lab --help` (clap's list, from [`WHICH`]) and in the docs'
    /// table, and parses back from its name.
    #[test]
    fn help_and_docs_name_every_scenario() {
        use clap::{CommandFactory, ValueEnum};
        let mut cli = super::super::Cli::command();
        let help = cli.find_subcommand_mut("lab").expect("lab").render_long_help().to_string();
        let docs = include_str!("../../docs/lab.md");
        assert_eq!(WHICH.len(), Scenario::ALL.len() + 1);
        for w in WHICH {
            let name = w.to_possible_value().expect("named").get_name().to_string();
            assert!(help.contains(&format!("{name}:")), "lab --help misses {name}:\n{help}");
            assert!(docs.contains(&format!("| `{name}` |")), "docs/lab.md's table misses {name}");
            assert_eq!(Which::from_str(&name, false), Ok(w));
        }
    }

    #[test]
    fn recordings_are_a_directory_per_group_and_never_mixed_with_an_earlier_run() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rec");
        let r = Recordings::new(&dir, Scenario::Bufferbloat, 5).unwrap();
        assert_eq!(r.dirs, [dir.join("cubic"), dir.join("bbr")]);
        assert_eq!(Recordings::new(&dir, Scenario::Ab, 1).unwrap().dirs, [dir.join("bbr+cubic")]);
        std::fs::create_dir_all(dir.join("bbr")).unwrap();
        std::fs::write(dir.join("bbr").join("x.polls.parquet"), "").unwrap();
        let e = Recordings::new(&dir, Scenario::Bufferbloat, 1).err().unwrap();
        assert!(e.contains("rec/bbr is not empty"), "{e}");
    }

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
