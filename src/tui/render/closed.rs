//! Closed flows, from eBPF close records: the last ones, newest first (those the filter matches:
//! see `bbrtop_core::filter::eval` for what a closed flow is known by), and per-cc totals.

use bbrtop_core::model::Count;
use bbrtop_core::model::derive::rtt_sample;
use bbrtop_core::units::{bitrate, micros, opt, percent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::{Block, Borders, Paragraph};

pub fn draw(f: &mut Frame, area: Rect, v: &super::Screen) {
    let snap = v.snap;
    let bpf = snap.collectors.iter().find(|c| c.name == "bpf");
    let off = match bpf {
        None => Some("eBPF off".to_string()),
        Some(c) if c.programs_attached.unwrap_or(0) == 0 => {
            let why = c.health.reason().map_or("no programs attached", |r| r.detail.as_str());
            Some(format!("eBPF off: {why}"))
        }
        _ => None,
    };
    let totals: Vec<String> = snap.closed_by_cc.iter().map(|a| format!("{} {}", a.cc, a.count)).collect();
    let title = if totals.is_empty() {
        " closed flows in this namespace ".to_string()
    } else {
        format!(
            " closed flows in this namespace, newest first (all namespaces since start: {}) ",
            totals.join(", ")
        )
    };
    let block = Block::default().borders(Borders::TOP).title(title);
    if let Some(why) = off {
        f.render_widget(
            Paragraph::new(format!("{why}. Closed flows need the eBPF collector.")).block(block),
            area,
        );
        return;
    }
    // eBPF sees every namespace's sockets close; show the watched one's.
    let ours = |c: &&bbrtop_core::model::ClosedFlow| v.sys.netns_inode.is_none_or(|i| c.netns == i);
    let shown =
        |c: &&bbrtop_core::model::ClosedFlow| ours(c) && (!v.app.filtered() || v.app.filter.matches(*c));
    if !snap.closed.iter().any(|c| shown(&c)) {
        let msg = if snap.closed.iter().any(|c| ours(&c)) {
            super::no_match("closed flow")
        } else {
            "No flow has closed since bbrtop started.".to_string()
        };
        f.render_widget(Paragraph::new(msg).block(block), area);
        return;
    }
    let headers = [
        "CC",
        "LOCAL",
        "PEER",
        "LIFETIME",
        "ACKED",
        "RETR",
        "RETX%",
        "SRTT",
        "MIN RTT",
        "DELIVERY",
        "PEAK INFL",
    ];
    let widths = [6, 21, 21, 9, 11, 5, 6, 9, 9, 11, 9];
    let priority = [0, 1, 3, 7, 10, 9, 5, 6, 8, 4, 2];
    // Newest first, as the snapshot keeps them.
    let rows = snap.closed.iter().filter(shown).map(|c| {
        let cells = vec![
            c.cc.clone(),
            c.local.to_string(),
            c.peer.to_string(),
            opt(c.lifetime_seconds, |s| format!("{s:.1}s")),
            c.counts[Count::BytesAcked].to_string(),
            c.counts[Count::RetransSegs].to_string(),
            opt(c.counts.retrans_ratio(), percent),
            // 0: closed before its first RTT sample (a listener).
            opt(rtt_sample(c.srtt_us), micros),
            opt(rtt_sample(c.min_rtt_us), micros),
            opt(c.delivery_rate_bytes_per_sec, |d| bitrate(d as f64)),
            bbrtop_core::units::ratio(c.peak_inflation_ratio),
        ];
        (cells, Style::new())
    });
    let inner = block.inner(area);
    f.render_widget(block, area);
    f.render_widget(super::fitted_table(inner, &headers, &widths, &priority, rows), inner);
}
