//! The RTT distributions of both sides as an SVG, like the lab's CDF figure: every srtt sample
//! of a side's sockets, one line per side and cc, in the cc's colour; A solid, B dashed. Pure.

use super::Side;
use crate::plot::{self, Chart, Line, cdf, colour, thin};
use plotters::prelude::SeriesLabelPosition;
use std::collections::BTreeMap;

/// The figure's name in `--plot DIR`.
pub const FILE: &str = "compare-srtt-cdf.svg";

fn plural(n: usize, what: &str) -> String {
    if n == 1 { what.to_string() } else { format!("{what}s") }
}

/// A line per cc of each side, from every srtt sample of its sockets.
fn lines(sides: [(&str, &Side); 2]) -> Vec<Line> {
    let mut out = Vec::new();
    for (i, (name, side)) in sides.into_iter().enumerate() {
        let mut by_cc: BTreeMap<&str, (usize, Vec<f64>)> = BTreeMap::new();
        for s in &side.sockets {
            let e = by_cc.entry(s.cc.as_str()).or_default();
            e.0 += 1;
            e.1.extend_from_slice(&s.srtt_samples_ms);
        }
        for (cc, (sockets, samples)) in by_cc {
            if samples.is_empty() {
                continue;
            }
            out.push(Line {
                label: format!(
                    "{name}: {cc} ({sockets} {}, {} {})",
                    plural(sockets, "socket"),
                    samples.len(),
                    plural(samples.len(), "sample")
                ),
                colour: colour(cc),
                dashed: i == 1,
                points: thin(cdf(samples)),
            });
        }
    }
    out
}

/// The CDF of srtt samples per side and cc, on a log RTT axis (bloat moves RTTs by 10x and more).
pub fn rtt_cdf(a: &Side, b: &Side) -> Result<String, String> {
    let chart = Chart {
        title: "srtt CDF, A (solid) against B (dashed)",
        x_desc: "srtt (ms, log scale)",
        y_desc: "fraction of samples",
        log_x: true,
        y_max: 1.0,
        legend: SeriesLabelPosition::LowerRight,
    };
    plot::draw(&chart, lines([("A", a), ("B", b)]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::side;

    #[test]
    fn a_line_per_side_and_cc() {
        let a = side(&[("cubic", 1000.0), ("cubic", 1100.0)]);
        let b = side(&[("bbr", 45.0), ("cubic", 900.0)]);
        let svg = rtt_cdf(&a, &b).unwrap();
        assert!(svg.starts_with("<svg"));
        for label in ["A: cubic (2 sockets, 2 samples)", "B: bbr (1 socket, 1 sample)", "B: cubic (1 socket,"]
        {
            assert!(svg.contains(label), "{label}");
        }
        assert!(svg.contains("#1F77B4") && svg.contains("#D62728"), "bbr's and cubic's colours");
        // Sides with no samples still give a (blank) figure.
        assert!(rtt_cdf(&side(&[]), &side(&[])).unwrap().starts_with("<svg"));
    }
}
