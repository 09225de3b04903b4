//! Where the sockets live: one row per place (pod, namespace name or cgroup; "node" for sockets
//! with no origin) and congestion control, with the per-cc figures of the BBR-vs-CUBIC view, over
//! the sockets the filter matches.

use super::Screen;
use bbrtop_core::snapshot::SocketView;
use bbrtop_core::snapshot::aggregate;
use bbrtop_core::units::{bitrate, micros, opt};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::{Block, Borders, Paragraph};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The place a socket is counted under.
fn place(s: &SocketView) -> Cow<'_, str> {
    s.record.origin.as_deref().and_then(|o| o.label()).unwrap_or(Cow::Borrowed("node"))
}

pub fn draw(f: &mut Frame, area: Rect, v: &Screen) {
    let snap = v.snap;
    let block = Block::default().borders(Borders::TOP).title(" per place and congestion control ");
    if v.rows.is_empty() {
        f.render_widget(Paragraph::new(super::no_rows(snap)).block(block), area);
        return;
    }
    // The table's rows (every socket, or the filter's), each derived for this frame: this view
    // needs their srtt percentiles per place, which are not kept between frames as the rows are.
    // It is not the view the TUI opens on, and costs what it did only while it is shown.
    let views = v.rows.views();
    let mut places: BTreeMap<Cow<str>, Vec<&SocketView>> = BTreeMap::new();
    for s in &views {
        places.entry(place(s)).or_default().push(s);
    }
    let headers = ["WHERE", "CC", "SOCKETS", "SRTT p50", "p95", "INFLATED", "FIRING", "DELIV p50", "RETR/s"];
    let widths = [28, 6, 7, 8, 8, 8, 6, 11, 7];
    let priority = [0, 1, 2, 3, 4, 5, 7, 8, 6];
    let rows = places.iter().flat_map(|(name, socks)| {
        aggregate::by_cc(socks.iter().copied(), snap.rule.loopback).into_iter().map(move |a| {
            let cells = vec![
                name.to_string(),
                a.cc.clone(),
                a.sockets.to_string(),
                opt(a.srtt_p50_us, micros),
                opt(a.srtt_p95_us, micros),
                a.inflated.to_string(),
                a.firing.to_string(),
                opt(a.delivery_rate_p50_bytes_per_sec, bitrate),
                format!("{:.1}", a.retrans_segs_per_sec),
            ];
            (cells, Style::new())
        })
    });
    let inner = block.inner(area);
    f.render_widget(block, area);
    f.render_widget(super::fitted_table(inner, &headers, &widths, &priority, rows), inner);
}
