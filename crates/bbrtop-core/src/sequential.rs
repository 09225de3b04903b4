//! Statistics for randomized congestion-control experiments (a control arm, say cubic, against a
//! test arm, say bbr) that users watch while they run: confidence sequences, intervals that hold
//! at every sample count at once, so looking after every new sample and stopping whenever a
//! result shows costs no coverage. A fixed-n interval (the normal approximation, a bootstrap)
//! checked that way misses far more often than its level says (the tests show it).
//!
//! The boundary is Howard, Ramdas, McAuliffe & Sekhon's polynomial stitching ("Time-uniform,
//! nonparametric, nonasymptotic confidence sequences", Ann. Statist. 2021, Theorem 1, eq. (6)),
//! applied as Howard & Ramdas do for a fixed quantile ("Sequential estimation of quantiles with
//! applications to A/B-testing and best-arm identification", Bernoulli 28(3), 2022): the
//! count of samples at or below the true quantile is a sum of Bernoulli(p) terms, sub-gamma with
//! variance p(1−p) per sample and scale c = (1−2p)/3 on its upper side, (2p−1)/3 on its lower
//! (a negative scale is dropped to 0, which only loosens). With v = max(t·p(1−p), m),
//!
//! ```text
//! S(v) = sqrt(k1²·v·ℓ(v) + (k2·c·ℓ(v))²) + k2·c·ℓ(v)
//! ℓ(v) = s·ln ln(η·v/m) + ln(ζ(s) / ((ln η)^s · α_tail))
//! η = 2, s = 1.4, k1 = (η^¼ + η^−¼)/√2 = 1.4355, k2 = (√η + 1)/2 = 1.2071, ζ(1.4) = 3.10555
//! ```
//!
//! and P(∃t: deviation ≥ S) ≤ α_tail, each tail getting α/2. It needs no distribution (only
//! i.i.d. samples: the quantile of any distribution, times with a one-or-two-RTT mix included),
//! no horizon, and its width shrinks as √(log log t / t), the fastest any such interval can.
//! m = p(1−p)·[`T_MIN`] is where the boundary is tightest; before it the radius is S(m)/t.
//! Pure: no clock, no I/O.

use std::fmt;
use std::time::{Duration, Instant};

use crate::snapshot::loghist::{LogHist, ZERO_THRESHOLD, bound, index};
use crate::stats::{Interval, Margin};

/// The stitching's epoch growth η and the exponent s of its α spending over epochs.
const ETA: f64 = 2.0;
const S: f64 = 1.4;
/// ζ(1.4), the normalizer of spending α/k^s over the epochs k.
const ZETA_S: f64 = 3.105_547_277_977_435;
/// The sample count the boundary is tuned for (its m = p(1−p)·T_MIN): experiments see hundreds
/// to millions of responses, and a smaller m only widens the late intervals by log log.
pub const T_MIN: f64 = 100.0;

/// The stitched boundary S(v) on a sub-gamma sum with variance process `v`, scale `c` (≥ 0),
/// tuned at `m`, crossed with probability at most `alpha` (one tail).
fn stitched(v: f64, m: f64, c: f64, alpha: f64) -> f64 {
    let v = v.max(m);
    let k1 = (ETA.powf(0.25) + ETA.powf(-0.25)) / std::f64::consts::SQRT_2;
    let k2 = (ETA.sqrt() + 1.0) / 2.0;
    let ell = S * (ETA * v / m).ln().ln() + (ZETA_S / (ETA.ln().powf(S) * alpha)).ln();
    let term = k2 * c * ell;
    (k1 * k1 * v * ell + term * term).sqrt() + term
}

/// How far the empirical CDF at the true p-quantile can be from p after `t` samples, at every t
/// at once with probability ≥ 1 − `alpha`: (below, above), the radius of the count falling short
/// of t·p and of it exceeding t·p, over t. Also a Bernoulli(p) mean's deviation, each way.
pub fn radius(t: u64, p: f64, alpha: f64) -> (f64, f64) {
    let (t, var) = (t as f64, p * (1.0 - p));
    let r = |c: f64| stitched(t * var, T_MIN * var, c.max(0.0), alpha / 2.0) / t;
    (r((2.0 * p - 1.0) / 3.0), r((1.0 - 2.0 * p) / 3.0))
}

const UNBOUNDED: Interval = Interval { lo: f64::NEG_INFINITY, hi: f64::INFINITY };

/// The 1-based order-statistic ranks that bracket the p-quantile after `t` samples: the count at
/// or below it is at least t(p − below), so the ⌈t(p − below)⌉-th value is no larger; the count
/// below it is at most t(p + above), so the (⌊t(p + above)⌋+1)-th is no smaller. None: no such
/// value yet (that end is unbounded).
fn ranks(t: u64, p: f64, alpha: f64) -> (Option<u64>, Option<u64>) {
    let (below, above) = radius(t, p, alpha);
    let n = t as f64;
    let lo = (n * (p - below)).ceil();
    let hi = (n * (p + above)).floor() + 1.0;
    ((lo >= 1.0).then_some(lo as u64), (hi <= n).then_some(hi as u64))
}

/// The confidence sequence of the `p` quantile (0 < p < 1) over `sorted` values: it holds the
/// true quantile at every length of the sample at once with probability ≥ 1 − `alpha`. An end is
/// infinite until there are enough values to bound it (a p95's upper end needs some hundreds).
pub fn quantile_cs(sorted: &[f64], p: f64, alpha: f64) -> Interval {
    if sorted.is_empty() {
        return UNBOUNDED;
    }
    let (lo, hi) = ranks(sorted.len() as u64, p, alpha);
    Interval {
        lo: lo.map_or(f64::NEG_INFINITY, |k| sorted[k as usize - 1]),
        hi: hi.map_or(f64::INFINITY, |k| sorted[k as usize - 1]),
    }
}

/// [`quantile_cs`] over a [`LogHist`]: each end is the outer bound of the bucket its order
/// statistic fell in, so the interval holds the sorted-sample one and is wider by at most a
/// bucket at each end (2^(1/16), 4.4%). The same coverage, since it contains it.
pub fn quantile_cs_hist(h: &LogHist, p: f64, alpha: f64) -> Interval {
    let n = h.count();
    if n == 0 {
        return UNBOUNDED;
    }
    let (lo, hi) = ranks(n, p, alpha);
    // Rank k − ½ lies strictly inside the bucket holding the k-th value: no rounding at a
    // bucket's edge can move it to the neighbour.
    let at = |k: u64| h.quantile((k as f64 - 0.5) / n as f64).unwrap_or(f64::NAN);
    let bucket = |v: f64| {
        if v <= ZERO_THRESHOLD { (0.0, ZERO_THRESHOLD) } else { (bound(index(v) - 1), bound(index(v))) }
    };
    Interval {
        lo: lo.map_or(f64::NEG_INFINITY, |k| bucket(at(k)).0),
        hi: hi.map_or(f64::INFINITY, |k| bucket(at(k)).1),
    }
}

/// The confidence sequence of a proportion (retransmitted over sent segments): the p not
/// rejected by the stitched boundary with p's own variance p(1−p), so a ratio near 1% gets an
/// interval near its Bernoulli width, not the σ² = ¼ worst case. Treats the trials as
/// independent: retransmits come in bursts, so count segments (not bytes) and read it as an
/// approximation.
pub fn proportion_cs(hits: u64, trials: u64, alpha: f64) -> Interval {
    if trials == 0 {
        return Interval { lo: 0.0, hi: 1.0 };
    }
    let (t, est) = (trials as f64, hits as f64 / trials as f64);
    // p is rejected from below when the count is too high for it (its "above" radius), from
    // above when too low. t·(est − p) falls by t per unit of p while the radius term moves by
    // O(√t): each side has a single crossing, found by bisection.
    let too_high = |p: f64| t * (est - p) > t * radius(trials, p, alpha).1;
    let too_low = |p: f64| t * (p - est) > t * radius(trials, p, alpha).0;
    let lo = if est == 0.0 || !too_high(1e-12) { 0.0 } else { bisect(1e-12, est, too_high) };
    let hi = if est == 1.0 || !too_low(1.0 - 1e-12) {
        1.0
    } else {
        1.0 - bisect(1e-12, 1.0 - est, |q| too_low(1.0 - q))
    };
    Interval { lo, hi }
}

/// The boundary between `a` (where `rejected` holds) and `b` (where it does not), returned on
/// the not-rejected side so the interval never shrinks past it.
fn bisect(mut a: f64, mut b: f64, rejected: impl Fn(f64) -> bool) -> f64 {
    for _ in 0..64 {
        let mid = 0.5 * (a + b);
        if rejected(mid) { a = mid } else { b = mid }
    }
    b
}

/// What the intervals say of the test arm against control, lower being better. Not
/// [`crate::stats::Verdict`]: that has no "not yet known", and here that is a different answer
/// from "no clear difference" (the experiment should go on, not stop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Lower than control by more than the margin.
    Better,
    /// Higher than control by more than the margin.
    Worse,
    /// No clear difference: every difference the intervals allow lies within the margin.
    WithinMargin,
    NotYetKnown,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    pub call: Call,
    pub control: Interval,
    pub test: Interval,
    /// test − control: [test.lo − control.hi, test.hi − control.lo], holding whenever both do.
    pub diff: Interval,
}

/// Compares two arms' intervals (each at α/2 for a joint 1 − α). The margin grows with the
/// control's value, so each call is checked at the control end that makes it hardest: the calls
/// hold for every (control, test) pair the intervals allow.
pub fn compare(control: Interval, test: Interval, margin: Margin) -> Comparison {
    let diff = Interval { lo: test.lo - control.hi, hi: test.hi - control.lo };
    let bounded = [control.lo, control.hi, test.lo, test.hi].iter().all(|v| v.is_finite());
    let call = if test.lo > control.hi + margin.at(control.hi) {
        Call::Worse
    } else if test.hi < control.lo - margin.at(control.lo) {
        Call::Better
    } else if bounded
        && test.hi <= control.lo + margin.at(control.lo)
        && test.lo >= control.hi - margin.at(control.hi)
    {
        Call::WithinMargin
    } else {
        Call::NotYetKnown
    };
    Comparison { call, control, test, diff }
}

/// The p-quantile of two arms' sorted samples, α/2 each.
pub fn compare_quantile(control: &[f64], test: &[f64], p: f64, alpha: f64, margin: Margin) -> Comparison {
    compare(quantile_cs(control, p, alpha / 2.0), quantile_cs(test, p, alpha / 2.0), margin)
}

/// [`compare_quantile`] over histograms (each end a bucket wider at most). A histogram cannot
/// tell values within one bucket apart, so "within the margin" allows a bucket more: equal arms
/// whose quantile sits near a bucket's edge straddle two buckets however many samples come, and
/// would read "not yet known" for as long as the experiment runs.
pub fn compare_quantile_hist(
    control: &LogHist,
    test: &LogHist,
    p: f64,
    alpha: f64,
    margin: Margin,
) -> Comparison {
    let (c, t) = (quantile_cs_hist(control, p, alpha / 2.0), quantile_cs_hist(test, p, alpha / 2.0));
    let out = compare(c, t, margin);
    if out.call != Call::NotYetKnown {
        return out;
    }
    let bucket = bound(1) / bound(0);
    let wide = Margin { rel: (1.0 + margin.rel) * bucket - 1.0, ..margin };
    let call =
        if compare(c, t, wide).call == Call::WithinMargin { Call::WithinMargin } else { Call::NotYetKnown };
    Comparison { call, ..out }
}

/// Two arms' proportions, (hits, trials) each, α/2 each.
pub fn compare_proportion(control: (u64, u64), test: (u64, u64), alpha: f64, margin: Margin) -> Comparison {
    compare(
        proportion_cs(control.0, control.1, alpha / 2.0),
        proportion_cs(test.0, test.1, alpha / 2.0),
        margin,
    )
}

/// The harm guard's limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// The test arm's retransmit ratio may not be surely above this.
    pub max_retrans_ratio: f64,
    /// The test arm's p95 delivery time may not be surely worse than control's by more.
    pub p95_margin: Margin,
    /// The control arm's share of both arms' goodput may not fall below this (0.5 is an even
    /// split between equal arms; below 0.35 the test arm takes nearly twice control's).
    pub min_control_goodput_share: f64,
    /// How long a condition must hold without a break before it trips.
    pub hold: Duration,
    pub alpha: f64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_retrans_ratio: 0.01,
            p95_margin: crate::snapshot::responses::MARGIN_SECONDS,
            min_control_goodput_share: 0.35,
            hold: Duration::from_secs(30),
            alpha: 0.05,
        }
    }
}

/// One arm's figures, cumulative since the experiment began: the confidence sequences hold over
/// a growing sample, not over a sliding window.
#[derive(Clone, Copy, Debug)]
pub struct ArmStats<'a> {
    /// Response delivery times, seconds.
    pub delivery: &'a LogHist,
    pub retrans_segs: u64,
    pub sent_segs: u64,
    pub goodput_bytes_per_sec: f64,
}

/// Which condition tripped, with its figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Why {
    RetransRatio { ratio: f64, ci: Interval, bound: f64 },
    P95Worse(Comparison),
    ControlGoodputShare { share: f64, bound: f64 },
}

impl Why {
    /// The bound crossed, as a label value: `retrans_ratio`, `p95` or `control_share`.
    pub fn label(&self) -> &'static str {
        match self {
            Why::RetransRatio { .. } => "retrans_ratio",
            Why::P95Worse(_) => "p95",
            Why::ControlGoodputShare { .. } => "control_share",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tripped {
    pub why: Why,
    /// How long the condition had held.
    pub held: Duration,
}

impl fmt::Display for Tripped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |v: f64| v * 100.0;
        let ms = |v: f64| v * 1000.0;
        match self.why {
            Why::RetransRatio { ratio, ci, bound } => write!(
                f,
                "test arm's retransmit ratio {:.2}% (interval {:.2}%..{:.2}%) above the {:.2}% bound",
                pct(ratio),
                pct(ci.lo),
                pct(ci.hi),
                pct(bound)
            )?,
            Why::P95Worse(c) => write!(
                f,
                "test arm's p95 delivery time {:.1}..{:.1} ms worse than control's {:.1}..{:.1} ms by {:.1}..{:.1} ms",
                ms(c.test.lo),
                ms(c.test.hi),
                ms(c.control.lo),
                ms(c.control.hi),
                ms(c.diff.lo),
                ms(c.diff.hi)
            )?,
            Why::ControlGoodputShare { share, bound } => write!(
                f,
                "control arm's goodput share {:.1}% below the {:.1}% bound",
                pct(share),
                pct(bound)
            )?,
        }
        write!(f, " for {}s", self.held.as_secs())
    }
}

/// The harm guard: trips when a condition has held continuously for the hold time. A condition
/// that lapses even once starts its clock again, so a burst shorter than the hold never trips.
#[derive(Clone, Debug)]
pub struct Guard {
    bounds: Bounds,
    /// When each condition (retransmits, p95, goodput share) began holding without a break.
    since: [Option<Instant>; 3],
}

impl Guard {
    pub fn new(bounds: Bounds) -> Guard {
        Guard { bounds, since: [None; 3] }
    }

    /// Feeds one look at both arms, at `now`; the first condition past its hold, if any.
    pub fn step(&mut self, now: Instant, control: &ArmStats, test: &ArmStats) -> Option<Tripped> {
        let b = &self.bounds;
        let ci = proportion_cs(test.retrans_segs, test.sent_segs, b.alpha);
        let ratio = test.retrans_segs as f64 / test.sent_segs.max(1) as f64;
        let p95 = compare_quantile_hist(control.delivery, test.delivery, 0.95, b.alpha, b.p95_margin);
        let total = control.goodput_bytes_per_sec + test.goodput_bytes_per_sec;
        let share = control.goodput_bytes_per_sec / total;
        let conditions = [
            // The lower end, not the ratio: a few retransmits early on are noise.
            (ci.lo > b.max_retrans_ratio).then_some(Why::RetransRatio {
                ratio,
                ci,
                bound: b.max_retrans_ratio,
            }),
            (p95.call == Call::Worse).then_some(Why::P95Worse(p95)),
            (total > 0.0 && share < b.min_control_goodput_share)
                .then_some(Why::ControlGoodputShare { share, bound: b.min_control_goodput_share }),
        ];
        let mut tripped = None;
        for (since, why) in self.since.iter_mut().zip(conditions) {
            let Some(why) = why else {
                *since = None;
                continue;
            };
            let held = now.saturating_duration_since(*since.get_or_insert(now));
            if tripped.is_none() && held >= b.hold {
                tripped = Some(Tripped { why, held });
            }
        }
        tripped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALPHA: f64 = 0.05;
    const RUNS: usize = 300;
    const N: usize = 3000;

    /// The runs that may miscover at most: α plus three binomial standard deviations.
    fn allowed(alpha: f64, runs: usize) -> usize {
        let r = runs as f64;
        (r * alpha + 3.0 * (r * alpha * (1.0 - alpha)).sqrt()).ceil() as usize
    }

    fn normal(rng: &mut fastrand::Rng) -> f64 {
        let (u, v) = (1.0 - rng.f64(), rng.f64());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A distribution of delivery times (seconds): its sampler and its true p50 and p95.
    struct Dist {
        name: &'static str,
        draw: fn(&mut fastrand::Rng) -> f64,
        quantile: fn(f64) -> f64,
    }

    /// Exponential, mean 50 ms.
    fn exp_draw(r: &mut fastrand::Rng) -> f64 {
        -0.05 * (1.0 - r.f64()).ln()
    }
    fn exp_q(p: f64) -> f64 {
        -0.05 * (1.0 - p).ln()
    }
    /// Lognormal, median 30 ms, σ = 0.8.
    fn logn_draw(r: &mut fastrand::Rng) -> f64 {
        0.03 * (0.8 * normal(r)).exp()
    }
    fn logn_q(p: f64) -> f64 {
        let z: f64 = if p == 0.5 { 0.0 } else { 1.644_853_626_951_472_2 };
        0.03 * (0.8 * z).exp()
    }
    /// BBR's one-or-two-RTT answers: 70% at 20 ms + Exp(2 ms), 30% at 40 ms + Exp(3 ms).
    fn bimodal_draw(r: &mut fastrand::Rng) -> f64 {
        let e = -(1.0 - r.f64()).ln();
        if r.f64() < 0.7 { 0.020 + 0.002 * e } else { 0.040 + 0.003 * e }
    }
    fn bimodal_q(p: f64) -> f64 {
        let cdf = |x: f64| {
            let part = |at: f64, scale: f64| if x <= at { 0.0 } else { 1.0 - (-(x - at) / scale).exp() };
            0.7 * part(0.020, 0.002) + 0.3 * part(0.040, 0.003)
        };
        let (mut a, mut b) = (0.0, 1.0);
        for _ in 0..100 {
            let m = 0.5 * (a + b);
            if cdf(m) < p { a = m } else { b = m }
        }
        b
    }

    const DISTS: [Dist; 3] = [
        Dist { name: "exponential", draw: exp_draw, quantile: exp_q },
        Dist { name: "lognormal", draw: logn_draw, quantile: logn_q },
        Dist { name: "bimodal", draw: bimodal_draw, quantile: bimodal_q },
    ];

    fn insert(sorted: &mut Vec<f64>, v: f64) {
        let at = sorted.partition_point(|x| *x < v);
        sorted.insert(at, v);
    }

    /// The fixed-n interval a dashboard would show: order statistics at n·p ± 1.96·√(n·p(1−p)).
    fn naive(sorted: &[f64], p: f64) -> Interval {
        let n = sorted.len() as f64;
        let half = 1.96 * (n * p * (1.0 - p)).sqrt();
        let at = |r: f64| sorted[(r.round().clamp(1.0, n) as usize) - 1];
        Interval { lo: at(n * p - half), hi: at(n * p + half) }
    }

    /// Peeking after every sample: the confidence sequence misses the true p50 or p95 at some t
    /// in at most α of the runs (plus binomial slack), on each distribution; the naive interval
    /// peeked at the same way misses in far more.
    #[test]
    fn coverage_holds_at_every_t_and_the_naive_interval_does_not() {
        for d in &DISTS {
            for p in [0.5, 0.95] {
                let truth = (d.quantile)(p);
                let mut rng = fastrand::Rng::with_seed(17);
                let (mut cs_missed, mut naive_missed) = (0, 0);
                for _ in 0..RUNS {
                    let mut sorted = Vec::with_capacity(N);
                    let (mut cs_miss, mut naive_miss) = (false, false);
                    for t in 1..=N {
                        insert(&mut sorted, (d.draw)(&mut rng));
                        let ci = quantile_cs(&sorted, p, ALPHA);
                        cs_miss |= truth < ci.lo || truth > ci.hi;
                        // From 50 values on, where a dashboard would start showing it.
                        if t >= 50 {
                            let ni = naive(&sorted, p);
                            naive_miss |= truth < ni.lo || truth > ni.hi;
                        }
                    }
                    cs_missed += usize::from(cs_miss);
                    naive_missed += usize::from(naive_miss);
                }
                eprintln!(
                    "{} p{}: CS missed in {cs_missed}/{RUNS} runs, naive in {naive_missed}/{RUNS}",
                    d.name,
                    p * 100.0
                );
                assert!(cs_missed <= allowed(ALPHA, RUNS), "{} p{p}: {cs_missed}/{RUNS}", d.name);
                assert!(
                    naive_missed > allowed(ALPHA, RUNS) && naive_missed > 3 * cs_missed.max(1),
                    "{} p{p}",
                    d.name
                );
            }
        }
    }

    #[test]
    fn the_interval_narrows_and_opens_only_early() {
        let mut rng = fastrand::Rng::with_seed(3);
        let all: Vec<f64> = (0..100_000).map(|_| exp_draw(&mut rng)).collect();
        let first = |n: usize| {
            let mut v = all[..n].to_vec();
            v.sort_by(f64::total_cmp);
            v
        };
        assert_eq!(quantile_cs(&first(20), 0.95, ALPHA).hi, f64::INFINITY, "20 values cannot bound a p95");
        let (a, b) = (quantile_cs(&first(2000), 0.95, ALPHA), quantile_cs(&first(100_000), 0.95, ALPHA));
        assert!(b.hi - b.lo < (a.hi - a.lo) / 4.0, "{a:?} {b:?}");
        assert!(b.lo < exp_q(0.95) && exp_q(0.95) < b.hi && (b.hi / b.lo) < 1.1, "{b:?}");
        assert_eq!(quantile_cs(&[], 0.5, ALPHA), UNBOUNDED);
    }

    /// Clearly different arms get a call; A/A arms, peeked at after every pair of samples, get
    /// Better or Worse in at most α of the runs (a zero margin: the strictest case).
    #[test]
    fn verdicts() {
        let mut rng = fastrand::Rng::with_seed(5);
        let margin = Margin { rel: 0.05, abs: 0.001 };
        let mut draw = |scale: f64, n: usize| {
            let mut v: Vec<f64> = (0..n).map(|_| scale * exp_draw(&mut rng)).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (control, faster, slower) = (draw(1.0, 5000), draw(0.7, 5000), draw(1.4, 5000));
        assert_eq!(compare_quantile(&control, &faster, 0.95, ALPHA, margin).call, Call::Better);
        assert_eq!(compare_quantile(&control, &slower, 0.95, ALPHA, margin).call, Call::Worse);
        let early = compare_quantile(&control[..100], &slower[..100], 0.95, ALPHA, margin);
        assert_eq!(early.call, Call::NotYetKnown);
        let c = compare_quantile(&control, &slower, 0.95, ALPHA, margin);
        assert!(c.diff.lo > 0.0 && c.diff.lo <= c.diff.hi && c.diff.hi == c.test.hi - c.control.lo, "{c:?}");

        let zero = Margin { rel: 0.0, abs: 0.0 };
        let mut called = 0;
        for _ in 0..RUNS {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let mut any = false;
            for _ in 0..2000 {
                insert(&mut a, bimodal_draw(&mut rng));
                insert(&mut b, bimodal_draw(&mut rng));
                any |= matches!(compare_quantile(&a, &b, 0.95, ALPHA, zero).call, Call::Better | Call::Worse);
            }
            called += usize::from(any);
        }
        eprintln!("A/A: a call at some t in {called}/{RUNS} runs");
        assert!(called <= allowed(ALPHA, RUNS), "{called}");

        // Same arms with a practical margin end as no clear difference.
        let mut a: Vec<f64> = (0..200_000).map(|_| exp_draw(&mut rng)).collect();
        let mut b: Vec<f64> = (0..200_000).map(|_| exp_draw(&mut rng)).collect();
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        let wide = Margin { rel: 0.1, abs: 0.001 };
        assert_eq!(compare_quantile(&a, &b, 0.5, ALPHA, wide).call, Call::WithinMargin);

        // Proportions: 1% against 3% of 100 000 segments is worse; equal ones are not.
        let no = Margin { rel: 0.0, abs: 0.0 };
        assert_eq!(compare_proportion((1000, 100_000), (3000, 100_000), ALPHA, no).call, Call::Worse);
        assert_eq!(compare_proportion((1000, 100_000), (1000, 100_000), ALPHA, no).call, Call::NotYetKnown);
        let pct = Margin { rel: 0.0, abs: 0.002 };
        assert_eq!(
            compare_proportion((1000, 1_000_000), (1000, 1_000_000), ALPHA, pct).call,
            Call::WithinMargin
        );
    }

    /// A proportion's sequence holds the true ratio at every t in at most α of the runs.
    #[test]
    fn proportion_coverage() {
        let mut rng = fastrand::Rng::with_seed(11);
        for p in [0.01, 0.3] {
            let mut missed = 0;
            for _ in 0..RUNS {
                let mut hits = 0;
                let mut miss = false;
                for t in 1..=N as u64 {
                    hits += u64::from(rng.f64() < p);
                    // Every 10th look: the inversion is 128 bisection steps.
                    if t % 10 == 0 {
                        let ci = proportion_cs(hits, t, ALPHA);
                        miss |= p < ci.lo || p > ci.hi;
                    }
                }
                missed += usize::from(miss);
            }
            eprintln!("proportion {p}: missed in {missed}/{RUNS} runs");
            assert!(missed <= allowed(ALPHA, RUNS), "{p}: {missed}");
        }
        let ci = proportion_cs(0, 1000, ALPHA);
        assert!(ci.lo == 0.0 && ci.hi > 0.0 && ci.hi < 0.02, "{ci:?}");
        let ci = proportion_cs(20_000, 1_000_000, ALPHA);
        assert!(ci.lo > 0.019 && ci.hi < 0.021, "{ci:?}");
    }

    /// The histogram's interval contains the sorted sample's, each end within one bucket.
    #[test]
    fn loghist_agrees_within_a_bucket() {
        let step = 2f64.powf(1.0 / 16.0);
        let mut rng = fastrand::Rng::with_seed(9);
        for d in &DISTS {
            let (mut v, mut h) = (Vec::new(), LogHist::default());
            for n in [300usize, 3000, 30_000] {
                while v.len() < n {
                    let x = (d.draw)(&mut rng);
                    v.push(x);
                    h.observe(x);
                }
                v.sort_by(f64::total_cmp);
                for p in [0.5, 0.95, 0.99] {
                    let (s, b) = (quantile_cs(&v, p, ALPHA), quantile_cs_hist(&h, p, ALPHA));
                    let within = |outer: f64, inner: f64, lower: bool| {
                        if outer.is_infinite() || inner.is_infinite() {
                            return outer == inner;
                        }
                        if lower {
                            outer <= inner && inner <= outer * step
                        } else {
                            inner <= outer && outer <= inner * step
                        }
                    };
                    assert!(
                        within(b.lo, s.lo, true) && within(b.hi, s.hi, false),
                        "{} n{n} p{p}: {s:?} {b:?}",
                        d.name
                    );
                }
            }
        }
    }

    fn hist(scale: f64, n: usize, seed: u64) -> LogHist {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut h = LogHist::default();
        for _ in 0..n {
            h.observe(scale * exp_draw(&mut rng));
        }
        h
    }

    #[test]
    fn the_guard_trips_after_the_hold_and_not_on_noise() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let (same_a, same_b, slow) = (hist(1.0, 20_000, 1), hist(1.0, 20_000, 2), hist(1.5, 20_000, 3));
        let arm = |h, retrans, sent, goodput| ArmStats {
            delivery: h,
            retrans_segs: retrans,
            sent_segs: sent,
            goodput_bytes_per_sec: goodput,
        };
        let calm = arm(&same_a, 500, 100_000, 1e6);

        // A few retransmits of few segments (2% of 300): the ratio is over 1%, its interval's
        // lower end is not, however long it lasts.
        let mut g = Guard::new(Bounds::default());
        for s in 0..120 {
            assert_eq!(g.step(at(s), &calm, &arm(&same_b, 6, 300, 1e6)), None, "{s}");
        }

        // 3% of a million: trips at 30 s after it began, not at 29.
        let bad = arm(&same_b, 30_000, 1_000_000, 1e6);
        let mut g = Guard::new(Bounds::default());
        for s in 0..30 {
            assert_eq!(g.step(at(s), &calm, &bad), None, "{s}");
        }
        let t = g.step(at(30), &calm, &bad).expect("held 30 s");
        assert!(matches!(t.why, Why::RetransRatio { .. }));
        let line = t.to_string();
        assert!(
            line.starts_with("test arm's retransmit ratio 3.00%")
                && line.ends_with("above the 1.00% bound for 30s"),
            "{line}"
        );

        // A starved control for 20 s, a break, 29 s more: not 30 s in a row until 51 s.
        let mut g = Guard::new(Bounds::default());
        let starved = arm(&same_a, 500, 100_000, 0.2e6);
        for s in 0..50 {
            let c = if s == 20 { &calm } else { &starved };
            assert_eq!(g.step(at(s), c, &arm(&same_b, 500, 100_000, 1e6)), None, "{s}");
        }
        let t = g.step(at(51), &starved, &arm(&same_b, 500, 100_000, 1e6)).expect("21 s to 51 s");
        assert_eq!(t.to_string(), "control arm's goodput share 16.7% below the 35.0% bound for 30s");

        // A test arm 50% slower at p95.
        let mut g = Guard::new(Bounds::default());
        let slow_arm = arm(&slow, 500, 100_000, 1e6);
        assert_eq!(g.step(at(0), &calm, &slow_arm), None);
        let t = g.step(at(31), &calm, &slow_arm).unwrap();
        assert!(matches!(t.why, Why::P95Worse(c) if c.call == Call::Worse && c.diff.lo > 0.0), "{t:?}");
        assert!(t.to_string().contains("p95 delivery time"), "{t}");
        // Identical arms never trip it.
        let mut g = Guard::new(Bounds::default());
        for s in 0..100 {
            assert_eq!(g.step(at(s), &calm, &arm(&same_b, 500, 100_000, 1e6)), None);
        }
    }

    /// Equal arms whose p95 sits on a bucket's edge straddle two buckets at any sample count:
    /// with a bucket's slack they read "no clear difference", and a real 20% gap still does not.
    #[test]
    fn equal_histograms_on_a_bucket_edge_are_within_the_margin() {
        let edge = bound(-70);
        let fill = |scale: f64| {
            let mut h = LogHist::default();
            for i in 0..20_000 {
                h.observe(edge * scale * (0.9 + 0.2 * f64::from(i) / 20_000.0));
            }
            h
        };
        let (a, b) = (fill(1.0), fill(1.0));
        let margin = crate::snapshot::responses::MARGIN_SECONDS;
        let c = compare_quantile_hist(&a, &b, 0.5, ALPHA, margin);
        assert!(c.control.hi / c.control.lo > bound(1) / bound(0) * 1.001, "straddles two buckets: {c:?}");
        assert_eq!(c.call, Call::WithinMargin, "{c:?}");
        let far = compare_quantile_hist(&a, &fill(1.2), 0.5, ALPHA, margin);
        assert_eq!(far.call, Call::Worse, "{far:?}");
    }
}
