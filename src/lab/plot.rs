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
        let mut chart = ChartBuilder::on(&root)
            .caption(title(r, "RTT CDF"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((lo..rtt_max(&r.flows).max(lo * 2.0)).log_scale(), 0.0..1.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("RTT (ms, log scale)")
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

    #[test]
    fn cdf_steps() {
        let c = cdf([3.0, 1.0, 2.0, 2.0]);
        assert_eq!(c, [(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]);
        assert!(cdf([]).is_empty());
    }

    #[test]
    fn plots_are_svg_with_a_line_per_flow() {
        let r = report();
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
