//! Keys to actions: one table, and one more for a replay's time controls, which the help
//! overlay is generated from.

use super::app::{Action, Mode, View};
use crate::replay::Control;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// (key, modifiers, action, what the help says).
pub type Binding = (KeyCode, KeyModifiers, Action, &'static str);

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;

/// The commands, in the order help lists them.
pub const BINDINGS: &[Binding] = &[
    (KeyCode::Char('q'), NONE, Action::Quit, "quit"),
    (KeyCode::Char('c'), CTRL, Action::Quit, "quit"),
    (KeyCode::Down, NONE, Action::Down, "next / previous socket"),
    (KeyCode::Char('j'), NONE, Action::Down, "next / previous socket"),
    (KeyCode::Up, NONE, Action::Up, "next / previous socket"),
    (KeyCode::Char('k'), NONE, Action::Up, "next / previous socket"),
    (KeyCode::PageDown, NONE, Action::PageDown, "page down / up"),
    (KeyCode::PageUp, NONE, Action::PageUp, "page down / up"),
    (KeyCode::Home, NONE, Action::Top, "first / last socket"),
    (KeyCode::End, NONE, Action::Bottom, "first / last socket"),
    (KeyCode::Char('s'), NONE, Action::NextSort, "sort by the next / previous column"),
    (KeyCode::Char('S'), SHIFT, Action::PrevSort, "sort by the next / previous column"),
    (KeyCode::Char('r'), NONE, Action::ReverseSort, "reverse the sort"),
    (KeyCode::Right, NONE, Action::ScrollRight, "scroll the columns right / left"),
    (KeyCode::Left, NONE, Action::ScrollLeft, "scroll the columns right / left"),
    (
        KeyCode::Char('/'),
        NONE,
        Action::StartFilter,
        "filter: cc bbr, port 443, 10.0.0.0/8, pod shop/, netns NAME",
    ),
    (KeyCode::Char('c'), NONE, Action::ClearFilter, "clear the filter"),
    (KeyCode::Char('f'), NONE, Action::ToggleFreeze, "freeze / unfreeze the display"),
    (KeyCode::Enter, NONE, Action::ToggleDetail, "open / close the detail pane"),
    (KeyCode::Char('1'), NONE, Action::Show(View::Sockets), VIEWS),
    (KeyCode::Char('2'), NONE, Action::Show(View::Compare), VIEWS),
    (KeyCode::Char('3'), NONE, Action::Show(View::Alerts), VIEWS),
    (KeyCode::Char('4'), NONE, Action::Show(View::Closed), VIEWS),
    (KeyCode::Char('5'), NONE, Action::Show(View::Places), VIEWS),
    (KeyCode::Tab, NONE, Action::NextView, "next view"),
    (KeyCode::Char('?'), NONE, Action::ToggleHelp, "this help"),
    (KeyCode::Char('h'), NONE, Action::ToggleHelp, "this help"),
];

/// The views' keys share one line of help.
const VIEWS: &str = "sockets, BBR vs CUBIC, alerts, closed flows (eBPF), where";

/// A replay's time controls, before [`BINDINGS`]: `f` pauses (there is nothing live to freeze).
pub const REPLAY_BINDINGS: &[Binding] = &[
    (KeyCode::Char(' '), NONE, Action::Time(Control::TogglePause), "pause / play"),
    (KeyCode::Char('f'), NONE, Action::Time(Control::TogglePause), "pause / play"),
    (KeyCode::Char('.'), NONE, Action::Time(Control::Step(1)), "one poll forward / back (pauses)"),
    (KeyCode::Char(','), NONE, Action::Time(Control::Step(-1)), "one poll forward / back (pauses)"),
    (KeyCode::Char(']'), NONE, Action::Time(Control::Skip(10)), "10 s forward / back"),
    (KeyCode::Char('['), NONE, Action::Time(Control::Skip(-10)), "10 s forward / back"),
    (KeyCode::Char('}'), NONE, Action::Time(Control::Skip(60)), "1 min forward / back"),
    (KeyCode::Char('{'), NONE, Action::Time(Control::Skip(-60)), "1 min forward / back"),
    (KeyCode::Char('g'), NONE, Action::StartGoto, "go to a time: HH:MM:SS (UTC) or RFC 3339"),
    (KeyCode::Char('n'), NONE, Action::Time(Control::Onset { forward: true }), "next / previous alert onset"),
    (
        KeyCode::Char('N'),
        SHIFT,
        Action::Time(Control::Onset { forward: false }),
        "next / previous alert onset",
    ),
    (KeyCode::Char('+'), NONE, Action::Time(Control::Faster), "play faster / slower (x2)"),
    (KeyCode::Char('-'), NONE, Action::Time(Control::Slower), "play faster / slower (x2)"),
];

/// The bindings in force: a replay's time controls first (they take `f`), then the rest.
pub fn bindings(replay: bool) -> impl Iterator<Item = &'static Binding> {
    let time: &[Binding] = if replay { REPLAY_BINDINGS } else { &[] };
    time.iter()
        .chain(BINDINGS.iter().filter(move |b| !(replay && time.iter().any(|t| t.0 == b.0 && t.1 == b.1))))
}

/// The action a key means in `mode`, if any; `replay` adds the time controls.
pub fn action(mode: Mode, key: KeyEvent, replay: bool) -> Option<Action> {
    if mode == Mode::Filtering {
        return match key.code {
            KeyCode::Enter => Some(Action::FilterApply),
            KeyCode::Esc => Some(Action::FilterCancel),
            KeyCode::Backspace => Some(Action::FilterBackspace),
            KeyCode::Char('c') if key.modifiers.contains(CTRL) => Some(Action::Quit),
            KeyCode::Char(c) => Some(Action::FilterChar(c)),
            _ => None,
        };
    }
    if key.code == KeyCode::Esc {
        return Some(Action::ClearFilter);
    }
    // Shift is implied by an upper-case letter on some terminals and not on others.
    let mods = key.modifiers - SHIFT;
    bindings(replay)
        .find(|(code, m, _, _)| *code == key.code && (*m - SHIFT) == mods)
        .map(|(_, _, a, _)| a.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn table() {
        let cases: &[(Mode, KeyCode, KeyModifiers, Option<Action>)] = &[
            (Mode::Normal, KeyCode::Char('q'), NONE, Some(Action::Quit)),
            (Mode::Normal, KeyCode::Char('c'), CTRL, Some(Action::Quit)),
            (Mode::Normal, KeyCode::Char('c'), NONE, Some(Action::ClearFilter)),
            (Mode::Normal, KeyCode::Char('j'), NONE, Some(Action::Down)),
            (Mode::Normal, KeyCode::Char('S'), SHIFT, Some(Action::PrevSort)),
            (Mode::Normal, KeyCode::Char('S'), NONE, Some(Action::PrevSort)),
            (Mode::Normal, KeyCode::Char('/'), NONE, Some(Action::StartFilter)),
            (Mode::Normal, KeyCode::Char('3'), NONE, Some(Action::Show(View::Alerts))),
            (Mode::Normal, KeyCode::Char('x'), NONE, None),
            (Mode::Normal, KeyCode::Right, NONE, Some(Action::ScrollRight)),
            (Mode::Normal, KeyCode::Left, NONE, Some(Action::ScrollLeft)),
            (Mode::Normal, KeyCode::Esc, NONE, Some(Action::ClearFilter)),
            (Mode::Filtering, KeyCode::Char('q'), NONE, Some(Action::FilterChar('q'))),
            (Mode::Filtering, KeyCode::Enter, NONE, Some(Action::FilterApply)),
            (Mode::Filtering, KeyCode::Esc, NONE, Some(Action::FilterCancel)),
            (Mode::Filtering, KeyCode::Char('c'), CTRL, Some(Action::Quit)),
        ];
        for (mode, code, m, want) in cases {
            assert_eq!(action(*mode, key(*code, *m), false), *want, "{mode:?} {code:?} {m:?}");
        }
    }

    #[test]
    fn a_replay_adds_time_controls_and_f_pauses() {
        let time = |c| Some(Action::Time(c));
        let cases: &[(KeyCode, KeyModifiers, Option<Action>, Option<Action>)] = &[
            (KeyCode::Char(' '), NONE, None, time(Control::TogglePause)),
            (KeyCode::Char('f'), NONE, Some(Action::ToggleFreeze), time(Control::TogglePause)),
            (KeyCode::Char('.'), NONE, None, time(Control::Step(1))),
            (KeyCode::Char(','), NONE, None, time(Control::Step(-1))),
            (KeyCode::Char(']'), NONE, None, time(Control::Skip(10))),
            (KeyCode::Char('{'), SHIFT, None, time(Control::Skip(-60))),
            (KeyCode::Char('g'), NONE, None, Some(Action::StartGoto)),
            (KeyCode::Char('n'), NONE, None, time(Control::Onset { forward: true })),
            (KeyCode::Char('N'), SHIFT, None, time(Control::Onset { forward: false })),
            (KeyCode::Char('q'), NONE, Some(Action::Quit), Some(Action::Quit)),
            (KeyCode::Char('/'), NONE, Some(Action::StartFilter), Some(Action::StartFilter)),
        ];
        for (code, m, live, replay) in cases {
            assert_eq!(action(Mode::Normal, key(*code, *m), false), *live, "live {code:?}");
            assert_eq!(action(Mode::Normal, key(*code, *m), true), *replay, "replay {code:?}");
        }
        // Typing a time: the keys are text.
        assert_eq!(
            action(Mode::Filtering, key(KeyCode::Char('n'), NONE), true),
            Some(Action::FilterChar('n'))
        );
        assert_eq!(
            bindings(true).filter(|b| b.2 == Action::ToggleFreeze).count(),
            0,
            "no freeze in a replay"
        );
    }

    #[test]
    fn every_view_has_a_key_and_no_key_is_bound_twice() {
        for v in View::ALL {
            assert!(BINDINGS.iter().any(|(_, _, a, _)| *a == Action::Show(v)), "{v:?}");
        }
        for replay in [false, true] {
            let b: Vec<_> = bindings(replay).collect();
            for (i, (c, m, _, _)) in b.iter().enumerate() {
                assert!(!b[i + 1..].iter().any(|(c2, m2, _, _)| c2 == c && m2 == m), "{c:?} bound twice");
            }
        }
    }
}
