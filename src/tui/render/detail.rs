//! The detail pane of the selected socket: charts over its history, and a phase ribbon.

use super::Screen;
use super::table::cell;
use bbrtop_core::model::Phase;
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::SocketView;
use bbrtop_core::snapshot::history::Sample;
use bbrtop_core::units::{bitrate, micros};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph};

fn series(samples: &[Sample], f: impl Fn(&Sample) -> f64) -> Vec<(f64, f64)> {
    samples.iter().enumerate().map(|(i, s)| (i as f64, f(s))).collect()
}

/// The top of a chart's y axis: the largest value, unless a few samples tower over the rest (BBR's
/// bandwidth estimate in its first round trips on a fast link), then twice the 90th percentile so
/// the rest stays readable; the towering samples run off the top.
fn top<'a>(points: impl Iterator<Item = &'a (f64, f64)>) -> f64 {
    let mut v: Vec<f64> = points.map(|p| p.1).filter(|y| y.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let Some(&max) = v.last() else { return 0.0 };
    let p90 = v[(v.len() - 1) * 9 / 10];
    if p90 > 0.0 { max.min(2.0 * p90) } else { max }
}

/// A named, coloured line of (x, y) points.
type Series<'a> = (&'a str, Color, &'a [(f64, f64)]);

fn chart<'a>(title: String, sets: Vec<Series<'a>>, n: usize, ymax: f64, ylabel: String) -> Chart<'a> {
    let data = sets
        .into_iter()
        .map(|(name, color, pts)| {
            Dataset::default()
                .name(name)
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(color))
                .data(pts)
        })
        .collect();
    Chart::new(data)
        .block(Block::default().borders(Borders::ALL).title(title))
        .x_axis(Axis::default().bounds([0.0, n.max(2) as f64 - 1.0]))
        .y_axis(
            Axis::default()
                .bounds([0.0, ymax.max(1e-9) * 1.1])
                .labels(vec![Line::from("0"), Line::from(ylabel)]),
        )
}

fn phase_color(p: Option<Phase>) -> Color {
    match p {
        Some(Phase::Startup) => Color::Magenta,
        Some(Phase::Drain) => Color::Blue,
        Some(Phase::ProbeBw(_)) => Color::Green,
        Some(Phase::ProbeRtt) => Color::Yellow,
        None => Color::DarkGray,
    }
}

/// The selected socket's values the table may have had no room for.
fn summary_line(s: &SocketView, v: &Screen) -> String {
    use bbrtop_core::columns::{CWND, GAINS, LIMIT, PACING, PROCESS, RETRANS};
    let d = &s.derived;
    let mut parts = vec![
        format!("process {}", cell(&PROCESS, s, v)),
        s.record.state.name().to_string(),
        format!("pacing {}", cell(&PACING, s, v)),
        format!("cwnd {}", cell(&CWND, s, v)),
        format!("gains {}", cell(&GAINS, s, v)),
        format!("retrans {}", cell(&RETRANS, s, v)),
        format!("limited {}", cell(&LIMIT, s, v)),
    ];
    if let Some(q) = d.queue_delay_us {
        parts.push(format!("queue +{}", micros(q)));
    }
    // Every ACK's srtt since the last poll (eBPF), where tcp_info shows one, and the smallest
    // prompt RTT sample, which the alert judges ("20.4ms+": none was lower).
    if let Some(w) = s.record.kernel_rtt
        && let (Some(lo), Some(hi)) = (w.min_srtt_us, w.max_srtt_us)
    {
        let mut acks = format!("acks {} srtt {}..{}", w.samples, micros(lo), micros(hi));
        if let Some(p) = w.prompt_min_us {
            acks.push_str(&format!(" prompt rtt {}+", micros(p)));
        }
        parts.push(acks);
    }
    if let Some(t) = d.inflated_for_seconds {
        parts.push(format!("inflated {}", super::ago(t)));
    }
    parts.extend(ecn_part(s));
    parts.push(format!("seen {}", super::ago(d.seen_for_seconds)));
    parts.join("  ")
}

/// "ecn+seen ce 90 (9.0%)", with DCTCP's alpha for dctcp sockets; nothing without ECN.
fn ecn_part(s: &SocketView) -> Option<String> {
    let e = s.derived.ecn?;
    let how = match (e.negotiated, e.seen) {
        (true, true) => "ecn+seen",
        (true, false) => "ecn",
        (false, _) => "no ecn",
    };
    let mut out = format!("{how} ce {}", e.delivered_ce_segs);
    if let Some(f) = e.ce_fraction {
        out.push_str(&format!(" ({:.1}%)", f * 100.0));
    }
    if let Some(r) = e.received_ce_segs.filter(|&n| n > 0) {
        out.push_str(&format!(" rcvd ce {r}"));
    }
    if let Some(d) = s.record.dctcp.filter(|d| d.enabled) {
        out.push_str(&format!(" dctcp alpha {:.2}", f64::from(d.alpha) / 1024.0));
    }
    Some(out)
}

/// The pane's title: the socket's addresses, cc and cookie, and its phase with where it came from.
fn title(s: &SocketView) -> String {
    let r = &s.record;
    let phase = s.derived.phase.map_or(String::new(), |p| {
        let source = s.derived.phase_source.map_or("inferred", |s| s.label());
        format!("{} ({source})", p.label())
    });
    format!(" {} → {}  {}  cookie {}  {phase} ", r.local, r.peer, r.cc_name(), r.cookie)
}

/// The selected socket: the title, the summary, three charts side by side, and the phase ribbon.
pub fn draw(f: &mut Frame, area: Rect, v: &Screen) {
    let rows = v.rows;
    let Some(selected) = rows.get(v.app.selected.min(rows.len().saturating_sub(1))) else {
        f.render_widget(
            Paragraph::new("no socket selected").block(Block::default().borders(Borders::ALL)),
            area,
        );
        return;
    };
    let s = &selected;
    let samples: Vec<Sample> = s.history.iter().copied().collect();
    let outer = Block::default().borders(Borders::TOP).title(title(s));
    let inner = outer.inner(area);
    f.render_widget(outer, area);
    // The summary wraps onto a second line when the pane is narrow (charts give up that row).
    let text = summary_line(s, v);
    let lines = if text.chars().count() > inner.width as usize { 2 } else { 1 };
    let [summary, charts, ribbon] =
        Layout::vertical([Constraint::Length(lines), Constraint::Min(4), Constraint::Length(2)]).areas(inner);
    f.render_widget(Paragraph::new(text).wrap(ratatui::widgets::Wrap { trim: true }), summary);
    let [a, b, c] = Layout::horizontal([Constraint::Ratio(1, 3); 3]).areas(charts);
    // Only BBR has a bandwidth estimate and phases.
    let is_bbr = s.record.bbr.is_some();
    draw_rtt_chart(f, a, &samples, &v.snap.rule);
    draw_rate_chart(f, b, &samples, is_bbr);
    draw_cwnd_chart(f, c, &samples);
    draw_phase_ribbon(f, ribbon, &samples, is_bbr, s.record.cc_name());
}

fn ms(us: u32) -> f64 {
    us as f64 / 1000.0
}

/// srtt and min RTT, and the alert rule's line: srtt at or above ratio x min RTT, and at least the
/// floor above it.
fn draw_rtt_chart(f: &mut Frame, area: Rect, samples: &[Sample], rule: &RuleConfig) {
    let (ratio, floor_ms) = (rule.ratio, rule.floor.as_secs_f64() * 1e3);
    let thresh_name = format!("{ratio}x");
    let srtt = series(samples, |x| ms(x.srtt_us));
    let minrtt = series(samples, |x| ms(x.min_rtt_us));
    let thresh = series(samples, |x| (ms(x.min_rtt_us) * ratio).max(ms(x.min_rtt_us) + floor_ms));
    let ymax = top(srtt.iter().chain(&thresh));
    let last = samples.last().copied().unwrap_or_default();
    f.render_widget(
        chart(
            format!("srtt {} / min {}", micros(last.srtt_us), micros(last.min_rtt_us)),
            vec![
                ("srtt", Color::Yellow, &srtt),
                ("min rtt", Color::Green, &minrtt),
                (&thresh_name, Color::Red, &thresh),
            ],
            samples.len(),
            ymax,
            format!("{ymax:.1}ms"),
        ),
        area,
    );
}

fn mbit(bytes_per_sec: f32) -> f64 {
    bytes_per_sec as f64 * 8.0 / 1e6
}

/// The delivery rate, and BBR's bandwidth estimate for BBR sockets (other ccs have none).
fn draw_rate_chart(f: &mut Frame, area: Rect, samples: &[Sample], is_bbr: bool) {
    let bw = if is_bbr { series(samples, |x| mbit(x.bbr_bw_bytes_per_sec)) } else { Vec::new() };
    let del = series(samples, |x| mbit(x.delivery_rate_bytes_per_sec));
    let ymax = top(bw.iter().chain(&del));
    let last = samples.last().copied().unwrap_or_default();
    let delivery = bitrate(last.delivery_rate_bytes_per_sec as f64);
    let mut sets = vec![("delivery", Color::Magenta, del.as_slice())];
    let title = if is_bbr {
        sets.insert(0, ("bbr bw", Color::Cyan, bw.as_slice()));
        format!("bw {} / delivery {delivery}", bitrate(last.bbr_bw_bytes_per_sec as f64))
    } else {
        format!("delivery {delivery}")
    };
    f.render_widget(chart(title, sets, samples.len(), ymax, format!("{ymax:.1}Mbit/s")), area);
}

fn draw_cwnd_chart(f: &mut Frame, area: Rect, samples: &[Sample]) {
    let cwnd = series(samples, |x| x.cwnd_segs as f64);
    let ymax = top(cwnd.iter());
    let last = samples.last().copied().unwrap_or_default();
    f.render_widget(
        chart(
            format!("cwnd {}", last.cwnd_segs),
            vec![("cwnd", Color::Blue, &cwnd)],
            samples.len(),
            ymax,
            format!("{ymax:.0}"),
        ),
        area,
    );
}

/// The phase ribbon: one cell per sample, newest on the right, and the time in each phase.
fn draw_phase_ribbon(f: &mut Frame, area: Rect, samples: &[Sample], is_bbr: bool, cc: &str) {
    let n = samples.len();
    let cells: Vec<Span> = samples
        .iter()
        .skip(n.saturating_sub(area.width as usize))
        .map(|x| Span::styled("█", Style::new().fg(phase_color(x.phase))))
        .collect();
    let legend = if is_bbr {
        format!("phases over {n} polls: {}", phase_shares(samples))
    } else {
        format!("no BBR phases: {cc} is not BBR")
    };
    f.render_widget(Paragraph::new(vec![Line::from(cells), Line::from(legend)]), area);
}

/// Each phase's share of the samples, in the order the phases first appear.
fn phase_shares(samples: &[Sample]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for x in samples {
        let name = x.phase.map_or("none", |p| p.mode_name());
        match counts.iter_mut().find(|(k, _)| *k == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    let n = samples.len().max(1);
    counts.iter().map(|(k, c)| format!("{k} {}%", c * 100 / n)).collect::<Vec<_>>().join("  ")
}

#[cfg(test)]
mod tests {
    use super::top;

    #[test]
    fn a_startup_spike_does_not_flatten_the_chart() {
        let pts = |ys: &[f64]| ys.iter().enumerate().map(|(i, y)| (i as f64, *y)).collect::<Vec<_>>();
        let mut ys = vec![20.0; 30];
        ys[0] = 4700.0;
        assert_eq!(top(pts(&ys).iter()), 40.0);
        assert_eq!(top(pts(&[1.0, 2.0, 3.0]).iter()), 3.0);
        assert_eq!(top(pts(&[]).iter()), 0.0);
        assert_eq!(top(pts(&[0.0, 0.0, 5.0]).iter()), 5.0, "p90 of zero: the max");
    }
}
