//! Drawing: one file per screen region. Everything here is a pure function of the view state,
//! one snapshot and host facts, so tests render it on a `TestBackend`.

pub mod alerts;
pub mod closed;
pub mod compare;
pub mod detail;
pub mod header;
pub mod help;
pub mod table;

use super::app::{App, View};
use super::procs::Owners;
use super::system::SystemInfo;
use crate::engine::snapshot::{Snapshot, SocketView};
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
    /// The table's rows, filtered and sorted once per frame (`App::rows`).
    pub rows: &'a [&'a SocketView],
    pub sys: &'a SystemInfo,
    pub owners: &'a Owners,
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
    let [head, tabs, body, foot] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Min(5),
        Constraint::Length(1),
    ])
    .areas(area);
    header::draw(f, head, v);
    draw_tabs(f, tabs, v.app);
    match v.app.view {
        View::Sockets if v.app.detail => {
            let [t, d] =
                Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(body);
            table::draw(f, t, v);
            detail::draw(f, d, v);
        }
        View::Sockets => table::draw(f, body, v),
        View::Compare => compare::draw(f, body, v.snap),
        View::Alerts => alerts::draw(f, body, v.snap),
        View::Closed => closed::draw(f, body, v.snap),
    }
    draw_footer(f, foot, v.app);
    if v.app.help {
        help::draw(f, area);
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

fn draw_footer(f: &mut Frame, area: Rect, app: &App) {
    let line = if let Some(e) = &app.editing {
        Line::from(vec![
            Span::styled("/", Style::new().fg(Color::Yellow)),
            Span::raw(e.clone()),
            Span::raw("█"),
        ])
    } else if let Some(err) = &app.filter_error {
        Line::from(Span::styled(format!("{err} (kept: {:?})", app.filter_text), Style::new().fg(Color::Red)))
    } else {
        let filter =
            if app.filter_text.is_empty() { String::new() } else { format!("filter: {}  ", app.filter_text) };
        Line::from(vec![
            Span::styled(filter, Style::new().fg(Color::Yellow)),
            Span::styled(
                format!("sort: {} {}  ", app.sort.header(), if app.descending { "↓" } else { "↑" }),
                Style::new().fg(Color::DarkGray),
            ),
            Span::styled(
                "q quit  / filter  s sort  enter detail  f freeze  ? help",
                Style::new().fg(Color::DarkGray),
            ),
        ])
    };
    f.render_widget(Paragraph::new(line), area);
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
