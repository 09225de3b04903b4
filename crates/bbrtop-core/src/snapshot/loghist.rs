//! Exponential histograms with Prometheus' native bucket boundaries (schema 4: each power of two
//! split into 16 buckets, 2^(1/16) = 1.044 apart), dense from their lowest bucket. The exporter
//! encodes them as native and classic histograms (`src/export/metrics/live_hist.rs`); the
//! engine keeps response delivery times in them, which a reader subtracts (a time range of a
//! recording) and adds (several hosts) before reading quantiles.
//!
//! A quantile is interpolated linearly inside the bucket that holds its rank, as Prometheus'
//! `histogram_quantile` does, so the two agree; its error is at most the bucket's width over its
//! lower bound, 4.4%.

use serde::{Deserialize, Serialize};

/// Native schema: each power of two is split into 2^SCHEMA buckets.
pub const SCHEMA: i32 = 4;
/// The native zero bucket's half-width, client_golang's default (2^-128): only a zero falls in.
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// The upper bound of native bucket `i`: 2^(i/16). Bucket `i` holds (2^((i-1)/16), 2^(i/16)].
pub fn bound(i: i32) -> f64 {
    (f64::from(i) / f64::from(1 << SCHEMA)).exp2()
}

/// The native bucket of `v` (> 0): the `i` with bound(i-1) < v <= bound(i), as Prometheus
/// reads it, checked against the bounds themselves so that a value on a bound is in the bucket
/// it closes (`le` is inclusive).
pub fn index(v: f64) -> i32 {
    let x = v.log2() * f64::from(1 << SCHEMA);
    let i = x.ceil() as i32;
    // log2 is off by an ulp or so at most: only a value within a hair of a bound can land one
    // bucket off, and only such a value pays for the bounds themselves (two exp2s).
    let room = f64::from(i) - x;
    if room > 1e-9 && room < 1.0 - 1e-9 {
        return i;
    }
    if v > bound(i) {
        i + 1
    } else if v <= bound(i - 1) {
        i - 1
    } else {
        i
    }
}

/// Counts per native bucket, dense from `first` (a family spans a few hundred buckets at most),
/// with the zero bucket, the sum and the count.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogHist {
    /// The native index of `counts[0]`.
    first: i32,
    counts: Vec<u64>,
    zero: u64,
    sum: f64,
    count: u64,
}

impl LogHist {
    /// Adds one value; a NaN or infinite one is left out.
    pub fn observe(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.sum += v;
        self.count += 1;
        if v <= ZERO_THRESHOLD {
            self.zero += 1;
            return;
        }
        *self.slot(index(v)) += 1;
    }

    /// The count of bucket `i`, made room for.
    fn slot(&mut self, i: i32) -> &mut u64 {
        if self.counts.is_empty() {
            self.first = i;
        } else if i < self.first {
            let grow = (self.first - i) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = i;
        }
        let at = (i - self.first) as usize;
        if at >= self.counts.len() {
            self.counts.resize(at + 1, 0);
        }
        &mut self.counts[at]
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn sum(&self) -> f64 {
        self.sum
    }

    pub fn zero_count(&self) -> u64 {
        self.zero
    }

    /// The non-empty buckets: (native index, count), lowest first.
    pub fn buckets(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, n)| **n > 0).map(|(at, n)| (self.first + at as i32, *n))
    }

    /// Adds another histogram's counts (another host's, another group's).
    pub fn add(&mut self, o: &LogHist) {
        for (i, n) in o.buckets() {
            *self.slot(i) += n;
        }
        self.zero += o.zero;
        self.sum += o.sum;
        self.count += o.count;
    }

    /// What was observed since `earlier`, a copy of this histogram taken before. Counts never
    /// fall; where they did (a restart in between), all there is counts from zero.
    pub fn since(&self, earlier: &LogHist) -> LogHist {
        if self.count < earlier.count {
            return self.clone();
        }
        let mut out = LogHist::default();
        for (i, n) in self.buckets() {
            let d = n.saturating_sub(earlier.bucket(i));
            if d > 0 {
                *out.slot(i) += d;
            }
        }
        out.zero = self.zero.saturating_sub(earlier.zero);
        out.count = self.count - earlier.count;
        out.sum = (self.sum - earlier.sum).max(0.0);
        out
    }

    fn bucket(&self, i: i32) -> u64 {
        if i < self.first {
            return 0;
        }
        self.counts.get((i - self.first) as usize).copied().unwrap_or(0)
    }

    /// The `q` quantile (0..=1), interpolated linearly inside its bucket as
    /// `histogram_quantile` does; None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let rank = q * self.count as f64;
        if rank <= self.zero as f64 {
            return Some(0.0);
        }
        let mut below = self.zero as f64;
        let mut last = None;
        for (i, n) in self.buckets() {
            let n = n as f64;
            let (lo, hi) = (bound(i - 1), bound(i));
            if below + n >= rank {
                return Some(lo + (hi - lo) * (rank - below) / n);
            }
            below += n;
            last = Some(hi);
        }
        last
    }
}

/// The normal quantile each side's interval is taken at when two are combined into one of their
/// difference: 97.5% each (z = 2.2414), so both hold at once with 95% at least (Bonferroni).
pub const Z_OF_TWO: f64 = 2.2414;

impl LogHist {
    /// A distribution-free interval of the `q` quantile: the values at the ranks
    /// n·q ± z·√(n·q·(1−q)) (the binomial's normal approximation for which order statistics
    /// bracket the quantile), read from the buckets. None when those ranks fall outside 1..=n:
    /// too few values for this quantile (a p99 needs some 500).
    pub fn quantile_interval(&self, q: f64, z: f64) -> Option<(f64, f64)> {
        let n = self.count as f64;
        let half = z * (n * q * (1.0 - q)).sqrt();
        let (lo, hi) = (n * q - half, n * q + half);
        if n == 0.0 || lo < 1.0 || hi > n {
            return None;
        }
        Some((self.quantile(lo / n)?, self.quantile(hi / n)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_on_a_bound_is_in_the_bucket_it_closes() {
        for (v, i) in [(1.0, 0), (2.0, 16), (0.5, -16), (1.0000001, 1), (0.9999999, 0)] {
            assert_eq!(index(v), i, "{v}");
        }
        for i in -300..300 {
            assert_eq!(index(bound(i)), i, "bound({i}) = {}", bound(i));
        }
    }

    /// Quantiles of a known spread, against the sorted values themselves: within a bucket's
    /// width (4.4%).
    #[test]
    fn quantiles_are_within_a_bucket_of_the_values() {
        let values: Vec<f64> = (1..=1000).map(|k| 0.001 * f64::from(k)).collect();
        let mut h = LogHist::default();
        for v in &values {
            h.observe(*v);
        }
        for q in [0.5, 0.95, 0.99] {
            let want = values[(q * values.len() as f64) as usize - 1];
            let got = h.quantile(q).unwrap();
            assert!((got / want - 1.0).abs() < 0.045, "q{q}: {got} against {want}");
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(LogHist::default().quantile(0.5), None);
    }

    /// The interval holds the quantile of the distribution the values came from in about 97.5%
    /// of samples (z = 2.24): counted over 400 seeded samples of 1000 values.
    #[test]
    fn quantile_intervals_hold_the_true_quantile() {
        // Exponential values, mean 50 ms: the true p95 is 50 ms · ln 20.
        let truth = 0.05 * 20f64.ln();
        let mut seed = 7u64;
        let mut uniform = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut held = 0;
        for _ in 0..400 {
            let mut h = LogHist::default();
            for _ in 0..1000 {
                h.observe(-0.05 * uniform().ln());
            }
            let (lo, hi) = h.quantile_interval(0.95, Z_OF_TWO).unwrap();
            // Bucketing widens what can hold by a bucket (4.4%).
            if lo <= truth * 1.045 && truth <= hi * 1.045 {
                held += 1;
            }
        }
        assert!((380..=400).contains(&held), "held {held} of 400");
        let mut few = LogHist::default();
        for v in 1..=100 {
            few.observe(f64::from(v));
        }
        assert!(few.quantile_interval(0.99, Z_OF_TWO).is_none(), "100 values are too few for a p99");
        assert!(few.quantile_interval(0.5, Z_OF_TWO).is_some());
    }

    #[test]
    fn since_and_add_undo_each_other() {
        let (mut a, mut b) = (LogHist::default(), LogHist::default());
        for v in [0.01, 0.02, 0.5] {
            a.observe(v);
        }
        let earlier = a.clone();
        for v in [0.0001, 0.02, 3.0, 0.0] {
            a.observe(v);
            b.observe(v);
        }
        let d = a.since(&earlier);
        assert_eq!((d.count(), d.zero_count()), (4, 1));
        assert_eq!(d.buckets().collect::<Vec<_>>(), b.buckets().collect::<Vec<_>>());
        assert!((d.sum() - b.sum()).abs() < 1e-12);
        let mut back = earlier.clone();
        back.add(&d);
        assert_eq!(back.buckets().collect::<Vec<_>>(), a.buckets().collect::<Vec<_>>());
        assert_eq!(back.count(), a.count());
        // A restart between the two (counts fell): what is there counts from zero.
        assert_eq!(earlier.since(&a).count(), earlier.count());
    }
}
