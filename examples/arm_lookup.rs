//! What counting by experiment arm costs the engine, against the same engine with no experiment
//! in the same run: the first poll of N sockets (every socket new, so each is asked its arm
//! through a real bpf(2) lookup in `bbrtop experiment`'s cookie -> arm map), and a poll where
//! nothing moved (asked nothing). Alternating, 5 rounds, medians. Root with CAP_BPF: it loads the
//! experiment's program, as a dry run, into a cgroup v2 of its own that no process joins.
//!
//!     cargo run --release --example arm_lookup -- 100000

use anyhow::Context;
use bbrtop::experiment::attach::{Plan, start};
use bbrtop::experiment::{Arm, Unit};
use bbrtop_core::seam::{Arms, Now, feed_dump};
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CGROUP: &str = "/sys/fs/cgroup/unified";

fn main() -> anyhow::Result<()> {
    let n: u64 =
        std::env::args().nth(1).map_or(Ok(100_000), |s| s.parse()).context("usage: arm_lookup [N]")?;
    let dir = std::path::PathBuf::from(format!("{CGROUP}/bbrtop-arm-lookup-{}", std::process::id()));
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = measure(n, &dir);
    let _ = std::fs::remove_dir(&dir);
    result
}

fn measure(n: u64, dir: &std::path::Path) -> anyhow::Result<()> {
    let plan = Plan {
        arms: vec![Arm { cc: "cubic".into(), parts: 5000 }, Arm { cc: "bbr".into(), parts: 5000 }],
        unit: Unit::Connection,
        seed: 1,
        ports: Vec::new(),
        dry_run: true,
    };
    let mut obj = std::mem::MaybeUninit::uninit();
    let running = start(&mut obj, &plan, dir).map_err(|e| anyhow::anyhow!("{e}"))?;
    let arms = Arms(Arc::new(running.arm_map().map_err(|e| anyhow::anyhow!("{e}"))?));
    let sockets: Vec<_> = (1..=n)
        .map(|c| {
            bbrtop_core::testing::record(c, if c % 2 == 0 { "bbr" } else { "cubic" })
                .peer(format!("10.1.{}.{}:443", (c >> 8) & 0xff, c & 0xff))
                .build()
        })
        .collect();
    let poll = |arms: Option<Arms>| {
        let mut e = Engine::new(EngineConfig { arms, ..EngineConfig::default() });
        let now = Now::system();
        let t = Instant::now();
        feed_dump(&mut e, Dump { sockets: sockets.clone(), ..Dump::default() }, now);
        e.tick(now);
        let first = t.elapsed();
        let later = now.after(Duration::from_secs(1));
        let t = Instant::now();
        feed_dump(&mut e, Dump { sockets: sockets.clone(), ..Dump::default() }, later);
        e.tick(later);
        (first, t.elapsed())
    };
    let (mut plain, mut with) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        plain.push(poll(None));
        with.push(poll(Some(arms.clone())));
    }
    let median = |v: &mut Vec<(Duration, Duration)>, pick: fn(&(Duration, Duration)) -> Duration| {
        let mut d: Vec<Duration> = v.iter().map(pick).collect();
        d.sort();
        d[d.len() / 2]
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (p1, w1) = (median(&mut plain, |p| p.0), median(&mut with, |p| p.0));
    let (p2, w2) = (median(&mut plain, |p| p.1), median(&mut with, |p| p.1));
    println!("{n} sockets, medians of 5 (the cloned dump included in both)");
    println!(
        "first poll (every socket new):  no experiment {:8.1} ms   with arms {:8.1} ms   +{:.0} ns a socket",
        ms(p1),
        ms(w1),
        (w1.as_secs_f64() - p1.as_secs_f64()) * 1e9 / n as f64
    );
    println!("a poll where nothing moved:     no experiment {:8.1} ms   with arms {:8.1} ms", ms(p2), ms(w2));
    drop(running);
    Ok(())
}
