//! The socket table. Only the rows on screen are formatted, so 10k sockets cost a sort, not
//! 10k rows of strings.

use super::Screen;
use crate::engine::snapshot::SocketView;
use crate::tui::app::Column;
use crate::units::{bitrate, micros, opt, percent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

fn width(c: Column) -> u16 {
    match c {
        Column::Local | Column::Peer => 21,
        Column::Process => 14,
        Column::Where => 24,
        Column::Cc => 6,
        Column::Phase => 9,
        Column::BbrBw | Column::Pacing | Column::Delivery => 11,
        // "180.0ms", "MIN RTT↓"; ratios are at most 7 cells (`render::ratio`).
        Column::MinRtt | Column::Srtt => 8,
        Column::Inflation => 7,
        Column::Cwnd | Column::Retrans | Column::RetransRatio => 6,
        Column::Gains => 9,
        Column::Limited => 6,
    }
}

/// The text of one cell.
pub fn cell(c: Column, s: &SocketView, v: &Screen) -> String {
    let r = &s.record;
    let i = &r.tcp_info;
    let d = &s.derived;
    match c {
        Column::Local => r.local.to_string(),
        Column::Peer => r.peer.to_string(),
        Column::Process => {
            v.owners.get(&r.inode).map_or_else(|| "-".into(), |(pid, comm)| format!("{pid}/{comm}"))
        }
        Column::Where => {
            r.origin.as_deref().and_then(|o| o.label()).map_or_else(|| "-".into(), |l| l.into_owned())
        }
        Column::Cc => r.cc_name().to_string(),
        Column::Phase => opt(d.phase, |p| p.label().to_string()),
        Column::BbrBw => opt(r.bbr, |b| bitrate(b.bw_bytes_per_sec as f64)),
        Column::MinRtt => opt(d.baseline_rtt_us, micros),
        Column::Srtt => opt(i.srtt_us(), micros),
        Column::Inflation => opt(d.inflation_ratio, super::ratio),
        Column::Pacing => opt(i.pacing_rate_bytes_per_sec(), |x| bitrate(x as f64)),
        Column::Delivery => opt(i.delivery_rate_bytes_per_sec(), |x| bitrate(x as f64)),
        Column::Cwnd => opt(i.snd_cwnd_segs(), |x| x.to_string()),
        Column::Gains => opt(r.bbr, |b| format!("{:.2}/{:.2}", b.pacing_gain, b.cwnd_gain)),
        Column::Retrans => opt(i.total_retrans_segs(), |x| x.to_string()),
        Column::RetransRatio => opt(d.retrans_ratio, percent),
        Column::Limited => opt(d.limited_by, |l| l.label().to_string()),
    }
}

/// Inflated rows stand out; firing ones more.
pub fn row_style(s: &SocketView) -> Style {
    if s.derived.alert_firing {
        Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
    } else if s.derived.inflated {
        Style::new().fg(Color::Yellow)
    } else {
        Style::new()
    }
}

/// Which columns to keep when not all fit, most wanted first.
const PRIORITY: [Column; 17] = [
    Column::Local,
    Column::Cc,
    Column::Srtt,
    Column::Inflation,
    Column::Phase,
    Column::BbrBw,
    Column::MinRtt,
    Column::Peer,
    Column::Delivery,
    Column::Pacing,
    Column::Cwnd,
    Column::RetransRatio,
    Column::Process,
    Column::Retrans,
    Column::Gains,
    Column::Limited,
    Column::Where,
];

/// The columns that fit in `w` cells, by priority, shown in their usual order. The sort column
/// comes right after LOCAL, so sorting on any column shows that column.
fn fitting(w: u16, sort: Column, offset: usize) -> Vec<Column> {
    let widths = Column::ALL.map(width);
    if offset > 0 {
        // Scrolled: LOCAL, then the columns in their usual order from the offset on.
        // Contiguous: stop at the first column that does not fit.
        let mut used = widths[0];
        let rest = Column::ALL.iter().skip(1 + offset).take_while(|c| {
            used += width(**c) + 1;
            used <= w
        });
        return std::iter::once(Column::Local).chain(rest.copied()).collect();
    }
    let index = |c: Column| Column::ALL.iter().position(|x| *x == c).unwrap_or(0);
    let mut priority = vec![index(Column::Local), index(sort)];
    priority.extend(PRIORITY.into_iter().filter(|c| *c != Column::Local && *c != sort).map(index));
    super::fitting(&widths, &priority, w).into_iter().map(|i| Column::ALL[i]).collect()
}

/// What an empty table says, by where its sockets come from: only this host can start a lab.
fn no_sockets(source: &crate::tui::Source) -> &'static str {
    use crate::tui::Source;
    match source {
        Source::Local => {
            "No TCP sockets in this namespace (with the states asked for). Start some traffic, or try --lab."
        }
        Source::Remote(_) => {
            "No TCP sockets from the remote: none there (with the states it reads), or no frame yet (the remote collector above says why)."
        }
        Source::Recording(_) => "No TCP sockets in this poll.",
    }
}

pub fn draw(f: &mut Frame, area: Rect, v: &Screen) {
    let rows = v.rows;
    let block = Block::default().borders(Borders::TOP).title(format!(" sockets ({}) ", rows.len()));
    if rows.is_empty() {
        let msg = if v.snap.sockets.is_empty() {
            no_sockets(v.source)
        } else {
            "No socket matches the filter (c clears it)."
        };
        f.render_widget(Paragraph::new(msg).block(block), area);
        return;
    }
    let cols = fitting(area.width.saturating_sub(2), v.app.sort, v.app.col_offset);
    let height = area.height.saturating_sub(2) as usize;
    let selected = v.app.selected.min(rows.len() - 1);
    // Keep the selection on screen.
    let first = selected.saturating_sub(height.saturating_sub(1));
    let header = Row::new(cols.iter().map(|c| {
        let mark = if *c == v.app.sort { if v.app.descending { "↓" } else { "↑" } } else { "" };
        Cell::from(format!("{}{mark}", c.header()))
    }))
    .style(Style::new().add_modifier(Modifier::BOLD).fg(Color::Cyan));
    let body: Vec<Row> = rows
        .iter()
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(i, s)| {
            let style = row_style(s);
            let style = if i == selected { style.add_modifier(Modifier::REVERSED) } else { style };
            Row::new(cols.iter().map(|c| Cell::from(cell(*c, s, v)))).style(style)
        })
        .collect();
    let widths: Vec<Constraint> = cols.iter().map(|c| Constraint::Length(width(*c))).collect();
    f.render_widget(Table::new(body, widths).header(header).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::Source;

    /// `--lab` is offered only where it can be given: `--connect` and `replay` refuse it.
    #[test]
    fn an_empty_table_offers_the_lab_on_this_host_only() {
        assert!(no_sockets(&Source::Local).contains("--lab"));
        assert!(!no_sockets(&Source::Remote("https://edge-1:10027".into())).contains("--lab"));
        assert!(no_sockets(&Source::Remote("https://edge-1:10027".into())).contains("remote collector"));
        assert!(!no_sockets(&Source::Recording("rec".into())).contains("--lab"));
    }
}
