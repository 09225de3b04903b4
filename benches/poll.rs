//! Poll cost against the kernel floor and `ss`, on the same sockets, in the same run.
//!
//!     cargo bench --bench poll -- 1000 10000 100000
//!
//! For each N it opens N loopback sockets (N/2 connections) spread over child processes, so no
//! process passes a 20,000-file limit, then times, alternating and repeated:
//!   raw       a netlink dump read without parsing (the kernel floor)
//!   poll      a full poll: dump + parse + engine update + tick
//!   ss        `ss -tin > /dev/null`
//!   snapshot  `bbrtop snapshot --json > /dev/null`
//! and the RSS of an engine holding 60 polls of history for every socket, measured in a child
//! process of its own. As root with eBPF it then times the socket walk (`--collector.walk`)
//! against the same raw dump, with 1% and with all of the connections moving between polls
//! (each moving connection sends a byte each way):
//!   walk      a poll of the walk as the binary runs it: the sockets that moved, handed to the
//!             engine in parts as they are read (the read and the engine's update overlap)
//!   whole     the same read taken whole, then handed over (no overlap), and of it the read
//!   tick      publishing the snapshot (every socket, moved or not)
//! With `--time-wait=N` it then makes N TIME_WAIT sockets (loopback connections the client
//! closes first; they stay 60 s) and times the raw dump and the walk again beside them.
//! At 10k sockets it also measures the exporter's and the TUI's CPU share (the exporter with and
//! without hindsight) and what `bbrtop record` writes and spends per poll.
//! BBRTOP_BIN=PATH runs another bbrtop binary instead of the one built beside the bench.
//! It asserts nothing.

#[path = "support/mod.rs"]
mod support;

use bbrtop_collect::InetDiag;
use bbrtop_core::model::StateSet;
use bbrtop_core::seam::Now;
use bbrtop_engine::{Engine, EngineConfig};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{
    ROUNDS, Tmux, bbrtop_binary, count_sockets, make_time_wait, median, open_sockets, raw_dump, time,
    walk_rows,
};

const RSS_ENV: &str = "BBRTOP_BENCH_RSS";

fn main() {
    if support::run_as_holder() {
        return;
    }
    if let Ok(polls) = std::env::var(RSS_ENV) {
        // As the binary does.
        bbrtop::mem::return_big_frees();
        println!("{}", rss_with_history(polls.parse().expect("poll count")));
        return;
    }
    let sizes: Vec<usize> =
        std::env::args().skip(1).filter(|a| !a.starts_with('-')).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1_000, 10_000, 100_000] } else { sizes };
    let time_wait: usize = std::env::args()
        .find_map(|a| a.strip_prefix("--time-wait=").and_then(|n| n.parse().ok()))
        .unwrap_or(0);
    let bin = bbrtop_binary();
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8} {:>9}",
        "sockets", "raw ms", "poll ms", "ss ms", "snap ms", "poll/raw", "ss/snap", "rss60 MB"
    );
    for n in sizes {
        let mut holders = open_sockets(n);
        let seen = count_sockets();
        let raw = netlink_rows(&bin, seen);
        walk_rows(&mut holders, seen, raw);
        if time_wait > 0 {
            let made = make_time_wait(time_wait).made;
            let raw_tw = support::raw_median();
            println!("         with {made} TIME_WAIT sockets beside them: raw dump {raw_tw:.2} ms");
            walk_rows(&mut holders, seen, raw_tw);
        }
        if n == 10_000 {
            footprints(&bin);
            recording_cost(&bin);
        }
        drop(holders);
    }
}

/// The netlink rows for `seen` sockets: the raw dump, a full poll, ss and snapshot, alternating;
/// returns the raw dump's median in ms.
fn netlink_rows(bin: &std::path::Path, seen: usize) -> f64 {
    // The steady state: one collector and one engine across polls, as the poller keeps them.
    let mut diag = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    let mut engine = Engine::new(EngineConfig::default());
    let _ = full_poll(&mut diag, &mut engine);
    let (mut raw, mut parse, mut poll, mut ss, mut snap, mut table) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut stages: Vec<[f64; 2]> = vec![];
    for _ in 0..ROUNDS {
        raw.push(time(raw_dump));
        parse.push(time(parsed_dump));
        let mut parts = [0.0; 2];
        poll.push(time(|| parts = full_poll(&mut diag, &mut engine)));
        stages.push(parts);
        ss.push(time(|| run_quiet(Command::new("ss").arg("-tin"))));
        snap.push(time(|| run_quiet(Command::new(bin).args(["snapshot", "--json"]))));
        table.push(time(|| run_quiet(Command::new(bin).arg("snapshot"))));
    }
    let rss = rss_in_child(60);
    let (r, p, s, j) = (median(raw), median(poll), median(ss), median(snap));
    let stage = |i: usize| median(stages.iter().map(|s| s[i]).collect());
    println!(
        "         dump + parse alone: {:.2} ms; `bbrtop snapshot` (table): {:.2} ms",
        median(parse),
        median(table)
    );
    println!(
        "         poll stages: dump + parse + engine update {:.2} ms, tick {:.2} ms",
        stage(0),
        stage(1)
    );
    println!(
        "{seen:>8} {r:>10.2} {p:>10.2} {s:>10.2} {j:>10.2} {:>8.2} {:>8.2} {:>9.1}",
        p / r,
        s / j,
        rss as f64 / 1e6
    );
    let per = |ms: f64| ms * 1e3 / seen as f64;
    println!(
        "         per socket: raw {:.3} µs, poll {:.3} µs, ss {:.3} µs, snapshot {:.3} µs",
        per(r),
        per(p),
        per(s),
        per(j)
    );
    r
}

/// `bbrtop export`'s and the TUI's CPU share beside the sockets, with each collector, with and
/// without hindsight; and what `bbrtop record` costs beside its polls.
fn footprints(bin: &std::path::Path) {
    for collector in ["--no-collector.walk", "--collector.walk"] {
        for hindsight in ["0", "15m"] {
            let share = export_cpu_share(bin, &[collector, "--hindsight.window", hindsight]);
            println!(
                "         `bbrtop export {collector} --hindsight.window {hindsight}`, 1 s polls, idle sockets: {share:.2}% of a core"
            );
        }
        match tui_cpu_share(bin, collector) {
            Some(s) => println!("         `bbrtop {collector}` (TUI, 200x50, tmux), idle: {s:.2}% of a core"),
            None => println!("         the TUI: tmux is needed to time it"),
        }
    }
}

/// `bbrtop record`'s own account of 60 polls 250 ms apart, in one chunk: bytes per socket-poll,
/// and its milliseconds per poll beside the collectors'.
fn recording_cost(bin: &std::path::Path) {
    let dir = std::env::temp_dir().join(format!("bbrtop-bench-record-{}", std::process::id()));
    let out = Command::new(bin)
        .args(["record", &dir.display().to_string(), "--count", "60", "--interval", "250ms"])
        .args(["--record.chunk", "15s", "--log.format", "logfmt"])
        .output()
        .expect("bbrtop record");
    let _ = std::fs::remove_dir_all(&dir);
    let log = String::from_utf8_lossy(&out.stderr);
    let line = log.lines().find(|l| l.contains("recording ended")).unwrap_or("no cost line");
    let fields: Vec<&str> = line
        .split(' ')
        .filter(|f| {
            ["socket_polls=", "bytes_per_socket_poll=", "_ms_per_poll="].iter().any(|k| f.contains(k))
        })
        .collect();
    println!("         `bbrtop record`, 60 polls of idle sockets: {}", fields.join(" "));
}

/// `bbrtop export`'s CPU share with idle sockets.
fn export_cpu_share(bin: &std::path::Path, flags: &[&str]) -> f64 {
    let mut child = Command::new(bin)
        .args(["export", "--web.listen-address", "127.0.0.1:0"])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn export");
    let share = cpu_share(child.id());
    let _ = child.kill();
    let _ = child.wait();
    share
}

/// The TUI's CPU share on an idle screen, run in a tmux session of its own (None without tmux).
fn tui_cpu_share(bin: &std::path::Path, collector: &str) -> Option<f64> {
    let session = format!("bbrtop-bench-{}", std::process::id());
    let (_tmux, pid) = Tmux::start(&session, &format!("exec {} {collector}", bin.display()))?;
    Some(cpu_share(pid))
}

/// A process's CPU over 20 s (after 5 s to settle), in percent of one core.
fn cpu_share(pid: u32) -> f64 {
    let pid = pid.to_string();
    std::thread::sleep(Duration::from_secs(5));
    let (t0, c0) = (Instant::now(), support::cpu_seconds(&pid));
    std::thread::sleep(Duration::from_secs(20));
    let (t1, c1) = (Instant::now(), support::cpu_seconds(&pid));
    (c1 - c0) / (t1 - t0).as_secs_f64() * 100.0
}

fn run_quiet(c: &mut Command) {
    let st = c.stdout(Stdio::null()).status().expect("spawn");
    assert!(st.success(), "{c:?} failed");
}

fn parsed_dump() {
    let mut d = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    std::hint::black_box(d.dump().expect("dump"));
}

/// One poll as the poller makes it (the engine observes records while the kernel dumps);
/// returns the milliseconds its stages took: dump with parse and engine update, then tick.
fn full_poll(d: &mut InetDiag, e: &mut Engine) -> [f64; 2] {
    let t0 = Instant::now();
    d.dump_into(e, Now::system()).expect("dump");
    let t1 = Instant::now();
    std::hint::black_box(e.tick(Now::system()));
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
    [ms(t0, t1), ms(t1, Instant::now())]
}

/// [`rss_with_history`] in a fresh process, so nothing else this bench holds is counted.
fn rss_in_child(polls: u32) -> u64 {
    let out = Command::new(std::env::current_exe().expect("exe"))
        .env(RSS_ENV, polls.to_string())
        .stderr(Stdio::inherit())
        .output()
        .expect("spawn the RSS child");
    assert!(out.status.success(), "the RSS child failed");
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("RSS in bytes")
}

/// An engine fed `polls` dumps a second apart, and the process's resident set after, with the
/// last snapshot still held (as the exporter or the TUI holds it).
fn rss_with_history(polls: u32) -> u64 {
    let mut d = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let mut last = None;
    for i in 0..polls {
        let now = t0.after(Duration::from_secs(i.into()));
        d.dump_into(&mut e, now).expect("dump");
        last = Some(e.tick(now));
    }
    let rss = support::status_bytes("self", "VmRSS:");
    drop(last);
    rss
}
