//! Keys to actions: one table for the commands, one for a replay's time controls, one for the
//! prompt line and one for the help overlay, which the overlay is generated from.

use super::app::{Action, Mode, View};
use crate::replay::Control;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_input::InputRequest as Edit;

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
        "filter: not lo and srtt > 100ms or cc bbr (not > and > or)",
    ),
    (KeyCode::Char('c'), NONE, Action::ClearFilter, "clear the filter"),
    (KeyCode::Esc, NONE, Action::ClearFilter, "clear the filter"),
    (KeyCode::Char('f'), NONE, Action::ToggleFreeze, "freeze / unfreeze the display"),
    (KeyCode::Enter, NONE, Action::ToggleDetail, "open / close the detail pane"),
    (KeyCode::Char('1'), NONE, Action::Show(View::Sockets), VIEWS),
    (KeyCode::Char('2'), NONE, Action::Show(View::Compare), VIEWS),
    (KeyCode::Char('3'), NONE, Action::Show(View::Alerts), VIEWS),
    (KeyCode::Char('4'), NONE, Action::Show(View::Closed), VIEWS),
    (KeyCode::Char('5'), NONE, Action::Show(View::Places), VIEWS),
    (KeyCode::Char('6'), NONE, Action::Show(View::Experiment), VIEWS),
    (KeyCode::Tab, NONE, Action::NextView, VIEWS),
    (KeyCode::Char('?'), NONE, Action::ToggleHelp, "this help"),
    (KeyCode::Char('h'), NONE, Action::ToggleHelp, "this help"),
    (KeyCode::F(1), NONE, Action::ToggleHelp, "this help"),
];

/// The views' keys share one line of help.
const VIEWS: &str = "sockets, BBR vs CUBIC, alerts, closed flows, where, experiment (Tab: next)";

/// The prompt line's keys (a filter, a time), as a shell's line editor has them; any other
/// character without Ctrl or Alt is typed.
pub const PROMPT_BINDINGS: &[Binding] = &[
    (KeyCode::Enter, NONE, Action::FilterApply, "apply"),
    (KeyCode::Esc, NONE, Action::FilterCancel, "cancel"),
    (KeyCode::Left, NONE, Action::Edit(Edit::GoToPrevChar), "move"),
    (KeyCode::Right, NONE, Action::Edit(Edit::GoToNextChar), "move"),
    (KeyCode::Home, NONE, Action::Edit(Edit::GoToStart), "move"),
    (KeyCode::Char('a'), CTRL, Action::Edit(Edit::GoToStart), "move"),
    (KeyCode::End, NONE, Action::Edit(Edit::GoToEnd), "move"),
    (KeyCode::Char('e'), CTRL, Action::Edit(Edit::GoToEnd), "move"),
    (KeyCode::Backspace, NONE, Action::Edit(Edit::DeletePrevChar), "delete a character"),
    (KeyCode::Delete, NONE, Action::Edit(Edit::DeleteNextChar), "delete a character"),
    (KeyCode::Char('w'), CTRL, Action::Edit(Edit::DeletePrevWord), "delete the word before"),
    (KeyCode::Char('u'), CTRL, Action::Edit(Edit::DeleteFromStart), "delete to the start / end"),
    (KeyCode::Char('k'), CTRL, Action::Edit(Edit::DeleteTillEnd), "delete to the start / end"),
    (KeyCode::Char('c'), CTRL, Action::Quit, "quit"),
];

/// The keys while help is shown. Help is modal, as htop's is: any other key does nothing, so
/// nothing changes behind it unseen, and `q` and Esc close it rather than quit or clear the filter.
pub const HELP_BINDINGS: &[Binding] = &[
    (KeyCode::Esc, NONE, Action::CloseHelp, "close this help"),
    (KeyCode::Char('q'), NONE, Action::CloseHelp, "close this help"),
    (KeyCode::Char('?'), NONE, Action::CloseHelp, "close this help"),
    (KeyCode::Char('h'), NONE, Action::CloseHelp, "close this help"),
    (KeyCode::F(1), NONE, Action::CloseHelp, "close this help"),
    (KeyCode::Char('c'), CTRL, Action::Quit, "quit"),
];

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
    (KeyCode::Char('g'), NONE, Action::StartGoto, "go to a time: HH:MM:SS (UTC), RFC 3339 or +90s"),
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
    // Shift is implied by an upper-case letter on some terminals and not on others.
    let mods = key.modifiers - SHIFT;
    let bound = |b: &&Binding| b.0 == key.code && (b.1 - SHIFT) == mods;
    if mode == Mode::Help {
        return HELP_BINDINGS.iter().find(bound).map(|b| b.2.clone());
    }
    if mode == Mode::Filtering {
        return match (PROMPT_BINDINGS.iter().find(bound), key.code) {
            (Some(b), _) => Some(b.2.clone()),
            (None, KeyCode::Char(c)) if !mods.intersects(CTRL | KeyModifiers::ALT) => {
                Some(Action::Edit(Edit::InsertChar(c)))
            }
            _ => None,
        };
    }
    bindings(replay).find(bound).map(|b| b.2.clone())
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
            (Mode::Filtering, KeyCode::Char('q'), NONE, Some(Action::Edit(Edit::InsertChar('q')))),
            (Mode::Filtering, KeyCode::Char('Q'), SHIFT, Some(Action::Edit(Edit::InsertChar('Q')))),
            (Mode::Filtering, KeyCode::Char('/'), NONE, Some(Action::Edit(Edit::InsertChar('/')))),
            (Mode::Filtering, KeyCode::Enter, NONE, Some(Action::FilterApply)),
            (Mode::Filtering, KeyCode::Esc, NONE, Some(Action::FilterCancel)),
            (Mode::Filtering, KeyCode::Char('c'), CTRL, Some(Action::Quit)),
            // The line editor's keys.
            (Mode::Filtering, KeyCode::Char('u'), CTRL, Some(Action::Edit(Edit::DeleteFromStart))),
            (Mode::Filtering, KeyCode::Char('k'), CTRL, Some(Action::Edit(Edit::DeleteTillEnd))),
            (Mode::Filtering, KeyCode::Char('w'), CTRL, Some(Action::Edit(Edit::DeletePrevWord))),
            (Mode::Filtering, KeyCode::Char('a'), CTRL, Some(Action::Edit(Edit::GoToStart))),
            (Mode::Filtering, KeyCode::Home, NONE, Some(Action::Edit(Edit::GoToStart))),
            (Mode::Filtering, KeyCode::Char('e'), CTRL, Some(Action::Edit(Edit::GoToEnd))),
            (Mode::Filtering, KeyCode::End, NONE, Some(Action::Edit(Edit::GoToEnd))),
            (Mode::Filtering, KeyCode::Left, NONE, Some(Action::Edit(Edit::GoToPrevChar))),
            (Mode::Filtering, KeyCode::Right, NONE, Some(Action::Edit(Edit::GoToNextChar))),
            (Mode::Filtering, KeyCode::Backspace, NONE, Some(Action::Edit(Edit::DeletePrevChar))),
            (Mode::Filtering, KeyCode::Delete, NONE, Some(Action::Edit(Edit::DeleteNextChar))),
            // Ctrl or Alt with a letter the editor does not take types nothing.
            (Mode::Filtering, KeyCode::Char('x'), CTRL, None),
            (Mode::Filtering, KeyCode::Char('b'), KeyModifiers::ALT, None),
            (Mode::Filtering, KeyCode::Tab, NONE, None),
            // Help shown: it closes, Ctrl-C quits, and the commands' keys do nothing.
            (Mode::Help, KeyCode::Esc, NONE, Some(Action::CloseHelp)),
            (Mode::Help, KeyCode::Char('q'), NONE, Some(Action::CloseHelp)),
            (Mode::Help, KeyCode::Char('?'), SHIFT, Some(Action::CloseHelp)),
            (Mode::Help, KeyCode::Char('c'), CTRL, Some(Action::Quit)),
            (Mode::Help, KeyCode::Char('c'), NONE, None),
            (Mode::Help, KeyCode::Char('s'), NONE, None),
            (Mode::Help, KeyCode::Char('3'), NONE, None),
            (Mode::Help, KeyCode::Char('/'), NONE, None),
            (Mode::Help, KeyCode::Enter, NONE, None),
            (Mode::Help, KeyCode::Char('Q'), SHIFT, None),
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
            Some(Action::Edit(Edit::InsertChar('n')))
        );
        assert_eq!(
            bindings(true).filter(|b| b.2 == Action::ToggleFreeze).count(),
            0,
            "no freeze in a replay"
        );
    }

    #[test]
    fn every_key_that_opens_help_closes_it_live_and_in_a_replay() {
        for replay in [false, true] {
            let opens: Vec<_> = bindings(replay).filter(|b| b.2 == Action::ToggleHelp).collect();
            assert!(opens.len() >= 2, "{opens:?}");
            for (code, m, _, _) in opens {
                let k = key(*code, *m);
                assert_eq!(action(Mode::Help, k, replay), Some(Action::CloseHelp), "{code:?}");
            }
            // In help, the time controls do nothing either.
            assert_eq!(action(Mode::Help, key(KeyCode::Char(' '), NONE), replay), None);
        }
    }

    #[test]
    fn every_view_has_a_key_and_no_key_is_bound_twice() {
        for v in View::ALL {
            assert!(BINDINGS.iter().any(|(_, _, a, _)| *a == Action::Show(v)), "{v:?}");
        }
        let prompt: Vec<_> = PROMPT_BINDINGS.iter().collect();
        let help: Vec<_> = HELP_BINDINGS.iter().collect();
        for b in [bindings(false).collect(), bindings(true).collect(), prompt, help] {
            for (i, (c, m, _, _)) in b.iter().enumerate() {
                assert!(!b[i + 1..].iter().any(|(c2, m2, _, _)| c2 == c && m2 == m), "{c:?} bound twice");
            }
        }
    }
}
