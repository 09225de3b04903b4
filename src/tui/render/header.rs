//! The header: the source (live, remote, a recording and the poll shown), host, kernel, default
//! cc and qdisc, which BBR, sockets per cc, collectors, alerts.

use super::Screen;
use crate::replay::{Status, format_time};
use bbrtop_core::snapshot::status::Health;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

/// The most rows the header takes when its lines wrap; the table keeps the rest.
const MAX_ROWS: usize = 6;

/// Rows the header needs at this width: three (four in a replay), more when a line wraps (a
/// collector's reason, such as why eBPF is off, is the one that runs long and must not be cut off).
pub fn height(header: &Paragraph, width: u16) -> u16 {
    header.line_count(width).clamp(3, MAX_ROWS) as u16
}

pub fn paragraph<'a>(v: &'a Screen) -> Paragraph<'a> {
    let s = v.sys;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let l1 = Line::from(vec![
        Span::styled("bbrtop ", bold.fg(Color::Cyan)),
        Span::styled(v.source.label(), bold.fg(Color::Yellow)),
        Span::raw(format!("  {}  kernel {}  default cc ", s.host, s.kernel)),
        Span::styled(&s.default_cc, bold),
        Span::raw("  qdisc "),
        Span::styled(&s.qdisc, bold),
        Span::raw(s.netns.as_ref().map_or(String::new(), |n| format!("  netns {n}"))),
        Span::raw(if s.bbr.is_empty() { String::new() } else { format!("  {}", s.bbr) }),
    ]);
    let per_cc: Vec<String> = v.snap.by_cc.iter().map(|a| format!("{} {}", a.cc, a.sockets)).collect();
    let firing = v.snap.firing().count();
    let l2 = Line::from(vec![
        Span::raw(format!("{} sockets", v.snap.sockets.len())),
        Span::raw(if per_cc.is_empty() { String::new() } else { format!(": {}", per_cc.join(", ")) }),
        Span::raw("   alerts firing: "),
        Span::styled(
            firing.to_string(),
            if firing > 0 { Style::new().fg(Color::Red).add_modifier(Modifier::BOLD) } else { Style::new() },
        ),
    ]);
    let mut l3 = vec![Span::raw("collectors: ")];
    for c in &v.snap.collectors {
        let (text, color) = match &c.health {
            Health::Off(Some(r)) | Health::Degraded(r) => (format!("{}: {r}", c.name), Color::Yellow),
            Health::Ok => {
                let extra = c.programs_attached.map(|n| format!(", {n} programs")).unwrap_or_default();
                (format!("{}: ok{extra}", c.name), Color::Green)
            }
            Health::Waiting => (format!("{}: waiting", c.name), Color::Yellow),
            Health::Off(None) => (format!("{}: off", c.name), Color::DarkGray),
        };
        l3.push(Span::styled(text, Style::new().fg(color)));
        l3.push(Span::raw("  "));
    }
    let mut lines = vec![l1, l2, Line::from(l3)];
    if let Some(p) = v.playback {
        lines.insert(1, playback(p));
    }
    Paragraph::new(lines).wrap(Wrap { trim: true })
}

/// A replay's place: "poll 121 of 3600  2026-11-23T16:02:11.250Z  playing 1x", paused, or at the end.
fn playback(p: &Status) -> Line<'static> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let (state, color) = if p.at_end() {
        ("end of the recording (paused)".to_string(), Color::Red)
    } else if p.playing {
        (format!("playing {}x", p.speed), Color::Green)
    } else {
        (format!("paused ({}x when playing)", p.speed), Color::Yellow)
    };
    let mut spans = vec![
        Span::raw(format!("poll {} of {}  ", p.index + 1, p.len)),
        Span::styled(format_time(p.at), bold),
        Span::raw("  "),
        Span::styled(state, bold.fg(color)),
    ];
    if let Some(n) = &p.note {
        spans.push(Span::styled(format!("  {n}"), Style::new().fg(Color::Yellow)));
    }
    Line::from(spans)
}
