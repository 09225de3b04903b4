//! The rollout's report: the guide's table (p50/p95/p99 response time per box, on the kernel's
//! clock and the clients'), per AS the BBR box against the CUBIC boxes with an interval of each
//! difference and a verdict in the words `bbrtop compare` uses, and per population its path,
//! its cross traffic and how the path kept to its target while it ran. Pure.

use super::shape::{Mix, bytes};
use super::{BOXES, Population, RolloutConfig};
use crate::lab::path_check::PathCheck;
use bbrtop_core::snapshot::loghist::LogHist;
use bbrtop_core::snapshot::responses::{QuantileDiff, quantile_diff};
use bbrtop_core::stats::Verdict;
use serde::Serialize;
use std::fmt::Write;
use std::time::Duration;

/// One population as it ran: its AS label, its path described and measured.
pub struct PopulationRun {
    pub population: Population,
    /// Its `asn`, else what the database said of its peers.
    pub label: Option<String>,
    pub path: String,
    pub check: PathCheck,
}

/// What a run gathered.
pub struct Collected {
    pub cfg: RolloutConfig,
    pub mix: Mix,
    pub populations: Vec<PopulationRun>,
    /// The kernel's response times per box and population.
    pub hists: Vec<Vec<LogHist>>,
    /// The clients' own timings, the same way.
    pub client: Vec<Vec<Vec<Duration>>>,
    pub interrupted: Option<f64>,
}

/// p50, p95 and p99 in milliseconds, and how many responses.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Quantiles {
    pub responses: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl Quantiles {
    fn of(h: &LogHist) -> Quantiles {
        let ms = |q| h.quantile(q).map(|s| s * 1000.0);
        Quantiles { responses: h.count(), p50_ms: ms(0.5), p95_ms: ms(0.95), p99_ms: ms(0.99) }
    }
}

/// One box: its response times as the kernel timed them, and as its clients did, over every
/// population and per population.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoxRow {
    pub name: String,
    pub cc: String,
    pub kernel: Quantiles,
    pub client: Quantiles,
    /// The same per population: where the two clocks are compared. A box's median over every
    /// population can fall in the gap between the local answers (a few ms) and the mobile ones
    /// (some 80 ms), where a few more of either move it tens of ms and each clock reads it apart.
    pub populations: Vec<Clocks>,
}

/// One (box, population) pair's response times on both clocks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Clocks {
    pub population: String,
    pub kernel: Quantiles,
    pub client: Quantiles,
}

/// One AS: the BBR box against the CUBIC boxes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AsRow {
    pub population: String,
    pub asn: String,
    pub bbr: Quantiles,
    pub cubic: Quantiles,
    pub p50: QuantileDiff,
    pub p95: QuantileDiff,
    pub p99: QuantileDiff,
    /// Who got the win: `better` when p50 or p95 is better on BBR and neither worse, `worse`
    /// when either is worse, else `no_clear_difference`.
    pub verdict: Verdict,
}

/// One population's path: as configured, its cross traffic, and as it ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathRow {
    pub population: String,
    pub asn: String,
    pub path: String,
    /// Bulk downloads each box sent this population beside the responses (0: none).
    pub cross_traffic_downloads: u32,
    /// The path measured while the run used it (the population's four labs pooled).
    pub path_check: PathCheck,
}

/// A response size and its share of the requests.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeShare {
    pub bytes: u64,
    pub percent: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub seconds: f64,
    pub connections_per_path: usize,
    pub interval_ms: f64,
    pub warmup_seconds: f64,
    /// The response mix asked for, and its average.
    pub sizes: Vec<SizeShare>,
    pub mean_response_bytes: f64,
    pub paths: Vec<PathRow>,
    /// True when any population's path fell behind its target (each says how in `paths`).
    pub path_fell_behind: bool,
    pub boxes: Vec<BoxRow>,
    pub by_as: Vec<AsRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_after_seconds: Option<f64>,
    /// Per population: its name, and the BBR and CUBIC boxes' histograms (for the plots).
    #[serde(skip)]
    pub hists: Vec<(String, LogHist, LogHist)>,
}

fn merged<'a>(hists: impl IntoIterator<Item = &'a LogHist>) -> LogHist {
    let mut h = LogHist::default();
    hists.into_iter().for_each(|x| h.add(x));
    h
}

/// The clients' timings as a histogram (the same buckets as the kernel's, so the two read alike).
fn of_times<'a>(times: impl IntoIterator<Item = &'a Duration>) -> LogHist {
    let mut h = LogHist::default();
    times.into_iter().for_each(|t| h.observe(t.as_secs_f64()));
    h
}

fn verdict(p50: &QuantileDiff, p95: &QuantileDiff) -> Verdict {
    let said = [p50.verdict, p95.verdict];
    if said.contains(&Some(Verdict::Worse)) {
        Verdict::Worse
    } else if said.contains(&Some(Verdict::Better)) {
        Verdict::Better
    } else {
        Verdict::NoClearDifference
    }
}

pub fn build(c: Collected) -> Report {
    let pops = &c.populations;
    let boxes = BOXES
        .iter()
        .enumerate()
        .map(|(b, (name, cc))| BoxRow {
            name: name.to_string(),
            cc: cc.to_string(),
            kernel: Quantiles::of(&merged(&c.hists[b])),
            client: Quantiles::of(&of_times(c.client[b].iter().flatten())),
            populations: pops
                .iter()
                .enumerate()
                .map(|(p, run)| Clocks {
                    population: run.population.name.to_string(),
                    kernel: Quantiles::of(&c.hists[b][p]),
                    client: Quantiles::of(&of_times(&c.client[b][p])),
                })
                .collect(),
        })
        .collect();
    let label = |p: usize| pops[p].label.clone().unwrap_or_else(|| "unknown".into());
    let mut hists = Vec::new();
    let by_as = pops
        .iter()
        .enumerate()
        .map(|(p, run)| {
            let name = run.population.name.to_string();
            let (bbr, cubic): (Vec<usize>, Vec<usize>) = (0..BOXES.len()).partition(|b| BOXES[*b].1 == "bbr");
            let (hb, hc) =
                (merged(bbr.iter().map(|b| &c.hists[*b][p])), merged(cubic.iter().map(|b| &c.hists[*b][p])));
            hists.push((name.clone(), hb.clone(), hc.clone()));
            // A = the CUBIC boxes, B = the BBR box: B - A < 0 is BBR faster.
            let (p50, p95, p99) =
                (quantile_diff(&hc, &hb, 0.5), quantile_diff(&hc, &hb, 0.95), quantile_diff(&hc, &hb, 0.99));
            AsRow {
                population: name,
                asn: label(p),
                bbr: Quantiles::of(&hb),
                cubic: Quantiles::of(&hc),
                verdict: verdict(&p50, &p95),
                p50,
                p95,
                p99,
            }
        })
        .collect();
    let paths: Vec<PathRow> = pops
        .iter()
        .enumerate()
        .map(|(p, run)| PathRow {
            population: run.population.name.to_string(),
            asn: label(p),
            path: run.path.clone(),
            cross_traffic_downloads: u32::from(run.population.cross_traffic),
            path_check: run.check.clone(),
        })
        .collect();
    Report {
        seconds: c.cfg.duration.as_secs_f64(),
        connections_per_path: c.cfg.clients,
        interval_ms: c.cfg.interval.as_secs_f64() * 1000.0,
        warmup_seconds: c.cfg.warmup.as_secs_f64(),
        sizes: c
            .mix
            .shares
            .iter()
            .map(|(b, p)| SizeShare { bytes: *b, percent: f64::from(*p) / 10.0 })
            .collect(),
        mean_response_bytes: c.mix.mean_bytes(),
        path_fell_behind: paths.iter().any(|p| p.path_check.fell_behind),
        paths,
        boxes,
        by_as,
        interrupted_after_seconds: c.interrupted,
        hists,
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| if v >= 100.0 { format!("{v:.0} ms") } else { format!("{v:.1} ms") })
}

fn signed(v: f64) -> String {
    if v < 0.0 { format!("-{}", ms(Some(-v))) } else { format!("+{}", ms(Some(v))) }
}

fn diff(d: &QuantileDiff) -> String {
    match (d.diff, d.diff_ci) {
        (Some(x), Some(ci)) => format!("{} [{}, {}]", signed(x), signed(ci.lo), signed(ci.hi)),
        (Some(x), None) => format!("{} (too few for an interval)", signed(x)),
        _ => "-".into(),
    }
}

fn words(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better on BBR",
        Verdict::Worse => "worse on BBR",
        Verdict::NoClearDifference => "no clear difference",
    }
}

/// p50, p95 and p99 in three columns of `w`.
fn three(q: &Quantiles, w: usize) -> String {
    format!("{:>w$} {:>w$} {:>w$}", ms(q.p50_ms), ms(q.p95_ms), ms(q.p99_ms))
}

fn cross_traffic(downloads: u32) -> String {
    match downloads {
        0 => "cross traffic: none".into(),
        n => format!("cross traffic: {n} bulk download per box, in the box's congestion control"),
    }
}

impl Report {
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Rollout: {} boxes ({}), {} populations, {:.0} s, {} keep-alive connections per box and population, \
             requests at random, {:.0} ms apart on average (the first {:.0} s of responses left out)",
            self.boxes.len(),
            self.boxes.iter().map(|b| format!("{} {}", b.name, b.cc)).collect::<Vec<_>>().join(", "),
            self.paths.len(),
            self.seconds,
            self.connections_per_path,
            self.interval_ms,
            self.warmup_seconds,
        );
        let sizes: Vec<String> =
            self.sizes.iter().map(|z| format!("{}% {}", z.percent, bytes(z.bytes as f64))).collect();
        let _ =
            writeln!(s, "Responses: {} ({} on average)", sizes.join(", "), bytes(self.mean_response_bytes));
        for p in &self.paths {
            if let Some(w) = p.path_check.warning(&p.population) {
                let _ = writeln!(s, "{w}");
            }
        }
        for p in &self.paths {
            let _ = writeln!(
                s,
                "  {} ({}): {}; {}",
                p.population,
                p.asn,
                p.path,
                cross_traffic(p.cross_traffic_downloads)
            );
            let _ = writeln!(s, "    as it ran: {}", p.path_check.summary());
        }
        let _ = writeln!(
            s,
            "\nResponse time per box, every population: p50, p95, p99 (the kernel's, then the clients' own)"
        );
        let _ = writeln!(
            s,
            "  {:<16} {:>10} {:>10} {:>10} {:>10}   {:>10} {:>10} {:>10}",
            "", "p50", "p95", "p99", "responses", "client p50", "p95", "p99"
        );
        for b in &self.boxes {
            let _ = writeln!(
                s,
                "  {:<16} {} {:>10}   {}",
                format!("{} ({})", b.name, b.cc),
                three(&b.kernel, 10),
                b.kernel.responses,
                three(&b.client, 10)
            );
        }
        let _ = writeln!(
            s,
            "\nThe two clocks per box and population: p50, p95, p99, the kernel's and the clients' own"
        );
        let w = self.paths.iter().map(|p| p.population.len()).max().unwrap_or(0).max(10);
        let _ = writeln!(
            s,
            "  {:<16} {:<w$} {:>10} {:>10} {:>10}   {:>10} {:>10} {:>10}",
            "", "", "kernel p50", "p95", "p99", "client p50", "p95", "p99"
        );
        for b in &self.boxes {
            for c in &b.populations {
                let _ = writeln!(
                    s,
                    "  {:<16} {:<w$} {}   {}",
                    format!("{} ({})", b.name, b.cc),
                    c.population,
                    three(&c.kernel, 10),
                    three(&c.client, 10)
                );
            }
        }
        let _ = writeln!(
            s,
            "\nWho got the win, per AS: the BBR box (B) against the CUBIC boxes (A), B-A with its 95% interval"
        );
        for a in &self.by_as {
            let _ = writeln!(
                s,
                "  {} {}: {} ({} responses on BBR, {} on CUBIC)",
                a.asn,
                a.population,
                words(a.verdict),
                a.bbr.responses,
                a.cubic.responses
            );
            for (name, d) in [("p50", &a.p50), ("p95", &a.p95), ("p99", &a.p99)] {
                let _ = writeln!(s, "    {name}  CUBIC {:>9}  BBR {:>9}  B-A {}", ms(d.a), ms(d.b), diff(d));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(center_ms: f64, n: usize) -> LogHist {
        let mut h = LogHist::default();
        for k in 0..n {
            h.observe(center_ms * (0.8 + 0.4 * k as f64 / n as f64) / 1000.0);
        }
        h
    }

    fn check(fell_behind: bool) -> PathCheck {
        let late = Duration::from_micros(if fell_behind { 9_000 } else { 100 });
        crate::lab::path_check::example(Duration::from_millis(35), late, 20_000_000)
    }

    fn run(population: Population, label: Option<&str>, fell_behind: bool) -> PopulationRun {
        PopulationRun {
            population,
            label: label.map(str::to_string),
            path: format!("{} path", population.name),
            check: check(fell_behind),
        }
    }

    /// BBR faster for mobile, no different for local: the verdicts and the guide's table, every
    /// clock's p50, p95 and p99, each population's cross traffic, and the path that fell behind.
    #[test]
    fn the_report_says_who_got_the_win() {
        use super::super::POPULATIONS;
        let mut hists = vec![Vec::new(); 4];
        for (b, h) in hists.iter_mut().enumerate() {
            let bbr = b == 0;
            *h = vec![hist(if bbr { 60.0 } else { 90.0 }, 800), hist(160.0, 800), hist(2.0, 800)];
        }
        let mut client = vec![vec![Vec::new(); 3]; 4];
        client[0][0] = (1..=100).map(Duration::from_millis).collect();
        let [mobile, distant, local] = POPULATIONS;
        let r = build(Collected {
            cfg: super::super::RolloutConfig::quick(),
            mix: Mix::guide(),
            populations: vec![
                run(mobile, Some("AS64501"), false),
                run(distant, Some("AS64502"), true),
                run(local, None, false),
            ],
            hists,
            client,
            interrupted: None,
        });
        let v: Vec<(&str, Verdict)> = r.by_as.iter().map(|a| (a.asn.as_str(), a.verdict)).collect();
        assert_eq!(
            v,
            [
                ("AS64501", Verdict::Better),
                ("AS64502", Verdict::NoClearDifference),
                ("unknown", Verdict::NoClearDifference)
            ]
        );
        assert_eq!(r.boxes[0].kernel.responses, 2400);
        let local = &r.boxes[0].populations[2];
        assert_eq!((local.population.as_str(), local.kernel.responses), ("local", 800));
        let text = r.render();
        assert!(
            text.contains("AS64501 mobile: better on BBR (800 responses on BBR, 2400 on CUBIC)"),
            "{text}"
        );
        assert!(text.contains("Responses: 88% 8 kB, 10% 50 kB, 2% 200 kB (16 kB on average)"), "{text}");
        assert!(text.contains("  mobile (AS64501): mobile path; cross traffic: none"), "{text}");
        assert!(
            text.contains("  distant (AS64502): distant path; cross traffic: 1 bulk download per box"),
            "{text}"
        );
        // The kernel's p50, p95 and p99, then the clients' of 1..=100 ms (within the buckets'
        // 4.4%), per population.
        let row = text.lines().find(|l| l.contains("edge-1 (bbr)") && l.contains("mobile")).unwrap();
        let cells: Vec<f64> = row.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        assert_eq!(cells.len(), 6, "{row}");
        for (got, want) in cells[3..].iter().zip([50.0, 95.0, 99.0]) {
            assert!((got - want).abs() <= 0.05 * want, "{row}");
        }
        let warnings: Vec<&str> = text.lines().filter(|l| l.starts_with("WARNING")).collect();
        assert_eq!(warnings.len(), 1, "{text}");
        assert!(warnings[0].starts_with("WARNING: distant's emulated path fell behind its target"), "{text}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["by_as"][0]["verdict"], "better");
        assert_eq!(json["path_fell_behind"], true);
        assert_eq!(json["paths"][1]["cross_traffic_downloads"], 1);
        assert_eq!(json["paths"][1]["path_check"]["fell_behind"], true);
        assert_eq!(json["paths"][0]["path_check"]["fell_behind"], false);
        assert_eq!(json["sizes"][2], serde_json::json!({"bytes": 200000, "percent": 2.0}));
    }
}
