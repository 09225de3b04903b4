//! Whether a lab's emulated path kept to its target while a run used it, and the figures that
//! say so: the delay error of probes on the return path (the userspace delay line and the
//! router, with no queue of the flows' own to cross) and the bottleneck's rate over the windows
//! in which its queue stayed backlogged. A loaded machine lags the delay line; without this, its
//! lag would read as the congestion control's (issue 38: BBR's median 88 ms beside a virtual
//! machine, 51.9 ms on a quiet one). Pure: [`super::meter`] gathers the figures.

use super::fidelity::{Arrival, Spread, delay_errors};
use serde::Serialize;
use std::time::Duration;

/// The delay error allowed at p95: 5% of the one-way delay, and never less than 1 ms (a quiet
/// machine's p99 is 0.2-1 ms up to 200 Mbit/s; docs/lab.md, "How faithful the lab is").
pub fn allowed_delay_error_ms(one_way: Duration) -> f64 {
    (one_way.as_secs_f64() * 1e3 * 0.05).max(1.0)
}

/// The bottleneck's median rate over backlogged windows must reach this share of its rate. It is
/// judged only where the queue stayed backlogged through at least half the windows: traffic that
/// leaves the path idle (answers in bursts) leaves a queue at both ends of a window it emptied
/// in between, and such a window's rate is the traffic's, not the bottleneck's (a quick rollout
/// without the download read 7% on two such windows of the mobile path).
pub const MIN_RATE_SHARE: f64 = 0.9;
/// The share of return-path probes that may go missing (none should: that path drops nothing).
pub const MAX_PROBE_LOSS: f64 = 0.02;

/// The bottleneck's counters at one moment: seconds since the meter started, bytes sent, and
/// bytes queued.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QdiscSample {
    pub at: f64,
    pub bytes: u64,
    pub backlog: u64,
}

/// tbf's counters from `tc -s -j qdisc show dev DEV`; None if it shows no tbf.
pub fn parse_tbf(json: &str, at: f64) -> Option<QdiscSample> {
    let qdiscs: Vec<serde_json::Value> = serde_json::from_str(json).ok()?;
    let tbf = qdiscs.iter().find(|q| q["kind"] == "tbf")?;
    Some(QdiscSample { at, bytes: tbf["bytes"].as_u64()?, backlog: tbf["backlog"].as_u64()? })
}

/// The rate delivered between consecutive samples whose queue was backlogged at both ends, as a
/// share of `rate_bits_per_sec`. A window that began or ended empty may have been the flows'
/// own pause, not the bottleneck's.
pub fn backlogged_rates(samples: &[QdiscSample], rate_bits_per_sec: u64) -> Vec<f64> {
    samples
        .windows(2)
        .filter(|w| w[0].backlog > 0 && w[1].backlog > 0 && w[1].at > w[0].at)
        .map(|w| {
            let bits = w[1].bytes.saturating_sub(w[0].bytes) as f64 * 8.0;
            bits / (w[1].at - w[0].at) / rate_bits_per_sec as f64
        })
        .collect()
}

/// What one lab's meter gathered while the run used it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    /// Return-path probes that arrived (sent before the cut-off), sorted by arrival.
    pub arrivals: Vec<Arrival>,
    /// Probes sent before the cut-off: those whose arrival the meter waited for.
    pub sent: u64,
    pub samples: Vec<QdiscSample>,
    /// Packets the delay line dropped because it held too many.
    pub line_dropped: u64,
}

/// What the path was set to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// The delay of the return path the probes cross.
    pub one_way: Duration,
    pub rate_bits_per_sec: u64,
}

/// The path as it ran, against its target, and the judgement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathCheck {
    pub target_one_way_ms: f64,
    pub target_rate_bits_per_sec: u64,
    /// The return path's one-way delay less its target, ms, per probe.
    pub delay_error_ms: Option<Spread>,
    pub allowed_delay_error_p95_ms: f64,
    pub probes_sent: u64,
    pub probes_received: u64,
    /// The bottleneck's rate over backlogged 1 s windows, as a share of its target.
    pub rate_share: Option<Spread>,
    /// The 1 s windows its queue was backlogged at both ends of, of all it was sampled over.
    pub backlogged_windows: usize,
    pub windows: usize,
    pub line_dropped: u64,
    /// True when the path fell behind its target: the run's figures hold the machine's lag.
    pub fell_behind: bool,
    /// Each way it fell behind, in words.
    pub why: Vec<String>,
}

impl PathCheck {
    /// The figures of one or more labs on the same target (a population's four boxes), pooled.
    pub fn of(target: Target, measured: &[Measured]) -> PathCheck {
        let errors = measured.iter().flat_map(|m| delay_errors(&m.arrivals, target.one_way)).collect();
        let rates: Vec<f64> =
            measured.iter().flat_map(|m| backlogged_rates(&m.samples, target.rate_bits_per_sec)).collect();
        let mut c = PathCheck {
            target_one_way_ms: target.one_way.as_secs_f64() * 1e3,
            target_rate_bits_per_sec: target.rate_bits_per_sec,
            delay_error_ms: Spread::of(errors),
            allowed_delay_error_p95_ms: allowed_delay_error_ms(target.one_way),
            probes_sent: measured.iter().map(|m| m.sent).sum(),
            probes_received: measured.iter().map(|m| m.arrivals.len() as u64).sum(),
            backlogged_windows: rates.len(),
            windows: measured.iter().map(|m| m.samples.len().saturating_sub(1)).sum(),
            rate_share: Spread::of(rates),
            line_dropped: measured.iter().map(|m| m.line_dropped).sum(),
            fell_behind: false,
            why: Vec::new(),
        };
        c.why = judge(&c);
        c.fell_behind = !c.why.is_empty();
        c
    }

    /// One line of figures: "delay error p50/p95/p99 0.08/0.21/0.40 ms of 20 ms (allowed 1.0 ms at
    /// p95), rate 99% of 10 Mbit/s at the median of 18 backlogged 1 s windows (of 19), 600 of 600
    /// probes back".
    pub fn summary(&self) -> String {
        let delay = self.delay_error_ms.map_or("delay not measured (no probe came back)".into(), |d| {
            format!(
                "delay error p50/p95/p99 {:.2}/{:.2}/{:.2} ms of {} ms (allowed {:.1} ms at p95)",
                d.p50,
                d.p95,
                d.p99,
                trim(self.target_one_way_ms),
                self.allowed_delay_error_p95_ms
            )
        });
        let mbit = trim(self.target_rate_bits_per_sec as f64 / 1e6);
        let rate = match self.rate_share {
            Some(r) if self.rate_judged() => format!(
                "rate {:.0}% of {mbit} Mbit/s at the median of {} backlogged 1 s windows (of {})",
                r.p50 * 100.0,
                self.backlogged_windows,
                self.windows
            ),
            _ => format!(
                "rate not judged (the queue stayed backlogged through {} of {} 1 s windows: the traffic \
                 did not keep the {mbit} Mbit/s path full)",
                self.backlogged_windows, self.windows
            ),
        };
        format!("{delay}, {rate}, {} of {} probes back", self.probes_received, self.probes_sent)
    }

    /// Whether the traffic kept the path full enough for its rate to be the bottleneck's.
    pub fn rate_judged(&self) -> bool {
        self.backlogged_windows >= 3 && 2 * self.backlogged_windows >= self.windows
    }

    /// The report's warning, when the path fell behind.
    pub fn warning(&self, what: &str) -> Option<String> {
        self.fell_behind.then(|| {
            format!(
                "WARNING: {what}'s emulated path fell behind its target ({}): its figures hold this \
                 machine's lag, not only the congestion control's",
                self.why.join("; ")
            )
        })
    }
}

/// A figure in ms or Mbit/s without a trailing ".0".
fn trim(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

/// Each way the path fell behind its target, in words; empty when it kept to it.
pub fn judge(c: &PathCheck) -> Vec<String> {
    let mut why = Vec::new();
    if let Some(d) = c.delay_error_ms
        && d.p95 > c.allowed_delay_error_p95_ms
    {
        why.push(format!(
            "the delay line added {:.1} ms beyond its {} ms at p95, more than {:.1} ms",
            d.p95,
            trim(c.target_one_way_ms),
            c.allowed_delay_error_p95_ms
        ));
    }
    if let Some(r) = c.rate_share
        && c.rate_judged()
        && r.p50 < MIN_RATE_SHARE
    {
        why.push(format!(
            "the bottleneck delivered {:.0}% of its rate at the median backlogged window, less than {:.0}%",
            r.p50 * 100.0,
            MIN_RATE_SHARE * 100.0
        ));
    }
    let lost = c.probes_sent.saturating_sub(c.probes_received);
    if c.probes_sent > 0 && lost as f64 > MAX_PROBE_LOSS * c.probes_sent as f64 {
        why.push(format!("{lost} of {} probes on the return path never came back", c.probes_sent));
    }
    if c.line_dropped > 0 {
        why.push(format!("the delay line dropped {} packets it could not hold", c.line_dropped));
    }
    why
}

/// A check of `n` probes on a `one_way` path, each `late` beyond it: for the reports' tests.
#[cfg(test)]
pub(crate) fn example(one_way: Duration, late: Duration, rate_bits_per_sec: u64) -> PathCheck {
    let (d, l) = (one_way.as_nanos() as u64, late.as_nanos() as u64);
    let arrivals = (0..100u64).map(|i| Arrival {
        sent_ns: i * 20_000_000,
        recv_ns: i * 20_000_000 + d + l,
        ip_bytes: 92,
    });
    let m = Measured { arrivals: arrivals.collect(), sent: 100, ..Measured::default() };
    PathCheck::of(Target { one_way, rate_bits_per_sec }, &[m])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Probes every 20 ms whose one-way delay is `delay_us` plus `extra_us(i)`.
    fn probes(n: u64, delay_us: u64, extra_us: impl Fn(u64) -> u64) -> Vec<Arrival> {
        (0..n)
            .map(|i| {
                let sent_ns = i * 20_000_000;
                Arrival { sent_ns, recv_ns: sent_ns + (delay_us + extra_us(i)) * 1000, ip_bytes: 92 }
            })
            .collect()
    }

    /// A queue backlogged throughout, delivering `share` of 10 Mbit/s, sampled every second.
    fn backlogged(secs: u64, share: f64) -> Vec<QdiscSample> {
        (0..=secs)
            .map(|s| QdiscSample { at: s as f64, bytes: (s as f64 * share * 1.25e6) as u64, backlog: 30_000 })
            .collect()
    }

    const TARGET: Target = Target { one_way: Duration::from_millis(20), rate_bits_per_sec: 10_000_000 };

    #[test]
    fn a_path_that_kept_to_its_target_passes() {
        let m = Measured {
            arrivals: probes(500, 20_000, |i| 50 + i % 200),
            sent: 500,
            samples: backlogged(10, 0.98),
            line_dropped: 0,
        };
        let c = PathCheck::of(TARGET, &[m]);
        assert!(!c.fell_behind, "{:?}", c.why);
        assert_eq!((c.probes_sent, c.probes_received, c.backlogged_windows, c.windows), (500, 500, 10, 10));
        assert!((c.rate_share.unwrap().p50 - 0.98).abs() < 1e-6);
        assert_eq!(c.warning("bufferbloat"), None);
        let s = c.summary();
        assert!(s.contains("of 20 ms (allowed 1.0 ms at p95)") && s.contains("rate 98% of 10 Mbit/s"), "{s}");
    }

    /// One probe in ten 8 ms late is a p95 of 8 ms: past 1 ms, the line fell behind.
    #[test]
    fn a_late_delay_line_is_named() {
        let m = Measured {
            arrivals: probes(500, 20_000, |i| if i % 10 == 0 { 8_000 } else { 100 }),
            sent: 500,
            ..Measured::default()
        };
        let c = PathCheck::of(TARGET, &[m]);
        assert!(c.fell_behind);
        assert_eq!(c.why, ["the delay line added 8.0 ms beyond its 20 ms at p95, more than 1.0 ms"]);
        let w = c.warning("bufferbloat").unwrap();
        assert!(
            w.starts_with("WARNING: bufferbloat's emulated path fell behind its target (the delay"),
            "{w}"
        );
        // With no backlogged window the rate is not judged, and the summary says why.
        assert!(
            c.summary().contains("rate not judged (the queue stayed backlogged through 0 of 0"),
            "{}",
            c.summary()
        );
    }

    /// The allowance grows with the delay: 5% of a 75 ms one-way delay is 3.75 ms.
    #[test]
    fn the_allowance_is_a_share_of_long_delays() {
        assert_eq!(allowed_delay_error_ms(Duration::from_micros(500)), 1.0);
        assert!((allowed_delay_error_ms(Duration::from_millis(75)) - 3.75).abs() < 1e-9);
        let long = Target { one_way: Duration::from_millis(75), ..TARGET };
        let m = Measured { arrivals: probes(100, 75_000, |_| 3_000), sent: 100, ..Measured::default() };
        assert!(!PathCheck::of(long, &[m]).fell_behind);
    }

    #[test]
    fn a_slow_bottleneck_lost_probes_and_drops_are_named_and_labs_pool() {
        let slow = Measured {
            arrivals: probes(80, 20_000, |_| 100),
            sent: 100,
            samples: backlogged(5, 0.7),
            line_dropped: 3,
        };
        let fine = Measured { arrivals: probes(100, 20_000, |_| 100), sent: 100, ..Measured::default() };
        let c = PathCheck::of(TARGET, &[slow, fine]);
        assert_eq!((c.probes_sent, c.probes_received, c.line_dropped), (200, 180, 3));
        assert_eq!(
            c.why,
            [
                "the bottleneck delivered 70% of its rate at the median backlogged window, less than 90%",
                "20 of 200 probes on the return path never came back",
                "the delay line dropped 3 packets it could not hold",
            ]
        );
    }

    /// Answers in bursts leave a queue at both ends of a few windows they emptied in between: a
    /// low rate there is the traffic's, not judged, until most windows are backlogged.
    #[test]
    fn a_path_the_traffic_left_idle_is_not_judged_on_its_rate() {
        let s = |at: f64, bytes, backlog| QdiscSample { at, bytes, backlog };
        let mut samples: Vec<QdiscSample> = (0..60).map(|i| s(f64::from(i), 1000 * i as u64, 0)).collect();
        samples[10].backlog = 9000;
        samples[11].backlog = 9000;
        samples[12].backlog = 9000;
        let idle = Measured { samples: samples.clone(), ..Measured::default() };
        let c = PathCheck::of(TARGET, &[idle]);
        assert_eq!((c.backlogged_windows, c.windows), (2, 59));
        assert!(c.rate_share.unwrap().p50 < 0.01 && !c.rate_judged() && !c.fell_behind, "{:?}", c.why);
        assert!(c.summary().contains("backlogged through 2 of 59 1 s windows"), "{}", c.summary());
        // Backlogged throughout at the same low rate, it is the bottleneck's, and judged.
        samples.iter_mut().for_each(|x| x.backlog = 9000);
        let full = Measured { samples, ..Measured::default() };
        assert!(PathCheck::of(TARGET, &[full]).fell_behind);
    }

    /// Only windows backlogged at both ends count: a flow's own pause is not the bottleneck's.
    #[test]
    fn rates_come_from_backlogged_windows_and_tc_json() {
        let s = |at, bytes, backlog| QdiscSample { at, bytes, backlog };
        let samples = [s(0.0, 0, 1), s(1.0, 1_250_000, 1), s(2.0, 1_300_000, 0), s(3.0, 2_000_000, 5)];
        assert_eq!(backlogged_rates(&samples, 10_000_000), [1.0]);
        let json = r#"[{"kind":"clsact","bytes":1},{"kind":"tbf","handle":"8098:","bytes":4542,"packets":3,"backlog":1514,"qlen":1}]"#;
        assert_eq!(parse_tbf(json, 2.5), Some(s(2.5, 4542, 1514)));
        assert_eq!(parse_tbf("[]", 0.0), None);
        assert_eq!(parse_tbf("not json", 0.0), None);
    }
}
