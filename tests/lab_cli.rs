//! `bbrtop lab SCENARIO` end to end: the guides' comparisons reproduced on real flows, and an
//! interrupted lab leaving nothing behind. Privileged.

mod support;

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::guard;
use support::lab::namespaces;

fn lab_json(scenario: &str, duration: &str, extra: &[&str]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["lab", scenario, "--duration", duration, "--json"])
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "bbrtop lab {scenario}: {err}");
    // With --json (and stderr not a terminal) there is no banner and no progress line.
    assert!(err.is_empty(), "stderr: {err:?}");
    serde_json::from_slice(&o.stdout).expect("report JSON")
}

fn flow<'a>(r: &'a Value, cc: &str) -> &'a Value {
    r["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["cc"] == cc)
        .unwrap_or_else(|| panic!("no {cc} flow in {r}"))
}

#[test]
fn root_bufferbloat_bbr_keeps_the_queue_short() {
    if !guard::lab("lab scenario test") {
        return;
    }
    let plots = tempfile::tempdir().unwrap();
    let dir = plots.path().join("plots");
    let r = lab_json("bufferbloat", "10s", &["--plot", dir.to_str().unwrap()]);
    let (c, b) = (flow(&r, "cubic"), flow(&r, "bbr"));
    let (c50, b50) = (c["rtt_p50_ms"].as_f64().unwrap(), b["rtt_p50_ms"].as_f64().unwrap());
    eprintln!("bufferbloat: cubic p50 {c50} ms, bbr p50 {b50} ms");
    // The guide: 1.09 s against 43 ms. CUBIC fills the 1000-packet buffer; BBR does not.
    assert!(c50 > 3.0 * b50, "CUBIC's median RTT {c50} ms is not well above BBR's {b50} ms");
    assert!(c50 > 200.0, "CUBIC built a standing queue: {c50} ms");
    for f in [c, b] {
        let bps = f["throughput_bits_per_sec"].as_f64().unwrap();
        assert!((5e6..=10.5e6).contains(&bps), "{} used the 10 Mbit/s link: {bps}", f["cc"]);
    }
    assert!(r["cubic_over_bbr_rtt_p50"].as_f64().unwrap() > 3.0);
    // The path was measured while the flows ran (whether it kept up is this machine's to say).
    let c = &r["path_check"];
    eprintln!("path check: {c}");
    assert!(c["probes_received"].as_u64().unwrap() > 100, "{c}");
    assert!(c["delay_error_ms"]["p95"].is_f64() && c["fell_behind"].is_boolean(), "{c}");
    assert_eq!(
        (c["target_one_way_ms"].as_f64(), c["target_rate_bits_per_sec"].as_u64()),
        (Some(20.0), Some(10_000_000))
    );
    // The plots: RTT over time and the CDF, a line per flow.
    for name in ["bufferbloat-rtt.svg", "bufferbloat-cdf.svg"] {
        let svg = std::fs::read_to_string(dir.join(name)).expect(name);
        assert!(svg.starts_with("<svg") && svg.contains("#1F77B4") && svg.contains("#D62728"), "{name}");
    }
}

#[test]
fn root_lossy_bbr_outruns_cubic() {
    if !guard::lab("lab scenario test") {
        return;
    }
    let r = lab_json("lossy", "8s", &[]);
    let (c, b) = (flow(&r, "cubic"), flow(&r, "bbr"));
    let (cb, bb) =
        (c["throughput_bits_per_sec"].as_f64().unwrap(), b["throughput_bits_per_sec"].as_f64().unwrap());
    eprintln!("lossy: cubic {:.2} Mbit/s, bbr {:.2} Mbit/s", cb / 1e6, bb / 1e6);
    // The guide: 3.27 Mbit/s against 9150 Mbit/s on 10 Gbit/s. Here the link is 200 Mbit/s.
    assert!(bb > 5.0 * cb, "BBR {bb} bit/s vs CUBIC {cb} bit/s");
    assert!(r["path"].as_str().unwrap().contains("loss"), "{}", r["path"]);
}

#[test]
fn root_an_interrupted_lab_leaves_nothing_behind() {
    if !guard::lab("lab scenario test") {
        return;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["lab", "ab", "--duration", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let prefix = format!("bbrtop-{}-", child.id());
    let listed = || namespaces(&prefix).len();
    // Wait (bounded) until the lab is up, then interrupt it.
    let t = Instant::now();
    while listed() < 3 && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(listed(), 3, "the lab came up");
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "bbrtop lab did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(100));
    };
    // It still reports what it measured, titled as partial, and exits 1: the run asked for did
    // not happen (main titled it "(60 s per flow)" and exited 0).
    let (mut out, mut err) = (String::new(), String::new());
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains("(interrupted after ") && out.contains("of 60 s per flow: a partial report)"),
        "{out}"
    );
    assert!(err.lines().last().is_some_and(|l| l.starts_with("bbrtop: error: interrupted after")), "{err}");
    assert_eq!(listed(), 0, "no namespace left behind");
    assert!(namespaces(&format!("bbrtop-{}-", std::process::id())).is_empty());
}

/// A bad populations file or mix, and the rollout's flags given to a scenario, are one line and
/// exit 2, said before any lab is built (no privilege needed).
#[test]
fn the_rollouts_shape_is_checked_before_anything_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let bad_rate = file("rate.yaml", "populations:\n  - name: api\n    rate: fast\n    rtt: 20ms\n");
    let unknown = file(
        "unknown.yaml",
        "populations:\n  - name: api\n    rate: 10Mbit\n    rtt: 20ms\n    colour: red\n",
    );
    let missing = dir.path().join("none.yaml");
    let missing = missing.to_str().unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    for (args, says) in [
        (
            vec!["rollout", "--lab.populations.file", &bad_rate],
            "population 1 (\"api\"): rate \"fast\": expected a bit rate",
        ),
        (vec!["rollout", "--lab.populations.file", &unknown], "unknown field `colour`"),
        (vec!["rollout", "--lab.populations.file", missing], "--lab.populations.file"),
        (vec!["rollout", "--lab.populations.file", dir_arg], "not a regular file"),
        (vec!["rollout", "--sizes", "15kB=70%,200kB=25%"], "the shares sum to 95%, not 100%"),
        (vec!["rollout", "--sizes", "15kB"], "is not SIZE=SHARE%"),
        (vec!["bufferbloat", "--sizes", "8kB=100%"], "--sizes applies to lab rollout only"),
        (vec!["ab", "--without-cross-traffic"], "--without-cross-traffic applies to lab rollout only"),
        (
            vec!["lossy", "--lab.populations.file", &bad_rate],
            "--lab.populations.file applies to lab rollout only",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_bbrtop")).arg("lab").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("bbrtop: error:") && err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}
