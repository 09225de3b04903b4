//! The RTT distributions of both sides as an SVG, like the lab's CDF figure: every srtt sample
//! of a side's sockets, one line per side and cc, in the cc's colour; A solid, B dashed. Pure.

use super::Side;
use crate::lab::plot::{cdf, colour, legend_strokes, log_ticks, tick_label};
use plotters::prelude::*;
use std::collections::BTreeMap;

const SIZE: (u32, u32) = (900, 480);
/// The figure's name in `--plot DIR`.
pub const FILE: &str = "compare-srtt-cdf.svg";
/// Points drawn per line at most.
const POINTS: usize = 1000;

fn err(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// One line: its label, colour, whether dashed, and its CDF points (ms, fraction).
struct Line {
    label: String,
    colour: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// At most [`POINTS`] of a CDF's steps, evenly spaced, the last always kept: an SVG of every
/// sample of thousands of sockets would be megabytes for no visible difference.
fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let step = points.len().div_ceil(POINTS).max(1);
    let last = points.len().saturating_sub(1);
    points.into_iter().enumerate().filter(|(i, _)| i % step == 0 || *i == last).map(|p| p.1).collect()
}

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
    let lines = lines([("A", a), ("B", b)]);
    let all = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    // A log axis needs a positive range; with no samples, 1 to 2 ms.
    let lo = all().filter(|ms| *ms > 0.0).reduce(f64::min).map_or(1.0, |ms| ms * 0.9);
    let hi = (all().fold(1.0, f64::max) * 1.05).max(lo * 2.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("srtt CDF, A (solid) against B (dashed)", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((lo..hi).log_scale().with_key_points(log_ticks(lo, hi)), 0.0..1.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("srtt (ms, log scale)")
            .x_label_formatter(&tick_label)
            .y_desc("fraction of samples")
            .draw()
            .map_err(err)?;
        for l in lines {
            let style = l.colour.stroke_width(2);
            let drawn = if l.dashed {
                chart.draw_series(DashedLineSeries::new(l.points, 8, 5, style))
            } else {
                chart.draw_series(LineSeries::new(l.points, style))
            };
            let (c, dashed) = (l.colour, l.dashed);
            drawn.map_err(err)?.label(l.label).legend(move |(x, y)| {
                // Two strokes always (the same one twice for a solid line), so both kinds are
                // one type of element.
                let s = legend_strokes(dashed);
                let (first, last) = (s[0], s[s.len() - 1]);
                EmptyElement::at((x, y))
                    + PathElement::new(first, c.stroke_width(2))
                    + PathElement::new(last, c.stroke_width(2))
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::side;

    #[test]
    fn thinning_keeps_the_ends_and_at_most_the_limit() {
        let pts: Vec<(f64, f64)> = (1..=4500).map(|i| (i as f64, i as f64 / 4500.0)).collect();
        let t = thin(pts.clone());
        assert!(t.len() <= POINTS + 1 && t.len() > POINTS / 2, "{}", t.len());
        assert_eq!((t[0], *t.last().unwrap()), (pts[0], pts[4499]));
        assert_eq!(thin(pts[..10].to_vec()), pts[..10]);
        assert!(thin(Vec::new()).is_empty());
    }

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
        // B's legend sample is dashed, as its line is: two strokes with a gap.
        assert_eq!(legend_strokes(true).len(), 2);
        assert!(legend_strokes(true)[0][1].0 < legend_strokes(true)[1][0].0, "a gap between the strokes");
        assert_eq!(legend_strokes(false).len(), 1);
        // Sides with no samples still give a (blank) figure.
        assert!(rtt_cdf(&side(&[]), &side(&[])).unwrap().starts_with("<svg"));
    }
}
