//! The comparison as a text table: a block per group of sockets, a line per metric with both
//! sides' medians over sockets, B − A, B / A, and the interval of B − A. Pure.

use super::Comparison;
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
    for (name, h) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(
            s,
            "{name}: {} ({} to {}, {} polls, {} sockets)",
            h.spec,
            humantime::format_rfc3339_seconds(h.from),
            humantime::format_rfc3339_seconds(h.to),
            h.polls,
            h.sockets
        );
    }
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
    let _ = writeln!(s, "Worse on B: {worse}.");
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

    #[test]
    fn signed_units() {
        assert_eq!(Metric::SrttP50Ms.show_diff(-955.0), "-955.0ms");
        assert_eq!(Metric::SrttP50Ms.show_diff(1200.0), "+1.20s");
        assert_eq!(Metric::GoodputBitsPerSec.show(9_500_000.0), "9.5Mbit/s");
        assert_eq!(Metric::RetransRatio.show_diff(-0.0012), "-0.12%");
        assert_eq!(Metric::Inflation.show_diff(0.5), "+0.50x");
    }
}
