//! Response delivery times: for each response a socket sends, from the first byte the
//! application writes to an idle socket to the ACK of the last byte it wrote (both timed in the
//! kernel, `bpf/bbrtop.bpf.c`), kept per size class as exponential histograms that never fall.
//! The size classes are the rollout guides': up to 15 KB, 15-200 KB, 200 KB-2 MB, larger.

use super::loghist::LogHist;
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

/// Whose responses: a cc's to one peer group, AS and country.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Whose<'a> {
    pub cc: &'a str,
    pub peer_group: &'a str,
    pub asn: Option<&'a str>,
    pub country: Option<&'a str>,
}

impl ResponseRow {
    fn of(w: Whose, size: &str, h: &LogHist) -> Option<ResponseRow> {
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
pub fn rows(groups: &[(Whose, &Responses)]) -> Vec<ResponseRow> {
    let mut out = Vec::new();
    for cc in groups.chunk_by(|a, b| a.0.cc == b.0.cc) {
        let everyone = Whose { cc: cc[0].0.cc, peer_group: "all", asn: None, country: None };
        let mut all = Responses::default();
        for (_, r) in cc {
            all.add(r);
        }
        out.extend(ResponseRow::of(everyone, "all", &all.all()));
        for c in SizeClass::ALL {
            out.extend(ResponseRow::of(everyone, c.label(), all.get(c)));
        }
        for (w, r) in cc {
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
