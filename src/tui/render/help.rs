//! The help overlay, generated from the keymap so it never goes stale: the commands, then the
//! prompt line's keys.

use crate::tui::keymap::{Binding, PROMPT_BINDINGS, bindings};
use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
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

/// The keys in force (a replay's time controls first), one line per help text, and the prompt
/// line's keys run together in a paragraph.
pub fn draw(f: &mut Frame, area: Rect, replay: bool) {
    let commands: Vec<(String, &str)> =
        rows(bindings(replay)).into_iter().map(|(keys, help)| (keys.join(" "), help)).collect();
    let width = commands.iter().map(|(keys, _)| keys.len()).max().unwrap_or(0);
    let mut lines: Vec<String> =
        commands.iter().map(|(keys, help)| format!("{keys:<width$} {help}")).collect();
    let typing: Vec<String> = rows(PROMPT_BINDINGS.iter())
        .iter()
        .map(|(keys, help)| format!("{} {help}", keys.join(" ")))
        .collect();
    let prompts = if replay { "/ or g" } else { "/" };
    lines.push(format!("typing after {prompts}: {}", typing.join(", ")));
    let w = 78.min(area.width);
    let text = Paragraph::new(lines.join("\n")).wrap(Wrap { trim: false });
    let h = (text.line_count(w.saturating_sub(2)) as u16 + 2).min(area.height);
    let r = Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h };
    f.render_widget(Clear, r);
    f.render_widget(text.block(Block::default().borders(Borders::ALL).title(" keys ")), r);
}
