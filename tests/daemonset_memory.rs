//! The exporter as the shipped DaemonSet runs it (the args of deploy/kubernetes/daemonset.yaml,
//! `--hindsight.max-size` among them) inside a memory cgroup of the DaemonSet's memory limit, on
//! a host with 100,000 sockets, hindsight on: it stays up, every scrape answers, it never reaches
//! the limit, and what hindsight reports (in memory, and in its spool on disk, whose page cache
//! the cgroup is charged for too) stays within `--hindsight.max-size`.
//! Privileged: a memory cgroup (v1 here) and the eBPF socket walk the DaemonSet uses.

mod support;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::cgroup::Cgroup;
use support::daemonset;
use support::holder::Holder;

const SOCKETS: usize = 100_000;
/// Hindsight holds its window as 5 chunks of a fifth of it each (the default 15 m: 5 chunks of 3
/// minutes). A 50 s window makes them 10 s long, so within the run hindsight fills all five and
/// starts dropping the oldest: its steady state, which the default reaches only after 18 minutes.
const WINDOW: &str = "50s";
/// How long the exporter runs once ready: past the window, so the steady state is seen.
const RUN: Duration = Duration::from_secs(90);
const SCRAPE_EVERY: Duration = Duration::from_secs(5);
/// The memory hindsight holds (held chunks and the encoder's buffers), as the exporter reports it:
/// the sum of this gauge's series.
const METRIC: &str = "bbrtop_hindsight_memory_bytes";
/// Hindsight's spool on disk, as the exporter reports it.
const SPOOL_METRIC: &str = "bbrtop_hindsight_spool_bytes";

/// Run as a child by `Holder::start`: opens loopback connections and keeps them.
#[test]
#[ignore = "a helper process of root_daemonset_exporter_fits_its_memory_limit_with_100k_sockets"]
fn holder() {
    support::holder::hold_if_asked();
}

/// The sum of `name`'s series in a Prometheus text page, if it has any.
fn gauge(page: &str, name: &str) -> Option<f64> {
    let values: Vec<f64> = page
        .lines()
        .filter(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with([' ', '{'])))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// The exporter's state in words, for a failure's message.
fn state(exporter: &mut Child, cgroup: &Cgroup, limit: u64, log: &Path) -> String {
    let alive = exporter.try_wait().ok().flatten().is_none();
    let log = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(3).collect();
    format!(
        "exporter alive: {alive}, RSS {} KiB; its cgroup: peak {} KiB of {} KiB, failcnt {}, OOM kills {}; \
         its log ends: {:?}",
        support::rss_kib(exporter.id()),
        cgroup.read("memory.max_usage_in_bytes") >> 10,
        limit >> 10,
        cgroup.read("memory.failcnt"),
        cgroup.oom_kills(),
        tail
    )
}

#[test]
fn root_daemonset_exporter_fits_its_memory_limit_with_100k_sockets() {
    if !support::guard::root("a memory cgroup") {
        return;
    }
    let ds = daemonset::read(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("the DaemonSet's manifest");
    let bound =
        ds.flag("--hindsight.max-size").map(daemonset::size).expect("--hindsight.max-size in the DaemonSet");
    let bound = bound.expect("--hindsight.max-size's value");
    let limit = ds.memory_limit;

    let t0 = Instant::now();
    let _holders = Holder::many(SOCKETS);
    eprintln!("{SOCKETS} sockets opened in {:.1} s", t0.elapsed().as_secs_f64());

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("export.log");
    let port = support::http::free_port();
    let mut args = ds.local_args(&format!("127.0.0.1:{port}"), dir.path());
    args.retain(|a| !a.starts_with("--hindsight.window"));
    args.extend(["--hindsight.window".to_string(), WINDOW.to_string()]);
    eprintln!("bbrtop {}", args.join(" "));
    // Declared before the exporter, so dropped after it: the exporter is killed first.
    let cgroup = Cgroup::new("daemonset", limit);
    let mut exporter = support::Proc(
        cgroup
            .command(Path::new(env!("CARGO_BIN_EXE_bbrtop")))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("bbrtop export"),
    );
    let (pid, spawned) = (exporter.0.id(), Instant::now());
    let ready = support::poll_until(Duration::from_secs(60), || {
        support::http::get(port, "/-/ready", None).ok().filter(|r| r.0 == 200)
    });
    assert!(ready.is_some(), "not ready within 60 s: {}", state(&mut exporter.0, &cgroup, limit, &log));
    eprintln!("ready {:.1} s after it started", spawned.elapsed().as_secs_f64());

    let start = Instant::now();
    let (mut scrapes, mut hindsight_max, mut spool_max, mut rss_max) = (0, None::<f64>, None::<f64>, 0);
    let rounds = RUN.as_secs() / SCRAPE_EVERY.as_secs() + 1;
    for _ in 0..rounds {
        let scrape = support::http::get(port, "/metrics", None);
        let (status, page) = match scrape {
            Ok(r) => r,
            Err(e) => (0, e.to_string()),
        };
        assert_eq!(
            status,
            200,
            "scrape {} at {:.0} s: {}; {}",
            scrapes + 1,
            start.elapsed().as_secs_f64(),
            page.lines().next().unwrap_or(""),
            state(&mut exporter.0, &cgroup, limit, &log)
        );
        scrapes += 1;
        if let Some(v) = gauge(&page, METRIC) {
            hindsight_max = Some(hindsight_max.map_or(v, |m: f64| m.max(v)));
        }
        if let Some(v) = gauge(&page, SPOOL_METRIC) {
            spool_max = Some(spool_max.map_or(v, |m: f64| m.max(v)));
        }
        rss_max = rss_max.max(support::rss_kib(pid));
        if start.elapsed() >= RUN {
            break;
        }
        std::thread::sleep(SCRAPE_EVERY);
    }
    eprintln!(
        "after {:.0} s, {scrapes} scrapes: RSS max {rss_max} KiB, now {} KiB; the cgroup's peak {} KiB of {} KiB; \
         hindsight reported at most {} bytes in memory and {} in its spool (bound {bound})",
        start.elapsed().as_secs_f64(),
        support::rss_kib(pid),
        cgroup.read("memory.max_usage_in_bytes") >> 10,
        limit >> 10,
        hindsight_max.map_or("no".to_string(), |b| format!("{b:.0}")),
        spool_max.map_or("no".to_string(), |b| format!("{b:.0}")),
    );
    let alive = exporter.0.try_wait().ok().flatten().is_none();
    assert!(alive, "the exporter died: {}", state(&mut exporter.0, &cgroup, limit, &log));
    assert_eq!(
        cgroup.read("memory.failcnt"),
        0,
        "the exporter reached its memory limit: {}",
        state(&mut exporter.0, &cgroup, limit, &log)
    );
    let hindsight = hindsight_max.unwrap_or_else(|| panic!("the exporter reports no {METRIC}"));
    assert!(hindsight <= bound as f64, "hindsight held {hindsight} bytes, over --hindsight.max-size {bound}");
    let spool = spool_max.unwrap_or_else(|| panic!("the exporter reports no {SPOOL_METRIC}: no spool"));
    assert!(spool <= bound as f64, "hindsight's spool took {spool} bytes, over --hindsight.max-size {bound}");
}
