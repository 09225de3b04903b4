//! Alerts: firing first, then recently resolved, with how long each lasted. Under a filter, those
//! of the sockets it matches: a socket still in the snapshot is matched as itself, and an alert
//! whose socket has gone by what it carries (cc, ends, its last srtt and ratio).

use super::{Screen, ago, fitted_table};
use bbrtop_core::filter::Expr;
use bbrtop_core::snapshot::{AlertStatus, AlertView, Snapshot};
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

/// The alerts `filter` matches, in the snapshot's order. The sockets are looked up for the
/// alerts only (a few): the filter is evaluated once per alert.
fn matching<'a>(snap: &'a Snapshot, filter: &Expr) -> Vec<&'a AlertView> {
    snap.alerts
        .iter()
        .filter(|a| match snap.sockets.get(a.cookie) {
            Some(s) => filter.matches(&s),
            None => filter.matches(*a),
        })
        .collect()
}

pub fn draw(f: &mut Frame, area: Rect, v: &Screen) {
    let snap = v.snap;
    let r = &snap.rule;
    let title = format!(
        " TcpRttInflation: srtt >= {}x baseline and >= {} above it, for {} ",
        r.ratio,
        micros(r.floor.as_micros() as u32),
        ago(r.hold.as_secs_f64())
    );
    let block = Block::default().borders(Borders::TOP).title(title);
    let alerts: Vec<&AlertView> =
        if v.app.filtered() { matching(snap, &v.app.filter) } else { snap.alerts.iter().collect() };
    if alerts.is_empty() {
        let msg = if snap.alerts.is_empty() {
            "No alerts: no socket has stayed inflated for the hold time.".to_string()
        } else {
            super::no_match("alert")
        };
        f.render_widget(Paragraph::new(msg).block(block), area);
        return;
    }
    let headers = ["STATUS", "CC", "LOCAL", "PEER", "SRTT", "BASELINE", "RATIO", "PEAK", "FOR"];
    let widths = [9, 6, 21, 21, 9, 9, 7, 7, 7];
    // At 80 columns the peer and the baseline go first.
    let priority = [0, 1, 2, 4, 6, 8, 7, 5, 3];
    let rows = alerts.iter().map(|a| {
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
