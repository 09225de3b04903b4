//! What the benches that open real sockets share (poll.rs, footprint.rs): child processes holding
//! N loopback sockets that move some of their connections on request, TIME_WAIT sockets, the raw
//! netlink dump and the socket walk timed against it, a process's CPU and memory from /proc, a
//! command in a tmux session of its own, and the bbrtop binary to run. Each bench uses a part of
//! it, hence the allow below.
#![allow(dead_code)]

use bbrtop_collect::InetDiag;
use bbrtop_core::model::StateSet;
use bbrtop_core::seam::{DumpSink, Now, Walk};
use bbrtop_engine::{Engine, EngineConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Connections per holder process: two sockets each, well under a 20,000-file limit.
pub const CONNS_PER_HOLDER: usize = 8_000;
pub const ROUNDS: usize = 7;
const HOLD_ENV: &str = "BBRTOP_BENCH_HOLD";
/// Another bbrtop binary to run instead of the one built beside the bench.
pub const BIN_ENV: &str = "BBRTOP_BIN";

/// In a holder child (see [`open_sockets`]): holds its sockets until stdin closes, then returns
/// true, and the bench's `main` returns. Elsewhere returns false at once.
pub fn run_as_holder() -> bool {
    let Ok(n) = std::env::var(HOLD_ENV) else { return false };
    hold(n.parse().expect("connection count"));
    true
}

/// The bbrtop binary to run: `$BBRTOP_BIN` if set, else the one built in the same profile as
/// this bench.
pub fn bbrtop_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os(BIN_ENV) {
        let bin = PathBuf::from(bin);
        assert!(bin.exists(), "{BIN_ENV}={} does not exist", bin.display());
        return bin;
    }
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("bbrtop");
    assert!(bin.exists(), "{} missing: run `cargo build --release` first", bin.display());
    bin
}

pub fn time(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A netlink dump of both families read without parsing: the kernel's floor.
pub fn raw_dump() {
    let mut d = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    d.dump_raw().expect("raw dump");
}

/// The median of [`ROUNDS`] raw dumps, in ms.
pub fn raw_median() -> f64 {
    median((0..ROUNDS).map(|_| time(raw_dump)).collect())
}

/// The sockets a poll sees (the default filter: not LISTEN, not TIME_WAIT).
pub fn count_sockets() -> usize {
    let mut d = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    d.dump().expect("dump").sockets.len()
}

/// A process's CPU time so far (utime + stime), in seconds; 0 once it is gone. `pid` may be
/// "self".
pub fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = after.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    // utime and stime, fields 14 and 15 of stat: 10 and 11 here, after the command name and the
    // state letter (which does not parse). Clock ticks are 100 per second on Linux (USER_HZ).
    (f.get(10).copied().unwrap_or(0.0) + f.get(11).copied().unwrap_or(0.0)) / 100.0
}

/// A figure of /proc/PID/status given in kB (`VmRSS:`, `VmHWM:`), in bytes; 0 once it is gone.
pub fn status_bytes(pid: &str, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A command in a detached 200x50 tmux session of its own, killed with its session on drop.
pub struct Tmux(String);

impl Tmux {
    /// Starts `cmd` (a shell command; `exec` it so the pane's process is the command) in session
    /// `name`: the session, and the PID of its pane's process. None without tmux.
    pub fn start(name: &str, cmd: &str) -> Option<(Tmux, u32)> {
        tmux(&["new-session", "-d", "-s", name, "-x", "200", "-y", "50", cmd])?;
        let session = Tmux(name.to_string());
        let pid = tmux(&["display", "-p", "-t", name, "#{pane_pid}"])
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())?;
        Some((session, pid))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        tmux(&["kill-session", "-t", &self.0]);
    }
}

fn tmux(args: &[&str]) -> Option<std::process::Output> {
    Command::new("tmux").args(args).output().ok().filter(|o| o.status.success())
}

/// One row of [`walk_rows`]: the socket walk with `permille` of the connections moving.
#[derive(Clone, Copy, Debug)]
pub struct WalkRow {
    pub permille: usize,
    /// A poll of the walk as the binary runs it, in ms (median): the read handed to the engine
    /// in parts as it is read, so the two overlap.
    pub walk_ms: f64,
    /// The same read taken whole first and then handed over (no overlap), in ms (median).
    pub whole_ms: f64,
    /// Of which reading and parsing.
    pub read_ms: f64,
    /// Publishing the snapshot (every socket, moved or not).
    pub tick_ms: f64,
    /// Sockets the walk read (median).
    pub moved: f64,
}

/// The socket walk against the raw dump of the same run (`raw_ms`), with 1% and all of the
/// connections moving between polls; prints a line each, and returns them (none where eBPF does
/// not load).
pub fn walk_rows(holders: &mut Holders, seen: usize, raw_ms: f64) -> Vec<WalkRow> {
    use bbrtop_collect::bpf::loader::{self, LoadConfig};
    let cfg = LoadConfig { walk: true, ..LoadConfig::from_rule(&Default::default()) };
    let Ok(loaded) = loader::load(&cfg) else {
        println!("         walk: eBPF did not load here (root with CAP_BPF and CAP_PERFMON needed)");
        return vec![];
    };
    let mut walker = loaded
        .walker(StateSet::default_filter(), bbrtop_collect::attrib::Resolver::new(None))
        .expect("the walk");
    let mut engine = Engine::new(EngineConfig::default());
    let mut d = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    d.dump_into(&mut engine, Now::system()).expect("seed");
    let mut rows = vec![];
    for permille in [10, 1000] {
        let (mut walk, mut whole, mut tick, mut moved, mut dropped) = (vec![], vec![], vec![], vec![], 0);
        let mut read_ms = vec![];
        // The moves to read: the ACKs of the bytes just sent (delayed ACKs wait up to 40 ms).
        let mut moves = |walker: &mut bbrtop_collect::bpf::walk::Walker| {
            let _ = walker.walk();
            holders.touch(permille);
            std::thread::sleep(Duration::from_millis(60));
        };
        for _ in 0..ROUNDS {
            moves(&mut walker);
            whole.push(time(|| {
                let t = Instant::now();
                let bbrtop_collect::bpf::walk::Read { sockets, gone, stats } = walker.walk().expect("walk");
                read_ms.push(t.elapsed().as_secs_f64() * 1e3);
                moved.push(sockets.len() as f64);
                dropped = stats.dropped_total;
                let now = Now::system();
                engine.walked(Ok(Walk { sockets, gone, stats, duration: Duration::ZERO, now }));
            }));
            tick.push(time(|| drop(std::hint::black_box(engine.tick(Now::system())))));
            moves(&mut walker);
            walk.push(time(|| bbrtop_core::seam::Source::poll(&mut walker, &mut engine)));
            drop(engine.tick(Now::system()));
        }
        let row = WalkRow {
            permille,
            walk_ms: median(walk),
            whole_ms: median(whole),
            read_ms: median(read_ms),
            tick_ms: median(tick),
            moved: median(moved),
        };
        let (w, wh, t, rd) = (row.walk_ms, row.whole_ms, row.tick_ms, row.read_ms);
        println!(
            "         (read whole, then the engine: {wh:.2} ms ({:.3}x raw), of which reading and parsing {rd:.2} ms ({:.3}x raw))",
            wh / raw_ms,
            rd / raw_ms
        );
        println!(
            "         walk, {:>5.1}% moving ({:.0} sockets, {dropped} records not written so far): walk {w:.2} ms ({:.3}x raw), tick {t:.2} ms ({:.3}x raw)",
            permille as f64 / 10.0,
            row.moved,
            w / raw_ms,
            t / raw_ms
        );
        rows.push(row);
    }
    // Every connection moved in the last round, so every socket has storage now: what the
    // refill pass costs at a read after which some record fell behind.
    let refill: Vec<f64> = (0..ROUNDS)
        .map_while(|_| {
            let t = Instant::now();
            walker.refill_now().map(|r| r.map(|()| t.elapsed().as_secs_f64() * 1e3).expect("refill"))
        })
        .collect();
    if !refill.is_empty() {
        let r = median(refill);
        println!("         refill pass over every socket's storage: {r:.2} ms ({:.3}x raw)", r / raw_ms);
    }
    println!("         (of {seen} sockets; raw dump {raw_ms:.2} ms)");
    rows
}

/// TIME_WAIT sockets made by [`make_time_wait`].
pub struct TimeWaits {
    /// How many connections were closed.
    pub made: usize,
    /// The listeners' ports: the TIME_WAIT sockets' peer port.
    pub ports: Vec<u16>,
}

/// `n` loopback connections closed by their client first, whose sockets then stay in
/// TIME_WAIT for 60 s; a listener per 2,000, so each 4-tuple is new and a connect seldom takes
/// over a TIME_WAIT socket's port (Linux reuses them on loopback: tcp_tw_reuse=2). It stops
/// after 40 s, before the first ones expire.
pub fn make_time_wait(n: usize) -> TimeWaits {
    let listeners: Vec<TcpListener> = (0..n.div_ceil(2_000))
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
    TimeWaits { made, ports: listeners.iter().map(|l| l.local_addr().expect("addr").port()).collect() }
}

/// Child processes holding `n` sockets between them, with their answers; they exit when dropped.
pub struct Holders(Vec<(Child, BufReader<ChildStdout>)>);

impl Holders {
    /// Each holder moves `permille` of its connections (a byte each way); returns when all have.
    pub fn touch(&mut self, permille: usize) {
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

/// `n` loopback sockets (`n / 2` connections) in holder children, [`CONNS_PER_HOLDER`] each.
pub fn open_sockets(n: usize) -> Holders {
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
        kids.0.push((c, out));
        assert_eq!(line.trim(), "ready", "holder failed");
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
