//! Fixed-bound histograms: the exporter's distributions of open sockets, and the engine's
//! cumulative distributions of closed flows.

use serde::{Deserialize, Serialize};

/// Bucket bounds. RTTs span loopback (tens of µs) to a bloated queue (seconds).
pub const RTT_BOUNDS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];
pub const RATIO_BOUNDS: &[f64] = &[1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0];
/// 10 kB/s to 10 GB/s in half decades.
pub const RATE_BOUNDS: &[f64] = &[1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9, 3e9, 1e10];

/// A classic histogram with fixed bounds: per-bucket (not cumulative) counts, the last for +Inf.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hist {
    #[serde(deserialize_with = "known_bounds")]
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// Bounds read back (a recording): one of this file's sets, which are the only ones written.
fn known_bounds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static [f64], D::Error> {
    let b = Vec::<f64>::deserialize(d)?;
    [RTT_BOUNDS, RATIO_BOUNDS, RATE_BOUNDS]
        .into_iter()
        .find(|k| **k == b[..])
        .ok_or_else(|| serde::de::Error::custom("histogram bounds of no known kind"))
}

impl Hist {
    pub fn new(bounds: &'static [f64]) -> Hist {
        Hist { bounds, counts: vec![0; bounds.len() + 1], sum: 0.0, count: 0 }
    }

    pub fn observe(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        // `le` is inclusive: v goes in the first bucket whose bound is >= v.
        self.counts[self.bounds.partition_point(|&b| b < v)] += 1;
        self.sum += v;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// (upper bound, count in that bucket alone), +Inf last.
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        self.bounds.iter().copied().chain([f64::INFINITY]).zip(self.counts.iter().copied()).collect()
    }
}
