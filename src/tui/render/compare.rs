//! BBR vs CUBIC, live: the guides' comparison table, per congestion control, over the sockets that
//! sent in the last interval, with the rollout's risks (retransmits, spurious ones, timeouts,
//! goodput share) over the last minute, a line saying which sockets the figures leave out, and a
//! verdict in words under it, and the response delivery times per cc and size class since start
//! (eBPF), the guides' p50/p95/p99 per box. Under a filter, the figures are over the sockets it matches, and
//! the last minute's counters, which count every socket (closed ones too), are left out.

use super::Screen;
use bbrtop_core::snapshot::responses::{ResponseRow, SizeClass};
use bbrtop_core::snapshot::totals::cc_response_rows;
use bbrtop_core::snapshot::verdict;
use bbrtop_core::snapshot::{CcAggregate, aggregate};
use bbrtop_core::units::{bitrate, micros, opt, percent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use std::borrow::Cow;

/// The columns from the last minute's counters on: not over the filter's sockets.
const COUNTERS_FROM: usize = 10;

pub fn draw(f: &mut Frame, area: Rect, v: &Screen) {
    let (snap, filtered) = (v.snap, v.app.filtered());
    // The snapshot's own figures, or the filter's sockets' (the table's rows, each derived for
    // this frame: only while this view is shown under a filter).
    let by_cc: Cow<[CcAggregate]> = if filtered {
        Cow::Owned(aggregate::by_cc(v.rows.views().iter(), snap.rule.loopback))
    } else {
        Cow::Borrowed(&snap.by_cc)
    };
    let title = if filtered {
        format!(" per congestion control, filtered: {} of {} sockets ", v.rows.len(), snap.sockets.len())
    } else {
        " per congestion control (rates: last minute) ".to_string()
    };
    let block = Block::default().borders(Borders::TOP).title(title);
    if by_cc.is_empty() {
        f.render_widget(Paragraph::new(super::no_rows(snap)).block(block), area);
        return;
    }
    let headers = [
        "CC",
        "SENDERS",
        "SRTT p50",
        "p95",
        "p99",
        "INFL p50",
        "p95",
        "INFLATED",
        "FIRING",
        "DELIV p50",
        "GOODPUT",
        "SHARE",
        "RETX%",
        "SPUR%",
        "RTO/s",
    ];
    let widths = [6, 7, 8, 8, 8, 8, 7, 8, 6, 11, 11, 5, 6, 5, 5];
    // The guides' table first (count, srtt percentiles), then the rollout's risks, then the rest.
    let priority = [0, 1, 2, 3, 12, 11, 4, 5, 6, 13, 14, 10, 9, 8, 7];
    let priority: Vec<usize> = priority.into_iter().filter(|&i| !filtered || i < COUNTERS_FROM).collect();
    let rows = by_cc.iter().map(|a| {
        let r = a.recent.unwrap_or_default();
        let cells = vec![
            a.cc.clone(),
            a.senders.to_string(),
            opt(a.srtt_p50_us, micros),
            opt(a.srtt_p95_us, micros),
            opt(a.srtt_p99_us, micros),
            opt(a.inflation_p50, bbrtop_core::units::ratio),
            opt(a.inflation_p95, bbrtop_core::units::ratio),
            a.inflated.to_string(),
            a.firing.to_string(),
            // A sender's median, not a sum: each is one socket's sample, taken while it had the
            // path to itself as often as not, so senders sharing a link sum past its rate.
            opt(a.delivery_rate_p50_bytes_per_sec, bitrate),
            opt(a.recent.map(|r| r.goodput_bytes_per_sec), bitrate),
            opt(r.goodput_share, percent),
            opt(r.retrans_ratio, percent),
            opt(r.spurious_share, percent),
            opt(a.recent.map(|r| r.rto_per_sec), |v| format!("{v:.1}")),
        ];
        (cells, Style::new())
    });
    let mut verdicts = verdict::all(&by_cc);
    verdicts.extend(left_out(&by_cc));
    if filtered {
        verdicts.push(
            "filtered: the last minute's goodput, share, RETX%, SPUR% and RTO/s count every socket of \
             each cc, closed ones too, so they are left out (c clears the filter)"
                .to_string(),
        );
    }
    // Response times are kept per cc, peer group and size, not per socket: no filter applies.
    let responses: Vec<ResponseRow> = if filtered {
        Vec::new()
    } else {
        cc_response_rows(&snap.totals).into_iter().filter(|r| r.size != "all").collect()
    };
    let inner = block.inner(area);
    f.render_widget(block, area);
    // The verdict right under the table's rows, wrapped at the screen's width, and the response
    // times under it.
    let width = usize::from(inner.width.max(1));
    let lines: usize = verdicts.iter().map(|v| v.chars().count().div_ceil(width)).sum();
    let [table, _, words, _, times] = Layout::vertical([
        Constraint::Max(by_cc.len() as u16 + 1),
        Constraint::Length(u16::from(lines > 0)),
        Constraint::Length(lines as u16),
        Constraint::Length(u16::from(!responses.is_empty())),
        Constraint::Min(0),
    ])
    .areas(inner);
    f.render_widget(super::fitted_table(table, &headers, &widths, &priority, rows), table);
    f.render_widget(Paragraph::new(verdicts.join("\n")).wrap(Wrap { trim: true }), words);
    if !responses.is_empty() {
        draw_responses(f, times, &responses);
    }
}

/// The response delivery times since start, per cc and size class (eBPF): the guides'
/// p50/p95/p99 per box.
fn draw_responses(f: &mut Frame, area: Rect, rows: &[ResponseRow]) {
    let headers = ["CC", "RESPONSES", "COUNT", "p50", "p95", "p99"];
    let widths = [6, 10, 8, 9, 9, 9];
    let priority = [0, 1, 3, 4, 5, 2];
    let secs = |s: f64| micros((s * 1e6).round().min(f64::from(u32::MAX)) as u32);
    let cells = rows.iter().map(|r| {
        let size = SizeClass::parse(&r.size).map_or_else(|| r.size.clone(), |c| c.title().to_string());
        let cells = vec![
            r.cc.clone(),
            size,
            r.count.to_string(),
            secs(r.p50_seconds),
            secs(r.p95_seconds),
            secs(r.p99_seconds),
        ];
        (cells, Style::new())
    });
    f.render_widget(super::fitted_table(area, &headers, &widths, &priority, cells), area);
}

/// "not counted: bbr 2 receivers, 1 idle; cubic 4 loopback", when any socket is left out of the
/// figures.
fn left_out(by_cc: &[CcAggregate]) -> Option<String> {
    let parts: Vec<String> = by_cc
        .iter()
        .filter_map(|a| {
            let kinds = [(a.receivers, "receiving"), (a.idle, "idle"), (a.loopback, "loopback")];
            let said: Vec<String> =
                kinds.iter().filter(|(n, _)| *n > 0).map(|(n, k)| format!("{n} {k}")).collect();
            (!said.is_empty()).then(|| format!("{} {}", a.cc, said.join(", ")))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!("left out of the figures (they sent nothing, or are loopback): {}", parts.join("; "))
    })
}
