//! What bbrtop's long-running processes cost, side by side beside the same sockets, and the
//! issue's targets row by row with the figure measured today beside each.
//!
//!     cargo build --release && cargo bench --bench footprint -- [--window 180] [--settle 20]
//!         [--only 10k|100k|moving] [--compare PATH]
//!
//! As root (the eBPF collectors). Three scenarios, each with sockets of its own:
//!   10k     10,000 idle established loopback sockets, and 20,000 TIME_WAIT sockets made just
//!           before the processes start (they last 60 s and are not topped up: a window past
//!           that sees them go; the output counts them at the window's start and end)
//!   100k    100,000 idle established sockets
//!   moving  the same 100,000, with 1% of the connections moving every second (a byte each way)
//! In each, these start at once, each polling every second:
//!   bbrtop export                               (default flags: the eBPF socket walk, hindsight 15m;
//!                                               --hindsight.dir in a temporary directory)
//!   bbrtop export --hindsight.window 0
//!   bbrtop export --no-collector.walk --hindsight.window 0
//!   bbrtop export --no-collector.bpf --hindsight.window 0
//!   bbrtop record DIR
//!   bbrtop                                      (the TUI, sockets view, in tmux at 200x50)
//! and at 100k the exporter as the shipped DaemonSet runs it: the args of
//! deploy/kubernetes/daemonset.yaml, read from the file, listening on 127.0.0.1:0, without the
//! args that name the pod's environment (`$(NODE_NAME)`), and with --hindsight.dir in a temporary
//! directory where the manifest's does not exist here. The exporters listen on 127.0.0.1:0;
//! only this bench scrapes them, just before and just after the window (outside its CPU figures).
//! They settle (20 s: the first seed of 100k sockets is not the steady state), then one window
//! (180 s) is measured for all: CPU as utime + stime from /proc/PID/stat over the window, in
//! percent of one core; RSS (VmRSS) sampled every second from the start, its largest and last;
//! and VmHWM, the kernel's own peak.
//!
//! A steady state holds only over a window that covers the periodic work a process does: the
//! walk's reconciling dump (every 60 polls), hindsight's chunk (a keyframe of every socket, the
//! segments spliced into the chunk's files, retention: every fifth of `--hindsight.window`, 3 min
//! by default), a recorder's chunk (every minute), the TUI's process scan (once a minute). The
//! default window, 3 minutes, covers each at least once; under the table, each process's line
//! says which periodic work its window covered and how often, and which it may have left out (a
//! shorter `--window`). Alertmanager pushes and OTLP batches are not configured here.
//! At 100k this bench also times, in this process, one process scan and one netlink dump of both
//! families (what the reconciling dump reads), as the cost of each when it runs.
//!
//! `bbrtop record` writes a chunk (a minute by default) at a time, so its directory does not grow
//! within a window (the output says by how much it did). Its bytes per socket-poll are measured
//! instead from two recorders started together, one stopped with SIGINT (which writes its chunk)
//! just before the window and the other at the window's end: the bytes the later polls added,
//! over the sockets polled times the polls between the two stops (the recorders' own counts, from
//! their `recording ended` lines, since a starved recorder polls less often than the interval
//! says; the count from the interval is printed beside). The recorder's own bytes per socket-poll,
//! over its whole run and so with its first poll, is printed too. An exporter's polls over the
//! window (its bbrtop_collector_polls_total, scraped before and after) show whether it kept up;
//! the load average and the processes' CPU together show what else the machine was doing.
//!
//! Then, once per binary, a recorder (`bbrtop record DIR --interval 1s`) beside the idle sockets
//! is SIGKILLed after 12 s and its directory read back with `bbrtop compare DIR DIR --json`: the
//! seconds between the kill and the newest poll that reads back are the seconds lost. And once per
//! run, at 100k, this bench times the socket walk with every connection moving against the raw
//! netlink dump of both families, as poll.rs does (in this process: this build's library, whatever
//! binary the rest runs).
//!
//! BBRTOP_BIN=PATH runs another bbrtop binary instead of the release build beside the bench.
//! --compare PATH runs every scenario twice on the same sockets, first with PATH, then with that
//! binary, and prints both tables, so ratios between builds come from one run.
//! About 14 minutes for the three scenarios (twice that and a minute with --compare). It asserts
//! nothing; it exits with one line on stderr if its setup fails.

#[path = "support/mod.rs"]
mod support;

#[path = "../tests/support/daemonset.rs"]
mod daemonset;

// A plain HTTP GET, to count the exporters' polls; the rest of the file goes unused here.
#[allow(dead_code)]
#[path = "../tests/support/http.rs"]
mod http;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use support::{Holders, Tmux};

const TIME_WAIT: usize = 20_000;
/// TIME_WAIT's length on Linux (TCP_TIMEWAIT_LEN).
const TIME_WAIT_LIFE: Duration = Duration::from_secs(60);
const KILL_AFTER: Duration = Duration::from_secs(12);
const MB: f64 = 1e6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    TenK,
    HundredK,
    Moving,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::TenK => "10k",
            Scenario::HundredK => "100k",
            Scenario::Moving => "moving",
        }
    }
}

struct Opts {
    window: Duration,
    settle: Duration,
    only: Option<Scenario>,
    compare: Option<PathBuf>,
}

fn parse_opts() -> Result<Opts, String> {
    let mut o =
        Opts { window: Duration::from_secs(180), settle: Duration::from_secs(20), only: None, compare: None };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        let secs = |v: String| match v.parse::<u64>() {
            Ok(s @ 1..=600) => Ok(Duration::from_secs(s)),
            _ => Err(format!("{a} {v}: seconds from 1 to 600")),
        };
        match a.as_str() {
            // `cargo bench` passes --bench to every bench.
            "--bench" => {}
            "--window" => o.window = secs(value()?)?,
            "--settle" => o.settle = secs(value()?)?,
            "--only" => {
                let v = value()?;
                let all = [Scenario::TenK, Scenario::HundredK, Scenario::Moving];
                o.only = Some(
                    all.into_iter()
                        .find(|s| s.name() == v)
                        .ok_or(format!("--only {v}: expected 10k, 100k or moving"))?,
                );
            }
            "--compare" => {
                let p = PathBuf::from(value()?);
                if !p.is_file() {
                    return Err(format!("--compare {}: no such file", p.display()));
                }
                o.compare = Some(p);
            }
            _ => return Err(format!("unknown argument {a:?} (see benches/footprint.rs)")),
        }
    }
    Ok(o)
}

/// A binary under test.
struct Bin {
    label: String,
    path: PathBuf,
}

/// Which process a row is: the targets are looked up by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Export,
    ExportNoHindsight,
    ExportNetlink,
    ExportNoBpf,
    Record,
    Tui,
    DaemonSet,
}

/// One process's figures over a window.
struct Row {
    key: Key,
    name: String,
    /// Percent of a core; None if it exited before the window's end.
    cpu: Option<f64>,
    rss_max: u64,
    rss_last: u64,
    hwm: u64,
    bytes_per_socket_poll: Option<f64>,
    /// An exporter's polls over the window (from its /metrics).
    polls: Option<f64>,
    /// The periodic work it does, and how often the window covered each.
    periodic: String,
}

/// One scenario run with one binary.
struct Table {
    scenario: Scenario,
    bin: usize,
    title: String,
    notes: Vec<String>,
    rows: Vec<Row>,
}

/// A process this bench started: killed (by its PID) on drop, or its tmux session killed.
struct Started {
    key: Key,
    name: String,
    handle: Handle,
    log: PathBuf,
}

enum Handle {
    Child(Child),
    Tmux { _session: Tmux, pid: u32 },
}

impl Started {
    fn pid(&self) -> u32 {
        match &self.handle {
            Handle::Child(c) => c.id(),
            Handle::Tmux { pid, .. } => *pid,
        }
    }

    fn alive(&mut self) -> bool {
        match &mut self.handle {
            Handle::Child(c) => c.try_wait().ok().flatten().is_none(),
            Handle::Tmux { pid, .. } => {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                stat.rsplit_once(')').is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
            }
        }
    }

    /// The last line it logged (why it exited, if it did).
    fn last_log_line(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().last().unwrap_or("(nothing logged)").to_string()
    }

    /// SIGINT (a recorder then writes its chunk and exits); when it was sent.
    fn interrupt(&self) -> Instant {
        let _ = Command::new("kill").args(["-INT", &self.pid().to_string()]).status();
        Instant::now()
    }

    /// At most `limit` for it to exit (it is killed on drop if it has not).
    fn wait_exit(&mut self, limit: Duration) {
        if let Handle::Child(c) = &mut self.handle {
            let end = Instant::now() + limit;
            while c.try_wait().ok().flatten().is_none() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Handle::Child(c) = &mut self.handle {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Sets its flag when dropped (also on a panic), so a helper thread's loop ends.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn main() {
    if support::run_as_holder() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("panic");
        let at = info.location().map(|l| format!(" ({}:{})", l.file(), l.line())).unwrap_or_default();
        eprintln!("footprint: setup failed: {msg}{at}");
    }));
    let fail = |msg: String| -> ! {
        eprintln!("footprint: {msg}");
        std::process::exit(2)
    };
    let opts = parse_opts().unwrap_or_else(|e| fail(e));
    if !is_root() {
        fail("needs root (the eBPF collectors, the socket walk)".into());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ds = daemonset::read(root).unwrap_or_else(|e| fail(e));
    let default = Bin { label: "this build".into(), path: support::bbrtop_binary() };
    let bins: Vec<Bin> = match &opts.compare {
        Some(p) => vec![Bin { label: "reference (--compare)".into(), path: p.clone() }, default],
        None => vec![default],
    };
    let started = Instant::now();
    println!(
        "footprint: settle {} s, window {} s, 1 s polls; CPU in % of one core; MB = 10^6 bytes",
        opts.settle.as_secs(),
        opts.window.as_secs()
    );
    for (i, b) in bins.iter().enumerate() {
        println!("binary {}: {} ({})", i + 1, b.path.display(), b.label);
    }
    let runs = |s: Scenario| opts.only.is_none_or(|o| o == s);
    let mut tables = vec![];
    let mut kills: Vec<Option<Kill>> = bins.iter().map(|_| None).collect();
    let mut walk: Option<f64> = None;

    if runs(Scenario::TenK) {
        let mut holders = support::open_sockets(10_000);
        let mut tw_done: Option<Instant> = None;
        for (i, bin) in bins.iter().enumerate() {
            // The previous binary's TIME_WAIT sockets gone first, so each run sees 20,000.
            if let Some(done) = tw_done {
                std::thread::sleep(
                    (done + TIME_WAIT_LIFE + Duration::from_secs(1))
                        .saturating_duration_since(Instant::now()),
                );
            }
            let t = Instant::now();
            let made = support::make_time_wait(TIME_WAIT);
            tw_done = Some(Instant::now());
            let tw = TimeWait { made: made.made, ports: made.ports, took: t.elapsed(), first: t };
            let table = run_set(i, bin, Scenario::TenK, &mut holders, &opts, &ds, Some(&tw));
            print_table(&table);
            tables.push(table);
            kills[i] = Some(recorder_kill(bin));
        }
        drop(holders);
    }
    if runs(Scenario::HundredK) || runs(Scenario::Moving) {
        let mut holders = support::open_sockets(100_000);
        for (i, bin) in bins.iter().enumerate() {
            if runs(Scenario::HundredK) {
                let table = run_set(i, bin, Scenario::HundredK, &mut holders, &opts, &ds, None);
                print_table(&table);
                tables.push(table);
            }
            if kills[i].is_none() {
                kills[i] = Some(recorder_kill(bin));
            }
        }
        if runs(Scenario::HundredK) {
            println!(
                "\n== the socket walk against the raw netlink dump, in this process (as poll.rs times it)"
            );
            let seen = support::count_sockets();
            let raw = support::raw_median();
            let rows = support::walk_rows(&mut holders, seen, raw);
            walk = rows.iter().find(|r| r.permille == 1000).map(|r| r.walk_ms / raw);
            periodic_costs(raw);
        }
        if runs(Scenario::Moving) {
            for (i, bin) in bins.iter().enumerate() {
                let table = run_set(i, bin, Scenario::Moving, &mut holders, &opts, &ds, None);
                print_table(&table);
                tables.push(table);
            }
        }
        drop(holders);
    }
    for (i, bin) in bins.iter().enumerate() {
        if let Some(k) = &kills[i] {
            println!("\n== SIGKILL of a recorder ({}): {}", bin.label, k.text);
        }
    }
    for (i, bin) in bins.iter().enumerate() {
        print_targets(i, bin, &tables, kills[i].as_ref(), walk, &ds);
    }
    println!("\nfootprint: {:.0} s in all", started.elapsed().as_secs_f64());
}

/// What the O(sockets) periodic work costs when it runs, at the sockets open now: one process
/// scan (the TUI's, once a minute) and one netlink dump of both families (`raw_ms`, what the
/// walk's reconciling dump reads every 60 polls), each in CPU seconds and as a share of a core
/// over its period.
fn periodic_costs(raw_ms: f64) {
    let cpu0 = support::cpu_seconds("self");
    let owners = bbrtop::tui::procs::scan().len();
    let scan = support::cpu_seconds("self") - cpu0;
    println!("\n== the O(sockets) periodic work, once each, in this process");
    println!(
        "   process scan: {:.0} ms of CPU ({owners} sockets with an owner); once a minute, {:.2}% of a core",
        scan * 1e3,
        scan / 60.0 * 100.0
    );
    let every = bbrtop_collect::bpf::RECONCILE_EVERY as f64;
    println!(
        "   reconciling dump: the netlink dump it reads takes {raw_ms:.0} ms; every {every:.0} polls of 1 s, {:.2}% of a core (the engine's part on top)",
        raw_ms / 1e3 / every * 100.0
    );
}

fn is_root() -> bool {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().find_map(|l| l.strip_prefix("Uid:")).is_some_and(|v| v.split_whitespace().nth(1) == Some("0"))
}

/// The TIME_WAIT sockets made for a run.
struct TimeWait {
    made: usize,
    ports: Vec<u16>,
    took: Duration,
    first: Instant,
}

/// The TIME_WAIT sockets on the host now whose peer port is one of `ports` (`ss`).
fn count_time_wait(ports: &[u16]) -> usize {
    let mut filter = vec!["(".to_string()];
    for (i, p) in ports.iter().enumerate() {
        if i > 0 {
            filter.push("or".into());
        }
        filter.extend(["dport".to_string(), "=".into(), format!(":{p}")]);
    }
    filter.push(")".into());
    let out = Command::new("ss").args(["-Htn", "state", "time-wait"]).args(&filter).output();
    out.map_or(0, |o| String::from_utf8_lossy(&o.stdout).lines().count())
}

/// Polls by collector (`bbrtop_collector_polls_total`) from an exporter's /metrics, on the
/// address it logged; None for the other processes.
fn polls_total(p: &Started) -> Option<BTreeMap<String, f64>> {
    if matches!(p.key, Key::Record | Key::Tui) {
        return None;
    }
    let log = std::fs::read_to_string(&p.log).ok()?;
    let line = log.lines().find(|l| l.contains("message=listening"))?;
    let addr = line.split(' ').find_map(|f| f.strip_prefix("address="))?;
    let port = addr.split(',').next()?.rsplit(':').next()?.parse().ok()?;
    let (status, page) = http::get(port, "/metrics", None).ok()?;
    let counts: BTreeMap<String, f64> = page
        .lines()
        .filter(|l| l.starts_with("bbrtop_collector_polls_total{"))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect();
    (status == 200).then_some(counts)
}

/// The polls between two counts: the most any collector made (the walk polls every interval,
/// netlink only to reconcile).
fn polls_between(a: Option<&BTreeMap<String, f64>>, b: Option<&BTreeMap<String, f64>>) -> Option<f64> {
    let (a, b) = (a?, b?);
    b.iter().map(|(k, v)| v - a.get(k).copied().unwrap_or(0.0)).max_by(f64::total_cmp)
}

/// /proc/loadavg's three figures.
fn load_average() -> String {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The bytes of the files in `dir` (a recording: flat).
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()
}

/// Starts `bin ARGS` with its stderr in `log`.
fn spawn(bin: &Path, args: &[String], log: &Path) -> Child {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("a log file"))
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()))
}

/// What runs in `scenario`: (key, name, args after the binary); the TUI has no args.
fn specs(scenario: Scenario, ds: &daemonset::DaemonSet, tmp: &Path) -> Vec<(Key, String, Vec<String>)> {
    let export = |flags: &[&str]| {
        let mut a: Vec<String> = ["export", "--web.listen-address", "127.0.0.1:0"].map(String::from).into();
        a.extend(flags.iter().map(|f| f.to_string()));
        a
    };
    let rec = vec!["record".to_string(), tmp.join("record").display().to_string()];
    let spool = tmp.join("hindsight-export").display().to_string();
    let mut v = vec![
        // Its hindsight spooled in the bench's directory, not the host's /var/lib/bbrtop.
        (Key::Export, "export (default flags)".to_string(), export(&["--hindsight.dir", &spool])),
        (Key::ExportNoHindsight, "export --hindsight.window 0".into(), export(&["--hindsight.window", "0"])),
        (
            Key::ExportNetlink,
            "export --no-collector.walk --hindsight.window 0".into(),
            export(&["--no-collector.walk", "--hindsight.window", "0"]),
        ),
        (
            Key::ExportNoBpf,
            "export --no-collector.bpf --hindsight.window 0".into(),
            export(&["--no-collector.bpf", "--hindsight.window", "0"]),
        ),
        (Key::Record, "record DIR".into(), rec),
        (Key::Tui, "bbrtop (TUI, sockets view, tmux 200x50)".into(), vec![]),
    ];
    if scenario != Scenario::TenK {
        let hindsight = tmp.join("hindsight");
        std::fs::create_dir_all(&hindsight).expect("a hindsight directory");
        v.push((Key::DaemonSet, "export as the DaemonSet".into(), ds.local_args("127.0.0.1:0", &hindsight)));
    }
    v
}

/// One scenario with one binary: every process started at once, settled, measured over one
/// window, stopped. In `Moving`, 1% of the holders' connections move every second meanwhile.
fn run_set(
    bin_index: usize,
    bin: &Bin,
    scenario: Scenario,
    holders: &mut Holders,
    opts: &Opts,
    ds: &daemonset::DaemonSet,
    tw: Option<&TimeWait>,
) -> Table {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let _stop = SetOnDrop(&stop);
        if scenario == Scenario::Moving {
            let (stop, limit) = (&stop, opts.settle + opts.window + Duration::from_secs(120));
            s.spawn(move || {
                let start = Instant::now();
                for i in 1..=limit.as_secs() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    holders.touch(10);
                    std::thread::sleep(
                        (start + Duration::from_secs(i)).saturating_duration_since(Instant::now()),
                    );
                }
            });
        }
        measure_set(bin_index, bin, scenario, opts, ds, tw)
    })
}

fn measure_set(
    bin_index: usize,
    bin: &Bin,
    scenario: Scenario,
    opts: &Opts,
    ds: &daemonset::DaemonSet,
    tw: Option<&TimeWait>,
) -> Table {
    let tmp = tempfile::Builder::new().prefix("bbrtop-footprint-").tempdir().expect("a temporary directory");
    let sockets = support::count_sockets();
    let mut procs: Vec<Started> = vec![];
    let session = format!("bbrtop-footprint-{}", std::process::id());
    let twin_dir = tmp.path().join("record-settle");
    let t0 = Instant::now();
    let mut notes = vec![];
    for (key, name, args) in specs(scenario, ds, tmp.path()) {
        if key == Key::DaemonSet {
            let bound = ds.flag("--hindsight.max-size").map(daemonset::size);
            notes.push(format!(
                "the DaemonSet's exporter: bbrtop {} (--hindsight.max-size: {})",
                args.join(" "),
                bound.map_or("not set".into(), |b| b.map_or_else(|e| e, |b| format!("{b} bytes")))
            ));
        }
        let log = tmp.path().join(format!("{key:?}.log"));
        let handle = if key == Key::Tui {
            let cmd = format!("exec '{}' 2>'{}'", bin.path.display(), log.display());
            match Tmux::start(&session, &cmd) {
                Some((t, pid)) => Handle::Tmux { _session: t, pid },
                None => {
                    println!("   (the TUI is not measured: tmux did not start it)");
                    continue;
                }
            }
        } else {
            Handle::Child(spawn(&bin.path, &args, &log))
        };
        procs.push(Started { key, name, handle, log });
    }
    // The recorder that stops before the window: what the first polls cost, to subtract.
    let mut twin = Started {
        key: Key::Record,
        name: "record DIR, stopped before the window".into(),
        handle: Handle::Child(spawn(
            &bin.path,
            &["record".to_string(), twin_dir.display().to_string()],
            &tmp.path().join("record-settle.log"),
        )),
        log: tmp.path().join("record-settle.log"),
    };
    let record_dir = tmp.path().join("record");

    let secs = opts.settle.as_secs() + opts.window.as_secs();
    let twin_at = opts.settle.as_secs().saturating_sub(3).max(1);
    let (mut rss_max, mut rss_last) = (vec![0u64; procs.len()], vec![0u64; procs.len()]);
    let (mut cpu0, mut w0, mut dir0, mut twin_stop) = (vec![], t0, 0, t0);
    let (mut tw_start, mut load0, mut polls0) = (0, String::new(), vec![]);
    for s in 1..=secs {
        std::thread::sleep((t0 + Duration::from_secs(s)).saturating_duration_since(Instant::now()));
        for (i, p) in procs.iter().enumerate() {
            let rss = support::status_bytes(&p.pid().to_string(), "VmRSS:");
            rss_max[i] = rss_max[i].max(rss);
            rss_last[i] = rss;
        }
        if s == twin_at {
            // Not waited for here: the sampling goes on while it writes its chunk.
            twin_stop = twin.interrupt();
        }
        if s == opts.settle.as_secs() {
            if let Some(tw) = tw {
                tw_start = count_time_wait(&tw.ports);
            }
            polls0 = procs.iter().map(polls_total).collect();
            load0 = load_average();
            w0 = Instant::now();
            cpu0 = procs.iter().map(|p| support::cpu_seconds(&p.pid().to_string())).collect();
            dir0 = dir_bytes(&record_dir);
        }
    }
    let w1 = Instant::now();
    notes.push(format!(
        "load average (1, 5, 15 min) at the window's start {load0}, at its end {}, on {} cores: other work on the machine slows the polls",
        load_average(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    let cpu1: Vec<f64> = procs.iter().map(|p| support::cpu_seconds(&p.pid().to_string())).collect();
    let dir1 = dir_bytes(&record_dir);
    let polls1: Vec<_> = procs.iter().map(polls_total).collect();
    let tw_end = tw.map(|tw| count_time_wait(&tw.ports));
    let window = (w1 - w0).as_secs_f64();
    let alive: Vec<bool> = procs.iter_mut().map(Started::alive).collect();
    let hwm: Vec<u64> = procs.iter().map(|p| support::status_bytes(&p.pid().to_string(), "VmHWM:")).collect();

    // The recorder: stopped (its chunk written), its bytes against the one stopped before.
    let mut per_socket_poll = None;
    if let Some(r) = procs.iter_mut().find(|p| p.key == Key::Record) {
        let stopped = r.interrupt();
        r.wait_exit(Duration::from_secs(60));
        twin.wait_exit(Duration::from_secs(60));
        let by_interval = ((stopped - twin_stop).as_secs_f64()).round() as u64;
        // The recorders' own counts where they logged them: a starved recorder polls less often.
        let by_count = ended_polls(&r.log).zip(ended_polls(&twin.log)).map(|(a, b)| a.saturating_sub(b));
        let polls = by_count.unwrap_or(by_interval).max(1);
        let (whole, settle) = (dir_bytes(&record_dir), dir_bytes(&twin_dir));
        let added = whole.saturating_sub(settle);
        // Without the earlier recorder's chunk the difference would hold the first poll too.
        per_socket_poll = (settle > 0).then(|| added as f64 / (sockets as f64 * polls as f64));
        notes.push(format!(
            "record: {whole} bytes in all, {settle} from the recorder stopped {:.0} s before ({}); {added} bytes for {polls} polls ({by_interval} by the interval, {} by the recorders' counts) of {sockets} sockets",
            (stopped - twin_stop).as_secs_f64(),
            recording_ended(&twin.log),
            by_count.map_or("none".into(), |c| c.to_string())
        ));
        notes.push(format!(
            "record: its directory grew by {} bytes within the window (a chunk is written whole when it closes); its own account: {}",
            dir1.saturating_sub(dir0),
            recording_ended(&r.log)
        ));
    }
    let mut rows = vec![];
    for (i, p) in procs.iter().enumerate() {
        if !alive[i] {
            notes.push(format!("{} exited before the window's end: {}", p.name, p.last_log_line()));
        }
        rows.push(Row {
            key: p.key,
            name: p.name.clone(),
            cpu: alive[i].then(|| (cpu1[i] - cpu0.get(i).copied().unwrap_or(0.0)) / window * 100.0),
            rss_max: rss_max[i],
            rss_last: rss_last[i],
            hwm: hwm[i],
            bytes_per_socket_poll: (p.key == Key::Record).then_some(per_socket_poll).flatten(),
            polls: polls_between(polls0.get(i).and_then(Option::as_ref), polls1[i].as_ref()),
            periodic: periodic(p.key, opts.settle, window, ds),
        });
    }
    if let Some(tw) = tw {
        let after = (w0 - tw.first).as_secs_f64() + window;
        notes.insert(
            0,
            format!(
                "TIME_WAIT: {} made in {:.1} s just before the processes started; {tw_start} at the window's start, {} at its end (those to the listeners' ports: another program's to a port reused counts too); the window ended {after:.0} s after the first was made ({}; not topped up)",
                tw.made,
                tw.took.as_secs_f64(),
                tw_end.unwrap_or(0),
                if after < TIME_WAIT_LIFE.as_secs_f64() { "within their 60 s" } else { "past 60 s: the first had expired" }
            ),
        );
    }
    let what = match scenario {
        Scenario::TenK => {
            format!("10k: {sockets} sockets polled (10,000 idle established) and {TIME_WAIT} TIME_WAIT")
        }
        Scenario::HundredK => format!("100k: {sockets} sockets polled (100,000 idle established)"),
        Scenario::Moving => format!(
            "moving: {sockets} sockets polled (100,000 established, 1% of the connections moving each second)"
        ),
    };
    drop(twin);
    drop(procs);
    Table {
        scenario,
        bin: bin_index,
        title: format!("{what}; {} ({}); window {window:.1} s", bin.path.display(), bin.label),
        notes,
        rows,
    }
}

/// The polls a recorder says it wrote (`polls=` of its `recording ended` line).
fn ended_polls(log: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().find(|l| l.contains("recording ended"))?;
    line.split(' ').find_map(|f| f.strip_prefix("polls="))?.parse().ok()
}

/// The figures of the recorder's `recording ended` log line.
fn recording_ended(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let Some(line) = text.lines().find(|l| l.contains("recording ended")) else {
        return "no `recording ended` line".into();
    };
    let keys = ["polls=", "socket_polls=", "bytes=", "bytes_per_socket_poll="];
    line.split(' ').filter(|f| keys.iter().any(|k| f.starts_with(k))).collect::<Vec<_>>().join(" ")
}

fn print_table(t: &Table) {
    println!("\n== {}", t.title);
    for n in &t.notes {
        println!("   {n}");
    }
    println!(
        "   {:<50} {:>9} {:>11} {:>12} {:>9} {:>7} {:>18}",
        "process", "CPU %", "RSS max MB", "RSS last MB", "VmHWM MB", "polls", "bytes/socket-poll"
    );
    for r in &t.rows {
        let cpu = r.cpu.map_or("exited".into(), |c| format!("{c:.2}"));
        let bps = r.bytes_per_socket_poll.map_or(String::new(), |b| format!("{b:.3}"));
        let polls = r.polls.map_or(String::new(), |p| format!("{p:.0}"));
        println!(
            "   {:<50} {cpu:>9} {:>11.1} {:>12.1} {:>9.1} {polls:>7} {bps:>18}",
            r.name,
            r.rss_max as f64 / MB,
            r.rss_last as f64 / MB,
            r.hwm as f64 / MB
        );
    }
    println!("   periodic work (this build's periods: how often each ran within the window)");
    for r in &t.rows {
        println!("   {:<50} {}", r.name, r.periodic);
    }
    let all: f64 = t.rows.iter().filter_map(|r| r.cpu).sum();
    println!(
        "   together {all:.1}% of a core, on {} cores; polls: an exporter's polls over the window, from its /metrics (one a second keeps up)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
}

/// The periodic work process `key` does with its flags (this build's periods), each with its
/// period and how often it ran within the window, which starts `settle` after the process and
/// lasts `window_s` seconds of 1 s polls: each runs a period after the process started (its
/// first poll), then every period; "left out" where none of its runs fell in the window.
fn periodic(key: Key, settle: Duration, window_s: f64, ds: &daemonset::DaemonSet) -> String {
    let reconcile = ("reconciling dump", bbrtop_collect::bpf::RECONCILE_EVERY as f64);
    let hindsight =
        |window: Duration| ("hindsight chunk", bbrtop::record::hindsight_chunk(window).as_secs_f64());
    let default_window = Duration::from_secs(15 * 60);
    let ds_window = ds.flag("--hindsight.window").and_then(|w| humantime::parse_duration(w).ok());
    let record_chunk = ("record chunk", bbrtop::record::RecordOptions::default().chunk.as_secs_f64());
    let works: Vec<(&str, f64)> = match key {
        Key::Export => vec![reconcile, hindsight(default_window)],
        Key::DaemonSet => match ds_window {
            Some(w) if w.is_zero() => vec![reconcile],
            w => vec![reconcile, hindsight(w.unwrap_or(default_window))],
        },
        Key::ExportNoHindsight => vec![reconcile],
        Key::ExportNetlink | Key::ExportNoBpf => vec![],
        Key::Record => vec![reconcile, record_chunk],
        Key::Tui => vec![reconcile, ("process scan", 60.0)],
    };
    if works.is_empty() {
        return "none (a whole netlink dump every poll)".into();
    }
    let (from, to) = (settle.as_secs_f64(), settle.as_secs_f64() + window_s);
    let each = works.iter().map(|(what, period)| {
        let runs = (to / period).floor() - (from / period).ceil() + 1.0;
        match runs.max(0.0) {
            0.0 => format!("{what} ({period:.0} s): left out"),
            n => format!("{what} ({period:.0} s): about {n:.0}x"),
        }
    });
    each.collect::<Vec<_>>().join(", ")
}

/// A recorder SIGKILLed after [`KILL_AFTER`], and what reads back.
struct Kill {
    lost: Option<f64>,
    text: String,
}

fn recorder_kill(bin: &Bin) -> Kill {
    let tmp =
        tempfile::Builder::new().prefix("bbrtop-footprint-kill-").tempdir().expect("a temporary directory");
    let dir = tmp.path().join("record");
    let args = ["record".to_string(), dir.display().to_string(), "--interval".into(), "1s".into()];
    let start = SystemTime::now();
    let mut rec = Started {
        key: Key::Record,
        name: "record".into(),
        handle: Handle::Child(spawn(&bin.path, &args, &tmp.path().join("kill.log"))),
        log: tmp.path().join("kill.log"),
    };
    std::thread::sleep(KILL_AFTER);
    let alive = rec.alive();
    let killed = SystemTime::now();
    if let Handle::Child(c) = &mut rec.handle {
        let _ = c.kill();
        let _ = c.wait();
    }
    if !alive {
        return Kill {
            lost: None,
            text: format!("not measurable: the recorder exited early: {}", rec.last_log_line()),
        };
    }
    let run = killed.duration_since(start).unwrap_or_default().as_secs_f64();
    let d = dir.display().to_string();
    let out = Command::new(&bin.path).args(["compare", &d, &d, "--json"]).output();
    let has_compare =
        Command::new(&bin.path).args(["compare", "--help"]).output().is_ok_and(|o| o.status.success());
    match out {
        Ok(o) if o.status.success() => {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
            let newest = v["b"]["to"].as_str().and_then(|t| humantime::parse_rfc3339_weak(t).ok());
            let polls = v["b"]["polls"].as_u64().unwrap_or(0);
            match newest {
                Some(t) => {
                    let lost = killed.duration_since(t).unwrap_or_default().as_secs_f64();
                    Kill {
                        lost: Some(lost),
                        text: format!(
                            "killed after {run:.1} s; {polls} polls read back, the newest {lost:.1} s before the kill: {lost:.1} s lost"
                        ),
                    }
                }
                None => {
                    Kill { lost: None, text: "not measurable: `bbrtop compare --json` gave no time".into() }
                }
            }
        }
        Ok(o) if has_compare => {
            let err = String::from_utf8_lossy(&o.stderr);
            Kill {
                lost: Some(run),
                text: format!(
                    "killed after {run:.1} s; nothing reads back ({}): all {run:.1} s lost",
                    err.lines().next().unwrap_or("").trim()
                ),
            }
        }
        _ => Kill {
            lost: None,
            text: "not measurable: this bbrtop has no `compare` to read a recording back".into(),
        },
    }
}

/// The targets, each with what this run measured.
fn print_targets(
    bin: usize,
    b: &Bin,
    tables: &[Table],
    kill: Option<&Kill>,
    walk: Option<f64>,
    ds: &daemonset::DaemonSet,
) {
    let row = |s: Scenario, k: Key| {
        tables.iter().filter(|t| t.bin == bin && t.scenario == s).flat_map(|t| &t.rows).find(|r| r.key == k)
    };
    // (measure, today, target, met): today None = not run here.
    let mut lines: Vec<(String, String, String, Option<bool>)> = vec![];
    let mut cpu = |what: &str, s: Scenario, k: Key, max: f64| {
        let (today, met) = match row(s, k) {
            None => ("not run".to_string(), None),
            Some(Row { cpu: None, .. }) => ("exited".to_string(), Some(false)),
            Some(Row { cpu: Some(c), .. }) => (format!("{c:.2}%"), Some(*c <= max)),
        };
        lines.push((format!("{what}: CPU"), today, format!("<= {max}% of a core"), met));
    };
    cpu("export, default flags, 100k idle established", Scenario::HundredK, Key::Export, 1.0);
    cpu("export, default flags, 10k idle + 20k TIME_WAIT", Scenario::TenK, Key::Export, 0.5);
    cpu("export, default flags, 1% of 100k moving each second", Scenario::Moving, Key::Export, 3.0);
    cpu("record, 10k idle", Scenario::TenK, Key::Record, 0.5);
    cpu("TUI, 10k idle, sockets view", Scenario::TenK, Key::Tui, 1.0);
    cpu("TUI, 100k idle, sockets view", Scenario::HundredK, Key::Tui, 3.0);
    let mut rss = |what: &str, s: Scenario, k: Key, max_mb: f64, target: String| {
        let (today, met) = match row(s, k) {
            None => ("not run".to_string(), None),
            Some(r) => (
                format!("max {:.0} MB (last {:.0})", r.rss_max as f64 / MB, r.rss_last as f64 / MB),
                Some(r.rss_max as f64 / MB <= max_mb),
            ),
        };
        lines.push((format!("{what}: RSS"), today, target, met));
    };
    rss(
        "export, default flags, 100k idle established",
        Scenario::HundredK,
        Key::Export,
        160.0,
        "<= 160 MB".into(),
    );
    rss(
        "export, default flags, 10k idle + 20k TIME_WAIT",
        Scenario::TenK,
        Key::Export,
        48.0,
        "<= 48 MB".into(),
    );
    let limit = ds.memory_limit as f64 / MB;
    rss(
        "export as the DaemonSet, 100k idle",
        Scenario::HundredK,
        Key::DaemonSet,
        limit,
        format!("<= {limit:.0} MB (the manifest's limit)"),
    );
    let (today, met) = match row(Scenario::TenK, Key::Record) {
        None => ("not run".to_string(), None),
        Some(Row { bytes_per_socket_poll: Some(b), .. }) => (format!("{b:.3}"), Some(*b <= 0.5)),
        Some(_) => ("not measured".to_string(), Some(false)),
    };
    lines.push(("record, 10k idle: bytes per idle socket-poll".into(), today, "<= 0.5".into(), met));
    let (today, met) = match walk {
        Some(x) => (format!("{x:.3}x"), Some(x <= 0.8)),
        None if tables.iter().any(|t| t.scenario == Scenario::HundredK) => {
            ("eBPF did not load".into(), Some(false))
        }
        None => ("not run".into(), None),
    };
    lines.push((
        "poll, 100k all moving (walk + engine), vs raw dump of both families".into(),
        today,
        "<= 0.8x".into(),
        met,
    ));
    let (today, met) = match kill {
        Some(Kill { lost: Some(s), .. }) => (format!("{s:.1} s lost"), Some(*s <= 5.0)),
        Some(Kill { lost: None, .. }) => ("not measurable".into(), None),
        None => ("not run".into(), None),
    };
    lines.push(("SIGKILL of a recorder".into(), today, "loses <= 5 s".into(), met));

    let mut out = format!("\n== targets: {} ({})\n", b.path.display(), b.label);
    let _ = writeln!(out, "   {:<70} {:>24} {:>34}", "measure", "today", "target");
    for (what, today, target, met) in lines {
        let verdict = match met {
            Some(true) => "met",
            Some(false) => "not met",
            None => "-",
        };
        let _ = writeln!(out, "   {what:<70} {today:>24} {target:>34}  {verdict}");
    }
    print!("{out}");
}
