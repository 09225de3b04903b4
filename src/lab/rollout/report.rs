//! The rollout's report: the guide's table (p50/p95/p99 response time per box) and, per AS,
//! the BBR box against the CUBIC boxes with an interval of each difference and a verdict in the
//! words `bbrtop compare` uses. Pure.

use super::{BOXES, POPULATIONS, RolloutConfig};
use bbrtop_core::snapshot::loghist::LogHist;
use bbrtop_core::snapshot::responses::{QuantileDiff, quantile_diff};
use bbrtop_core::stats::Verdict;
use serde::Serialize;
use std::fmt::Write;
use std::time::Duration;

/// What a run gathered.
pub struct Collected {
    pub cfg: RolloutConfig,
    /// The kernel's response times per box and population.
    pub hists: [[LogHist; 3]; 4],
    /// The clients' own timings, the same way.
    pub client: [[Vec<Duration>; 3]; 4],
    /// Each population's AS label, as the database says of its peers.
    pub labels: [Option<String>; 3],
    /// Each population's path, described.
    pub paths: Vec<String>,
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

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathRow {
    pub population: String,
    pub asn: String,
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub seconds: f64,
    pub connections_per_path: usize,
    pub interval_ms: f64,
    pub warmup_seconds: f64,
    pub paths: Vec<PathRow>,
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
    let boxes = BOXES
        .iter()
        .enumerate()
        .map(|(b, (name, cc))| BoxRow {
            name: name.to_string(),
            cc: cc.to_string(),
            kernel: Quantiles::of(&merged(&c.hists[b])),
            client: Quantiles::of(&of_times(c.client[b].iter().flatten())),
            populations: POPULATIONS
                .iter()
                .enumerate()
                .map(|(p, pop)| Clocks {
                    population: pop.name.to_string(),
                    kernel: Quantiles::of(&c.hists[b][p]),
                    client: Quantiles::of(&of_times(&c.client[b][p])),
                })
                .collect(),
        })
        .collect();
    let label = |p: usize| c.labels[p].clone().unwrap_or_else(|| "unknown".into());
    let mut hists = Vec::new();
    let by_as = POPULATIONS
        .iter()
        .enumerate()
        .map(|(p, pop)| {
            let (bbr, cubic): (Vec<usize>, Vec<usize>) = (0..BOXES.len()).partition(|b| BOXES[*b].1 == "bbr");
            let (hb, hc) =
                (merged(bbr.iter().map(|b| &c.hists[*b][p])), merged(cubic.iter().map(|b| &c.hists[*b][p])));
            hists.push((pop.name.to_string(), hb.clone(), hc.clone()));
            // A = the CUBIC boxes, B = the BBR box: B - A < 0 is BBR faster.
            let (p50, p95, p99) =
                (quantile_diff(&hc, &hb, 0.5), quantile_diff(&hc, &hb, 0.95), quantile_diff(&hc, &hb, 0.99));
            AsRow {
                population: pop.name.to_string(),
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
    let paths = POPULATIONS
        .iter()
        .enumerate()
        .map(|(p, pop)| PathRow {
            population: pop.name.to_string(),
            asn: label(p),
            path: c.paths.get(p).cloned().unwrap_or_default(),
        })
        .collect();
    Report {
        seconds: c.cfg.duration.as_secs_f64(),
        connections_per_path: c.cfg.clients,
        interval_ms: c.cfg.interval.as_secs_f64() * 1000.0,
        warmup_seconds: c.cfg.warmup.as_secs_f64(),
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
        for p in &self.paths {
            let _ = writeln!(s, "  {} ({}): {}", p.population, p.asn, p.path);
        }
        let _ = writeln!(
            s,
            "\nResponse time per box, every population (timed in the kernel; the clients' own p50/p95 after)"
        );
        let _ = writeln!(
            s,
            "  {:<16} {:>10} {:>10} {:>10} {:>10}   {:>10} {:>10}",
            "", "p50", "p95", "p99", "responses", "client p50", "p95"
        );
        for b in &self.boxes {
            let k = &b.kernel;
            let _ = writeln!(
                s,
                "  {:<16} {:>10} {:>10} {:>10} {:>10}   {:>10} {:>10}",
                format!("{} ({})", b.name, b.cc),
                ms(k.p50_ms),
                ms(k.p95_ms),
                ms(k.p99_ms),
                k.responses,
                ms(b.client.p50_ms),
                ms(b.client.p95_ms)
            );
        }
        let _ = writeln!(s, "\nThe two clocks per population, p50: the kernel's / the clients' own");
        let head: String = POPULATIONS.iter().map(|p| format!(" {:>21}", p.name)).collect();
        let _ = writeln!(s, "  {:<16}{head}", "");
        for b in &self.boxes {
            let cells: String = b
                .populations
                .iter()
                .map(|c| format!(" {:>21}", format!("{} / {}", ms(c.kernel.p50_ms), ms(c.client.p50_ms))))
                .collect();
            let _ = writeln!(s, "  {:<16}{cells}", format!("{} ({})", b.name, b.cc));
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

    /// BBR faster for mobile, no different for local: the verdicts and the guide's table.
    #[test]
    fn the_report_says_who_got_the_win() {
        let mut hists: [[LogHist; 3]; 4] = Default::default();
        for (b, h) in hists.iter_mut().enumerate() {
            let bbr = b == 0;
            *h = [hist(if bbr { 60.0 } else { 90.0 }, 800), hist(160.0, 800), hist(2.0, 800)];
        }
        let client: [[Vec<Duration>; 3]; 4] = Default::default();
        let labels = [Some("AS64501".to_string()), Some("AS64502".to_string()), None];
        let r = build(Collected {
            cfg: super::super::RolloutConfig::quick(),
            hists,
            client,
            labels,
            paths: vec!["a".into(), "b".into(), "c".into()],
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
        assert!(text.contains("edge-1 (bbr)"), "{text}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["by_as"][0]["verdict"], "better");
    }
}
