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
//!   walk      the walk's read of the sockets that moved, and the engine's update
//!   tick      publishing the snapshot (every socket, moved or not)
//! With `--time-wait=N` it then makes N TIME_WAIT sockets (loopback connections the client
//! closes first; they stay 60 s) and times the raw dump and the walk again beside them.
//! At 10k sockets it also measures the exporter's and the TUI's CPU share (the exporter with and
//! without hindsight) and what `bbrtop record` writes and spends per poll.
//! It asserts nothing.

use bbrtop_collect::InetDiag;
use bbrtop_core::model::StateSet;
use bbrtop_core::seam::{DumpSink, Now, Walk};
use bbrtop_engine::{Engine, EngineConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Connections per holder process: two sockets each, well under a 20,000-file limit.
const CONNS_PER_HOLDER: usize = 8_000;
const ROUNDS: usize = 7;
const HOLD_ENV: &str = "BBRTOP_BENCH_HOLD";
const RSS_ENV: &str = "BBRTOP_BENCH_RSS";

fn main() {
    if let Ok(n) = std::env::var(HOLD_ENV) {
        hold(n.parse().expect("connection count"));
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
            let made = make_time_wait(time_wait);
            let raw_tw = median((0..ROUNDS).map(|_| time(raw_dump)).collect());
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

/// The socket walk against the raw dump of the same run (`raw_ms`), with 1% and all of the
/// connections moving between polls.
fn walk_rows(holders: &mut Holders, seen: usize, raw_ms: f64) {
    use bbrtop_collect::bpf::loader::{self, LoadConfig};
    let cfg = LoadConfig { walk: true, ..LoadConfig::from_rule(&Default::default()) };
    let Ok(loaded) = loader::load(&cfg) else {
        println!("         walk: eBPF did not load here (root with CAP_BPF and CAP_PERFMON needed)");
        return;
    };
    let mut walker = loaded
        .walker(StateSet::default_filter(), bbrtop_collect::attrib::Resolver::new(None))
        .expect("the walk");
    let mut engine = Engine::new(EngineConfig::default());
    let mut d = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    d.dump_into(&mut engine, Now::system()).expect("seed");
    for permille in [10, 1000] {
        let (mut walk, mut tick, mut moved, mut dropped) = (vec![], vec![], vec![], 0);
        let mut read_ms = vec![];
        for _ in 0..ROUNDS {
            let _ = walker.walk();
            holders.touch(permille);
            // The ACKs of the bytes just sent (delayed ACKs wait up to 40 ms).
            std::thread::sleep(Duration::from_millis(60));
            walk.push(time(|| {
                let t = Instant::now();
                let bbrtop_collect::bpf::walk::Read { sockets, gone, stats } = walker.walk().expect("walk");
                read_ms.push(t.elapsed().as_secs_f64() * 1e3);
                moved.push(sockets.len() as f64);
                dropped = stats.dropped_total;
                let now = Now::system();
                engine.walked(Ok(Walk { sockets, gone, stats, duration: Duration::ZERO, now }));
            }));
            tick.push(time(|| drop(std::hint::black_box(engine.tick(Now::system())))));
        }
        let (w, t, rd) = (median(walk), median(tick), median(read_ms));
        println!("         (of the walk: reading and parsing {rd:.2} ms, the engine's update the rest)");
        println!(
            "         walk, {:>5.1}% moving ({:.0} sockets, {dropped} records not written so far): walk {w:.2} ms ({:.3}x raw), tick {t:.2} ms ({:.3}x raw)",
            permille as f64 / 10.0,
            median(moved),
            w / raw_ms,
            t / raw_ms
        );
    }
    println!("         (of {seen} sockets; raw dump {raw_ms:.2} ms)");
}

/// `n` loopback connections closed by their client first, whose sockets then stay in
/// TIME_WAIT for 60 s; a listener per 10,000, so each 4-tuple is new. Returns how many were made
/// (it stops after 40 s, before the first ones expire).
fn make_time_wait(n: usize) -> usize {
    let listeners: Vec<TcpListener> = (0..n.div_ceil(10_000))
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen"))
        .collect();
    let start = Instant::now();
    let mut made = 0;
    while made < n && start.elapsed() < Duration::from_secs(40) {
        let l = &listeners[made % listeners.len()];
        let Ok(c) = TcpStream::connect(l.local_addr().expect("addr")) else { break };
        let (s, _) = l.accept().expect("accept");
        drop(c);
        drop(s);
        made += 1;
    }
    made
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
    let cmd = format!("exec {} {collector}", bin.display());
    let tmux = |args: &[&str]| Command::new("tmux").args(args).output().ok().filter(|o| o.status.success());
    tmux(&["new-session", "-d", "-s", &session, "-x", "200", "-y", "50", &cmd])?;
    let pid = tmux(&["display", "-p", "-t", &session, "#{pane_pid}"])
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok());
    let share = pid.map(cpu_share);
    tmux(&["kill-session", "-t", &session]);
    share
}

/// A process's CPU over 20 s (after 5 s to settle), in percent of one core.
fn cpu_share(pid: u32) -> f64 {
    let ticks = || -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<f64> = after.split_whitespace().filter_map(|v| v.parse().ok()).collect();
        // utime and stime, fields 14 and 15 of stat: 10 and 11 here, after the command name and
        // the state letter (which does not parse).
        f.get(10).copied().unwrap_or(0.0) + f.get(11).copied().unwrap_or(0.0)
    };
    std::thread::sleep(Duration::from_secs(5));
    let (t0, c0) = (Instant::now(), ticks());
    std::thread::sleep(Duration::from_secs(20));
    let (t1, c1) = (Instant::now(), ticks());
    // Clock ticks are 100 per second on Linux (USER_HZ).
    (c1 - c0) / 100.0 / (t1 - t0).as_secs_f64() * 100.0
}

/// The bbrtop binary built in the same profile as this bench.
fn bbrtop_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("bbrtop");
    assert!(bin.exists(), "{} missing: run `cargo build --release` first", bin.display());
    bin
}

fn time(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run_quiet(c: &mut Command) {
    let st = c.stdout(Stdio::null()).status().expect("spawn");
    assert!(st.success(), "{c:?} failed");
}

fn raw_dump() {
    let mut d = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    d.dump_raw().expect("raw dump");
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

fn count_sockets() -> usize {
    let mut d = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    d.dump().expect("dump").sockets.len()
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
    let rss = vm_rss();
    drop(last);
    rss
}

fn vm_rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Child processes holding `n` sockets between them, with their answers; they exit when dropped.
struct Holders(Vec<(Child, BufReader<ChildStdout>)>);

impl Holders {
    /// Each holder moves `permille` of its connections (a byte each way); returns when all have.
    fn touch(&mut self, permille: usize) {
        for (c, _) in &mut self.0 {
            writeln!(c.stdin.as_mut().expect("stdin"), "{permille}").expect("to the holder");
        }
        for (_, out) in &mut self.0 {
            let mut line = String::new();
            out.read_line(&mut line).expect("the holder's answer");
            assert_eq!(line.trim(), "moved", "holder failed");
        }
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        for (c, _) in &mut self.0 {
            drop(c.stdin.take());
        }
        for (c, _) in &mut self.0 {
            let _ = c.wait();
        }
    }
}

fn open_sockets(n: usize) -> Holders {
    let mut conns = n / 2;
    let mut kids = Holders(Vec::new());
    while conns > 0 {
        let k = conns.min(CONNS_PER_HOLDER);
        conns -= k;
        let mut c = Command::new(std::env::current_exe().expect("exe"))
            .env(HOLD_ENV, k.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn holder");
        let (mut line, mut out) = (String::new(), BufReader::new(c.stdout.take().expect("stdout")));
        out.read_line(&mut line).expect("holder ready");
        assert_eq!(line.trim(), "ready", "holder failed");
        kids.0.push((c, out));
    }
    kids
}

/// In a child: `conns` loopback connections, then wait for stdin to close.
fn hold(conns: usize) {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("listen");
    let addr: SocketAddr = l.local_addr().expect("addr");
    let mut keep = Vec::with_capacity(conns * 2);
    for _ in 0..conns {
        let c = TcpStream::connect(addr).expect("connect");
        let (s, _) = l.accept().expect("accept");
        keep.push(c);
        keep.push(s);
    }
    println!("ready");
    std::io::stdout().flush().ok();
    // Each line asks to move that many per mille of the connections; stdin's end means exit.
    let (mut byte, mut from) = ([0u8; 1], 0);
    for line in std::io::stdin().lines() {
        let Ok(permille) = line.unwrap_or_default().trim().parse::<usize>() else { break };
        let n = (conns * permille).div_ceil(1000).min(conns);
        for i in 0..n {
            let k = (from + i) % conns;
            keep[2 * k].write_all(b"x").expect("send");
            keep[2 * k + 1].read_exact(&mut byte).expect("receive");
            keep[2 * k + 1].write_all(b"y").expect("answer");
            keep[2 * k].read_exact(&mut byte).expect("read the answer");
        }
        from = (from + n) % conns.max(1);
        println!("moved");
        std::io::stdout().flush().ok();
    }
    drop(keep);
}
