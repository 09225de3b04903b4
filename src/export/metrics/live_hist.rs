//! The distributions of the sockets open now, kept as both kinds of Prometheus histogram: native
//! (exponential, sparse) buckets for a scraper that negotiates them, and classic buckets fine
//! enough that a quantile read from them is within 10% of the true value for one that does not.
//!
//! `histogram_quantile` interpolates linearly inside the bucket that holds the quantile's rank,
//! so its error is at most the bucket's width over its lower bound: with bounds a factor `r`
//! apart, `r - 1`. The native buckets (schema 4) are 2^(1/16) = 1.044 apart: within 4.4%. The
//! classic ladder is every second native boundary, 2^(1/8) = 1.091 apart (schema 3's
//! boundaries): within 9.1%. A value is placed once, by its native index; the classic counts are
//! sums of native ones.

#[cfg(test)]
use bbrtop_core::snapshot::loghist::index;
use bbrtop_core::snapshot::loghist::{LogHist, bound};
pub use bbrtop_core::snapshot::loghist::{SCHEMA, ZERO_THRESHOLD};

/// Native buckets per classic bucket: the classic ladder is schema 3's boundaries.
const PER_CLASSIC: i32 = 2;
/// One family's classic bounds: 2^(k/8) for k in `lo..=hi`, and +Inf. A value below the lowest
/// bound is counted in its bucket, one above the highest in +Inf (where `histogram_quantile`
/// answers the highest bound); the native buckets have no such ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ladder {
    lo: i32,
    hi: i32,
}

/// RTTs: 2^-15 s (30.5 µs, a LAN's round trip; loopback is left out) to 2^3 s (8 s of
/// bufferbloat): 145 bounds.
pub const RTT: Ladder = Ladder { lo: -120, hi: 24 };
/// srtt over baseline: 0.5 to 64: 57 bounds.
pub const RATIO: Ladder = Ladder { lo: -8, hi: 48 };
/// Response delivery times: 2^-10 s (0.98 ms) to 2^6 s (64 s): 129 bounds.
pub const RESPONSE: Ladder = Ladder { lo: -80, hi: 48 };
/// Bytes per second: 2^10 (1 KiB/s) to 2^34 (16 GiB/s, 137 Gbit/s): 193 bounds.
pub const RATE: Ladder = Ladder { lo: 80, hi: 272 };

impl Ladder {
    /// The classic bounds, lowest first, without +Inf.
    pub fn bounds(self) -> impl Iterator<Item = f64> {
        (self.lo..=self.hi).map(|k| bound(k * PER_CLASSIC))
    }
}

/// A histogram of one family over one scrape's sockets.
#[derive(Clone, Debug)]
pub struct LiveHist {
    ladder: Ladder,
    hist: LogHist,
}

/// A native histogram's buckets in Prometheus' encoding: spans of (offset from the end of the
/// previous span, or the first index, length) and each bucket's count as a delta from the one
/// before.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Native {
    pub zero_count: u64,
    pub spans: Vec<(i32, u32)>,
    pub deltas: Vec<i64>,
}

impl LiveHist {
    pub fn new(ladder: Ladder) -> LiveHist {
        LiveHist { ladder, hist: LogHist::default() }
    }

    /// Kept cumulatively elsewhere (the engine's response times), shown on this ladder.
    pub fn of(ladder: Ladder, hist: &LogHist) -> LiveHist {
        LiveHist { ladder, hist: hist.clone() }
    }

    /// Adds one value; a NaN or infinite one (none the kernel gives) is left out.
    pub fn observe(&mut self, v: f64) {
        self.hist.observe(v);
    }

    pub fn count(&self) -> u64 {
        self.hist.count()
    }

    pub fn sum(&self) -> f64 {
        self.hist.sum()
    }

    /// The classic buckets: (upper bound, count in that bucket alone), every bound of the
    /// ladder and +Inf last, so every scrape has the same `le` values.
    pub fn classic(&self) -> Vec<(f64, u64)> {
        let (lo, hi) = (self.ladder.lo * PER_CLASSIC, self.ladder.hi * PER_CLASSIC);
        let mut out: Vec<(f64, u64)> = self.ladder.bounds().map(|b| (b, 0)).collect();
        out.push((f64::INFINITY, 0));
        out[0].1 = self.hist.zero_count();
        for (i, n) in self.hist.buckets() {
            // Classic bucket k closes native buckets 2k-1 and 2k.
            let slot = if i <= lo {
                0
            } else if i > hi {
                out.len() - 1
            } else {
                (i - lo + PER_CLASSIC - 1) as usize / PER_CLASSIC as usize
            };
            out[slot].1 += n;
        }
        out
    }

    /// The native buckets. Runs of up to two empty buckets stay inside a span (as deltas to
    /// zero and back), which costs less than a new span, as client_golang does.
    pub fn native(&self) -> Native {
        let mut out = Native { zero_count: self.hist.zero_count(), ..Native::default() };
        // The last bucket encoded: its index and count, which the next delta is taken from.
        let mut prev: Option<(i32, u64)> = None;
        for (i, n) in self.hist.buckets() {
            let before = match prev {
                None => {
                    out.spans.push((i, 1));
                    0
                }
                Some((p, c)) if i - p <= 3 => {
                    if let Some(span) = out.spans.last_mut() {
                        span.1 += (i - p) as u32;
                    }
                    let empty = (i - p - 1) as usize;
                    if empty == 0 {
                        c
                    } else {
                        out.deltas.push(-(c as i64));
                        out.deltas.extend(std::iter::repeat_n(0, empty - 1));
                        0
                    }
                }
                Some((p, c)) => {
                    out.spans.push((i - p - 1, 1));
                    c
                }
            };
            out.deltas.push(n as i64 - before as i64);
            prev = Some((i, n));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each classic bucket's count, found without the native buckets: a value goes in the first
    /// bound it does not exceed.
    fn by_bounds(ladder: Ladder, values: &[f64]) -> Vec<(f64, u64)> {
        let mut bounds: Vec<f64> = ladder.bounds().collect();
        bounds.push(f64::INFINITY);
        let mut out: Vec<(f64, u64)> = bounds.iter().map(|b| (*b, 0)).collect();
        for v in values {
            out[bounds.partition_point(|b| b < v)].1 += 1;
        }
        out
    }

    /// The counts per native index, decoded from spans and deltas as Prometheus does.
    fn decode(n: &Native) -> Vec<(i32, u64)> {
        let (mut out, mut deltas, mut next, mut count) = (Vec::new(), n.deltas.iter(), 0, 0i64);
        for &(offset, len) in &n.spans {
            let start = next + offset;
            for j in 0..len as i32 {
                count += deltas.next().expect("a delta per bucket");
                assert!(count >= 0, "a negative count in {n:?}");
                if count > 0 {
                    out.push((start + j, count as u64));
                }
            }
            next = start + len as i32;
        }
        assert!(deltas.next().is_none(), "deltas left over");
        out
    }

    #[test]
    fn adjacent_classic_bounds_are_at_most_10_percent_apart() {
        for ladder in [RTT, RATIO, RATE, RESPONSE] {
            let b: Vec<f64> = ladder.bounds().collect();
            for w in b.windows(2) {
                let r = w[1] / w[0];
                assert!(r > 1.09 && r < 1.0906, "{} / {} = {r}", w[1], w[0]);
            }
        }
        assert_eq!(RTT.bounds().count(), 145);
        // Where the ends fall: 30.5 µs and 8 s; 1 KiB/s and 16 GiB/s.
        assert_eq!(RTT.bounds().next(), Some(2f64.powi(-15)));
        assert_eq!(RTT.bounds().last(), Some(8.0));
        assert_eq!(RATE.bounds().next(), Some(1024.0));
    }

    #[test]
    fn classic_counts_are_the_bounds_counts() {
        let values: Vec<f64> = (0..4000).map(|k| 1e-6 * 1.0071f64.powi(k)).chain([0.0, 2.0, 8.0]).collect();
        let mut h = LiveHist::new(RTT);
        for v in &values {
            h.observe(*v);
        }
        assert_eq!(h.classic(), by_bounds(RTT, &values));
        assert_eq!(h.count(), values.len() as u64);
    }

    #[test]
    fn native_buckets_decode_to_the_values_indices() {
        let values = [0.58, 0.6, 0.6, 0.61, 3.0, 3.2, 0.0, 1e-5, 250.0, 0.59];
        let mut h = LiveHist::new(RTT);
        for v in values {
            h.observe(v);
        }
        let n = h.native();
        assert_eq!(n.zero_count, 1);
        let mut want: Vec<(i32, u64)> = Vec::new();
        for v in values.iter().filter(|v| **v > 0.0) {
            match want.iter_mut().find(|(i, _)| *i == index(*v)) {
                Some(e) => e.1 += 1,
                None => want.push((index(*v), 1)),
            }
        }
        want.sort();
        assert_eq!(decode(&n), want);
        // Two buckets one apart share a span; far ones do not.
        assert!(n.spans.len() < want.len(), "{n:?}");
    }

    #[test]
    fn an_empty_histogram_has_no_buckets() {
        let h = LiveHist::new(RATE);
        assert_eq!(h.native(), Native::default());
        assert!(h.classic().iter().all(|(_, n)| *n == 0));
        assert_eq!(h.classic().len(), 194);
    }
}
