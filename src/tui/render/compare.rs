//! BBR vs CUBIC, live: the guides' comparison table, per congestion control.

use crate::engine::snapshot::Snapshot;
use crate::output::units::{bitrate, micros, opt};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};

pub fn draw(f: &mut Frame, area: Rect, snap: &Snapshot) {
    let block = Block::default().borders(Borders::TOP).title(" per congestion control ");
    if snap.by_cc.is_empty() {
        f.render_widget(Paragraph::new("No sockets yet.").block(block), area);
        return;
    }
    let header = Row::new([
        "CC", "SOCKETS", "SRTT p50", "p95", "p99", "INFL p50", "p95", "INFLATED", "FIRING", "DELIVERY",
        "GOODPUT", "RETR/s",
    ])
    .style(Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD));
    let rows = snap.by_cc.iter().map(|a| {
        Row::new([
            a.cc.clone(),
            a.sockets.to_string(),
            opt(a.srtt_p50_us, micros),
            opt(a.srtt_p95_us, micros),
            opt(a.srtt_p99_us, micros),
            opt(a.inflation_p50, |x| format!("{x:.2}x")),
            opt(a.inflation_p95, |x| format!("{x:.2}x")),
            a.inflated.to_string(),
            a.firing.to_string(),
            bitrate(a.delivery_rate_bytes_per_sec),
            bitrate(a.goodput_bytes_per_sec),
            format!("{:.1}", a.retrans_segs_per_sec),
        ])
    });
    let widths = [6, 8, 9, 9, 9, 9, 7, 9, 7, 11, 11, 7].map(Constraint::Length);
    f.render_widget(Table::new(rows, widths).header(header).block(block), area);
}
