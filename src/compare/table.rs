//! The comparison as a text table: a block per group of sockets, a line per metric with both
//! sides' medians over sockets, B − A, B / A, and the interval of B − A. Pure.

use super::Comparison;
use super::contrast::{self, CcMix, Control};
use super::report::{Group, Metric, Verdict};
use bbrtop_core::snapshot::responses::SizeClass;
use bbrtop_core::stats::Interval;
use bbrtop_core::units::{bitrate, micros, percent};
use std::fmt::Write;

impl Metric {
    fn label(self) -> &'static str {
        match self {
            Metric::ThroughputBitsPerSec => "throughput",
            Metric::GoodputBitsPerSec => "goodput",
            Metric::SrttP50Ms => "srtt p50",
            Metric::SrttP95Ms => "srtt p95",
            Metric::SrttP99Ms => "srtt p99",
            Metric::Inflation => "inflation",
            Metric::RetransRatio => "retransmits",
            Metric::ResponseP50Ms => "response p50",
            Metric::ResponseP95Ms => "response p95",
            Metric::ResponseP99Ms => "response p99",
        }
    }

    /// A value (or a difference, which may be negative) in the metric's unit.
    fn show(self, v: f64) -> String {
        let sign = if v < 0.0 { "-" } else { "" };
        let m = v.abs();
        let s = match self {
            Metric::ThroughputBitsPerSec | Metric::GoodputBitsPerSec => bitrate(m / 8.0),
            Metric::SrttP50Ms
            | Metric::SrttP95Ms
            | Metric::SrttP99Ms
            | Metric::ResponseP50Ms
            | Metric::ResponseP95Ms
            | Metric::ResponseP99Ms => micros((m * 1000.0).round().min(f64::from(u32::MAX)) as u32),
            Metric::Inflation => format!("{m:.2}x"),
            Metric::RetransRatio => percent(m),
        };
        format!("{sign}{s}")
    }

    /// A difference, with its sign always shown.
    fn show_diff(self, v: f64) -> String {
        if v < 0.0 { self.show(v) } else { format!("+{}", self.show(v)) }
    }
}

fn group_title(g: &Group) -> String {
    match g {
        Group::All => "all sockets".into(),
        Group::Cc(cc) => format!("cc {cc}"),
        Group::PeerGroup(p) => format!("peer group {p}"),
        Group::Asn(a) => format!("AS {}", a.strip_prefix("AS").unwrap_or(a)),
        Group::Country(c) => format!("country {c}"),
        Group::Host(h) => format!("host {h}"),
    }
}

/// What an interval of `metric`'s B - A says, in words.
fn verdict(metric: Metric, ci: Option<&Interval>, note: Option<&String>, verdict: Option<Verdict>) -> String {
    match (ci, note) {
        (Some(ci), _) => {
            let side = if ci.hi < 0.0 { "lower" } else { "higher" };
            let words = match verdict {
                Some(Verdict::Better) => format!("B better ({side})"),
                Some(Verdict::Worse) => format!("B worse ({side})"),
                _ => "no clear difference".to_string(),
            };
            format!("[{}, {}] {words}", metric.show_diff(ci.lo), metric.show_diff(ci.hi))
        }
        (None, Some(note)) => note.clone(),
        (None, None) => "-".into(),
    }
}

fn size_title(size: &str) -> &str {
    SizeClass::parse(size).map_or("of every size", SizeClass::title)
}

fn row(s: &mut String, cells: [&str; 6]) {
    let _ = writeln!(
        s,
        "  {:<12} {:>12} {:>12} {:>13} {:>7}  {}",
        cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
    );
}

/// The table `bbrtop compare` prints.
pub fn render(c: &Comparison) -> String {
    let mut s = String::new();
    for (name, side) in [("A", &c.a), ("B", &c.b)] {
        let h = &side.head;
        let _ = writeln!(
            s,
            "{name}: {} ({} to {}, {} polls, {} sockets)",
            h.spec,
            humantime::format_rfc3339_seconds(h.from),
            humantime::format_rfc3339_seconds(h.to),
            h.polls,
            h.sockets
        );
        let _ = writeln!(s, "   ccs: {}", mix(&side.ccs));
    }
    let _ = writeln!(s, "{}\n{}", c.contrast.headline, contrast::OBSERVATIONAL);
    let m = &c.method;
    let _ = writeln!(
        s,
        "Each figure: the median over sockets of each socket's own (srtt percentiles over its polls; \
         throughput, goodput and retransmits over its life).\n{:.0}% CI of B-A: percentile bootstrap over \
         sockets, {} resamples, seed {}; none with fewer than {} sockets a side.",
        m.confidence * 100.0,
        m.resamples,
        m.seed,
        m.min_sockets
    );
    let worse: Vec<String> = c
        .regressed
        .iter()
        .map(|r| {
            let mut what: Vec<&str> = r.metrics.iter().map(|m| m.label()).collect();
            what.extend(r.size.as_deref().map(size_title));
            format!("{} ({})", group_title(&r.group), what.join(", "))
        })
        .collect();
    let worse = if worse.is_empty() { "none".to_string() } else { worse.join("; ") };
    let not_cc = if c.contrast.cc_verdict { "" } else { " (not a cc verdict)" };
    let _ = writeln!(s, "Worse on B{not_cc}: {worse}.");
    for ctl in &c.contrast.controls {
        control(&mut s, c, ctl);
    }
    for g in &c.groups {
        let _ = writeln!(s, "\n{} (A {} sockets, B {})", group_title(&g.group), g.sockets_a, g.sockets_b);
        row(&mut s, ["", "A", "B", "B-A", "B/A", &format!("{:.0}% CI of B-A", m.confidence * 100.0)]);
        for r in &g.metrics {
            let show = |v: Option<f64>| v.map_or("-".to_string(), |v| r.metric.show(v));
            row(
                &mut s,
                [
                    r.metric.label(),
                    &show(r.a.median),
                    &show(r.b.median),
                    &r.diff.map_or("-".into(), |d| r.metric.show_diff(d)),
                    &r.ratio.map_or("-".into(), |x| format!("{x:.2}x")),
                    &verdict(r.metric, r.diff_ci.as_ref(), r.note.as_ref(), r.verdict),
                ],
            );
        }
    }
    responses(&mut s, c);
    s
}

/// A side's ccs: "bbr 98% of sockets, 97% of bytes; cubic 2.0% of sockets, 3.0% of bytes".
fn mix(m: &CcMix) -> String {
    if m.0.is_empty() {
        return "none (no sockets)".into();
    }
    let ccs: Vec<String> = m
        .ranked()
        .iter()
        .map(|(cc, sh)| {
            let bytes = sh.byte_share.map_or("-".into(), percent);
            format!("{cc} {} of sockets, {bytes} of bytes", percent(sh.socket_share))
        })
        .collect();
    ccs.join("; ")
}

/// A control's B-A beside all sockets': how much of the shift time and neighbours explain.
fn control(s: &mut String, c: &Comparison, ctl: &Control) {
    let _ = writeln!(
        s,
        "\nControl: cc {} ran on both sides (A {}, B {} of sockets): its own B-A is what time and neighbours \
         did without a change of cc.",
        ctl.cc,
        percent(ctl.share_a),
        percent(ctl.share_b)
    );
    let ci = format!("{:.0}% CI of the control's B-A", c.method.confidence * 100.0);
    let line = |s: &mut String, cells: [&str; 4]| {
        let _ = writeln!(s, "  {:<12} {:>12} {:>12}  {}", cells[0], cells[1], cells[2], cells[3]);
    };
    line(s, ["", "all B-A", "control B-A", &ci]);
    let all = c.groups.iter().find(|g| g.group == Group::All);
    for r in &ctl.metrics {
        let all = all.and_then(|g| g.metrics.iter().find(|m| m.metric == r.metric)).and_then(|m| m.diff);
        let diff = |d: Option<f64>| d.map_or("-".into(), |d| r.metric.show_diff(d));
        let words = verdict(r.metric, r.diff_ci.as_ref(), r.note.as_ref(), r.verdict);
        line(s, [r.metric.label(), &diff(all), &diff(r.diff), &words]);
    }
}

/// The response delivery times: a block per group and size class that saw responses.
fn responses(s: &mut String, c: &Comparison) {
    if c.responses.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nResponse delivery times (each figure over responses, not sockets; the CI of B-A joins each \
         side's distribution-free 97.5% quantile interval, so it holds with 95%)"
    );
    for r in &c.responses {
        let title = format!("{} responses {}", group_title(&r.group), size_title(&r.size));
        let _ = writeln!(s, "\n{title} (A {} responses, B {})", r.responses_a, r.responses_b);
        row(s, ["", "A", "B", "B-A", "B/A", "95% CI of B-A"]);
        for q in &r.quantiles {
            let show = |v: Option<f64>| v.map_or("-".to_string(), |v| q.metric.show(v));
            let ratio = q.a.zip(q.b).filter(|(a, _)| *a > 0.0).map(|(a, b)| b / a);
            row(
                s,
                [
                    q.metric.label(),
                    &show(q.a),
                    &show(q.b),
                    &q.diff.map_or("-".into(), |d| q.metric.show_diff(d)),
                    &ratio.map_or("-".into(), |x| format!("{x:.2}x")),
                    &verdict(q.metric, q.diff_ci.as_ref(), q.note.as_ref(), q.verdict),
                ],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::side;

    #[test]
    fn the_table_shows_medians_differences_and_intervals() {
        let a = side(&[
            ("cubic", 1000.0),
            ("cubic", 1100.0),
            ("cubic", 1050.0),
            ("cubic", 990.0),
            ("cubic", 1020.0),
        ]);
        let b = side(&[("bbr", 45.0), ("bbr", 50.0), ("bbr", 40.0), ("bbr", 47.0), ("bbr", 44.0)]);
        let text = render(&Comparison::new(&a, &b, false));
        insta::assert_snapshot!(text);
    }

    /// A canary (B) whose responses came faster: the block per group and size, its verdict, and
    /// the groups worse on B named with their size.
    #[test]
    fn the_table_shows_response_times() {
        use crate::compare::responses::ResponseBucket;
        use bbrtop_core::snapshot::responses::Responses;
        let bucket = |host: &str, cc: &str, ms: f64| {
            let mut responses = Responses::default();
            for k in 0..600 {
                responses.observe(12_000, ms * (0.9 + 0.2 * f64::from(k) / 600.0) / 1000.0);
            }
            ResponseBucket {
                host: host.into(),
                cc: cc.into(),
                peer_group: "other".into(),
                asn: Some("AS64501".into()),
                country: None,
                responses,
            }
        };
        let (mut a, mut b) = (side(&[("cubic", 40.0)]), side(&[("bbr", 40.0)]));
        a.responses = vec![bucket("edge-2", "cubic", 32.0)];
        b.responses = vec![bucket("canary", "bbr", 40.0)];
        let text = render(&Comparison::new(&a, &b, false));
        assert!(text.contains("AS 64501 responses <=15kB (A 600 responses, B 600)"), "{text}");
        let p50 = text.lines().find(|l| l.trim_start().starts_with("response p50")).unwrap();
        assert!(p50.contains("B worse (higher)"), "{p50}");
        assert!(text.contains("AS 64501 (response p50, response p95, response p99, <=15kB)"), "{text}");
    }

    /// The A/A test in words: BBR on both sides, B's RTTs 15 ms higher: each side's ccs, the
    /// headline saying why there is no cc verdict, and the groups worse on B not the cc's.
    #[test]
    fn one_cc_on_both_sides_is_said_and_is_no_cc_verdict() {
        let (a, b) = (side(&[("bbr", 46.0); 6]), side(&[("bbr", 61.0); 6]));
        let text = render(&Comparison::new(&a, &b, false));
        let head: Vec<&str> = text.lines().take(7).collect();
        assert_eq!(head[1], "   ccs: bbr 100% of sockets, 100% of bytes", "{text}");
        assert_eq!(
            head[4],
            "Both sides ran bbr: differences are time and neighbours, not the cc (no cc verdict)."
        );
        assert!(head[5].starts_with("Observational: two recordings (before and after, a canary"), "{text}");
        assert!(head[5].contains("`bbrtop experiment`"), "{text}");
        assert!(
            text.contains(
                "Worse on B (not a cc verdict): all sockets (srtt p50, srtt p95, srtt p99, inflation);"
            ),
            "{text}"
        );
        assert!(!text.contains("Control:"), "{text}");
    }

    /// Reno became BBR while a quarter of the sockets stayed CUBIC: CUBIC's own B-A beside all
    /// sockets', as the control; the groups worse on B are named without a caveat.
    #[test]
    fn a_control_is_shown_beside_all_sockets() {
        let mut a = vec![("reno", 80.0); 18];
        a.extend([("cubic", 60.0); 6]);
        let mut b = vec![("bbr", 90.0); 18];
        b.extend([("cubic", 50.0); 6]);
        let text = render(&Comparison::new(&side(&a), &side(&b), false));
        assert!(
            text.contains("   ccs: bbr 75% of sockets, 75% of bytes; cubic 25% of sockets, 25% of bytes"),
            "{text}"
        );
        assert!(text.contains("\nA ran reno, B ran bbr: a cc verdict, but an observed one"), "{text}");
        assert!(text.contains("\nWorse on B: all sockets (srtt p50"), "{text}");
        let block = text.split("Control: ").nth(1).expect(&text);
        assert!(block.starts_with("cc cubic ran on both sides (A 25%, B 25% of sockets)"), "{text}");
        let p50 = block.lines().find(|l| l.trim_start().starts_with("srtt p50")).unwrap();
        assert_eq!(
            p50.split_whitespace().collect::<Vec<_>>(),
            ["srtt", "p50", "+10.0ms", "-10.0ms", "[-10.0ms,", "-10.0ms]", "B", "better", "(lower)"]
        );
    }

    #[test]
    fn signed_units() {
        assert_eq!(Metric::SrttP50Ms.show_diff(-955.0), "-955.0ms");
        assert_eq!(Metric::SrttP50Ms.show_diff(1200.0), "+1.20s");
        assert_eq!(Metric::GoodputBitsPerSec.show(9_500_000.0), "9.5Mbit/s");
        assert_eq!(Metric::RetransRatio.show_diff(-0.0012), "-0.12%");
        assert_eq!(Metric::Inflation.show_diff(0.5), "+0.50x");
    }
}
