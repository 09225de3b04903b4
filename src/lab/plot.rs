//! The lab's pictures, like the guides' figures: RTT over time per flow, and the RTT CDF per
//! congestion control. SVG rendered to a string (pure); [`write`] puts them in a directory.

use super::scenario::{FlowResult, Report};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const SIZE: (u32, u32) = (900, 480);

/// A colour per congestion control, the same in every plot (`compare`'s too).
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

/// The y range for RTTs in ms: from 0 to a little above the largest, at least 1 ms.
fn rtt_max(flows: &[FlowResult]) -> f64 {
    flows.iter().flat_map(|f| f.series.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.05
}

fn title(r: &Report, what: &str) -> String {
    format!(
        "{}: {what} ({:.0} Mbit/s, {} ms, {}-packet buffer)",
        r.scenario,
        r.plan.rate_bits_per_sec as f64 / 1e6,
        r.plan.rtt.as_millis(),
        r.plan.buffer_packets
    )
}

/// One line per flow in its cc's colour, from `points`, and the legend at `legend`.
fn flow_lines<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    flows: &[FlowResult],
    points: impl Fn(&FlowResult) -> Vec<(f64, f64)>,
    legend: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    for f in flows {
        let c = colour(&f.cc);
        chart
            .draw_series(LineSeries::new(points(f), c.stroke_width(2)))
            .map_err(err)?
            .label(f.cc.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(legend)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// RTT (bbrtop's srtt samples) against time since each flow started, one line per flow.
pub fn rtt_over_time(r: &Report) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let t_max = r.flows.iter().flat_map(|f| f.series.iter().map(|p| p.0)).fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(title(r, "RTT over time"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..t_max, 0.0..rtt_max(&r.flows))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time since the flow started (s)")
            .y_desc("RTT (ms)")
            .draw()
            .map_err(err)?;
        flow_lines(&mut chart, &r.flows, |f| f.series.clone(), SeriesLabelPosition::MiddleRight)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The fraction of samples at or below each value: (value, fraction) steps, sorted.
pub fn cdf(values: impl IntoIterator<Item = f64>) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter().enumerate().map(|(i, ms)| (*ms, (i + 1) as f64 / n)).collect()
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

/// The RTT CDF per congestion control, on a log RTT axis (BBR's and CUBIC's differ 25x).
pub fn rtt_cdf(r: &Report) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let lo =
            r.flows.iter().flat_map(|f| f.series.iter().map(|p| p.1)).filter(|ms| *ms > 0.0).reduce(f64::min);
        // A log axis needs a positive range; with no samples, 1 to 2 ms.
        let lo = lo.map_or(1.0, |ms| ms * 0.9);
        let hi = rtt_max(&r.flows).max(lo * 2.0);
        let mut chart = ChartBuilder::on(&root)
            .caption(title(r, "RTT CDF"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((lo..hi).log_scale().with_key_points(log_ticks(lo, hi)), 0.0..1.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("RTT (ms, log scale)")
            .x_label_formatter(&tick_label)
            .y_desc("fraction of samples")
            .draw()
            .map_err(err)?;
        flow_lines(
            &mut chart,
            &r.flows,
            |f| cdf(f.series.iter().map(|p| p.1)),
            SeriesLabelPosition::LowerRight,
        )?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Writes `<scenario>-rtt.svg` and `<scenario>-cdf.svg` into `dir` (created if missing).
pub fn write(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--plot {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for (name, svg) in [("rtt", rtt_over_time(r)?), ("cdf", rtt_cdf(r)?)] {
        let p = dir.join(format!("{}-{name}.svg", r.scenario));
        std::fs::write(&p, svg).map_err(|e| format!("--plot {}: {e}", p.display()))?;
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::scenario::Scenario;
    use std::time::Duration;

    fn report() -> Report {
        let series = |base: f64| (0..100).map(|i| (i as f64 * 0.1, base + (i % 10) as f64)).collect();
        let flows = [("cubic", 1000.0), ("bbr", 40.0)]
            .into_iter()
            .map(|(cc, base)| {
                let s: Vec<(f64, f64)> = series(base);
                FlowResult::from_series(cc, s, 1_000_000, Duration::from_secs(10), 0)
            })
            .collect();
        let s = Scenario::Bufferbloat;
        Report::new(s, s.plan(), "test".into(), Duration::from_secs(10), flows)
    }

    /// Ticks never run together and a narrow range gets several (main's plots had "800.0900.0
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
    fn plots_are_svg_with_a_line_per_flow() {
        let r = report();
        let cdf_svg = rtt_cdf(&r).unwrap();
        for label in ["50", "100", "200", "500", "1000"] {
            assert!(cdf_svg.lines().any(|l| l.trim() == label), "the x axis labels {label}");
        }
        assert!(!cdf_svg.contains("1000.0"), "labels without a trailing .0");
        for svg in [rtt_over_time(&r).unwrap(), rtt_cdf(&r).unwrap()] {
            assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
            let text = |t: &str| svg.lines().any(|l| l.trim() == t);
            assert!(text("bbr") && text("cubic"), "a legend entry per cc");
            // One polyline per flow, in its cc's colour.
            assert!(svg.contains("#1F77B4") && svg.contains("#D62728"));
        }
        let dir = tempfile::tempdir().unwrap();
        let files = write(&r, &dir.path().join("plots")).unwrap();
        assert_eq!(files.len(), 2);
        assert!(files[0].ends_with("bufferbloat-rtt.svg"));
        assert!(std::fs::read_to_string(&files[1]).unwrap().contains("RTT CDF"));
    }

    #[test]
    fn a_run_with_no_samples_still_plots() {
        let mut r = report();
        for f in &mut r.flows {
            f.series.clear();
        }
        assert!(rtt_over_time(&r).is_ok());
        assert!(rtt_cdf(&r).is_ok());
    }
}
