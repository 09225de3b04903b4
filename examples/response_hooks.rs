//! What starting a response costs on each hook a kernel may offer: the tracepoint
//! tcp:tcp_sendmsg_locked (Linux 6.16) against fentry on tcp_sendmsg_locked (the fallback below
//! it), each against an empty program on the same hook (bench/floor_sendmsg.bpf.c) in the same
//! round. Rounds alternate the hooks (ABBA); each round loads bbrtop's programs with that start
//! (the other planned as absent) and the empty one beside it, runs REQUESTS request/response
//! exchanges of 15 kB on one loopback keep-alive connection, and reads bpf_stats. Prints ns per
//! run, medians over rounds. bench/response_hooks.sh runs it on a kernel that has both.
//!
//!     cargo run --example response_hooks -- FLOOR.o [ROUNDS] [REQUESTS]

use anyhow::Context;
use bbrtop_collect::bpf::loader::{self, LoadConfig, ProgStats, prog_stats};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Hook {
    Tracepoint,
    Fentry,
}

impl Hook {
    /// bbrtop's start program on this hook, and the empty one beside it.
    fn programs(self) -> (&'static str, &'static str) {
        match self {
            Hook::Tracepoint => ("tcp_sendmsg_locked", "floor_sendmsg_tp"),
            Hook::Fentry => ("tcp_sendmsg_fentry", "floor_sendmsg_fentry"),
        }
    }
}

/// ns per run of bbrtop's start, of the empty program, and of tcp_probe (the same program either
/// way: a control), over one round.
type Round = (f64, f64, f64);

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let floor = args.next().context("usage: response_hooks FLOOR.o [ROUNDS] [REQUESTS]")?;
    let rounds: usize = args.next().map_or(Ok(4), |a| a.parse()).context("ROUNDS")?;
    let requests: usize = args.next().map_or(Ok(2000), |a| a.parse()).context("REQUESTS")?;
    let _stats = StatsOn::enable()?;
    let mut results: Vec<(Hook, Round)> = Vec::new();
    for r in 0..rounds {
        // ABBA: which hook goes first alternates by round.
        let order =
            if r % 2 == 0 { [Hook::Tracepoint, Hook::Fentry] } else { [Hook::Fentry, Hook::Tracepoint] };
        for hook in order {
            match round(hook, &floor, requests) {
                Ok(x) => results.push((hook, x)),
                Err(e) => eprintln!("{hook:?}: {e:#}"),
            }
        }
    }
    println!(
        "{:<12} {:>12} {:>12} {:>12} {:>14}   (ns per run, median of rounds)",
        "hook", "bbrtop", "empty", "above", "tcp_probe"
    );
    for hook in [Hook::Tracepoint, Hook::Fentry] {
        let mine: Vec<Round> = results.iter().filter(|(h, _)| *h == hook).map(|(_, x)| *x).collect();
        if mine.is_empty() {
            println!("{hook:<12?} not measured (the kernel refused it: see above)");
            continue;
        }
        let med = |f: fn(&Round) -> f64| median(mine.iter().map(f).collect());
        let (ours, empty, probe) = (med(|x| x.0), med(|x| x.1), med(|x| x.2));
        println!(
            "{:<12} {ours:>12.0} {empty:>12.0} {:>12.0} {probe:>14.0}   ({} rounds)",
            format!("{hook:?}"),
            ours - empty,
            mine.len()
        );
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One round on `hook`: bbrtop's programs with that start and the empty program on the same hook.
fn round(hook: Hook, floor: &str, requests: usize) -> anyhow::Result<Round> {
    let (ours, empty) = hook.programs();
    let hide = if hook == Hook::Fentry { vec!["tcp_sendmsg_locked"] } else { Vec::new() };
    let cfg = LoadConfig { walk: true, hide_tracepoints: hide, ..LoadConfig::from_rule(&Default::default()) };
    let l = loader::load(&cfg).context("loading bbrtop's programs")?;
    anyhow::ensure!(l.links.iter().any(|(n, _)| *n == ours), "{ours} did not attach: {:?}", l.fates);
    let mut obj = libbpf_rs::ObjectBuilder::default().open_file(floor).context("opening the floor")?;
    for mut p in obj.progs_mut() {
        p.set_autoload(p.name() == empty);
    }
    let obj = obj.load().context("loading the empty program")?;
    let prog = obj.progs_mut().find(|p| p.name() == empty).context("the empty program")?;
    let _link = prog.attach().context("attaching the empty program")?;
    let (before, floor_before) = (l.stats(), prog_stats(prog.as_fd()));
    exchange(requests)?;
    let (after, floor_after) = (l.stats(), prog_stats(prog.as_fd()));
    let per_run = |a: ProgStats, b: ProgStats| {
        (b.run_time_ns - a.run_time_ns) as f64 / (b.run_cnt - a.run_cnt).max(1) as f64
    };
    let of = |m: &std::collections::BTreeMap<&str, ProgStats>, n: &str| m.get(n).copied().unwrap_or_default();
    Ok((
        per_run(of(&before, ours), of(&after, ours)),
        per_run(floor_before, floor_after),
        per_run(of(&before, "tcp_probe"), of(&after, "tcp_probe")),
    ))
}

/// `n` requests of 10 bytes, each answered with 15 kB, on one loopback connection.
fn exchange(n: usize) -> anyhow::Result<()> {
    const ANSWER: usize = 15_000;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        let (mut req, answer) = ([0u8; 10], vec![7u8; ANSWER]);
        while s.read_exact(&mut req).is_ok() {
            s.write_all(&answer)?;
        }
        Ok(())
    });
    let mut c = TcpStream::connect(addr)?;
    c.set_nodelay(true)?;
    let mut buf = vec![0u8; ANSWER];
    for _ in 0..n {
        c.write_all(&[1u8; 10])?;
        c.read_exact(&mut buf)?;
    }
    drop(c);
    server.join().map_err(|_| anyhow::anyhow!("the server panicked"))??;
    Ok(())
}

/// bpf_stats on while this lives (BPF_ENABLE_STATS: the kernel turns them off when its fd closes).
struct StatsOn {
    _fd: std::os::fd::OwnedFd,
}

impl StatsOn {
    #[allow(unsafe_code)]
    fn enable() -> anyhow::Result<StatsOn> {
        use std::os::fd::FromRawFd;
        // SAFETY: a plain syscall wrapper; on success the fd is ours and closed by OwnedFd.
        let fd =
            unsafe { libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME) };
        anyhow::ensure!(fd >= 0, "BPF_ENABLE_STATS failed ({fd}): needs CAP_SYS_ADMIN");
        // SAFETY: `fd` is a new descriptor the kernel just returned, owned by nobody else.
        Ok(StatsOn { _fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) } })
    }
}
