//! The BBR guides' scenarios, as lab settings, and the report that compares what bbrtop measured
//! with the figures the guides published. Pure: the runner lives in [`super::run`].

use super::path_check::PathCheck;
use bbrtop_core::stats::percentile;
use bbrtop_core::units::{opt, percent};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// 10 Mbit/s, 40 ms, a 1000-packet buffer: CUBIC fills the buffer, BBR does not.
    Bufferbloat,
    /// A long lossy path: 200 Mbit/s, 100 ms, 1% loss (scaled to what the machine emulates faithfully).
    Lossy,
    /// One BBR and one CUBIC flow sharing one path.
    Ab,
    /// One BBR and one CUBIC flow sharing a path whose buffer is a tenth of its bandwidth-delay
    /// product: where BBR v1 retransmits far more than CUBIC and takes most of the link.
    Shallow,
}

impl Scenario {
    /// Every scenario, with its name and what it runs, in variant order: the one list the
    /// parser, `bbrtop lab --help` and the docs' check follow. A new scenario is a line here.
    pub const ALL: [(Scenario, &'static str, &'static str); 4] = [
        (Scenario::Bufferbloat, "bufferbloat", "10 Mbit/s, 40 ms, a 1000-packet buffer"),
        (Scenario::Lossy, "lossy", "200 Mbit/s, 100 ms, 1% loss"),
        (Scenario::Ab, "ab", "one BBR and one CUBIC flow sharing a path"),
        (
            Scenario::Shallow,
            "shallow",
            "the two sharing 20 Mbit/s, 40 ms, a 7-packet buffer: BBR's retransmits and CUBIC's share",
        ),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL[self as usize].1
    }

    /// What it runs, in a line.
    pub fn about(self) -> &'static str {
        Self::ALL[self as usize].2
    }
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.iter().find(|(_, name, _)| *name == s).map(|e| e.0).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|e| e.1).collect();
            format!("unknown scenario {s:?} (expected one of {})", names.join(", "))
        })
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One path and the flows that run over it. `sequential` runs each flow alone in turn (the
/// guides' comparisons), otherwise they share the path at once.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub rate_bits_per_sec: u64,
    pub rtt: Duration,
    pub buffer_packets: u32,
    pub loss: f64,
    pub flows: Vec<&'static str>,
    pub sequential: bool,
}

/// What a guide published for this scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Published {
    pub source: &'static str,
    pub text: &'static str,
    /// Median RTT in ms per cc, where the guide gives it.
    pub median_rtt_ms: Vec<(&'static str, f64)>,
    /// Throughput in Mbit/s per cc, where the guide gives it.
    pub throughput_mbit: Vec<(&'static str, f64)>,
}

impl Published {
    /// `a` over `b` in one of the figures, where the guide gives both.
    fn ratio(figures: &[(&str, f64)], a: &str, b: &str) -> Option<f64> {
        let of = |cc| figures.iter().find(|(c, _)| *c == cc).map(|(_, v)| *v);
        of(a).zip(of(b)).filter(|(_, y)| *y > 0.0).map(|(x, y)| x / y)
    }
}

/// Where a run and the guide's figures point opposite ways (one cc ahead there, the other here),
/// in words; None where they agree or there is nothing to set side by side.
fn differs(
    p: &Published,
    cubic_over_bbr_rtt: Option<f64>,
    bbr_over_cubic_throughput: Option<f64>,
) -> Option<String> {
    let pairs = [
        ("median RTT, CUBIC / BBR", cubic_over_bbr_rtt, Published::ratio(&p.median_rtt_ms, "cubic", "bbr")),
        (
            "throughput, BBR / CUBIC",
            bbr_over_cubic_throughput,
            Published::ratio(&p.throughput_mbit, "bbr", "cubic"),
        ),
    ];
    let out: Vec<String> = pairs
        .iter()
        .filter_map(|(what, here, there)| {
            let (here, there) = (here.as_ref()?, there.as_ref()?);
            ((*here > 1.0) != (*there > 1.0))
                .then(|| format!("{what} {here:.2}x here, {there:.2}x published"))
        })
        .collect();
    (!out.is_empty()).then(|| out.join("; "))
}

impl Scenario {
    pub fn plan(self) -> Plan {
        match self {
            Scenario::Bufferbloat => Plan {
                rate_bits_per_sec: 10_000_000,
                rtt: Duration::from_millis(40),
                buffer_packets: 1000,
                loss: 0.0,
                flows: vec!["cubic", "bbr"],
                sequential: true,
            },
            // The guide's 10 Gbit/s is beyond a userspace delay line; 200 Mbit/s is the highest
            // rate whose delay error stayed under 1 ms p99 here (tests/lab_fidelity.rs, the sweep).
            Scenario::Lossy => Plan {
                rate_bits_per_sec: 200_000_000,
                rtt: Duration::from_millis(100),
                buffer_packets: 1000,
                loss: 0.01,
                flows: vec!["cubic", "bbr"],
                sequential: true,
            },
            Scenario::Ab => Plan {
                rate_bits_per_sec: 20_000_000,
                rtt: Duration::from_millis(40),
                buffer_packets: 1000,
                loss: 0.0,
                flows: vec!["bbr", "cubic"],
                sequential: false,
            },
            // 20 Mbit/s x 40 ms is 100 kB, 66 full packets: a buffer of a tenth of that.
            Scenario::Shallow => Plan {
                rate_bits_per_sec: 20_000_000,
                rtt: Duration::from_millis(40),
                buffer_packets: 7,
                loss: 0.0,
                flows: vec!["bbr", "cubic"],
                sequential: false,
            },
        }
    }

    /// How long each flow runs by default: as long as the guide's run (`--quick` is shorter).
    pub fn guide_duration(self) -> Duration {
        match self {
            // The guides' netperf runs of the lossy path.
            Scenario::Lossy => Duration::from_secs(30),
            // bufferbloat's netperf runs were 120 s; ab's write-up measured 30 minutes of
            // production traffic, not a lab run, and two minutes lets both flows settle.
            _ => Duration::from_secs(120),
        }
    }

    pub fn published(self) -> Published {
        match self {
            Scenario::Bufferbloat => Published {
                source: "a BBR guide's netem run (10 Mbit/s, 40 ms, 1000-packet buffer, 120 s netperf)",
                text: "Both fully use the link; BBR's median RTT is 25x lower: 43 ms instead of 1.09 s.",
                median_rtt_ms: vec![("cubic", 1090.0), ("bbr", 43.0)],
                throughput_mbit: vec![],
            },
            Scenario::Lossy => Published {
                source: "a BBR guide's netem run (10 Gbit/s, 100 ms, 1% loss, 30 s netperf)",
                text: "CUBIC gets 3.27 Mbit/s, BBR gets 9150 Mbit/s (2798x higher).",
                median_rtt_ms: vec![],
                throughput_mbit: vec![("cubic", 3.27), ("bbr", 9150.0)],
            },
            Scenario::Ab => Published {
                source: "a BBR production write-up (25 GbE, 4 streams, 30 min)",
                text: "p95 RTT 48 ms for CUBIC against 22 ms for BBR v1; throughput +17%.",
                median_rtt_ms: vec![],
                throughput_mbit: vec![("cubic", 8200.0), ("bbr", 9600.0)],
            },
            Scenario::Shallow => Published {
                source: "a BBR rollout guide's caveats, and rollbacks made public",
                text: "BBRv1 can be unfair to CUBIC flows on the same bottleneck and may take more than \
                       its share; on shallow buffers it retransmits far more than CUBIC, and tuning \
                       tools switch BBR off above about 1% retransmits.",
                median_rtt_ms: vec![],
                throughput_mbit: vec![],
            },
        }
    }
}

/// What one flow did, as bbrtop measured it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowResult {
    pub cc: String,
    pub throughput_bits_per_sec: f64,
    pub rtt_p50_ms: Option<f64>,
    pub rtt_p95_ms: Option<f64>,
    pub rtt_p99_ms: Option<f64>,
    pub samples: usize,
    pub retrans_segs: u64,
    /// Bytes retransmitted over bytes sent during the run.
    pub retrans_ratio: Option<f64>,
    /// Its share of the throughput of the flows that ran with it (1 for a flow alone).
    pub throughput_share: Option<f64>,
    /// (seconds since the flow started, RTT ms) per sample, for the plots; not in the JSON report.
    #[serde(skip)]
    pub series: Vec<(f64, f64)>,
}

impl FlowResult {
    /// From the srtt samples (µs) bbrtop took during the run and the bytes acked over `elapsed`.
    pub fn from_samples(
        cc: &str,
        mut srtt_us: Vec<u32>,
        bytes_acked: u64,
        elapsed: Duration,
        retrans: u64,
    ) -> FlowResult {
        srtt_us.sort_unstable();
        let ms = |p| percentile(&srtt_us, p).map(|v| v as f64 / 1000.0);
        FlowResult {
            cc: cc.to_string(),
            throughput_bits_per_sec: bytes_acked as f64 * 8.0 / elapsed.as_secs_f64().max(1e-9),
            rtt_p50_ms: ms(50.0),
            rtt_p95_ms: ms(95.0),
            rtt_p99_ms: ms(99.0),
            samples: srtt_us.len(),
            retrans_segs: retrans,
            retrans_ratio: None,
            throughput_share: None,
            series: Vec::new(),
        }
    }

    /// From timed samples: (seconds since the flow started, srtt ms).
    pub fn from_series(
        cc: &str,
        series: Vec<(f64, f64)>,
        bytes_acked: u64,
        elapsed: Duration,
        retrans: u64,
    ) -> FlowResult {
        let us = series.iter().map(|p| (p.1 * 1000.0).round() as u32).collect();
        FlowResult { series, ..FlowResult::from_samples(cc, us, bytes_acked, elapsed, retrans) }
    }
}

/// Each flow's share of the throughput of its group (flows run together, or one alone).
pub fn set_shares(group: &mut [FlowResult]) {
    let total: f64 = group.iter().map(|f| f.throughput_bits_per_sec).sum();
    for f in group {
        f.throughput_share = (total > 0.0).then(|| f.throughput_bits_per_sec / total);
    }
}

/// The report `bbrtop lab` prints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub scenario: Scenario,
    pub plan: Plan,
    /// How the path was built here (e.g. "tbf + userspace delay line (no netem)").
    pub path: String,
    pub duration_seconds: f64,
    pub flows: Vec<FlowResult>,
    /// CUBIC over BBR, for median RTT and throughput, when both ran.
    pub cubic_over_bbr_rtt_p50: Option<f64>,
    pub bbr_over_cubic_throughput: Option<f64>,
    pub published: Published,
    /// Where this run contradicts the published figures (a different path, or another BBR).
    pub differs_from_published: Option<String>,
    /// Set when the run was stopped early (Ctrl-C, a signal): how long its last flows had run.
    pub interrupted_after_seconds: Option<f64>,
    /// The path measured while the flows ran (every group's path pooled), and whether it fell
    /// behind its target.
    pub path_check: Option<PathCheck>,
}

impl Report {
    pub fn new(
        scenario: Scenario,
        plan: Plan,
        path: String,
        duration: Duration,
        flows: Vec<FlowResult>,
    ) -> Report {
        // A cc's flows (several with `--flows N`): the median of their median RTTs, and their
        // throughput together.
        let of = |cc: &'static str| flows.iter().filter(move |f| f.cc == cc);
        let rtt = |cc: &'static str| {
            let mut v: Vec<f64> = of(cc).filter_map(|f| f.rtt_p50_ms).collect();
            v.sort_by(f64::total_cmp);
            percentile(&v, 50.0)
        };
        let throughput = |cc: &'static str| of(cc).map(|f| f.throughput_bits_per_sec).reduce(|a, b| a + b);
        let ratio = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) if y > 0.0 => Some(x / y),
            _ => None,
        };
        let (rtt_ratio, throughput_ratio) =
            (ratio(rtt("cubic"), rtt("bbr")), ratio(throughput("bbr"), throughput("cubic")));
        Report {
            cubic_over_bbr_rtt_p50: rtt_ratio,
            bbr_over_cubic_throughput: throughput_ratio,
            differs_from_published: differs(&scenario.published(), rtt_ratio, throughput_ratio),
            interrupted_after_seconds: None,
            path_check: None,
            published: scenario.published(),
            scenario,
            plan,
            path,
            duration_seconds: duration.as_secs_f64(),
            flows,
        }
    }

    /// The human-readable report.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let p = &self.plan;
        let mut s = String::new();
        let length = match self.interrupted_after_seconds {
            Some(ran) => format!(
                "interrupted after {ran:.0} s of {:.0} s per flow: a partial report",
                self.duration_seconds
            ),
            None => format!("{:.0} s per flow", self.duration_seconds),
        };
        let _ = writeln!(
            s,
            "scenario {}: {:.0} Mbit/s, {} ms RTT, {}-packet buffer, {:.1}% loss, {} ({length})",
            self.scenario,
            p.rate_bits_per_sec as f64 / 1e6,
            p.rtt.as_millis(),
            p.buffer_packets,
            p.loss * 100.0,
            if p.sequential { "flows one at a time" } else { "flows together" },
        );
        if let Some(w) = self.path_check.as_ref().and_then(|c| c.warning(&self.scenario.to_string())) {
            let _ = writeln!(s, "{w}");
        }
        let _ = writeln!(s, "path: {}", self.path);
        if let Some(c) = &self.path_check {
            let _ = writeln!(s, "path as it ran: {}", c.summary());
        }
        let _ = writeln!(
            s,
            "{:<6} {:>14} {:>6} {:>10} {:>10} {:>10} {:>8} {:>6} {:>8}",
            "CC", "THROUGHPUT", "SHARE", "RTT p50", "RTT p95", "RTT p99", "RETRANS", "RETX%", "SAMPLES"
        );
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}ms"));
        for f in &self.flows {
            let _ = writeln!(
                s,
                "{:<6} {:>14} {:>6} {:>10} {:>10} {:>10} {:>8} {:>6} {:>8}",
                f.cc,
                format!("{:.2}Mbit/s", f.throughput_bits_per_sec / 1e6),
                opt(f.throughput_share, percent),
                ms(f.rtt_p50_ms),
                ms(f.rtt_p95_ms),
                ms(f.rtt_p99_ms),
                f.retrans_segs,
                opt(f.retrans_ratio, percent),
                f.samples
            );
        }
        if let Some(r) = self.cubic_over_bbr_rtt_p50 {
            let _ = writeln!(s, "median RTT, CUBIC / BBR: {r:.1}x");
        }
        if let Some(r) = self.bbr_over_cubic_throughput {
            let _ = writeln!(s, "throughput, BBR / CUBIC: {r:.2}x");
        }
        let _ = writeln!(s, "published ({}): {}", self.published.source, self.published.text);
        if let Some(d) = &self.differs_from_published {
            let _ = writeln!(
                s,
                "this run does not bear the published figures out ({d}): another path, not theirs"
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_parse() {
        assert_eq!("bufferbloat".parse::<Scenario>(), Ok(Scenario::Bufferbloat));
        assert!("nope".parse::<Scenario>().unwrap_err().contains("expected one of bufferbloat, lossy"));
        assert_eq!(Scenario::Bufferbloat.plan().buffer_packets, 1000);
        assert_eq!(Scenario::Ab.plan().flows, vec!["bbr", "cubic"]);
    }

    /// The table is in variant order (names are looked up by position), and names read back.
    #[test]
    fn the_table_names_each_scenario_once() {
        for (i, (s, name, about)) in Scenario::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i, "{name} out of order");
            assert_eq!((s.name(), s.to_string(), name.parse()), (*name, name.to_string(), Ok(*s)));
            assert!(!about.is_empty());
        }
    }

    #[test]
    fn report_ratios() {
        let d = Duration::from_secs(10);
        let cubic =
            FlowResult::from_samples("cubic", (1..=100).map(|v| v * 10_000).collect(), 12_500_000, d, 3);
        let bbr = FlowResult::from_samples("bbr", vec![45_000; 50], 11_250_000, d, 0);
        assert_eq!(cubic.rtt_p50_ms, Some(500.0));
        assert_eq!(cubic.rtt_p99_ms, Some(990.0));
        assert_eq!(cubic.throughput_bits_per_sec, 10_000_000.0);
        let r = Report::new(
            Scenario::Bufferbloat,
            Scenario::Bufferbloat.plan(),
            "test".into(),
            d,
            vec![cubic, bbr],
        );
        assert_eq!(r.cubic_over_bbr_rtt_p50.map(|v| (v * 100.0).round() / 100.0), Some(11.11));
        assert_eq!(r.bbr_over_cubic_throughput, Some(0.9));
        let text = r.render();
        assert!(text.contains("median RTT, CUBIC / BBR: 11.1x"), "{text}");
        assert!(text.contains("1.09 s"), "{text}");
    }

    /// The guide's line is set beside a run that contradicts it, and an interrupted run says so in
    /// its title (on main an `ab` run with CUBIC ahead printed the write-up's "+17% for BBR" as
    /// is, and a Ctrl-C'ed report was titled with the full length).
    #[test]
    fn a_run_that_contradicts_the_guide_or_stopped_early_says_so() {
        let d = Duration::from_secs(20);
        let flows = vec![
            FlowResult::from_samples("bbr", vec![42_000; 50], 550_000, d, 1),
            FlowResult::from_samples("cubic", vec![60_000; 50], 4_400_000, d, 1),
        ];
        let s = Scenario::Ab;
        let mut r = Report::new(s, s.plan(), "test".into(), d, flows.clone());
        let text = r.render();
        assert!(
            text.contains("does not bear the published figures out (throughput, BBR / CUBIC 0.12x here, 1.17x published)"),
            "{text}"
        );
        assert!(text.contains("(20 s per flow)"), "{text}");
        r.interrupted_after_seconds = Some(5.4);
        let text = r.render();
        assert!(text.contains("(interrupted after 5 s of 20 s per flow: a partial report)"), "{text}");
        // A run that agrees with the guide carries no such line.
        let agree = vec![
            FlowResult::from_samples("bbr", vec![42_000; 50], 4_400_000, d, 1),
            FlowResult::from_samples("cubic", vec![60_000; 50], 550_000, d, 1),
        ];
        assert_eq!(Report::new(s, s.plan(), "test".into(), d, agree).differs_from_published, None);
    }

    /// A path that fell behind its target says so on the line after the title, and in JSON; one
    /// that kept to it shows its figures only.
    #[test]
    fn a_path_that_fell_behind_is_a_warning_line() {
        let d = Duration::from_secs(10);
        let flows = vec![FlowResult::from_samples("bbr", vec![88_000; 50], 11_000_000, d, 0)];
        let s = Scenario::Bufferbloat;
        let mut r = Report::new(s, s.plan(), "test".into(), d, flows);
        let check = |late_us| {
            crate::lab::path_check::example(
                Duration::from_millis(20),
                Duration::from_micros(late_us),
                10_000_000,
            )
        };
        r.path_check = Some(check(200));
        let text = r.render();
        assert!(!text.contains("WARNING"), "{text}");
        assert!(
            text.contains("path as it ran: delay error p50/p95/p99 0.20/0.20/0.20 ms of 20 ms"),
            "{text}"
        );
        r.path_check = Some(check(36_000));
        let text = r.render();
        assert_eq!(
            text.lines().nth(1),
            Some(
                "WARNING: bufferbloat's emulated path fell behind its target (the delay line added 36.0 ms \
                 beyond its 20 ms at p95, more than 1.0 ms): its figures hold this machine's lag, not only \
                 the congestion control's"
            ),
            "{text}"
        );
        assert_eq!(serde_json::to_value(&r).unwrap()["path_check"]["fell_behind"], true);
    }

    /// With several flows per cc, the ratios take each cc's flows together: the median of their
    /// median RTTs, the sum of their throughputs.
    #[test]
    fn report_ratios_over_several_flows_per_cc() {
        let d = Duration::from_secs(10);
        let flow = |cc, ms: u32, bytes| FlowResult::from_samples(cc, vec![ms * 1000; 5], bytes, d, 0);
        let flows = vec![
            flow("cubic", 900, 2_500_000),
            flow("cubic", 1000, 2_500_000),
            flow("cubic", 1100, 5_000_000),
            flow("bbr", 50, 5_000_000),
            flow("bbr", 100, 5_000_000),
        ];
        let s = Scenario::Bufferbloat;
        let r = Report::new(s, s.plan(), "test".into(), d, flows);
        assert_eq!(r.cubic_over_bbr_rtt_p50, Some(20.0));
        assert_eq!(r.bbr_over_cubic_throughput, Some(1.0));
    }
}
