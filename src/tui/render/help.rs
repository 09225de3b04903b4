//! The help overlay, generated from the keymap so it never goes stale: the commands, then the
//! prompt line's keys, and on its bottom border the keys that close it.

use crate::tui::keymap::{Binding, HELP_BINDINGS, PROMPT_BINDINGS, bindings};
use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

fn key_name(code: KeyCode, m: KeyModifiers) -> String {
    let k = match code {
        KeyCode::Char(' ') => "space".into(),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Tab => "Tab".into(),
        KeyCode::Up => "Up".into(),
        KeyCode::Down => "Down".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    };
    if m.contains(KeyModifiers::CONTROL) { format!("Ctrl-{k}") } else { k }
}

/// Bindings with the same help, one after the other, share a row: (keys, help).
fn rows<'a>(b: impl Iterator<Item = &'a Binding>) -> Vec<(Vec<String>, &'a str)> {
    let mut rows: Vec<(Vec<String>, &str)> = Vec::new();
    for (code, m, _, help) in b {
        match rows.last_mut() {
            Some((keys, h)) if *h == *help => keys.push(key_name(*code, *m)),
            _ => rows.push((vec![key_name(*code, *m)], *help)),
        }
    }
    rows
}

/// Keys with their help run together: `Enter apply, Esc cancel`.
fn run_together<'a>(b: impl Iterator<Item = &'a Binding>) -> String {
    let rows: Vec<String> = rows(b).iter().map(|(keys, help)| format!("{} {help}", keys.join(" "))).collect();
    rows.join(", ")
}

/// The keys in force (a replay's time controls first), one line per help text, and the prompt
/// line's keys run together in a paragraph; the keys help takes, on its bottom border (a line
/// that stays on screen when the text does not fit).
pub fn draw(f: &mut Frame, area: Rect, replay: bool) {
    let commands: Vec<(String, &str)> =
        rows(bindings(replay)).into_iter().map(|(keys, help)| (keys.join(" "), help)).collect();
    let width = commands.iter().map(|(keys, _)| keys.len()).max().unwrap_or(0);
    let mut lines: Vec<String> =
        commands.iter().map(|(keys, help)| format!("{keys:<width$} {help}")).collect();
    let prompts = if replay { "/ or g" } else { "/" };
    lines.push(format!("typing after {prompts}: {}", run_together(PROMPT_BINDINGS.iter())));
    let w = 78.min(area.width);
    let text = Paragraph::new(lines.join("\n")).wrap(Wrap { trim: false });
    let h = (text.line_count(w.saturating_sub(2)) as u16 + 2).min(area.height);
    let r = Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h };
    f.render_widget(Clear, r);
    let closing = Line::from(format!(" {} ", run_together(HELP_BINDINGS.iter()))).right_aligned();
    let block = Block::default().borders(Borders::ALL).title(" keys ").title_bottom(closing);
    f.render_widget(text.block(block), r);
}
