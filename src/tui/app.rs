//! View state, kept apart from the data: what is selected, sorted, filtered, frozen, shown. Keys
//! become [`Action`]s (see `keymap`), and [`App::update`] is the only place state changes.

use super::rows::{Order, Rows};
use crate::replay::Control;
use bbrtop_core::columns::{self, Column};
use bbrtop_core::filter::Expr;
use bbrtop_core::model::Cookie;
use bbrtop_core::snapshot::Snapshot;
#[cfg(any(test, feature = "test-support"))]
use bbrtop_core::snapshot::SocketView;
use std::sync::{Arc, LazyLock};
use tui_input::{Input, InputRequest};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Sockets,
    Compare,
    Alerts,
    Closed,
    Places,
    Experiment,
}

impl View {
    pub const ALL: [View; 6] =
        [View::Sockets, View::Compare, View::Alerts, View::Closed, View::Places, View::Experiment];

    pub fn title(self) -> &'static str {
        match self {
            View::Sockets => "1 Sockets",
            View::Compare => "2 BBR vs CUBIC",
            View::Alerts => "3 Alerts",
            View::Closed => "4 Closed flows",
            View::Places => "5 Where",
            View::Experiment => "6 Experiment",
        }
    }

    /// The view after this one, from the last back to the first.
    fn next(self) -> View {
        let i = View::ALL.iter().position(|v| *v == self).unwrap_or(0);
        View::ALL[(i + 1) % View::ALL.len()]
    }
}

/// The socket table's columns, each sortable, in their usual order: the catalog's
/// (`bbrtop_core::columns`) that say they are shown here.
pub static COLUMNS: LazyLock<Vec<&'static Column>> = LazyLock::new(|| columns::in_tui().collect());

/// The column `by` places after `c` in [`COLUMNS`], round.
fn step(c: &Column, by: isize) -> &'static Column {
    let i = COLUMNS.iter().position(|x| *x == c).unwrap_or(0) as isize;
    COLUMNS[(i + by).rem_euclid(COLUMNS.len() as isize) as usize]
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    NextSort,
    PrevSort,
    ReverseSort,
    StartFilter,
    /// A key typed on the prompt line: a character, a move of the cursor, a deletion.
    Edit(InputRequest),
    FilterApply,
    FilterCancel,
    ClearFilter,
    ToggleFreeze,
    ToggleDetail,
    Show(View),
    NextView,
    ToggleHelp,
    CloseHelp,
    /// Show the table's columns from one further right / left (LOCAL stays).
    ScrollRight,
    ScrollLeft,
    /// A replay's time control, handed to its player.
    Time(Control),
    /// Type a time to go to (replay).
    StartGoto,
}

/// Whether keys go to the prompt line (a filter, a time), to the help overlay or to the commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Filtering,
    Help,
}

/// What the prompt line is typed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prompt {
    Filter,
    /// A replay's time to go to.
    Time,
}

#[derive(Clone, Debug)]
pub struct App {
    pub view: View,
    pub sort: &'static Column,
    pub descending: bool,
    pub selected: usize,
    /// The socket the selection is on: re-sorting live data keeps it, not its row number.
    pub pinned: Option<Cookie>,
    /// The filter in force (over every view), and the words it came from.
    pub filter: Expr,
    pub filter_text: String,
    /// The line being typed after `/` (or `g`, see `prompt`), with its cursor.
    pub editing: Option<Input>,
    pub prompt: Prompt,
    /// Why the last filter did not parse (the previous one stays in force), and what was typed,
    /// which `/` opens again to be mended.
    pub filter_error: Option<String>,
    pub rejected: Option<String>,
    /// Why the last time typed did not parse.
    pub time_error: Option<String>,
    /// A time control for the replay's player, taken by the loop.
    pub control: Option<Control>,
    pub frozen: Option<Arc<Snapshot>>,
    pub detail: bool,
    pub help: bool,
    pub quit: bool,
    /// Rows on a page, set by the last render (for PageUp/PageDown).
    pub page: usize,
    /// 0: the columns that fit, most wanted first; n: the columns from the nth after LOCAL on.
    pub col_offset: usize,
}

impl Default for App {
    fn default() -> Self {
        App {
            view: View::Sockets,
            sort: &columns::INFLATION,
            descending: true,
            selected: 0,
            pinned: None,
            filter: Expr::everything(),
            filter_text: String::new(),
            editing: None,
            prompt: Prompt::Filter,
            filter_error: None,
            rejected: None,
            time_error: None,
            control: None,
            frozen: None,
            detail: false,
            help: false,
            quit: false,
            page: 20,
            col_offset: 0,
        }
    }
}

impl App {
    pub fn mode(&self) -> Mode {
        if self.editing.is_some() {
            Mode::Filtering
        } else if self.help {
            Mode::Help
        } else {
            Mode::Normal
        }
    }

    /// The snapshot to show: the frozen one, or the latest.
    pub fn shown(&self, latest: &Arc<Snapshot>) -> Arc<Snapshot> {
        Arc::clone(self.frozen.as_ref().unwrap_or(latest))
    }

    /// Applies one action. `rows` is how many sockets the table shows now; `latest` is what a
    /// freeze captures (and, in a replay, the poll a time of day is taken on).
    pub fn update(&mut self, action: Action, rows: usize, latest: &Arc<Snapshot>) {
        match action {
            Action::Quit => self.quit = true,
            Action::Up | Action::Down | Action::PageUp | Action::PageDown | Action::Top | Action::Bottom => {
                self.move_selection(&action, rows)
            }
            Action::NextSort => self.sort = step(self.sort, 1),
            Action::PrevSort => self.sort = step(self.sort, -1),
            Action::ReverseSort => self.descending = !self.descending,
            Action::StartFilter => {
                let text = self.rejected.clone().unwrap_or_else(|| self.filter_text.clone());
                self.editing = Some(Input::new(text));
                self.prompt = Prompt::Filter;
            }
            Action::StartGoto => {
                self.editing = Some(Input::default());
                self.prompt = Prompt::Time;
                self.time_error = None;
            }
            Action::Edit(req) => {
                if let Some(e) = &mut self.editing {
                    e.handle(req);
                }
            }
            Action::FilterApply if self.prompt == Prompt::Time => self.apply_time(latest),
            Action::FilterApply => self.apply_filter(),
            Action::FilterCancel => self.editing = None,
            Action::ClearFilter => {
                self.filter = Expr::everything();
                self.filter_text.clear();
                self.filter_error = None;
                self.rejected = None;
            }
            Action::ToggleFreeze => {
                self.frozen = match self.frozen {
                    Some(_) => None,
                    None => Some(Arc::clone(latest)),
                }
            }
            Action::ToggleDetail => self.detail = !self.detail,
            Action::Show(v) => self.view = v,
            Action::NextView => self.view = self.view.next(),
            Action::ToggleHelp => self.help = !self.help,
            Action::CloseHelp => self.help = false,
            Action::ScrollRight => self.col_offset = (self.col_offset + 1).min(COLUMNS.len() - 2),
            Action::ScrollLeft => self.col_offset = self.col_offset.saturating_sub(1),
            Action::Time(c) => {
                self.time_error = None;
                self.control = Some(c);
            }
        }
    }

    /// The time typed becomes a control for the player; one that does not parse is reported.
    fn apply_time(&mut self, shown: &Snapshot) {
        let text = self.editing.take().unwrap_or_default().to_string();
        match crate::replay::parse_time(&text, shown.taken_at) {
            Ok(t) => self.control = Some(Control::Goto(t)),
            Err(e) => self.time_error = Some(e),
        }
    }

    /// Moves the selection over `rows` rows. Moving picks a row; `follow` pins that row's socket
    /// on the next frame.
    fn move_selection(&mut self, action: &Action, rows: usize) {
        self.pinned = None;
        let (last, page) = (rows.saturating_sub(1), self.page.max(1));
        self.selected = match action {
            Action::Up => self.selected.saturating_sub(1),
            Action::Down => (self.selected + 1).min(last),
            Action::PageUp => self.selected.saturating_sub(page),
            Action::PageDown => (self.selected + page).min(last),
            Action::Top => 0,
            Action::Bottom => last,
            // Not a move: `update` sends only moves here.
            _ => self.selected,
        };
    }

    /// Puts the typed line in force; one that does not parse is reported, and the filter in force
    /// stays.
    fn apply_filter(&mut self) {
        let text = self.editing.take().unwrap_or_default().to_string();
        match Expr::parse(&text) {
            Ok(f) => {
                self.filter = f;
                self.filter_text = text.trim().to_string();
                self.filter_error = None;
                self.rejected = None;
                self.selected = 0;
            }
            Err(e) => {
                self.filter_error = Some(format!("filter {text:?}: {e}"));
                self.rejected = Some(text);
            }
        }
    }

    /// What the table's rows are sorted and filtered by.
    pub fn order(&self) -> Order<'_> {
        Order { sort: self.sort, descending: self.descending, filter: &self.filter, owners: None }
    }

    /// Whether a filter is in force: the views then show what it matches.
    pub fn filtered(&self) -> bool {
        !self.filter.is_everything()
    }

    /// Puts the selection on the pinned socket's row in this frame's `rows` (it moves as live
    /// values re-sort), or keeps the row number when that socket is gone; then pins what is selected.
    pub fn follow(&mut self, rows: &Rows) {
        if let Some(i) = self.pinned.and_then(|c| rows.rank(c)) {
            self.selected = i;
        }
        self.selected = self.selected.min(rows.len().saturating_sub(1));
        self.pinned = rows.cookie_at(self.selected);
    }

    /// The sockets the filter matches, sorted, every one derived, filtered and sorted from scratch
    /// as the table did before it kept its rows (`Rows`): what the rows are held to in tests, and
    /// the reference the frame benchmark times them against.
    #[cfg(any(test, feature = "test-support"))]
    pub fn rows(&self, snap: &Snapshot) -> Vec<SocketView> {
        let mut v: Vec<SocketView> = if self.filtered() {
            snap.sockets.iter().filter(|s| self.filter.matches(s)).collect()
        } else {
            snap.sockets.iter().collect()
        };
        let col = self.sort;
        v.sort_by(|a, b| {
            let o = col.compare(a, b).then_with(|| a.record.cookie.cmp(&b.record.cookie));
            if self.descending { o.reverse() } else { o }
        });
        v
    }
}
