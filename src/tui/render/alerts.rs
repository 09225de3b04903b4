//! Alerts: firing first, then recently resolved, with how long each lasted.

use super::ago;
use crate::engine::snapshot::{AlertStatus, Snapshot};
use crate::output::units::micros;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
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
    let header = Row::new(["STATUS", "CC", "LOCAL", "PEER", "SRTT", "BASELINE", "RATIO", "PEAK", "FOR"])
        .style(Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD));
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
        Row::new([
            status.to_string(),
            a.cc.clone(),
            a.local.to_string(),
            a.peer.to_string(),
            micros(a.srtt_us),
            micros(a.baseline_rtt_us),
            format!("{:.2}x", a.ratio),
            format!("{:.2}x", a.peak_ratio),
            ago(lasted),
        ])
        .style(style)
    });
    let widths = [9, 6, 21, 21, 9, 9, 7, 7, 7].map(Constraint::Length);
    f.render_widget(Table::new(rows, widths).header(header).block(block), area);
}
