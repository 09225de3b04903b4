//! A rendered screen (ratatui's `Buffer`) as SVG, for the README's picture of the TUI: the same
//! buffer the screen tests compare, so the picture is the real screen. Runs of cells with one
//! style become one `<text>`; backgrounds become rectangles.

use ratatui::buffer::{Buffer, Cell};
use ratatui::style::{Color, Modifier};
use std::fmt::Write;

const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;
const FG: &str = "#d0d0d0";
const BG: &str = "#1e1e1e";

/// The 16 ANSI colours as a dark terminal theme shows them.
fn hex(c: Color) -> Option<String> {
    let s = match c {
        Color::Reset => return None,
        Color::Black => "#000000",
        Color::Red => "#cd3131",
        Color::Green => "#0dbc79",
        Color::Yellow => "#e5e510",
        Color::Blue => "#2472c8",
        Color::Magenta => "#bc3fbc",
        Color::Cyan => "#11a8cd",
        Color::Gray => "#e5e5e5",
        Color::DarkGray => "#666666",
        Color::LightRed => "#f14c4c",
        Color::LightGreen => "#23d18b",
        Color::LightYellow => "#f5f543",
        Color::LightBlue => "#3b8eea",
        Color::LightMagenta => "#d670d6",
        Color::LightCyan => "#29b8db",
        Color::White => "#ffffff",
        Color::Rgb(r, g, b) => return Some(format!("#{r:02x}{g:02x}{b:02x}")),
        Color::Indexed(i) => return Some(format!("#{0:02x}{0:02x}{0:02x}", i)),
    };
    Some(s.to_string())
}

/// Foreground and background of a cell, with reversed video applied.
fn colours(c: &Cell) -> (String, Option<String>) {
    let (fg, bg) = (hex(c.fg), hex(c.bg));
    if c.modifier.contains(Modifier::REVERSED) {
        (bg.unwrap_or_else(|| BG.into()), Some(fg.unwrap_or_else(|| FG.into())))
    } else {
        (fg.unwrap_or_else(|| FG.into()), bg)
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

pub fn buffer_to_svg(b: &Buffer) -> String {
    let (w, h) = (b.area.width as usize, b.area.height as usize);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">"#,
        w as f64 * CELL_W,
        h as f64 * CELL_H
    );
    let _ = write!(s, r#"<rect width="100%" height="100%" fill="{BG}"/>"#);
    for (y, row) in b.content.chunks(w).enumerate() {
        let mut x = 0;
        while x < row.len() {
            let (fg, bg) = colours(&row[x]);
            let bold = row[x].modifier.contains(Modifier::BOLD);
            let mut end = x + 1;
            while end < row.len()
                && colours(&row[end]) == (fg.clone(), bg.clone())
                && row[end].modifier.contains(Modifier::BOLD) == bold
            {
                end += 1;
            }
            let (px, py) = (x as f64 * CELL_W, y as f64 * CELL_H);
            if let Some(bg) = &bg {
                let _ = write!(
                    s,
                    r#"<rect x="{px:.1}" y="{py:.1}" width="{:.1}" height="{CELL_H}" fill="{bg}"/>"#,
                    (end - x) as f64 * CELL_W
                );
            }
            let text: String = row[x..end].iter().map(Cell::symbol).collect();
            if !text.trim().is_empty() {
                let weight = if bold { r#" font-weight="bold""# } else { "" };
                let _ = write!(
                    s,
                    r#"<text x="{px:.1}" y="{:.1}" fill="{fg}"{weight} xml:space="preserve" textLength="{:.1}">{}</text>"#,
                    py + CELL_H * 0.78,
                    (end - x) as f64 * CELL_W,
                    escape(&text)
                );
            }
            x = end;
        }
    }
    s.push_str("</svg>\n");
    s
}
