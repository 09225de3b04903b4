//! The socket table. Only the rows on screen are derived and formatted: the rows are kept in
//! order from frame to frame (`crate::tui::rows`), so 100k sockets cost a screenful of rows.

use super::Screen;
use crate::tui::app::COLUMNS;
use bbrtop_core::columns::{self, Column};
use bbrtop_core::snapshot::SocketView;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

/// The text of one cell: the catalog's, but the process that holds the socket where the
/// catalog has its inode.
pub fn cell(c: &Column, s: &SocketView, v: &Screen) -> String {
    if *c == columns::PROCESS {
        let owner = v.owners.get(&s.record.inode);
        return owner.map_or_else(|| "-".into(), |(pid, comm)| format!("{pid}/{comm}"));
    }
    c.text(s)
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

/// The columns that fit in `w` cells, by priority, shown in their usual order. The sort column
/// comes right after LOCAL, so sorting on any column shows that column.
fn fitting(w: u16, sort: &Column, offset: usize) -> Vec<&'static Column> {
    let widths: Vec<u16> = COLUMNS.iter().map(|c| c.width).collect();
    if offset > 0 {
        // Scrolled: LOCAL, then the columns in their usual order from the offset on.
        // Contiguous: stop at the first column that does not fit.
        let mut used = widths[0];
        let rest = COLUMNS.iter().skip(1 + offset).take_while(|c| {
            used += c.width + 1;
            used <= w
        });
        return std::iter::once(COLUMNS[0]).chain(rest.copied()).collect();
    }
    let index = |c: &Column| COLUMNS.iter().position(|x| *x == c).unwrap_or(0);
    // LOCAL, the sort column, then the rest by the catalog's priority.
    let local = &columns::LOCAL;
    let mut rest: Vec<&Column> = COLUMNS.iter().copied().filter(|c| *c != local && *c != sort).collect();
    rest.sort_by_key(|c| c.tui);
    let mut priority = vec![index(local), index(sort)];
    priority.extend(rest.into_iter().map(index));
    super::fitting(&widths, &priority, w).into_iter().map(|i| COLUMNS[i]).collect()
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
            no_sockets(v.source).to_string()
        } else {
            super::no_match("socket")
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
        Cell::from(format!("{}{mark}", c.header))
    }))
    .style(Style::new().add_modifier(Modifier::BOLD).fg(Color::Cyan));
    let body: Vec<Row> = rows
        .window(first, height)
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let style = row_style(s);
            let style = if first + i == selected { style.add_modifier(Modifier::REVERSED) } else { style };
            Row::new(cols.iter().map(|c| Cell::from(cell(c, s, v)))).style(style)
        })
        .collect();
    let widths: Vec<Constraint> = cols.iter().map(|c| Constraint::Length(c.width)).collect();
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
