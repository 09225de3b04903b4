//! Response delivery times: for each response a socket sends, from the first byte the application
//! writes to an idle socket to the ACK of the last byte it wrote (both timed in the kernel,
//! `crates/bbrtop-collect/bpf/bbrtop.bpf.c`), kept per size class as exponential histograms that
//! never fall. The size classes are the rollout guides': up to 15 KB, 15-200 KB, 200 KB-2 MB,
//! larger.

use super::group_key::GroupKey;
use super::loghist::{LogHist, Z_OF_TWO};
use crate::stats::{Interval, Margin, Verdict};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A response's size class. The bounds are inclusive, in kB (1000 bytes) as the guides count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SizeClass {
    #[serde(rename = "le15kB")]
    UpTo15k,
    #[serde(rename = "le200kB")]
    UpTo200k,
    #[serde(rename = "le2MB")]
    UpTo2M,
    #[serde(rename = "gt2MB")]
    Larger,
}

impl SizeClass {
    pub const ALL: [SizeClass; 4] =
        [SizeClass::UpTo15k, SizeClass::UpTo200k, SizeClass::UpTo2M, SizeClass::Larger];

    pub fn of(bytes: u64) -> SizeClass {
        match bytes {
            0..=15_000 => SizeClass::UpTo15k,
            15_001..=200_000 => SizeClass::UpTo200k,
            200_001..=2_000_000 => SizeClass::UpTo2M,
            _ => SizeClass::Larger,
        }
    }

    /// The label value (metrics, JSON, recordings): `le15kB`, `le200kB`, `le2MB`, `gt2MB`.
    pub fn label(self) -> &'static str {
        match self {
            SizeClass::UpTo15k => "le15kB",
            SizeClass::UpTo200k => "le200kB",
            SizeClass::UpTo2M => "le2MB",
            SizeClass::Larger => "gt2MB",
        }
    }

    /// How a table heads it.
    pub fn title(self) -> &'static str {
        match self {
            SizeClass::UpTo15k => "<=15kB",
            SizeClass::UpTo200k => "15-200kB",
            SizeClass::UpTo2M => "200kB-2MB",
            SizeClass::Larger => ">2MB",
        }
    }

    pub fn parse(s: &str) -> Option<SizeClass> {
        SizeClass::ALL.into_iter().find(|c| c.label() == s)
    }
}

/// Response delivery times in seconds, one histogram per size class. Shared (`Arc`) with every
/// snapshot since the last response of that class, so publishing them copies nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Responses {
    #[serde(rename = "le15kB", default, skip_serializing_if = "is_empty")]
    up_to_15k: Arc<LogHist>,
    #[serde(rename = "le200kB", default, skip_serializing_if = "is_empty")]
    up_to_200k: Arc<LogHist>,
    #[serde(rename = "le2MB", default, skip_serializing_if = "is_empty")]
    up_to_2m: Arc<LogHist>,
    #[serde(rename = "gt2MB", default, skip_serializing_if = "is_empty")]
    larger: Arc<LogHist>,
}

fn is_empty(h: &Arc<LogHist>) -> bool {
    h.count() == 0
}

impl Responses {
    /// One response of `bytes`, delivered in `secs`.
    pub fn observe(&mut self, bytes: u64, secs: f64) {
        Arc::make_mut(self.slot(SizeClass::of(bytes))).observe(secs);
    }

    fn slot(&mut self, c: SizeClass) -> &mut Arc<LogHist> {
        match c {
            SizeClass::UpTo15k => &mut self.up_to_15k,
            SizeClass::UpTo200k => &mut self.up_to_200k,
            SizeClass::UpTo2M => &mut self.up_to_2m,
            SizeClass::Larger => &mut self.larger,
        }
    }

    pub fn get(&self, c: SizeClass) -> &LogHist {
        match c {
            SizeClass::UpTo15k => &self.up_to_15k,
            SizeClass::UpTo200k => &self.up_to_200k,
            SizeClass::UpTo2M => &self.up_to_2m,
            SizeClass::Larger => &self.larger,
        }
    }

    pub fn is_empty(&self) -> bool {
        SizeClass::ALL.iter().all(|c| self.get(*c).count() == 0)
    }

    pub fn count(&self) -> u64 {
        SizeClass::ALL.iter().map(|c| self.get(*c).count()).sum()
    }

    /// Every size class together.
    pub fn all(&self) -> LogHist {
        let mut h = LogHist::default();
        for c in SizeClass::ALL {
            h.add(self.get(c));
        }
        h
    }

    pub fn add(&mut self, o: &Responses) {
        for c in SizeClass::ALL {
            if o.get(c).count() > 0 {
                Arc::make_mut(self.slot(c)).add(o.get(c));
            }
        }
    }

    /// What came since `earlier`, taken before (see [`LogHist::since`]).
    pub fn since(&self, earlier: &Responses) -> Responses {
        let mut out = Responses::default();
        for c in SizeClass::ALL {
            *out.slot(c) = Arc::new(self.get(c).since(earlier.get(c)));
        }
        out
    }
}

/// p50, p95 and p99 of a histogram, in seconds; None when it is empty.
pub fn percentiles(h: &LogHist) -> Option<[f64; 3]> {
    Some([h.quantile(0.5)?, h.quantile(0.95)?, h.quantile(0.99)?])
}

/// A difference smaller than this share of A's value is no clear difference whatever its
/// interval: the buckets are 4.4% apart, and a quantile read inside one is interpolated, so two
/// sides within a bucket of each other may differ by the interpolation alone.
pub const RESOLUTION: f64 = 0.05;
/// Nor is one under a millisecond, which no one waiting for a response notices (on a LAN
/// path of a millisecond's round trip, 0.1 ms is a clear interval and no win).
pub const NOTICEABLE_MS: f64 = 1.0;
/// Both, as a margin on response times in seconds (an experiment's harm guard takes it too).
pub const MARGIN_SECONDS: Margin = Margin { rel: RESOLUTION, abs: NOTICEABLE_MS / 1000.0 };

/// One quantile of two sides' response times, A against B, in milliseconds: each side's value,
/// B − A, and an interval of B − A made of each side's distribution-free quantile interval
/// ([`LogHist::quantile_interval`] at 97.5% each, so the difference holds with 95%); none
/// where a side has too few responses for it. The verdict needs the interval to clear
/// [`RESOLUTION`] of A's value and [`NOTICEABLE_MS`], not only zero.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuantileDiff {
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub diff: Option<f64>,
    pub diff_ci: Option<Interval>,
    /// Lower is better.
    pub verdict: Option<Verdict>,
}

pub fn quantile_diff(a: &LogHist, b: &LogHist, q: f64) -> QuantileDiff {
    let ms = |v: f64| v * 1000.0;
    let (va, vb) = (a.quantile(q).map(ms), b.quantile(q).map(ms));
    let (ia, ib) = (a.quantile_interval(q, Z_OF_TWO), b.quantile_interval(q, Z_OF_TWO));
    let diff_ci =
        ia.zip(ib).map(|((alo, ahi), (blo, bhi))| Interval { lo: ms(blo - ahi), hi: ms(bhi - alo) });
    QuantileDiff {
        a: va,
        b: vb,
        diff: va.zip(vb).map(|(x, y)| y - x),
        diff_ci,
        // Lower is better.
        verdict: diff_ci.zip(va).map(|(ci, a)| {
            let margin = Margin { rel: RESOLUTION, abs: NOTICEABLE_MS }.at(a);
            if ci.hi < -margin {
                Verdict::Better
            } else if ci.lo > margin {
                Verdict::Worse
            } else {
                Verdict::NoClearDifference
            }
        }),
    }
}

/// One line of the response times as JSON and the TUI show them: a cc's responses to one peer
/// group of one size class, or `all` of either.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseRow {
    pub cc: String,
    pub peer_group: String,
    /// The peers' AS and country labels, with their databases (`bbrtop export` flags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// A [`SizeClass::label`], or `all`.
    pub size: String,
    pub count: u64,
    pub p50_seconds: f64,
    pub p95_seconds: f64,
    pub p99_seconds: f64,
}

impl ResponseRow {
    fn of(w: GroupKey, size: &str, h: &LogHist) -> Option<ResponseRow> {
        let [p50, p95, p99] = percentiles(h)?;
        Some(ResponseRow {
            cc: w.cc.to_string(),
            peer_group: w.peer_group.to_string(),
            asn: w.asn.map(str::to_string),
            country: w.country.map(str::to_string),
            size: size.to_string(),
            count: h.count(),
            p50_seconds: p50,
            p95_seconds: p95,
            p99_seconds: p99,
        })
    }
}

/// The rows of `groups`, sorted by cc: per cc, every group and size together (`all`, `all`)
/// first, then every group's responses of each size class (`all`, a size), then each group's
/// size classes; only what saw a response.
pub fn rows(groups: &[(GroupKey, &Responses)]) -> Vec<ResponseRow> {
    rows_of(groups, true)
}

/// [`rows`] without each group's own: per cc, every group together (the TUI's table).
pub fn cc_rows(groups: &[(GroupKey, &Responses)]) -> Vec<ResponseRow> {
    rows_of(groups, false)
}

fn rows_of(groups: &[(GroupKey, &Responses)], per_group: bool) -> Vec<ResponseRow> {
    let mut out = Vec::new();
    for cc in groups.chunk_by(|a, b| a.0.cc == b.0.cc) {
        let everyone = GroupKey::everyone(cc[0].0.cc);
        let mut all = Responses::default();
        for (_, r) in cc {
            all.add(r);
        }
        out.extend(ResponseRow::of(everyone, "all", &all.all()));
        for c in SizeClass::ALL {
            out.extend(ResponseRow::of(everyone, c.label(), all.get(c)));
        }
        for (w, r) in cc.iter().filter(|_| per_group) {
            for c in SizeClass::ALL {
                out.extend(ResponseRow::of(*w, c.label(), r.get(c)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_the_guides() {
        let got: Vec<_> =
            [0, 15_000, 15_001, 200_000, 200_001, 2_000_000, 2_000_001, u64::MAX].map(SizeClass::of).to_vec();
        use SizeClass::*;
        assert_eq!(got, [UpTo15k, UpTo15k, UpTo200k, UpTo200k, UpTo2M, UpTo2M, Larger, Larger]);
        for c in SizeClass::ALL {
            assert_eq!(SizeClass::parse(c.label()), Some(c));
        }
    }

    /// A difference inside the buckets' resolution, or under a millisecond, is no clear
    /// difference, however many responses narrow its interval; one beyond both is a verdict.
    #[test]
    fn verdicts_need_more_than_the_buckets_resolution() {
        let many = |ms: f64| {
            let mut h = LogHist::default();
            for k in 0..20_000 {
                h.observe(ms * (0.9 + 0.2 * f64::from(k) / 20_000.0) / 1000.0);
            }
            h
        };
        let (a, close, far) = (many(100.0), many(102.0), many(80.0));
        let d = quantile_diff(&a, &close, 0.5);
        assert_eq!(d.verdict, Some(Verdict::NoClearDifference), "{d:?}");
        assert_eq!(quantile_diff(&a, &far, 0.5).verdict, Some(Verdict::Better));
        assert_eq!(quantile_diff(&far, &a, 0.95).verdict, Some(Verdict::Worse));
        assert_eq!(quantile_diff(&a, &LogHist::default(), 0.5).verdict, None, "nothing on B");
        let (lan, lan_faster) = (many(1.5), many(1.2));
        assert_eq!(quantile_diff(&lan, &lan_faster, 0.5).verdict, Some(Verdict::NoClearDifference), "0.3 ms");
    }

    #[test]
    fn observed_by_class_and_read_back_from_json() {
        let mut r = Responses::default();
        assert!(r.is_empty());
        r.observe(10_000, 0.030);
        r.observe(150_000, 0.120);
        r.observe(150_000, 0.140);
        assert_eq!((r.get(SizeClass::UpTo15k).count(), r.get(SizeClass::UpTo200k).count()), (1, 2));
        assert_eq!(r.all().count(), 3);
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("le15kB") && !json.contains("gt2MB"), "{json}");
        let back: Responses = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        let earlier = r.clone();
        r.observe(5_000_000, 2.0);
        let d = r.since(&earlier);
        assert_eq!((d.count(), d.get(SizeClass::Larger).count()), (1, 1));
    }
}
