//! The help overlay, generated from the keymap so it never goes stale.

use crate::tui::keymap::bindings;
use crossterm::event::{KeyCode, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

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

/// The keys in force (a replay's time controls first), one line per help text.
pub fn draw(f: &mut Frame, area: Rect, replay: bool) {
    // Keys with the same help share a line.
    let mut rows: Vec<(Vec<String>, &str)> = Vec::new();
    for (code, m, _, help) in bindings(replay) {
        match rows.last_mut() {
            Some((keys, h)) if *h == *help => keys.push(key_name(*code, *m)),
            _ => rows.push((vec![key_name(*code, *m)], *help)),
        }
    }
    let mut lines: Vec<String> =
        rows.iter().map(|(keys, help)| format!("{:<11} {help}", keys.join(" "))).collect();
    lines.push("Esc         clear the filter; when typing, Enter applies and Esc cancels".into());
    let h = (lines.len() as u16 + 2).min(area.height);
    let w = 78.min(area.width);
    let r = Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h };
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines.join("\n")).block(Block::default().borders(Borders::ALL).title(" keys ")),
        r,
    );
}
