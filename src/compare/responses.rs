//! Response delivery times side by side: each side's histograms over its range (the engine's
//! counts at the range's last poll less those before its first, per host, cc, peer group, AS
//! and country), added up per group of the report and per size class; p50, p95 and p99 of each
//! side, B − A, and an interval of B − A (`bbrtop_core::snapshot::responses::quantile_diff`).
//! Pure.

use super::report::{Group, Metric, Regressed, Verdict};
use bbrtop_core::snapshot::CcTotals;
use bbrtop_core::snapshot::loghist::LogHist;
use bbrtop_core::snapshot::responses::{Responses, SizeClass, quantile_diff};
use bbrtop_core::stats::Interval;
use serde::Serialize;
use std::collections::BTreeSet;

/// The response times of one host's (cc, peer group, AS, country) over a side's range.
#[derive(Clone, Debug, PartialEq)]
pub struct ResponseBucket {
    pub host: String,
    pub cc: String,
    pub peer_group: String,
    pub asn: Option<String>,
    pub country: Option<String>,
    pub responses: Responses,
}

impl ResponseBucket {
    fn in_group(&self, g: &Group) -> bool {
        match g {
            Group::All => true,
            Group::Cc(cc) => self.cc == *cc,
            Group::PeerGroup(p) => self.peer_group == *p,
            Group::Asn(a) => self.asn.as_ref() == Some(a),
            Group::Country(c) => self.country.as_ref() == Some(c),
            Group::Host(h) => self.host == *h,
        }
    }
}

/// The buckets of one recording's range: its counts at `last` less those at `before` (the poll
/// before the range; none when the range starts with the recording).
pub fn over_range(host: &str, before: Option<&[CcTotals]>, last: &[CcTotals]) -> Vec<ResponseBucket> {
    last.iter()
        .filter(|t| !t.responses.is_empty())
        .map(|t| {
            let earlier = before.and_then(|b| b.iter().find(|e| e.key() == t.key()));
            ResponseBucket {
                host: host.to_string(),
                cc: t.cc.clone(),
                peer_group: t.peer_group.clone(),
                asn: t.asn.clone(),
                country: t.country.clone(),
                responses: earlier.map_or_else(|| t.responses.clone(), |e| t.responses.since(&e.responses)),
            }
        })
        .filter(|b| !b.responses.is_empty())
        .collect()
}

/// One quantile, A against B, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuantileRow {
    pub metric: Metric,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// B − A.
    pub diff: Option<f64>,
    pub diff_ci: Option<Interval>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub verdict: Option<Verdict>,
}

/// One group's responses of one size class (or `all`), A against B.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResponseRows {
    pub group: Group,
    /// A size class's label, or `all`.
    pub size: String,
    pub responses_a: u64,
    pub responses_b: u64,
    pub quantiles: Vec<QuantileRow>,
}

const QUANTILES: [(f64, Metric); 3] =
    [(0.5, Metric::ResponseP50Ms), (0.95, Metric::ResponseP95Ms), (0.99, Metric::ResponseP99Ms)];

/// The groups either side's buckets name (as the socket rows name them: peer groups only when
/// `by_peer_group`, hosts only where a side holds several).
fn groups(a: &[ResponseBucket], b: &[ResponseBucket], by_peer_group: bool) -> BTreeSet<Group> {
    let mut groups = BTreeSet::from([Group::All]);
    for r in a.iter().chain(b) {
        groups.insert(Group::Cc(r.cc.clone()));
        if by_peer_group {
            groups.insert(Group::PeerGroup(r.peer_group.clone()));
        }
        groups.extend(r.asn.clone().map(Group::Asn));
        groups.extend(r.country.clone().map(Group::Country));
    }
    let hosts = |s: &[ResponseBucket]| s.iter().map(|r| r.host.clone()).collect::<BTreeSet<_>>();
    let (ha, hb) = (hosts(a), hosts(b));
    if ha.len() > 1 || hb.len() > 1 {
        groups.extend(ha.union(&hb).cloned().map(Group::Host));
    }
    groups
}

/// Rows for every group and size class that saw responses on either side, all sizes first.
pub fn compare(a: &[ResponseBucket], b: &[ResponseBucket], by_peer_group: bool) -> Vec<ResponseRows> {
    let mut out = Vec::new();
    for g in groups(a, b, by_peer_group) {
        let sum = |side: &[ResponseBucket]| {
            let mut r = Responses::default();
            side.iter().filter(|x| x.in_group(&g)).for_each(|x| r.add(&x.responses));
            r
        };
        let (ra, rb) = (sum(a), sum(b));
        let sizes = std::iter::once(("all", ra.all(), rb.all()))
            .chain(SizeClass::ALL.map(|c| (c.label(), ra.get(c).clone(), rb.get(c).clone())));
        for (size, ha, hb) in sizes {
            if ha.count() + hb.count() == 0 {
                continue;
            }
            out.push(ResponseRows {
                group: g.clone(),
                size: size.to_string(),
                responses_a: ha.count(),
                responses_b: hb.count(),
                quantiles: QUANTILES.iter().map(|(q, m)| quantile_row(*q, *m, &ha, &hb)).collect(),
            });
        }
    }
    out
}

/// The groups and sizes in which B's response times are worse.
pub fn regressed(rows: &[ResponseRows]) -> Vec<Regressed> {
    rows.iter()
        .filter_map(|r| {
            let worse: Vec<Metric> =
                r.quantiles.iter().filter(|q| q.verdict == Some(Verdict::Worse)).map(|q| q.metric).collect();
            (!worse.is_empty()).then(|| Regressed {
                group: r.group.clone(),
                size: Some(r.size.clone()),
                metrics: worse,
            })
        })
        .collect()
}

fn quantile_row(q: f64, metric: Metric, a: &LogHist, b: &LogHist) -> QuantileRow {
    let d = quantile_diff(a, b, q);
    let note = d.diff_ci.is_none().then(|| match (a.count(), b.count()) {
        (0, _) => "none in A".to_string(),
        (_, 0) => "none in B".to_string(),
        (na, nb) => format!("too few responses for an interval (A {na}, B {nb})"),
    });
    QuantileRow { metric, a: d.a, b: d.b, diff: d.diff, diff_ci: d.diff_ci, note, verdict: d.verdict }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(host: &str, cc: &str, asn: &str, ms: &[f64]) -> ResponseBucket {
        let mut responses = Responses::default();
        for v in ms {
            responses.observe(10_000, v / 1000.0);
        }
        ResponseBucket {
            host: host.into(),
            cc: cc.into(),
            peer_group: "other".into(),
            asn: Some(asn.into()),
            country: None,
            responses,
        }
    }

    fn spread(center: f64, n: usize) -> Vec<f64> {
        (0..n).map(|k| center * (0.8 + 0.4 * k as f64 / n as f64)).collect()
    }

    /// B faster for one AS, no different for another, and too few for a p99 interval.
    #[test]
    fn verdicts_per_group_from_the_responses_quantiles() {
        let a = [
            bucket("c1", "cubic", "AS1", &spread(100.0, 400)),
            bucket("c2", "cubic", "AS2", &spread(10.0, 400)),
        ];
        let b = [
            bucket("canary", "bbr", "AS1", &spread(60.0, 400)),
            bucket("canary", "bbr", "AS2", &spread(10.0, 400)),
        ];
        let rows = compare(&a, &b, false);
        let row = |g: Group, m: Metric| {
            let r = rows.iter().find(|r| r.group == g && r.size == "all").unwrap();
            r.quantiles.iter().find(|q| q.metric == m).unwrap().clone()
        };
        let fast = row(Group::Asn("AS1".into()), Metric::ResponseP50Ms);
        assert_eq!(fast.verdict, Some(Verdict::Better), "{fast:?}");
        assert!((fast.diff.unwrap() + 40.0).abs() < 5.0, "{fast:?}");
        assert_eq!(
            row(Group::Asn("AS2".into()), Metric::ResponseP50Ms).verdict,
            Some(Verdict::NoClearDifference)
        );
        let p99 = row(Group::Asn("AS2".into()), Metric::ResponseP99Ms);
        assert_eq!((p99.verdict, p99.note.is_some()), (None, true), "{p99:?}");
        // Hosts as rows where a side holds several.
        assert!(rows.iter().any(|r| r.group == Group::Host("c2".into())));
        assert!(rows.iter().all(|r| r.size == "all" || r.size == "le15kB"));
    }

    #[test]
    fn a_range_counts_what_came_within_it() {
        let mut t = CcTotals {
            cc: "bbr".into(),
            peer_group: "other".into(),
            asn: None,
            country: None,
            arm: None,
            counts: Default::default(),
            responses: Responses::default(),
        };
        t.responses.observe(1000, 0.01);
        let before = vec![t.clone()];
        t.responses.observe(1000, 0.02);
        t.responses.observe(1000, 0.03);
        let r = over_range("h", Some(&before), std::slice::from_ref(&t));
        assert_eq!(r[0].responses.count(), 2);
        assert_eq!(over_range("h", None, std::slice::from_ref(&t))[0].responses.count(), 3);
        assert!(over_range("h", Some(std::slice::from_ref(&t)), std::slice::from_ref(&t)).is_empty());
    }
}
