//! Plotting, in one place: SVG charts of lines, for the lab's figures and `compare`'s CDF, with
//! each congestion control in the same colour everywhere and log axes whose ticks stay round and
//! readable. Pure: a chart is rendered to a string.

use plotters::prelude::*;

const SIZE: (u32, u32) = (900, 480);

/// A colour per congestion control, the same in every plot.
pub fn colour(cc: &str) -> RGBColor {
    match cc {
        "bbr" => RGBColor(31, 119, 180),
        "cubic" => RGBColor(214, 39, 40),
        _ => RGBColor(44, 160, 44),
    }
}

fn err(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// One line of a chart.
pub struct Line {
    pub label: String,
    pub colour: RGBColor,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

/// What a chart shows besides its lines.
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// A log x axis over the lines' positive values (RTTs that bloat moves 10x and more); else
    /// linear from 0.
    pub log_x: bool,
    /// The y axis runs from 0 to this.
    pub y_max: f64,
    pub legend: SeriesLabelPosition,
}

/// The chart as SVG: every line in its colour (dashed ones dashed, in the legend too).
pub fn draw(c: &Chart, lines: Vec<Line>) -> Result<String, String> {
    let xs = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    // A log axis needs a positive range; with no samples, 1 to 2.
    let lo = xs().filter(|x| *x > 0.0).reduce(f64::min).map_or(1.0, |x| x * 0.9);
    let hi = xs().fold(1.0, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut builder = ChartBuilder::on(&root);
        builder.caption(c.title, ("sans-serif", 18)).margin(12).x_label_area_size(40).y_label_area_size(60);
        if c.log_x {
            let hi = (hi * 1.05).max(lo * 2.0);
            let x = (lo..hi).log_scale().with_key_points(log_ticks(lo, hi));
            let mut chart = builder.build_cartesian_2d(x, 0.0..c.y_max).map_err(err)?;
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(c.x_desc).x_label_formatter(&tick_label).y_desc(c.y_desc).draw().map_err(err)?;
            draw_lines(&mut chart, lines, c.legend.clone())?;
        } else {
            let mut chart = builder.build_cartesian_2d(0.0..hi, 0.0..c.y_max).map_err(err)?;
            chart.configure_mesh().x_desc(c.x_desc).y_desc(c.y_desc).draw().map_err(err)?;
            draw_lines(&mut chart, lines, c.legend.clone())?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn draw_lines<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    lines: Vec<Line>,
    legend: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    for l in lines {
        let style = l.colour.stroke_width(2);
        let drawn = if l.dashed {
            chart.draw_series(DashedLineSeries::new(l.points, 8, 5, style))
        } else {
            chart.draw_series(LineSeries::new(l.points, style))
        };
        let (c, dashed) = (l.colour, l.dashed);
        drawn.map_err(err)?.label(l.label).legend(move |(x, y)| {
            // Two strokes always (the same one twice for a solid line), so both kinds are one
            // type of element.
            let s = legend_strokes(dashed);
            let (first, last) = (s[0], s[s.len() - 1]);
            EmptyElement::at((x, y))
                + PathElement::new(first, c.stroke_width(2))
                + PathElement::new(last, c.stroke_width(2))
        });
    }
    chart
        .configure_series_labels()
        .position(legend)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// The fraction of samples at or below each value: (value, fraction) steps, sorted.
pub fn cdf(values: impl IntoIterator<Item = f64>) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter().enumerate().map(|(i, x)| (*x, (i + 1) as f64 / n)).collect()
}

/// Points drawn per line at most.
pub const POINTS: usize = 1000;

/// At most [`POINTS`] of a line's points, evenly spaced, the last always kept: an SVG of every
/// sample of thousands of sockets would be megabytes for no visible difference.
pub fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let step = points.len().div_ceil(POINTS).max(1);
    let last = points.len().saturating_sub(1);
    points.into_iter().enumerate().filter(|(i, _)| i % step == 0 || *i == last).map(|p| p.1).collect()
}

/// The least room between two ticks of a log axis, as a share of its width: plotters' own key
/// points put 800, 900 and 1000 side by side ("800.0900.01000.0"), and gave a range inside one
/// decade (the lossy path's 100 to 150 ms) a single tick.
const TICK_ROOM: f64 = 0.07;

/// Ticks for a log axis from `lo` to `hi` (both above 0): the round values 1, 2 and 5 times a
/// power of ten inside, thinned so that none crowds the one before; where that leaves fewer than
/// three (a range within a decade), evenly spaced round values instead.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    if !(lo > 0.0 && hi.is_finite()) {
        return Vec::new();
    }
    let width = (hi / lo).log10().max(f64::MIN_POSITIVE);
    let mut ticks: Vec<f64> = Vec::new();
    for k in lo.log10().floor() as i32..=hi.log10().ceil() as i32 {
        for m in [1.0, 2.0, 5.0] {
            let v = round(m * 10f64.powi(k));
            let roomy = ticks.last().is_none_or(|&t| (v / t).log10() / width >= TICK_ROOM);
            if (lo..=hi).contains(&v) && roomy {
                ticks.push(v);
            }
        }
    }
    if ticks.len() >= 3 {
        return ticks;
    }
    // A narrow range: the widest round step (5, 2 or 1 times a power of ten) that still gives
    // four ticks.
    let linear = |step: f64| -> Vec<f64> {
        let first = (lo / step).ceil() as i64;
        (first..).map(|i| round(i as f64 * step)).take_while(|v| *v <= hi).take(12).collect()
    };
    let top = (hi - lo).log10().floor() as i32;
    (top - 2..=top)
        .rev()
        .flat_map(|k| [5.0, 2.0, 1.0].map(|m| m * 10f64.powi(k)))
        .map(linear)
        .find(|t| t.len() >= 4)
        .unwrap_or_else(|| linear(10f64.powi(top - 2)))
}

/// A tick's value without float noise (0.30000000000000004), to six significant digits.
fn round(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    let scale = 10f64.powi(5 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

/// A tick's label: "800", "0.05" (never "800.0").
pub fn tick_label(v: &f64) -> String {
    format!("{}", round(*v))
}

/// A legend's sample of a line: one stroke, or two with a gap for a dashed line (drawn solid,
/// it read as the solid side's).
pub fn legend_strokes(dashed: bool) -> Vec<[(i32, i32); 2]> {
    if dashed { vec![[(0, 0), (8, 0)], [(13, 0), (21, 0)]] } else { vec![[(0, 0), (21, 0)]] }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks never run together and a narrow range gets several (the plots once had "800.0900.0
    /// 1000.0" on bufferbloat's CDF, and one tick on the lossy path's).
    #[test]
    fn log_ticks_are_round_roomy_and_never_alone() {
        for (lo, hi) in [
            (40.0, 1200.0),
            (90.0, 160.0),
            (90.2, 180.4),
            (0.02, 0.5),
            (1.0, 1e6),
            (36.0, 1365.0),
            (99.0, 101.0),
        ] {
            let t = log_ticks(lo, hi);
            assert!(t.len() >= 3, "{lo}..{hi}: {t:?}");
            assert!(t.iter().all(|v| (lo..=hi).contains(v)), "{lo}..{hi}: {t:?}");
            let width = (hi / lo).log10();
            for w in t.windows(2) {
                assert!(w[0] < w[1] && (w[1] / w[0]).log10() / width >= 0.05, "{lo}..{hi}: {t:?}");
            }
        }
        assert_eq!(log_ticks(40.0, 1200.0), [50.0, 100.0, 200.0, 500.0, 1000.0]);
        assert_eq!(log_ticks(90.0, 160.0), [100.0, 120.0, 140.0, 160.0]);
        assert_eq!(tick_label(&0.30000000000000004), "0.3");
        assert_eq!(tick_label(&800.0), "800");
        assert!(log_ticks(0.0, 10.0).is_empty());
    }

    #[test]
    fn cdf_steps() {
        let c = cdf([3.0, 1.0, 2.0, 2.0]);
        assert_eq!(c, [(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]);
        assert!(cdf([]).is_empty());
    }

    #[test]
    fn thinning_keeps_the_ends_and_at_most_the_limit() {
        let pts: Vec<(f64, f64)> = (1..=4500).map(|i| (i as f64, i as f64 / 4500.0)).collect();
        let t = thin(pts.clone());
        assert!(t.len() <= POINTS + 1 && t.len() > POINTS / 2, "{}", t.len());
        assert_eq!((t[0], *t.last().unwrap()), (pts[0], pts[4499]));
        assert_eq!(thin(pts[..10].to_vec()), pts[..10]);
        assert!(thin(Vec::new()).is_empty());
    }

    /// A dashed line's legend sample is dashed too: two strokes with a gap.
    #[test]
    fn dashed_legends_have_a_gap() {
        assert_eq!(legend_strokes(true).len(), 2);
        assert!(legend_strokes(true)[0][1].0 < legend_strokes(true)[1][0].0);
        assert_eq!(legend_strokes(false).len(), 1);
        let line = |dashed| Line {
            label: "x".into(),
            colour: colour("bbr"),
            dashed,
            points: vec![(1.0, 0.1), (100.0, 0.9)],
        };
        let chart = Chart {
            title: "t",
            x_desc: "x",
            y_desc: "y",
            log_x: true,
            y_max: 1.0,
            legend: SeriesLabelPosition::LowerRight,
        };
        let (solid, dashed) =
            (draw(&chart, vec![line(false)]).unwrap(), draw(&chart, vec![line(true)]).unwrap());
        assert!(dashed.matches("<polyline").count() > solid.matches("<polyline").count(), "{dashed}");
    }
}
