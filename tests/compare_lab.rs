//! The test: `bbrtop compare` on a BBR run against a CUBIC run of the lab's bufferbloat
//! scenario (several flows per cc, recorded with `lab --record`) reports BBR's lower median RTT
//! with an interval over sockets that excludes zero, as a change of cc; and the BBR run's two
//! halves, one cc on both sides (issue 38's A/A test), as no cc verdict. Privileged.

mod support;

use serde_json::Value;
use std::process::Command;
use support::guard;

/// Parallel flows per cc: at least `compare`'s minimum for an interval.
const FLOWS: u64 = 5;

fn bbrtop(args: &[&str]) -> (String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_bbrtop")).args(args).output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "bbrtop {args:?}: {err}");
    (out, err.into_owned())
}

fn metric<'a>(v: &'a Value, metric: &str) -> &'a Value {
    let all = v["groups"].as_array().unwrap().iter().find(|g| g["group"]["by"] == "all").expect("all");
    all["metrics"].as_array().unwrap().iter().find(|m| m["metric"] == metric).expect(metric)
}

#[test]
fn root_compare_bbr_against_cubic_on_the_bufferbloat_lab() {
    if !guard::lab("compare on a lab run") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    let flows = FLOWS.to_string();
    // Each cc's flows run alone on a fresh path for 12 s, recorded into rec/cubic and rec/bbr.
    let (report, _) = bbrtop(&[
        "lab",
        "bufferbloat",
        "--duration",
        "12s",
        "--flows",
        &flows,
        "--json",
        "--record",
        rec.to_str().unwrap(),
    ]);
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["flows"].as_array().unwrap().len() as u64, 2 * FLOWS, "{report}");
    let (cubic, bbr) = (rec.join("cubic"), rec.join("bbr"));
    let plots = tmp.path().join("plots");
    let (out, _) = bbrtop(&[
        "compare",
        cubic.to_str().unwrap(),
        bbr.to_str().unwrap(),
        "--json",
        "--plot",
        plots.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    // Each side's flows ran its cc: a change of cc, a cc verdict, observed.
    for (side, cc) in [("a", "cubic"), ("b", "bbr")] {
        assert_eq!(v[side]["ccs"][cc]["socket_share"], 1.0, "{side}: {}", v[side]);
    }
    assert_eq!(
        (v["contrast"]["kind"].as_str(), v["contrast"]["cc_verdict"].as_bool()),
        (Some("cc_change"), Some(true))
    );
    assert_eq!(v["contrast"]["observational"], true);
    for side in ["a", "b"] {
        assert_eq!(v[side]["sockets"].as_u64(), Some(FLOWS), "{side}: {}", v[side]);
        // 100 ms samples for 12 s.
        assert!(v[side]["polls"].as_u64().unwrap() > 60, "{}", v[side]);
    }
    let p50 = metric(&v, "srtt_p50_ms");
    let (a, b) = (p50["a"]["median"].as_f64().unwrap(), p50["b"]["median"].as_f64().unwrap());
    let ci = &p50["diff_ci"];
    let (lo, hi) = (ci["lo"].as_f64().unwrap(), ci["hi"].as_f64().unwrap());
    eprintln!("median srtt over sockets: cubic {a} ms, bbr {b} ms, B-A 95% CI [{lo}, {hi}] ms");
    // CUBIC fills the 1000-packet buffer; BBR's median RTT is lower, and the interval over
    // sockets excludes zero.
    assert!(b < a, "BBR's median srtt {b} ms is not below CUBIC's {a} ms");
    assert!(lo <= hi && hi < 0.0, "the interval [{lo}, {hi}] does not exclude zero");
    assert!(lo <= b - a && b - a <= hi, "the difference {} lies outside its interval", b - a);
    assert!(a > 200.0, "CUBIC built a standing queue: {a} ms");
    // Sane figures: every socket shared the 10 Mbit/s link with 4 others.
    let goodput = metric(&v, "goodput_bits_per_sec");
    for side in ["a", "b"] {
        let g = goodput[side]["median"].as_f64().unwrap();
        assert!(g > 0.2e6 && g < 10.5e6 / 2.0, "{side}'s median goodput {g} bit/s");
    }
    assert_eq!(v["method"]["resamples"], 2000);
    // The plot: both sides' srtt CDFs, in each cc's colour.
    let s = std::fs::read_to_string(plots.join("compare-srtt-cdf.svg")).unwrap();
    assert!(s.starts_with("<svg") && s.contains("#1F77B4") && s.contains("#D62728"));
    assert!(
        s.contains(&format!("A: cubic ({FLOWS} sockets")) && s.contains(&format!("B: bbr ({FLOWS} sockets"))
    );
    // The table says the same in words.
    let (table, _) = bbrtop(&["compare", cubic.to_str().unwrap(), bbr.to_str().unwrap()]);
    let line = table.lines().find(|l| l.trim_start().starts_with("srtt p50")).unwrap();
    assert!(line.ends_with("B better (lower)"), "{table}");

    // Issue 38's A/A test on the same real flows: the BBR run's first half against its second,
    // one cc on both sides, whatever the halves' differences (slow start, time): no cc verdict.
    let half = |range: &str| format!("{}@{range}", bbr.display());
    let (first, second) = (half("..+6s"), half("+6s.."));
    let (out, _) = bbrtop(&["compare", &first, &second, "--json"]);
    let aa: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(aa["b"]["sockets"].as_u64(), Some(FLOWS), "{}", aa["b"]);
    assert_eq!(
        (aa["contrast"]["kind"].as_str(), aa["contrast"]["cc_verdict"].as_bool()),
        (Some("same_cc"), Some(false))
    );
    let (table, _) = bbrtop(&["compare", &first, &second]);
    assert!(
        table.contains("\nBoth sides ran bbr: differences are time and neighbours, not the cc"),
        "{table}"
    );
    assert!(table.contains("\nWorse on B (not a cc verdict): "), "{table}");
}
