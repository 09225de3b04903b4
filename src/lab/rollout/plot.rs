//! The rollout's figure: per population, the CDF of response times on the BBR box and on the
//! CUBIC boxes, from the kernel's histograms (each bucket's upper bound against the share of
//! responses at or under it). Pure.

use super::report::Report;
use crate::plot::{self, Chart, Line, colour};
use bbrtop_core::snapshot::loghist::{LogHist, bound};
use plotters::prelude::SeriesLabelPosition;

/// The figure's name in `--plot DIR`.
pub const FILE: &str = "rollout-response-cdf.svg";

/// (upper bound in ms, share of responses at or under it) per non-empty bucket.
fn cdf(h: &LogHist) -> Vec<(f64, f64)> {
    let total = h.count().max(1) as f64;
    let mut below = h.zero_count();
    h.buckets()
        .map(|(i, n)| {
            below += n;
            (bound(i) * 1000.0, below as f64 / total)
        })
        .collect()
}

/// A line per population and cc: BBR solid, CUBIC dashed, each population's pair of lines
/// labelled with it.
pub fn response_cdf(r: &Report) -> Result<String, String> {
    let chart = Chart {
        title: "Response time CDF per population: BBR box (solid) against CUBIC boxes (dashed)",
        x_desc: "response time (ms, log scale)",
        y_desc: "fraction of responses",
        log_x: true,
        y_max: 1.0,
        legend: SeriesLabelPosition::LowerRight,
    };
    let mut lines = Vec::new();
    for (population, bbr, cubic) in &r.hists {
        for (cc, h, dashed) in [("bbr", bbr, false), ("cubic", cubic, true)] {
            if h.count() > 0 {
                lines.push(Line {
                    label: format!("{population}: {cc} ({} responses)", h.count()),
                    colour: colour(cc),
                    dashed,
                    points: cdf(h),
                });
            }
        }
    }
    plot::draw(&chart, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cdf_ends_at_one() {
        let mut h = LogHist::default();
        for v in [0.01, 0.02, 0.02, 0.5] {
            h.observe(v);
        }
        let c = cdf(&h);
        assert_eq!(c.last().map(|p| p.1), Some(1.0));
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1), "{c:?}");
        assert!((c[0].0 - 10.0).abs() < 0.5, "the first bucket closes near 10 ms: {c:?}");
    }
}
