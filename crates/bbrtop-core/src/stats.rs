//! Statistics, in one place: nearest-rank percentiles (the per-cc aggregates, the lab's reports,
//! the metrics), and the medians over sockets and percentile bootstrap that `compare` reports,
//! resampling sockets (not polls). Pure and deterministic: the generator has a fixed seed, so the
//! same recordings give the same intervals.

use serde::Serialize;

/// The nearest-rank percentile (0 < p <= 100) of sorted values.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    Some(sorted[rank(sorted.len(), p)?])
}

/// The index of the nearest-rank percentile `p` in `n` sorted values.
fn rank(n: usize, p: f64) -> Option<usize> {
    (n > 0).then(|| ((p / 100.0) * n as f64).ceil().clamp(1.0, n as f64) as usize - 1)
}

/// Nearest-rank percentiles of unsorted values, by selection: O(n) each, no full sort. `ps`
/// ascending.
pub fn percentiles<T: Copy>(
    v: &mut [T],
    ps: &[f64],
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Copy,
) -> Vec<Option<T>> {
    let mut lo = 0;
    ps.iter()
        .map(|&p| {
            let i = rank(v.len(), p)?;
            // Everything left of an earlier pick is no larger: select in the rest only.
            let start = lo.min(i);
            v[start..].select_nth_unstable_by(i - start, cmp);
            lo = i;
            Some(v[i])
        })
        .collect()
}

/// Resamples per interval: enough for a stable 95% percentile interval (its ends move by well
/// under a percent of their width between seeds at this count).
pub const RESAMPLES: usize = 2000;
/// The generator's seed, fixed so output is reproducible.
pub const SEED: u64 = 17;
/// Fewer sockets than this on a side and no interval is given: a bootstrap of a handful of
/// values only reshuffles them, and its interval is narrower than the truth.
pub const MIN_SOCKETS: usize = 5;
/// The interval's confidence.
pub const CONFIDENCE: f64 = 0.95;

/// The nearest-rank median ([`percentile`]'s rank), of unsorted values.
pub fn median(v: &mut [f64]) -> Option<f64> {
    percentiles(v, &[50.0], f64::total_cmp)[0]
}

/// A two-sided interval, `lo <= hi`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub fn excludes_zero(&self) -> bool {
        self.lo > 0.0 || self.hi < 0.0
    }
}

/// What an interval of B − A says of B, in a metric's direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval lies on the metric's better side.
    Better,
    Worse,
    /// The interval holds zero.
    NoClearDifference,
}

impl Verdict {
    pub fn of(lower_is_better: bool, ci: &Interval) -> Verdict {
        let lower = ci.hi < 0.0;
        match (lower, ci.lo > 0.0) {
            (false, false) => Verdict::NoClearDifference,
            _ if lower == lower_is_better => Verdict::Better,
            _ => Verdict::Worse,
        }
    }
}

/// A difference too small to matter: within max(`abs`, `rel` × the reference value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Margin {
    pub rel: f64,
    pub abs: f64,
}

impl Margin {
    /// The margin around `reference`.
    pub fn at(&self, reference: f64) -> f64 {
        self.abs.max(self.rel * reference)
    }
}

/// The [`CONFIDENCE`] percentile-bootstrap intervals of median(B) − median(A) and of
/// median(B) / median(A) (resamples whose A median is 0 have no ratio and are left out of that
/// one), from [`RESAMPLES`] resamples of each side's sockets with replacement.
pub fn bootstrap_median_diff(a: &[f64], b: &[f64]) -> Option<(Interval, Option<Interval>)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(SEED);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut diffs = Vec::with_capacity(RESAMPLES);
    let mut ratios = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let ma = resampled_median(&mut rng, a, &mut ra)?;
        let mb = resampled_median(&mut rng, b, &mut rb)?;
        diffs.push(mb - ma);
        if ma != 0.0 {
            ratios.push(mb / ma);
        }
    }
    let ratio = (ratios.len() == RESAMPLES).then(|| interval(&mut ratios));
    Some((interval(&mut diffs), ratio))
}

fn resampled_median(rng: &mut fastrand::Rng, from: &[f64], into: &mut [f64]) -> Option<f64> {
    for v in into.iter_mut() {
        *v = from[rng.usize(..from.len())];
    }
    median(into)
}

/// The central [`CONFIDENCE`] interval of `v`'s values (nearest rank at each tail).
fn interval(v: &mut [f64]) -> Interval {
    let tail = (1.0 - CONFIDENCE) / 2.0 * 100.0;
    let r = percentiles(v, &[tail, 100.0 - tail], f64::total_cmp);
    let (lo, hi) = (r[0].unwrap_or(f64::NAN), r[1].unwrap_or(f64::NAN));
    Interval { lo, hi }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 95.0), Some(95));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&[7u32], 99.0), Some(7));
        assert_eq!(percentile::<u32>(&[], 50.0), None);
        assert_eq!(percentile(&[1u32, 2], 1.0), Some(1));
        // Selection agrees with sorting, on shuffled values.
        let mut shuffled: Vec<u32> = (1..=1000).map(|i| (i * 7919) % 1000 + 1).collect();
        let got = percentiles(&mut shuffled, &[50.0, 95.0, 99.0], u32::cmp);
        assert_eq!(got, vec![Some(500), Some(950), Some(990)]);
        assert_eq!(percentiles::<u32>(&mut [], &[50.0], u32::cmp), vec![None]);
    }
    use proptest::prelude::*;

    #[test]
    fn medians_are_nearest_rank() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn well_separated_sides_exclude_zero_and_the_same_side_does_not() {
        let a: Vec<f64> = (0..20).map(|i| 1000.0 + f64::from(i) * 10.0).collect();
        let b: Vec<f64> = (0..20).map(|i| 40.0 + f64::from(i)).collect();
        let (d, r) = bootstrap_median_diff(&a, &b).unwrap();
        assert!(d.excludes_zero() && d.hi < -900.0, "{d:?}");
        let r = r.unwrap();
        assert!(r.hi < 0.1 && r.lo > 0.03, "{r:?}");
        let (same, _) = bootstrap_median_diff(&a, &a).unwrap();
        assert!(!same.excludes_zero() && same.lo < 0.0 && same.hi > 0.0, "{same:?}");
        assert_eq!(bootstrap_median_diff(&[], &b), None);
    }

    #[test]
    fn the_interval_is_reproducible() {
        let a = [1.0, 5.0, 2.0, 8.0, 3.0, 9.0];
        let b = [2.0, 6.0, 4.0, 7.0, 3.0, 1.0];
        assert_eq!(bootstrap_median_diff(&a, &b), bootstrap_median_diff(&a, &b));
    }

    #[test]
    fn a_zero_median_on_a_leaves_no_ratio() {
        let (_, r) = bootstrap_median_diff(&[0.0; 6], &[1.0; 6]).unwrap();
        assert_eq!(r, None);
    }

    proptest! {
        // Each case is a full bootstrap: fewer cases than the default keep the suite quick.
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The interval is ordered and lies within the differences any resample could give.
        #[test]
        fn interval_within_the_possible(
            a in prop::collection::vec(0.0f64..1e6, 1..40),
            b in prop::collection::vec(0.0f64..1e6, 1..40),
        ) {
            let (d, _) = bootstrap_median_diff(&a, &b).unwrap();
            let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
            let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
            prop_assert!(d.lo <= d.hi);
            prop_assert!(d.lo >= min(&b) - max(&a) && d.hi <= max(&b) - min(&a));
        }

        /// Shifting B by a constant shifts the interval by the same constant.
        #[test]
        fn shift_equivariant(
            a in prop::collection::vec(0.0f64..1e3, 1..30),
            b in prop::collection::vec(0.0f64..1e3, 1..30),
            k in 1.0f64..1e3,
        ) {
            let (d, _) = bootstrap_median_diff(&a, &b).unwrap();
            let shifted: Vec<f64> = b.iter().map(|v| v + k).collect();
            let (s, _) = bootstrap_median_diff(&a, &shifted).unwrap();
            prop_assert!((s.lo - (d.lo + k)).abs() < 1e-6 && (s.hi - (d.hi + k)).abs() < 1e-6);
        }
    }
}
