//! A running experiment (`bbrtop experiment --tui`): each arm's share, state and figures, what the
//! harm guard stopped and why, and the verdict per group, with the intervals behind each call.

use super::Screen;
use crate::experiment::status::Status;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

pub fn draw(f: &mut Frame, area: Rect, v: &Screen) {
    let block = Block::default().borders(Borders::TOP).title(" experiment: arms and verdict ");
    let Some(s) = v.experiment else {
        let msg = "No experiment runs in this bbrtop. `bbrtop experiment --cgroup PATH --arm CC=PERCENT \
                   --arm CC=PERCENT --tui` runs one and shows it here (docs/experiment.md).";
        f.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }).block(block), area);
        return;
    };
    let inner = block.inner(area);
    f.render_widget(block, area);
    let stops = s.stopped.len() as u16;
    let [arms, guard, verdicts] = Layout::vertical([
        Constraint::Length(s.arms.len() as u16 + 2),
        Constraint::Length(stops.max(1) + 1),
        Constraint::Min(3),
    ])
    .areas(inner);
    f.render_widget(super::fitted_table(arms, &ARM_HEADERS, &ARM_WIDTHS, &ARM_PRIORITY, arm_rows(s)), arms);
    f.render_widget(Paragraph::new(guard_lines(s)).wrap(Wrap { trim: true }), guard);
    let rows = s.verdicts.iter().map(|g| {
        let p95 = &g.delivery_p95;
        let (rc, rt, rcall) = g.retrans_ratio.as_ref().map_or(("-".into(), "-".into(), "-".into()), |r| {
            (r.control.percent(), r.test.percent(), r.call.clone())
        });
        let color = match g.call.as_str() {
            "better" => Color::Green,
            "worse" => Color::Red,
            _ => Color::Reset,
        };
        let cells = vec![
            g.group.clone(),
            g.arm.clone(),
            g.call.clone(),
            g.delivery_p50.control.ms(),
            g.delivery_p50.test.ms(),
            p95.control.ms(),
            p95.test.ms(),
            rc,
            rt,
            rcall,
        ];
        (cells, Style::new().fg(color))
    });
    f.render_widget(
        super::fitted_table(verdicts, &VERDICT_HEADERS, &VERDICT_WIDTHS, &VERDICT_PRIORITY, rows),
        verdicts,
    );
}

const ARM_HEADERS: [&str; 10] =
    ["ARM", "SHARE", "STATE", "CONNS", "REDIRECTED", "RESPONSES", "p50", "p95", "RETRANS", "GOODPUT SHARE"];
const ARM_WIDTHS: [u16; 10] = [10, 6, 8, 7, 10, 9, 9, 9, 8, 13];
const ARM_PRIORITY: [usize; 10] = [0, 2, 7, 8, 1, 3, 6, 5, 9, 4];

const VERDICT_HEADERS: [&str; 10] = [
    "GROUP",
    "ARM",
    "CALL",
    "p50 CONTROL",
    "p50 TEST",
    "p95 CONTROL",
    "p95 TEST",
    "RETR% CTL",
    "RETR% TEST",
    "RETRANSMITS",
];
const VERDICT_WIDTHS: [u16; 10] = [18, 6, 19, 14, 14, 14, 14, 11, 11, 13];
const VERDICT_PRIORITY: [usize; 10] = [0, 2, 5, 6, 9, 1, 3, 4, 7, 8];

fn arm_rows(s: &Status) -> impl Iterator<Item = (Vec<String>, Style)> + '_ {
    s.arms.iter().map(|c| {
        let fig = s.figures.iter().find(|f| f.arm == c.cc);
        let stopped = s.stop_of(&c.cc).is_some();
        let q =
            |i: usize| fig.and_then(|f| f.delivery).map_or("-".into(), |d| format!("{:.1}ms", d[i] * 1e3));
        let cells = vec![
            c.cc.clone(),
            format!("{}%", c.percent),
            if stopped { "stopped" } else { "open" }.into(),
            c.assigned.to_string(),
            c.redirected.to_string(),
            fig.map_or(0, |f| f.responses).to_string(),
            q(0),
            q(1),
            fig.and_then(|f| f.retrans_ratio).map_or("-".into(), |r| format!("{:.2}%", r * 100.0)),
            fig.map_or("-".into(), |f| format!("{:.1}%", f.goodput_share * 100.0)),
        ];
        (cells, if stopped { Style::new().fg(Color::Red) } else { Style::new() })
    })
}

fn guard_lines(s: &Status) -> Vec<Line<'static>> {
    if s.stopped.is_empty() {
        return vec![Line::from(format!("harm guard: watching, nothing stopped ({:.0}s in)", s.seconds))];
    }
    s.stopped
        .iter()
        .map(|st| {
            Line::styled(
                format!("harm guard stopped {} at {:.1}s: {}", st.arm, st.at, st.why),
                Style::new().fg(Color::Red),
            )
        })
        .collect()
}
