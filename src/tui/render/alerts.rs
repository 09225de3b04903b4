//! Alerts: firing first, then recently resolved, with how long each lasted.

use super::{ago, fitted_table};
use bbrtop_core::snapshot::{AlertStatus, Snapshot};
use bbrtop_core::units::micros;
use bbrtop_core::units::ratio;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders, Paragraph};
use std::time::SystemTime;

fn secs(from: SystemTime, to: SystemTime) -> f64 {
    to.duration_since(from).map_or(0.0, |d| d.as_secs_f64())
}

pub fn draw(f: &mut Frame, area: Rect, snap: &Snapshot) {
    let r = &snap.rule;
    let title = format!(
        " TcpRttInflation: srtt >= {}x baseline and >= {} above it, for {} ",
        r.ratio,
        micros(r.floor.as_micros() as u32),
        ago(r.hold.as_secs_f64())
    );
    let block = Block::default().borders(Borders::TOP).title(title);
    if snap.alerts.is_empty() {
        f.render_widget(
            Paragraph::new("No alerts: no socket has stayed inflated for the hold time.").block(block),
            area,
        );
        return;
    }
    let headers = ["STATUS", "CC", "LOCAL", "PEER", "SRTT", "BASELINE", "RATIO", "PEAK", "FOR"];
    let widths = [9, 6, 21, 21, 9, 9, 7, 7, 7];
    // At 80 columns the peer and the baseline go first.
    let priority = [0, 1, 2, 4, 6, 8, 7, 5, 3];
    let rows = snap.alerts.iter().map(|a| {
        let (status, style, lasted) = match a.status {
            AlertStatus::Firing => (
                "FIRING",
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
                secs(a.since, snap.taken_at),
            ),
            AlertStatus::Resolved => (
                "resolved",
                Style::new().fg(Color::DarkGray),
                secs(a.since, a.resolved_at.unwrap_or(snap.taken_at)),
            ),
        };
        let cells = vec![
            status.to_string(),
            a.cc.clone(),
            a.local.to_string(),
            a.peer.to_string(),
            micros(a.srtt_us),
            micros(a.baseline_rtt_us),
            ratio(a.ratio),
            ratio(a.peak_ratio),
            ago(lasted),
        ];
        (cells, style)
    });
    let inner = block.inner(area);
    f.render_widget(block, area);
    f.render_widget(fitted_table(inner, &headers, &widths, &priority, rows), inner);
}
