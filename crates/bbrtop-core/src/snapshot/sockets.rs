//! A snapshot's sockets: a persistent map from cookie to [`Entry`], in cookie order. Cloning it
//! costs nothing and shares every entry; the engine replaces the entries of the sockets that
//! moved, so the snapshot before keeps its own. Views are derived when read ([`Sockets::iter`]),
//! as of the snapshot's time.
//!
//! Readers that keep something per socket (recordings, the TUI's sorted rows) ask what changed
//! since a snapshot they read before ([`Sockets::changes_since`]): the two maps share every
//! node no socket in it moved, and the walk skips those, so the answer costs what moved.

use super::entry::{Entry, ViewAt};
use super::history::History;
use super::socket::SocketView;
use crate::model::Cookie;
use serde::Serialize;
use serde::ser::SerializeSeq;
use std::sync::Arc;

/// The sockets of one snapshot.
#[derive(Clone, Default)]
pub struct Sockets {
    map: Map,
    at: ViewAt,
}

/// The persistent map of entries.
pub type Map = imbl::OrdMap<Cookie, Slot>;

/// An entry in the map. Two slots are the same when they hold the same allocation, or the same
/// change of the socket (an entry whose record was packed): an entry is never changed in place,
/// so a socket whose entry was replaced by a new version has changed.
#[derive(Clone, Debug)]
pub struct Slot(pub Arc<Entry>);

impl PartialEq for Slot {
    fn eq(&self, other: &Slot) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || (self.0.version != 0 && self.0.version == other.0.version)
    }
}

impl std::ops::Deref for Slot {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        &self.0
    }
}

/// One socket's change between two snapshots.
#[derive(Clone, Copy, Debug)]
pub enum Change<'a> {
    /// First seen since (or seen again).
    Added(&'a Entry),
    Changed {
        old: &'a Entry,
        new: &'a Entry,
    },
    Gone(&'a Entry),
}

impl Sockets {
    pub fn new(map: Map, at: ViewAt) -> Sockets {
        Sockets { map, at }
    }

    /// Views made elsewhere (a recording, a frame, a test), as of `at`.
    pub fn of_views(views: impl IntoIterator<Item = SocketView>, at: ViewAt) -> Sockets {
        let map = views
            .into_iter()
            .map(|v| {
                let mut e = Entry::of_view(&v, at.at_ms);
                let (ring, first) = v.history.ring();
                (e.history, e.first_poll) = (Some(ring), first);
                (v.record.cookie, Slot(Arc::new(e)))
            })
            .collect();
        Sockets { map, at }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// What the views are worked out for.
    pub fn at(&self) -> &ViewAt {
        &self.at
    }

    /// Every socket's view, in cookie order.
    pub fn iter(&self) -> Views<'_> {
        Views { entries: self.map.values(), at: &self.at }
    }

    /// Every socket's view, in cookie order, collected.
    pub fn to_vec(&self) -> Vec<SocketView> {
        self.iter().collect()
    }

    pub fn get(&self, cookie: Cookie) -> Option<SocketView> {
        self.map.get(&cookie).map(|e| e.view(&self.at))
    }

    pub fn entry(&self, cookie: Cookie) -> Option<&Entry> {
        self.map.get(&cookie).map(|s| &*s.0)
    }

    /// The entries, in cookie order: for readers that need no derived values.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.map.values().map(|s| &*s.0)
    }

    /// The same sockets with the history `ring` gives each (a ring and the poll its window may
    /// start at), as of poll `poll` with windows of `cap` samples: for readers that build history
    /// themselves from snapshots that carry none.
    pub fn with_history(
        &self,
        poll: u64,
        cap: usize,
        mut ring: impl FnMut(&Entry) -> Option<(Arc<History>, u64)>,
    ) -> Sockets {
        let map = self
            .map
            .iter()
            .map(|(c, s)| match ring(s) {
                Some((history, first_poll)) => {
                    (*c, Slot(Arc::new(Entry { history: Some(history), first_poll, ..Entry::clone(s) })))
                }
                None => (*c, s.clone()),
            })
            .collect();
        Sockets { map, at: ViewAt { poll, history: cap, ..self.at } }
    }

    /// The map, to change (the replay's history, tests).
    pub fn map_mut(&mut self) -> &mut Map {
        &mut self.map
    }

    /// The sockets that changed, came or went since `older` (a snapshot before this one), in
    /// cookie order. Nodes the two share are skipped: the cost is what changed.
    pub fn changes_since<'a>(&'a self, older: &'a Sockets) -> impl Iterator<Item = Change<'a>> + 'a {
        older.map.diff(&self.map).map(|d| match d {
            imbl::ordmap::DiffItem::Add(_, new) => Change::Added(new),
            imbl::ordmap::DiffItem::Update { old, new } => Change::Changed { old: old.1, new: new.1 },
            imbl::ordmap::DiffItem::Remove(_, old) => Change::Gone(old),
        })
    }
}

/// The views of a snapshot's sockets, derived one by one as they are read.
pub struct Views<'a> {
    entries: imbl::ordmap::Values<'a, Cookie, Slot, imbl::shared_ptr::DefaultSharedPtr>,
    at: &'a ViewAt,
}

impl Iterator for Views<'_> {
    type Item = SocketView;
    fn next(&mut self) -> Option<SocketView> {
        self.entries.next().map(|e| e.view(self.at))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<'a> IntoIterator for &'a Sockets {
    type Item = SocketView;
    type IntoIter = Views<'a>;
    fn into_iter(self) -> Views<'a> {
        self.iter()
    }
}

impl std::fmt::Debug for Sockets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// As a list of views, as a snapshot's JSON has always had them.
impl Serialize for Sockets {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len()))?;
        for v in self.iter() {
            seq.serialize_element(&v)?;
        }
        seq.end()
    }
}
