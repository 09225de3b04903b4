//! The lab's pictures, like the guides' figures: RTT over time per flow, and the RTT CDF per
//! congestion control, drawn with [`crate::plot`]; [`write`] puts them in a directory.

use super::scenario::{FlowResult, Report};
use crate::plot::{self, Chart, Line, cdf, colour};
use plotters::prelude::SeriesLabelPosition;
use std::path::{Path, PathBuf};

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

/// One line per flow in its cc's colour, from `points`.
fn flow_lines(flows: &[FlowResult], points: impl Fn(&FlowResult) -> Vec<(f64, f64)>) -> Vec<Line> {
    flows
        .iter()
        .map(|f| Line { label: f.cc.clone(), colour: colour(&f.cc), dashed: false, points: points(f) })
        .collect()
}

/// RTT (bbrtop's srtt samples) against time since each flow started, one line per flow.
pub fn rtt_over_time(r: &Report) -> Result<String, String> {
    let title = title(r, "RTT over time");
    let chart = Chart {
        title: &title,
        x_desc: "time since the flow started (s)",
        y_desc: "RTT (ms)",
        log_x: false,
        y_max: rtt_max(&r.flows),
        legend: SeriesLabelPosition::MiddleRight,
    };
    plot::draw(&chart, flow_lines(&r.flows, |f| f.series.clone()))
}

/// The RTT CDF per congestion control, on a log RTT axis (BBR's and CUBIC's differ 25x).
pub fn rtt_cdf(r: &Report) -> Result<String, String> {
    let title = title(r, "RTT CDF");
    let chart = Chart {
        title: &title,
        x_desc: "RTT (ms, log scale)",
        y_desc: "fraction of samples",
        log_x: true,
        y_max: 1.0,
        legend: SeriesLabelPosition::LowerRight,
    };
    plot::draw(&chart, flow_lines(&r.flows, |f| cdf(f.series.iter().map(|p| p.1))))
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
