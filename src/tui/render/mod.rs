//! Drawing: one file per screen region. Everything here is a pure function of the view state,
//! one snapshot and host facts, so tests render it on a `TestBackend`.

pub mod alerts;
pub mod closed;
pub mod compare;
pub mod detail;
pub mod experiment;
pub mod header;
pub mod help;
pub mod places;
pub mod table;

use super::Source;
use super::app::{App, Prompt, View};
use super::procs::Owners;
use super::rows::Rows;
use crate::replay::Status;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// The smallest terminal the layout is made for.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// What one frame shows.
pub struct Screen<'a> {
    pub app: &'a App,
    pub snap: &'a Snapshot,
    /// The sockets the filter matches, sorted (kept from frame to frame, see `rows`): the
    /// table's rows, and what the views of sockets are made of. Views are derived as read.
    pub rows: &'a Rows,
    pub sys: &'a SystemInfo,
    pub owners: &'a Owners,
    /// Where the snapshot comes from, and for a recording where its play is.
    pub source: &'a Source,
    pub playback: Option<&'a Status>,
    /// A running experiment's status (`bbrtop experiment --tui`); None elsewhere.
    pub experiment: Option<&'a crate::experiment::status::Status>,
}

pub fn draw(f: &mut Frame, v: &Screen) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "terminal too small: {}x{}, bbrtop needs {MIN_WIDTH}x{MIN_HEIGHT} (q quits)",
            area.width, area.height
        );
        f.render_widget(Paragraph::new(msg).wrap(ratatui::widgets::Wrap { trim: true }), area);
        return;
    }
    let top = header::paragraph(v);
    let [head, tabs, body, foot] = Layout::vertical([
        Constraint::Length(header::height(&top, area.width)),
        Constraint::Length(1),
        Constraint::Min(5),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(top, head);
    draw_tabs(f, tabs, v.app);
    match v.app.view {
        View::Sockets if v.app.detail => {
            let [t, d] =
                Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(body);
            table::draw(f, t, v);
            detail::draw(f, d, v);
        }
        View::Sockets => table::draw(f, body, v),
        View::Compare => compare::draw(f, body, v),
        View::Alerts => alerts::draw(f, body, v),
        View::Closed => closed::draw(f, body, v),
        View::Places => places::draw(f, body, v),
        View::Experiment => experiment::draw(f, body, v),
    }
    draw_footer(f, foot, v.app, v.playback.is_some());
    if v.app.help {
        help::draw(f, area, v.playback.is_some());
    }
}

fn draw_tabs(f: &mut Frame, area: Rect, app: &App) {
    let mut spans = Vec::new();
    for view in View::ALL {
        let style = if view == app.view {
            Style::new().fg(Color::Black).bg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::new().fg(Color::Cyan)
        };
        spans.push(Span::styled(format!(" {} ", view.title()), style));
        spans.push(Span::raw(" "));
    }
    if app.frozen.is_some() {
        spans.push(Span::styled(" FROZEN ", Style::new().fg(Color::Black).bg(Color::Yellow)));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_footer(f: &mut Frame, area: Rect, app: &App, replay: bool) {
    let line = if let Some(e) = &app.editing {
        let prompt = match app.prompt {
            Prompt::Filter => "/",
            Prompt::Time => "go to (HH:MM:SS UTC, RFC 3339 or +90s): ",
        };
        let room = usize::from(area.width).saturating_sub(prompt.chars().count());
        let mut spans = vec![Span::styled(prompt, Style::new().fg(Color::Yellow))];
        spans.extend(prompt_line(e.value(), e.cursor(), room));
        Line::from(spans)
    } else if let Some(err) = &app.time_error {
        Line::from(Span::styled(err.clone(), Style::new().fg(Color::Red)))
    } else if let Some(err) = &app.filter_error {
        Line::from(Span::styled(format!("{err} (kept: {:?})", app.filter_text), Style::new().fg(Color::Red)))
    } else {
        let filter =
            if app.filter_text.is_empty() { String::new() } else { format!("filter: {}  ", app.filter_text) };
        Line::from(vec![
            Span::styled(filter, Style::new().fg(Color::Yellow)),
            Span::styled(
                format!("sort: {} {}  ", app.sort.header, if app.descending { "↓" } else { "↑" }),
                Style::new().fg(Color::DarkGray),
            ),
            Span::styled(
                if replay {
                    "q quit  space pause  ,. step  [] {} seek  g time  n alert  ? help"
                } else {
                    "q quit  / filter  s sort  ←→ cols  enter detail  f freeze  ? help"
                },
                Style::new().fg(Color::DarkGray),
            ),
        ])
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The line being typed with its cursor, in `room` cells: the character under the cursor in
/// reverse video, or a block after the last one; scrolled so that the cursor stays in view.
fn prompt_line(text: &str, cursor: usize, room: usize) -> Vec<Span<'static>> {
    let chars: Vec<char> = text.chars().collect();
    let skip = cursor.saturating_sub(room.saturating_sub(1));
    let shown: String = chars.iter().skip(skip).take(cursor - skip).collect();
    let mut spans = vec![Span::raw(shown)];
    match chars.get(cursor) {
        Some(c) => {
            spans.push(Span::styled(c.to_string(), Style::new().add_modifier(Modifier::REVERSED)));
            let after: String =
                chars[cursor + 1..].iter().take(room.saturating_sub(cursor - skip + 1)).collect();
            spans.push(Span::raw(after));
        }
        None => spans.push(Span::raw("█")),
    }
    spans
}

/// What a view says when the filter leaves it nothing to show.
pub fn no_match(what: &str) -> String {
    format!("No {what} matches the filter (c clears it).")
}

/// What a view of sockets says when it has no row: no socket yet, or none the filter matches.
fn no_rows(snap: &Snapshot) -> String {
    if snap.sockets.is_empty() { "No sockets yet.".to_string() } else { no_match("socket") }
}

/// The columns that fit in `avail` cells (one cell between columns), taken in `priority` order
/// (column indices, most wanted first) and returned in display order: narrow terminals lose the
/// least wanted columns instead of truncating every one.
pub fn fitting(widths: &[u16], priority: &[usize], avail: u16) -> Vec<usize> {
    let mut used = 0;
    let mut keep: Vec<usize> = Vec::new();
    for &i in priority {
        let need = widths[i] + u16::from(!keep.is_empty());
        if used + need <= avail {
            used += need;
            keep.push(i);
        }
    }
    keep.sort_unstable();
    keep
}

/// A table of `cells` rows limited to the columns that fit `area` (see [`fitting`]).
pub fn fitted_table<'a>(
    area: Rect,
    headers: &[&'a str],
    widths: &[u16],
    priority: &[usize],
    rows: impl Iterator<Item = (Vec<String>, Style)>,
) -> ratatui::widgets::Table<'a> {
    use ratatui::widgets::{Row, Table};
    let keep = fitting(widths, priority, area.width);
    let header = Row::new(keep.iter().map(|&i| headers[i]))
        .style(Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = rows
        .take(area.height as usize)
        .map(|(cells, style)| {
            let mut cells: Vec<Option<String>> = cells.into_iter().map(Some).collect();
            Row::new(keep.iter().map(|&i| cells[i].take().unwrap_or_default())).style(style)
        })
        .collect();
    Table::new(rows, keep.iter().map(|&i| Constraint::Length(widths[i]))).header(header)
}

/// A duration in seconds, short: "4s", "2m05s", "1h02m".
pub fn ago(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// `screen` drawn on a `w`x`h` test terminal, as buffer (tests: the TUI's own and the replay's).
#[cfg(any(test, feature = "test-support"))]
pub fn buffer_of(screen: &Screen, w: u16, h: u16) -> ratatui::buffer::Buffer {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).expect("a test terminal");
    t.draw(|f| draw(f, screen)).expect("drawn");
    t.backend().buffer().clone()
}

/// A buffer's text: one line per row, trailing spaces trimmed.
#[cfg(any(test, feature = "test-support"))]
pub fn text(b: &ratatui::buffer::Buffer) -> String {
    b.content
        .chunks(b.area.width as usize)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>().trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_short() {
        assert_eq!(ago(125.0), "2m05s");
    }
}
