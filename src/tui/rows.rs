//! The socket table's rows, kept from frame to frame: the sockets the filter matches, ordered by
//! the sort column (ties by cookie), as (key, cookie) in a [`Ranked`] set. Each frame brings it
//! to the snapshot shown through what changed since the one it was last brought to
//! (`Sockets::changes_since`): only a socket that came, changed or went is derived, filtered and
//! keyed again, so an idle socket costs nothing per frame. It is built whole again only when what
//! the order is made of changes: the sort column, the filter, the rule or the history's length
//! (which views are derived with), or the poll going back (a replay's seek). Reversing the order
//! only reads the set from the other end.
//!
//! Rows are derived only when read: the table reads the rows on screen ([`Rows::window`]), the
//! detail pane the selected one. The Where view and the BBR-vs-CUBIC view under a filter need
//! every matching socket's view for their percentiles, and derive them ([`Rows::views`]) while
//! they are shown; neither is the view the TUI opens on.
//!
//! Filter words about values (`srtt > 100ms`) are true or false of what the entry holds, so they
//! are evaluated when the socket changes. `sending` is the one word whose truth can change with no
//! change of the socket: a socket in its first poll has no interval yet and is judged by the
//! moment (data in flight), and at the next poll, if it did not move, by its (empty) rates. The
//! index therefore evaluates it again at the next frame for the sockets that were in their first
//! poll when it last did, and only while the filter says `sending`; after that it only changes
//! with the socket.

use super::key::Key;
use super::procs::{Held, Owners};
use super::ranked::Ranked;
use bbrtop_core::columns::Column;
use bbrtop_core::filter::{Expr, Word};
use bbrtop_core::model::Cookie;
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::sockets::{Change, Sockets};
use bbrtop_core::snapshot::{Entry, Snapshot, SocketView, ViewAt};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// The rows of the socket table, and what they were worked out from.
#[derive(Clone, Default)]
pub struct Rows {
    basis: Option<Basis>,
    /// The sockets of the snapshot the rows are of.
    sockets: Sockets,
    /// The matching sockets, ascending by (key, cookie).
    ranked: Ranked<(Key, Cookie)>,
    /// Each matching socket's key, to find it in `ranked` when it changes or goes.
    keys: FxHashMap<Cookie, Key>,
    descending: bool,
    /// Sockets whose `sending` may turn without a change (see the module's words).
    recheck: Vec<Cookie>,
}

/// What the rows are sorted and filtered by: the app's choice, and who holds each socket (the
/// latest /proc scan's, for `process`).
#[derive(Clone, Copy, Debug)]
pub struct Order<'a> {
    pub sort: &'static Column,
    pub descending: bool,
    pub filter: &'a Expr,
    pub owners: Option<&'a Arc<Owners>>,
}

/// What the order and the filter's verdicts are made of: when any of it changes, every row is
/// worked out again.
#[derive(Clone, Debug, PartialEq)]
struct Basis {
    sort: &'static str,
    filter: Expr,
    rule: RuleConfig,
    history: usize,
    /// The scan the owners come from, while the filter says `process` (a new scan can turn any
    /// socket's verdict); else 0.
    owners: usize,
}

impl Rows {
    /// The rows of `snap` in `order`, worked out whole.
    pub fn of(order: Order, snap: &Snapshot) -> Rows {
        let mut r = Rows::default();
        r.update(order, snap);
        r
    }

    /// Brings the rows to `snap`, in `order`.
    pub fn update(&mut self, order: Order, snap: &Snapshot) {
        let at = *snap.sockets.at();
        let owners = match order.owners {
            Some(o) if by_process(order.filter) => Arc::as_ptr(o) as usize,
            _ => 0,
        };
        let basis = Basis {
            sort: order.sort.key,
            filter: order.filter.clone(),
            rule: at.rule,
            history: at.history,
            owners,
        };
        self.descending = order.descending;
        let sending = says(order.filter, |w| matches!(w, Word::Sending));
        // A poll before the one the rows are of (a replay's seek back) is worked out whole: the
        // sockets to check again for `sending` were noted going forward.
        let back = at.poll < self.sockets.at().poll;
        if self.basis.as_ref() != Some(&basis) || back {
            self.basis = Some(basis);
            return self.rebuild(order, &snap.sockets);
        }
        let old = std::mem::replace(&mut self.sockets, snap.sockets.clone());
        let new = &snap.sockets;
        let recheck = std::mem::take(&mut self.recheck);
        for change in new.changes_since(&old) {
            match change {
                Change::Added(e) | Change::Changed { new: e, .. } => self.place(order, e, &at, sending),
                Change::Gone(e) => self.take_out(e.cookie),
            }
        }
        for c in recheck {
            if let Some(e) = new.entry(c) {
                self.place(order, e, &at, sending);
            }
        }
    }

    /// Works out every row of `sockets`.
    fn rebuild(&mut self, order: Order, sockets: &Sockets) {
        let at = *sockets.at();
        let sending = says(order.filter, |w| matches!(w, Word::Sending));
        let (mut keyed, mut recheck) = (Vec::new(), Vec::new());
        for e in sockets.entries() {
            let v = view_of(e, &at);
            if first_poll(&v, &at, sending) {
                recheck.push(e.cookie);
            }
            if order.filter.matches(&Held::new(&v, order.owners)) {
                keyed.push((Key::of(order.sort, &v), e.cookie));
            }
        }
        keyed.sort_unstable();
        self.keys = keyed.iter().map(|(k, c)| (*c, k.clone())).collect();
        self.ranked = Ranked::from_sorted(keyed);
        self.sockets = sockets.clone();
        self.recheck = recheck;
    }

    /// Puts entry `e` where it now belongs: in its place by its key if the filter matches it, out
    /// of the rows if not.
    fn place(&mut self, order: Order, e: &Entry, at: &ViewAt, sending: bool) {
        self.take_out(e.cookie);
        let v = view_of(e, at);
        if first_poll(&v, at, sending) {
            self.recheck.push(e.cookie);
        }
        if order.filter.matches(&Held::new(&v, order.owners)) {
            let k = Key::of(order.sort, &v);
            self.ranked.insert((k.clone(), e.cookie));
            self.keys.insert(e.cookie, k);
        }
    }

    fn take_out(&mut self, c: Cookie) {
        if let Some(k) = self.keys.remove(&c) {
            self.ranked.remove(&(k, c));
        }
    }

    pub fn len(&self) -> usize {
        self.ranked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranked.is_empty()
    }

    /// The row socket `c` is on, if the filter matches it.
    pub fn rank(&self, c: Cookie) -> Option<usize> {
        let k = self.keys.get(&c)?;
        let r = self.ranked.rank(&(k.clone(), c))?;
        Some(if self.descending { self.len() - 1 - r } else { r })
    }

    /// The socket on row `i`.
    pub fn cookie_at(&self, i: usize) -> Option<Cookie> {
        let r = if self.descending { self.len().checked_sub(i + 1)? } else { i };
        self.ranked.get(r).map(|(_, c)| *c)
    }

    /// The cookies of rows `first..first + n` (those there are), in row order.
    fn cookies(&self, first: usize, n: usize) -> Vec<Cookie> {
        let first = first.min(self.len());
        let n = n.min(self.len() - first);
        if self.descending {
            let mut v: Vec<Cookie> =
                self.ranked.iter_from(self.len() - first - n).take(n).map(|(_, c)| *c).collect();
            v.reverse();
            v
        } else {
            self.ranked.iter_from(first).take(n).map(|(_, c)| *c).collect()
        }
    }

    /// The views of rows `first..first + n`: what the table shows. Only these are derived.
    pub fn window(&self, first: usize, n: usize) -> Vec<SocketView> {
        let at = self.sockets.at();
        self.cookies(first, n)
            .into_iter()
            .filter_map(|c| self.sockets.entry(c).map(|e| view_of(e, at)))
            .collect()
    }

    /// The socket inodes of rows `first..first + n`, read from the entries with no view derived:
    /// what the process lookup looks for.
    pub fn inodes(&self, first: usize, n: usize) -> Vec<u32> {
        self.cookies(first, n)
            .into_iter()
            .filter_map(|c| self.sockets.entry(c).map(|e| e.record().inode))
            .collect()
    }

    /// The view of row `i`.
    pub fn get(&self, i: usize) -> Option<SocketView> {
        self.window(i, 1).pop()
    }

    /// Every row's view, in order: for the views that aggregate the sockets the filter matches.
    pub fn views(&self) -> Vec<SocketView> {
        self.window(0, self.len())
    }
}

/// Whether the filter says `process`: who holds each socket then decides its rows.
pub fn by_process(e: &Expr) -> bool {
    says(e, |w| matches!(w, Word::Process(_)))
}

/// Whether a word `is` among the filter's.
fn says(e: &Expr, is: fn(&Word) -> bool) -> bool {
    match e {
        Expr::And(v) | Expr::Or(v) => v.iter().any(|e| says(e, is)),
        Expr::Not(e) => says(e, is),
        Expr::Word(w) => is(w),
    }
}

/// Whether `v` is in its first poll while the filter says `sending`: its verdict may turn at the
/// next poll with no change. (With a history of one poll, every socket is judged by the moment,
/// and the verdict only turns with a change.)
fn first_poll(v: &SocketView, at: &ViewAt, sending: bool) -> bool {
    sending && at.history > 1 && v.history.len() <= 1
}

#[cfg(test)]
thread_local! {
    static DERIVED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Views the rows derived on this thread so far (tests: what a frame pays for).
#[cfg(test)]
pub fn derived() -> usize {
    DERIVED.with(std::cell::Cell::get)
}

/// Every view the rows derive goes through here, so that tests can count them.
fn view_of(e: &Entry, at: &ViewAt) -> SocketView {
    #[cfg(test)]
    DERIVED.with(|d| d.set(d.get() + 1));
    e.view(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::{App, COLUMNS};
    use bbrtop_core::model::derive::Rates;
    use bbrtop_core::snapshot::entry::{Facts, Kept};
    use bbrtop_core::snapshot::sockets::{Map, Slot};
    use bbrtop_core::testing::record;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// Sockets over polls, changed by hand: entries are shared from one snapshot to the next
    /// unless replaced, as the engine's are.
    struct World {
        map: Map,
        poll: u64,
        version: u64,
    }

    /// What a socket is made of here: few values each, so that keys tie and filters split.
    #[derive(Clone, Copy, Debug)]
    struct Socket {
        cubic: bool,
        srtt: Option<u32>,
        port: u16,
        in_flight: bool,
        rates: bool,
    }

    fn socket() -> impl Strategy<Value = Socket> {
        (any::<bool>(), prop::option::of(1u32..4), 40_000u16..40_004, any::<bool>(), any::<bool>()).prop_map(
            |(cubic, srtt, port, in_flight, rates)| Socket {
                cubic,
                srtt: srtt.map(|s| s * 10_000),
                port,
                in_flight,
                rates,
            },
        )
    }

    const T0: i64 = 1_795_000_000_000;

    impl World {
        fn new() -> World {
            World { map: Map::new(), poll: 1, version: 0 }
        }

        fn at(&self) -> ViewAt {
            ViewAt {
                at_ms: T0 + self.poll as i64 * 1000,
                poll: self.poll,
                history: 60,
                rule: RuleConfig::default(),
            }
        }

        /// Puts socket `c` in as `s` (first seen now, or when it first was).
        fn put(&mut self, c: Cookie, s: Socket) {
            let mut r = record(c, if s.cubic { "cubic" } else { "bbr" })
                .local(format!("10.77.1.1:{}", s.port).as_str())
                .unacked_segs(u32::from(s.in_flight) * 5)
                .pacing_rate_bytes_per_sec(u64::from(s.port % 3) * 1000)
                .bbr(2_400_000, 20_000, 1.25, 2.0);
            if let Some(v) = s.srtt {
                r = r.srtt_us(v).min_rtt_us(10_000);
            }
            let at = self.at();
            let first_poll = self.map.get(&c).map_or(self.poll, |e| e.first_poll);
            let mut facts = Facts { first_seen_ms: at.at_ms, read_at_ms: at.at_ms, ..Facts::default() };
            if s.rates {
                facts.set_rates(Rates { goodput_bytes_per_sec: Some(1e6), ..Rates::default() });
            }
            self.version += 1;
            let e = Entry {
                cookie: c,
                record: Kept::Whole(Arc::new(r.build())),
                facts,
                history: None,
                first_poll,
                version: self.version,
            };
            self.map.insert(c, Slot(Arc::new(e)));
        }

        /// The snapshot of the poll, and the next poll begins.
        fn snapshot(&mut self) -> Snapshot {
            let mut s = Snapshot::empty(RuleConfig::default());
            s.sockets = Sockets::new(self.map.clone(), self.at());
            self.poll += 1;
            s
        }

        /// The `i`th socket (round), if any.
        fn nth(&self, i: usize) -> Option<Cookie> {
            (!self.map.is_empty()).then(|| *self.map.keys().nth(i % self.map.len()).expect("in range"))
        }
    }

    const FILTERS: [&str; 8] = [
        "",
        "cc cubic",
        "srtt > 15ms",
        "not srtt > 15ms",
        "sending",
        "not sending and cc bbr",
        "port 40001 or sending",
        "pacing < 10kbit/s",
    ];

    #[derive(Clone, Debug)]
    enum Op {
        Add(Socket),
        Change(usize, Socket),
        Remove(usize),
        Sort(usize),
        Reverse,
        Filter(usize),
        /// Select row `n` and move by it, as keys do.
        Select(usize),
        /// The poll ends here; the TUI draws it, or (false) misses it.
        Poll(bool),
        /// A replay's seek: the TUI draws a poll drawn or missed before (the `n`th back, round).
        Seek(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => socket().prop_map(Op::Add),
            4 => (any::<usize>(), socket()).prop_map(|(i, s)| Op::Change(i, s)),
            2 => any::<usize>().prop_map(Op::Remove),
            1 => (0..COLUMNS.len()).prop_map(Op::Sort),
            1 => Just(Op::Reverse),
            1 => (0..FILTERS.len()).prop_map(Op::Filter),
            1 => any::<usize>().prop_map(Op::Select),
            4 => Just(Op::Poll(true)),
            1 => Just(Op::Poll(false)),
            1 => any::<usize>().prop_map(Op::Seek),
        ]
    }

    /// The rows kept from poll to poll are the rows worked out from scratch.
    fn agree(rows: &Rows, app: &App, snap: &Snapshot) -> Result<(), TestCaseError> {
        let want: Vec<Cookie> = app.rows(snap).iter().map(|s| s.record.cookie).collect();
        let got: Vec<Cookie> = rows.views().iter().map(|s| s.record.cookie).collect();
        prop_assert_eq!(&got, &want, "sort {:?} desc {} filter {:?}", app.sort, app.descending, app.filter);
        for (i, c) in want.iter().enumerate() {
            prop_assert_eq!(rows.rank(*c), Some(i));
            prop_assert_eq!(rows.cookie_at(i), Some(*c));
        }
        prop_assert_eq!(rows.cookie_at(want.len()), None);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Sockets come, change and go, polls pass with nothing moving (a socket in its first
        /// poll then stops being judged by the moment), frames are missed, a replay seeks back
        /// and forth, and the sort and the filter change: after each frame the rows equal a
        /// from-scratch filter and sort, and the selection is on the socket it follows.
        #[test]
        fn kept_rows_equal_rows_from_scratch(ops in prop::collection::vec(op(), 1..120)) {
            let mut w = World::new();
            let (mut app, mut rows) = (App::default(), Rows::default());
            let (mut next, mut polls) = (1, Vec::new());
            for op in ops {
                match op {
                    Op::Add(s) => {
                        w.put(next, s);
                        next += 1;
                    }
                    Op::Change(i, s) => if let Some(c) = w.nth(i) { w.put(c, s) },
                    Op::Remove(i) => if let Some(c) = w.nth(i) { w.map.remove(&c); },
                    Op::Sort(i) => app.sort = COLUMNS[i],
                    Op::Reverse => app.descending = !app.descending,
                    Op::Filter(i) => app.filter = Expr::parse(FILTERS[i]).expect("a filter"),
                    Op::Select(n) => {
                        app.selected = n % 7;
                        app.pinned = None;
                    }
                    Op::Seek(n) => {
                        if let Some(snap) = polls.iter().rev().nth(n % polls.len().max(1)) {
                            rows.update(app.order(), snap);
                            agree(&rows, &app, snap)?;
                        }
                    }
                    Op::Poll(drawn) => {
                        let snap = w.snapshot();
                        polls.push(snap.clone());
                        if drawn {
                            let pinned = app.pinned;
                            rows.update(app.order(), &snap);
                            agree(&rows, &app, &snap)?;
                            app.follow(&rows);
                            if let Some(c) = pinned.filter(|c| rows.rank(*c).is_some()) {
                                prop_assert_eq!(app.pinned, Some(c), "the selection follows its socket");
                            }
                        }
                    }
                }
            }
            let snap = w.snapshot();
            rows.update(app.order(), &snap);
            agree(&rows, &app, &snap)?;
        }
    }

    /// A frame derives the rows that changed since the last, and the rows on screen; an idle
    /// poll derives nothing but what is shown.
    #[test]
    fn only_changed_and_shown_rows_are_derived() {
        use crate::tui::Source;
        use crate::tui::procs::Owners;
        use crate::tui::render::{Screen, buffer_of};
        let mut w = World::new();
        let s = |i: u64| Socket {
            cubic: i.is_multiple_of(3),
            srtt: Some(10_000 + (i % 97) as u32 * 100),
            port: 40_000,
            in_flight: false,
            rates: false,
        };
        for c in 1..=5000 {
            w.put(c, s(c));
        }
        let mut app = App::default();
        let before = derived();
        let mut rows = Rows::of(app.order(), &w.snapshot());
        assert_eq!(derived() - before, 5000, "built whole: every socket once");

        // Three change, one comes, one goes.
        for c in [10, 20, 30] {
            w.put(c, s(c + 1));
        }
        w.put(9000, s(1));
        w.map.remove(&40);
        let snap = w.snapshot();
        let before = derived();
        rows.update(app.order(), &snap);
        app.follow(&rows);
        assert_eq!(derived() - before, 4, "the changed and the new socket");

        let (owners, sys) = (Owners::new(), bbrtop_core::system::SystemInfo::example());
        let frame = |app: &App, rows: &Rows, snap: &Snapshot| {
            let before = derived();
            let screen = Screen {
                app,
                snap,
                rows,
                sys: &sys,
                owners: &owners,
                source: &Source::Local,
                playback: None,
                experiment: None,
            };
            buffer_of(&screen, 120, 40);
            derived() - before
        };
        let shown = frame(&app, &rows, &snap);
        assert!(shown > 0 && shown <= 40, "a screenful of rows at most, not 5000: {shown}");

        // An idle poll: nothing changed, nothing is derived but the screen.
        let snap = w.snapshot();
        let before = derived();
        rows.update(app.order(), &snap);
        assert_eq!(derived() - before, 0, "an idle poll derives nothing");
        assert_eq!(frame(&app, &rows, &snap), shown);
        // The detail pane adds the selected socket; the last page is as cheap as the first.
        let detail = App { detail: true, ..app.clone() };
        assert!(frame(&detail, &rows, &snap) <= shown + 1);
        let bottom = App { selected: rows.len() - 1, ..app.clone() };
        assert_eq!(frame(&bottom, &rows, &snap), shown);
    }
}
