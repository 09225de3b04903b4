//! Two sets of socket summaries side by side: per group of sockets (all, each cc, each peer
//! group), each metric's median over sockets on both sides, B − A, B / A, and the bootstrap
//! interval of the difference. Pure.

use super::summary::SocketSummary;
pub use bbrtop_core::stats::Verdict;
use bbrtop_core::stats::{self, Interval, MIN_SOCKETS};
use serde::Serialize;
use std::collections::BTreeSet;

/// What is compared, each a per-socket figure (see [`SocketSummary`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    ThroughputBitsPerSec,
    GoodputBitsPerSec,
    SrttP50Ms,
    SrttP95Ms,
    SrttP99Ms,
    Inflation,
    RetransRatio,
    /// Response delivery times (`responses.rs`): quantiles over responses, not sockets.
    ResponseP50Ms,
    ResponseP95Ms,
    ResponseP99Ms,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::ThroughputBitsPerSec,
        Metric::GoodputBitsPerSec,
        Metric::SrttP50Ms,
        Metric::SrttP95Ms,
        Metric::SrttP99Ms,
        Metric::Inflation,
        Metric::RetransRatio,
    ];

    pub fn of(self, s: &SocketSummary) -> Option<f64> {
        match self {
            Metric::ThroughputBitsPerSec => s.throughput_bits_per_sec,
            Metric::GoodputBitsPerSec => s.goodput_bits_per_sec,
            Metric::SrttP50Ms => s.srtt_p50_ms,
            Metric::SrttP95Ms => s.srtt_p95_ms,
            Metric::SrttP99Ms => s.srtt_p99_ms,
            Metric::Inflation => s.inflation,
            Metric::RetransRatio => s.retrans_ratio,
            Metric::ResponseP50Ms | Metric::ResponseP95Ms | Metric::ResponseP99Ms => None,
        }
    }

    /// Whether a lower value is the better one: RTTs, inflation and retransmits; not throughput
    /// and goodput.
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Metric::ThroughputBitsPerSec | Metric::GoodputBitsPerSec)
    }

    /// Whether B / A means something: not for a ratio of ratios near zero (retransmits).
    fn has_ratio(self) -> bool {
        self != Metric::RetransRatio
    }
}

/// Which sockets a row covers.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "by", content = "name", rename_all = "snake_case")]
pub enum Group {
    All,
    Cc(String),
    PeerGroup(String),
    Asn(String),
    Country(String),
    /// The sockets of one host's recordings (a side may hold several hosts).
    Host(String),
}

impl Group {
    fn contains(&self, s: &SocketSummary) -> bool {
        match self {
            Group::All => true,
            Group::Cc(cc) => s.cc == *cc,
            Group::PeerGroup(g) => s.peer_group == *g,
            Group::Asn(a) => s.asn.as_ref() == Some(a),
            Group::Country(c) => s.country.as_ref() == Some(c),
            Group::Host(h) => s.host == *h,
        }
    }
}

/// One side's metric: the median over its sockets that have the figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideValue {
    pub sockets: usize,
    pub median: Option<f64>,
}

/// One metric of one group, A against B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricRow {
    pub metric: Metric,
    pub a: SideValue,
    pub b: SideValue,
    /// median(B) − median(A).
    pub diff: Option<f64>,
    /// median(B) / median(A).
    pub ratio: Option<f64>,
    /// The bootstrap interval of `diff`; absent with fewer than [`MIN_SOCKETS`] on a side.
    pub diff_ci: Option<Interval>,
    pub ratio_ci: Option<Interval>,
    /// Why there is no interval ("too few sockets"), if there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the interval says of B, the metric's direction taken into account; absent without
    /// an interval.
    pub verdict: Option<Verdict>,
}

/// A group in which B is worse than A on some metric (the interval says so).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Regressed {
    pub group: Group,
    /// For response times: the size class (or `all`) the quantiles are of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    pub metrics: Vec<Metric>,
}

/// The groups in which B regressed, in the report's order of groups.
pub fn regressed(groups: &[GroupRows]) -> Vec<Regressed> {
    groups
        .iter()
        .filter_map(|g| {
            let worse: Vec<Metric> =
                g.metrics.iter().filter(|m| m.verdict == Some(Verdict::Worse)).map(|m| m.metric).collect();
            (!worse.is_empty()).then(|| Regressed { group: g.group.clone(), size: None, metrics: worse })
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupRows {
    pub group: Group,
    pub sockets_a: usize,
    pub sockets_b: usize,
    pub metrics: Vec<MetricRow>,
}

/// How the figures were made, for the reader of the table or the JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Method {
    pub unit: &'static str,
    pub statistic: &'static str,
    pub interval: &'static str,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub min_sockets: usize,
}

pub const METHOD: Method = Method {
    unit: "socket: each socket summarised over its polls first",
    statistic: "median over sockets of each socket's figure",
    interval: "percentile bootstrap of median(B) - median(A), resampling sockets with replacement",
    confidence: stats::CONFIDENCE,
    resamples: stats::RESAMPLES,
    seed: stats::SEED,
    min_sockets: MIN_SOCKETS,
};

/// The AS and country rows kept: the top this many by bytes sent over both sides; the rest are
/// `other`, so a recording of a million peers makes a table of a few dozen rows.
pub const TOP_LABELS: usize = 20;

/// Keeps the [`TOP_LABELS`] ASes and countries by bytes sent over both sides (ties by name),
/// and names the rest `other`.
pub fn bound_labels(a: &mut [SocketSummary], b: &mut [SocketSummary]) {
    type Label = fn(&mut SocketSummary) -> &mut Option<String>;
    let labels: [Label; 2] = [|s| &mut s.asn, |s| &mut s.country];
    for label in labels {
        let mut bytes: std::collections::BTreeMap<String, u64> = Default::default();
        for s in a.iter_mut().chain(b.iter_mut()) {
            let sent = s.bytes_sent;
            if let Some(l) = label(s) {
                *bytes.entry(l.clone()).or_default() += sent;
            }
        }
        let mut ranked: Vec<(String, u64)> = bytes.into_iter().collect();
        ranked.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
        let kept: BTreeSet<String> = ranked.into_iter().take(TOP_LABELS).map(|(l, _)| l).collect();
        for s in a.iter_mut().chain(b.iter_mut()) {
            if let Some(l) = label(s).as_mut().filter(|l| !kept.contains(l.as_str())) {
                *l = bbrtop_core::peer_groups::UNMATCHED.to_string();
            }
        }
    }
}

/// Rows for every group either side has: all sockets, each cc, each peer group when
/// `by_peer_group` (without a peer-groups file every peer is "other", the same as all), each
/// AS and country where the sockets carry them (an AS or country database was given), and each
/// host where a side holds more than one.
pub fn compare(a: &[SocketSummary], b: &[SocketSummary], by_peer_group: bool) -> Vec<GroupRows> {
    let mut groups = BTreeSet::from([Group::All]);
    for s in a.iter().chain(b) {
        groups.insert(Group::Cc(s.cc.clone()));
        if by_peer_group {
            groups.insert(Group::PeerGroup(s.peer_group.clone()));
        }
        groups.extend(s.asn.clone().map(Group::Asn));
        groups.extend(s.country.clone().map(Group::Country));
    }
    // A row per host where a side holds several (with one a side, each is that side's all).
    let (ha, hb): (BTreeSet<&String>, BTreeSet<&String>) =
        (a.iter().map(|s| &s.host).collect(), b.iter().map(|s| &s.host).collect());
    if ha.len() > 1 || hb.len() > 1 {
        groups.extend(ha.union(&hb).map(|h| Group::Host((*h).clone())));
    }
    groups
        .into_iter()
        .map(|g| {
            let pick = |side: &[SocketSummary]| -> Vec<SocketSummary> {
                side.iter().filter(|s| g.contains(s)).cloned().collect()
            };
            let (ga, gb) = (pick(a), pick(b));
            GroupRows {
                sockets_a: ga.len(),
                sockets_b: gb.len(),
                metrics: Metric::ALL.iter().map(|m| metric_row(*m, &ga, &gb)).collect(),
                group: g,
            }
        })
        .collect()
}

fn metric_row(metric: Metric, a: &[SocketSummary], b: &[SocketSummary]) -> MetricRow {
    let values = |side: &[SocketSummary]| -> Vec<f64> { side.iter().filter_map(|s| metric.of(s)).collect() };
    let (mut va, mut vb) = (values(a), values(b));
    let side = |v: &mut Vec<f64>| SideValue { sockets: v.len(), median: stats::median(v) };
    let (sa, sb) = (side(&mut va), side(&mut vb));
    let diff = sa.median.zip(sb.median).map(|(x, y)| y - x);
    let ratio = match (sa.median, sb.median) {
        (Some(x), Some(y)) if metric.has_ratio() && x != 0.0 => Some(y / x),
        _ => None,
    };
    let enough = va.len() >= MIN_SOCKETS && vb.len() >= MIN_SOCKETS;
    let cis = enough.then(|| stats::bootstrap_median_diff(&va, &vb)).flatten();
    let note = (!enough).then(|| match (va.len(), vb.len()) {
        (0, _) => "none in A".to_string(),
        (_, 0) => "none in B".to_string(),
        (na, nb) => format!("too few sockets (A {na}, B {nb}; {MIN_SOCKETS} a side needed)"),
    });
    MetricRow {
        metric,
        a: sa,
        b: sb,
        diff,
        ratio,
        diff_ci: cis.map(|c| c.0),
        ratio_ci: cis.and_then(|c| c.1).filter(|_| metric.has_ratio()),
        note,
        verdict: cis.map(|c| Verdict::of(metric.lower_is_better(), &c.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn summary(cookie: u64, cc: &str, srtt_ms: f64) -> SocketSummary {
        SocketSummary {
            cookie,
            cc: cc.into(),
            peer_group: if cookie.is_multiple_of(2) { "even".into() } else { "odd".into() },
            asn: None,
            country: None,
            host: "edge-1".into(),
            polls: 10,
            bytes_sent: 1_000,
            seconds: 9.0,
            throughput_bits_per_sec: Some(2e6),
            goodput_bits_per_sec: Some(1.9e6),
            srtt_p50_ms: Some(srtt_ms),
            srtt_p95_ms: Some(srtt_ms * 1.2),
            srtt_p99_ms: Some(srtt_ms * 1.3),
            inflation: Some(srtt_ms / 40.0),
            retrans_ratio: Some(0.0),
            srtt_samples_ms: vec![srtt_ms],
        }
    }

    fn row<'a>(rows: &'a [GroupRows], g: &Group, m: Metric) -> &'a MetricRow {
        let g = rows.iter().find(|r| r.group == *g).unwrap();
        g.metrics.iter().find(|r| r.metric == m).unwrap()
    }

    #[test]
    fn groups_medians_differences_and_intervals() {
        let a: Vec<_> = (0..6).map(|i| summary(i, "cubic", 1000.0 + i as f64)).collect();
        let b: Vec<_> = (10..16).map(|i| summary(i, "bbr", 40.0 + i as f64)).collect();
        let rows = compare(&a, &b, true);
        let groups: Vec<_> = rows.iter().map(|r| r.group.clone()).collect();
        assert_eq!(
            groups,
            [
                Group::All,
                Group::Cc("bbr".into()),
                Group::Cc("cubic".into()),
                Group::PeerGroup("even".into()),
                Group::PeerGroup("odd".into())
            ]
        );
        let p50 = row(&rows, &Group::All, Metric::SrttP50Ms);
        // Nearest-rank medians of 1000..1005 and 50..55.
        assert_eq!((p50.a.median, p50.b.median, p50.diff), (Some(1002.0), Some(52.0), Some(-950.0)));
        let ci = p50.diff_ci.unwrap();
        assert!(ci.excludes_zero() && ci.lo <= -950.0 && ci.hi >= -950.0, "{ci:?}");
        assert!(p50.ratio.unwrap() < 0.06 && p50.note.is_none());
        // The same throughput on both sides: no difference, an interval around zero.
        let t = row(&rows, &Group::All, Metric::GoodputBitsPerSec);
        assert_eq!((t.diff, t.ratio), (Some(0.0), Some(1.0)));
        assert!(!t.diff_ci.unwrap().excludes_zero());
        // Retransmit ratios get a difference, no ratio of ratios.
        let r = row(&rows, &Group::All, Metric::RetransRatio);
        assert_eq!((r.diff, r.ratio, r.ratio_ci), (Some(0.0), None, None));
    }

    #[test]
    fn a_group_on_one_side_only_or_too_small_has_no_interval() {
        let a: Vec<_> = (0..6).map(|i| summary(i, "cubic", 1000.0)).collect();
        let b: Vec<_> = (10..14).map(|i| summary(i, "bbr", 40.0)).collect();
        let rows = compare(&a, &b, false);
        assert_eq!(rows.len(), 3, "all, bbr, cubic; no peer groups");
        let cubic = row(&rows, &Group::Cc("cubic".into()), Metric::SrttP50Ms);
        assert_eq!((cubic.b.sockets, cubic.b.median, cubic.diff, cubic.diff_ci), (0, None, None, None));
        let all = row(&rows, &Group::All, Metric::SrttP50Ms);
        assert_eq!(all.b.sockets, 4);
        assert!(all.diff.is_some() && all.diff_ci.is_none());
        assert_eq!(all.note.as_deref(), Some("too few sockets (A 6, B 4; 5 a side needed)"));
        assert_eq!(cubic.note.as_deref(), Some("none in B"));
    }

    /// AS and country rows come where the sockets carry them, at most [`TOP_LABELS`] of each by
    /// bytes sent, the rest as `other`.
    #[test]
    fn as_and_country_rows_are_the_top_ones_by_bytes() {
        let side = |from: u64| -> Vec<SocketSummary> {
            (from..from + 30)
                .map(|c| SocketSummary {
                    asn: Some(format!("AS{}", 64_500 + c % 25)),
                    country: Some(if c % 2 == 0 { "GB".into() } else { "SE".into() }),
                    bytes_sent: 1_000 * (c % 25 + 1),
                    ..summary(c, "bbr", 40.0)
                })
                .collect()
        };
        let (mut a, mut b) = (side(0), side(100));
        bound_labels(&mut a, &mut b);
        let rows = compare(&a, &b, false);
        let asns: Vec<&str> = rows
            .iter()
            .filter_map(|r| if let Group::Asn(x) = &r.group { Some(x.as_str()) } else { None })
            .collect();
        assert_eq!(asns.len(), TOP_LABELS + 1, "{asns:?}");
        assert!(asns.contains(&"other") && asns.contains(&"AS64524"), "the most bytes: {asns:?}");
        assert!(!asns.contains(&"AS64500"), "the fewest bytes go to other: {asns:?}");
        let countries: Vec<&Group> =
            rows.iter().map(|r| &r.group).filter(|g| matches!(g, Group::Country(_))).collect();
        assert_eq!(countries, [&Group::Country("GB".into()), &Group::Country("SE".into())]);
        let gb = row(&rows, &Group::Country("GB".into()), Metric::SrttP50Ms);
        assert_eq!((gb.a.sockets, gb.b.sockets), (15, 15));
        assert!(compare(&side(0), &side(100), false).len() > TOP_LABELS + 1, "without the bound, every AS");
    }

    /// A verdict takes the metric's direction: B's higher srtt is worse, its higher goodput
    /// better; the groups worse on B are named, in the report's order; no interval, no verdict.
    #[test]
    fn verdicts_take_each_metrics_direction_and_name_the_regressed_groups() {
        let a: Vec<SocketSummary> = (0..6).map(|c| summary(c, "cubic", 40.0 + c as f64)).collect();
        let b: Vec<SocketSummary> = (10..16)
            .map(|c| SocketSummary {
                goodput_bits_per_sec: Some(9e6),
                ..summary(c, "cubic", 80.0 + c as f64)
            })
            .collect();
        let rows = compare(&a, &b, false);
        assert_eq!(row(&rows, &Group::All, Metric::SrttP50Ms).verdict, Some(Verdict::Worse));
        assert_eq!(row(&rows, &Group::All, Metric::GoodputBitsPerSec).verdict, Some(Verdict::Better));
        assert_eq!(row(&rows, &Group::All, Metric::RetransRatio).verdict, Some(Verdict::NoClearDifference));
        let worse = regressed(&rows);
        assert_eq!(
            worse.iter().map(|r| &r.group).collect::<Vec<_>>(),
            [&Group::All, &Group::Cc("cubic".into())]
        );
        assert!(
            worse[0].metrics.contains(&Metric::SrttP95Ms)
                && !worse[0].metrics.contains(&Metric::GoodputBitsPerSec)
        );
        let few = compare(&a[..3], &b[..3], false);
        assert_eq!(row(&few, &Group::All, Metric::SrttP50Ms).verdict, None);
        assert!(regressed(&few).is_empty());
    }
}
