//! A socket's sort key by one column of the table, owned, so that the row index can keep it
//! between frames: it orders as [`Column::compare`] orders the values (unknown last), and the
//! index breaks ties by cookie as the table always has.
//!
//! A key must not change while the socket does not: the index computes it only when the socket's
//! entry changes. Every column of the table reads what the entry holds (the record, the facts)
//! and nothing that grows with time alone; a column whose value did grow with time (an age, a
//! duration since) would be keyed by the instant it counts from instead, which orders the same.
//! `the_table_columns_do_not_move_with_time` holds every column of the table to this.

use bbrtop_core::columns::{Column, Value};
use bbrtop_core::snapshot::SocketView;
use std::cmp::Ordering;
use std::net::SocketAddr;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Key {
    /// Declared first, so known values sort before unknown ones, as `compare` has them.
    Known(Known),
    Unknown,
}

/// A known value. A column's values are all of one kind, so the order between kinds (here by
/// declaration) never decides anything.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Known {
    Addr(SocketAddr),
    Text(Box<str>),
    /// A number, or the first of a pair (the pacing gain of the gains), as `compare` orders them.
    Num(Total),
}

/// An f64 ordered by `total_cmp`, as `compare` orders numbers.
#[derive(Clone, Copy, Debug)]
pub struct Total(pub f64);

impl PartialEq for Total {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Total {}

impl PartialOrd for Total {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Total {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

impl Key {
    /// Socket `s`'s key by column `c`.
    pub fn of(c: &Column, s: &SocketView) -> Key {
        match c.value(s) {
            Value::Unknown => Key::Unknown,
            Value::Addr(a) => Key::Known(Known::Addr(a)),
            Value::Text(t) => Key::Known(Known::Text(t.into())),
            Value::Num(v) | Value::Pair(v, _) => Key::Known(Known::Num(Total(v))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::COLUMNS;
    use bbrtop_core::snapshot::{Entry, ViewAt};
    use bbrtop_core::testing::full_view;

    /// The row index keys a socket when it changes and keeps the key: a column of the table whose
    /// value moved with time alone would leave an idle socket's row out of place.
    #[test]
    fn the_table_columns_do_not_move_with_time() {
        let now = ViewAt { at_ms: 1_795_000_000_000, poll: 10, history: 60, ..ViewAt::default() };
        let e = Entry::of_view(&full_view(), now.at_ms);
        let later = ViewAt { at_ms: now.at_ms + 3_600_000, poll: now.poll + 3600, ..now };
        let (a, b) = (e.view(&now), e.view(&later));
        for c in COLUMNS.iter() {
            assert_eq!(Key::of(c, &a), Key::of(c, &b), "{c:?}");
            assert_ne!(Key::of(c, &a), Key::Unknown, "{c:?}: the fixture knows every value");
        }
    }
}
