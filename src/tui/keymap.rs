//! Keys to actions: one table, which the help overlay is generated from.

use super::app::{Action, Mode, View};
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
    (KeyCode::Char('1'), NONE, Action::Show(View::Sockets), "sockets"),
    (KeyCode::Char('2'), NONE, Action::Show(View::Compare), "BBR vs CUBIC, per cc"),
    (KeyCode::Char('3'), NONE, Action::Show(View::Alerts), "alerts"),
    (KeyCode::Char('4'), NONE, Action::Show(View::Closed), "closed flows (eBPF)"),
    (KeyCode::Char('5'), NONE, Action::Show(View::Places), "where: per pod, namespace or cgroup"),
    (KeyCode::Tab, NONE, Action::NextView, "next view"),
    (KeyCode::Char('?'), NONE, Action::ToggleHelp, "this help"),
    (KeyCode::Char('h'), NONE, Action::ToggleHelp, "this help"),
];

/// The action a key means in `mode`, if any.
pub fn action(mode: Mode, key: KeyEvent) -> Option<Action> {
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
    BINDINGS
        .iter()
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
            assert_eq!(action(*mode, key(*code, *m)), *want, "{mode:?} {code:?} {m:?}");
        }
    }

    #[test]
    fn every_view_has_a_key_and_no_key_is_bound_twice() {
        let b = BINDINGS;
        for v in View::ALL {
            assert!(b.iter().any(|(_, _, a, _)| *a == Action::Show(v)), "{v:?}");
        }
        for (i, (c, m, _, _)) in b.iter().enumerate() {
            assert!(!b[i + 1..].iter().any(|(c2, m2, _, _)| c2 == c && m2 == m), "{c:?} bound twice");
        }
    }
}
