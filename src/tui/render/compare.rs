//! BBR vs CUBIC, live: the guides' comparison table, per congestion control.

use crate::engine::snapshot::Snapshot;
use crate::units::{bitrate, micros, opt};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::{Block, Borders, Paragraph};

pub fn draw(f: &mut Frame, area: Rect, snap: &Snapshot) {
    let block = Block::default().borders(Borders::TOP).title(" per congestion control ");
    if snap.by_cc.is_empty() {
        f.render_widget(Paragraph::new("No sockets yet.").block(block), area);
        return;
    }
    let headers = [
        "CC", "SOCKETS", "SRTT p50", "p95", "p99", "INFL p50", "p95", "INFLATED", "FIRING", "DELIVERY",
        "GOODPUT", "RETR/s",
    ];
    let widths = [6, 7, 8, 8, 8, 8, 7, 8, 6, 11, 11, 7];
    // The guides' table first: count, srtt percentiles, inflation, delivery, retransmits.
    let priority = [0, 1, 2, 3, 4, 5, 6, 9, 11, 8, 7, 10];
    let rows = snap.by_cc.iter().map(|a| {
        let cells = vec![
            a.cc.clone(),
            a.sockets.to_string(),
            opt(a.srtt_p50_us, micros),
            opt(a.srtt_p95_us, micros),
            opt(a.srtt_p99_us, micros),
            opt(a.inflation_p50, super::ratio),
            opt(a.inflation_p95, super::ratio),
            a.inflated.to_string(),
            a.firing.to_string(),
            bitrate(a.delivery_rate_bytes_per_sec),
            bitrate(a.goodput_bytes_per_sec),
            format!("{:.1}", a.retrans_segs_per_sec),
        ];
        (cells, Style::new())
    });
    let inner = block.inner(area);
    f.render_widget(block, area);
    f.render_widget(super::fitted_table(inner, &headers, &widths, &priority, rows), inner);
}
