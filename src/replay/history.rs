//! Each socket's history rebuilt from consecutive recorded polls, in the engine's own history
//! rings: the sample of poll `j` is the one the live engine took from the same record
//! (`bbrtop_core::snapshot::history::sample_of`), so a replayed chart is the live one, only longer.

use bbrtop_core::model::Cookie;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::snapshot::history::History;
use bbrtop_core::snapshot::history::sample_of;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// One socket's ring: its samples, the poll it was first seen at (in the window) and last seen.
#[derive(Clone, Debug)]
struct Ring {
    history: Arc<History>,
    first: u64,
    last: u64,
}

/// The rings of every socket seen in the last `cap + SLACK` polls up to the last one applied:
/// a window of `cap` polls ending up to `SLACK` polls before the last is still in them, so a
/// step or a skip back shows without reading the window again.
#[derive(Clone, Debug)]
pub struct Histories {
    cap: usize,
    rings: FxHashMap<Cookie, Ring>,
    /// The last poll applied, if any.
    last: Option<usize>,
}

/// Polls the rings keep beyond the window: how far back a window can end without a re-read.
pub const SLACK: usize = 60;

impl Histories {
    /// Empty, keeping `cap` polls (at least one: the poll shown).
    pub fn new(cap: usize) -> Histories {
        Histories { cap: cap.max(1), rings: FxHashMap::default(), last: None }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The last poll applied.
    pub fn last(&self) -> Option<usize> {
        self.last
    }

    /// Forgets every poll applied.
    pub fn clear(&mut self) {
        self.rings.clear();
        self.last = None;
    }

    /// Where to start applying polls so that a window can end at `pos`: nowhere (`pos + 1`) when
    /// the rings already hold it (`pos` at most [`SLACK`] before the last poll applied), after
    /// the last poll applied when that is just behind `pos` (playing forward), else afresh.
    pub fn start_for(&mut self, pos: usize) -> usize {
        match self.last {
            Some(l) if pos <= l && l - pos <= SLACK => pos + 1,
            Some(l) if l < pos && pos - l < self.cap => l + 1,
            _ => {
                self.clear();
                (pos + 1).saturating_sub(self.cap)
            }
        }
    }

    /// Adds poll `j`'s samples (polls come in order, none skipped since the last).
    pub fn apply(&mut self, j: usize, snap: &Snapshot) {
        let (seq, cap) = (j as u64, self.cap + SLACK);
        for s in snap.sockets.entries() {
            let sample = sample_of(&s.record());
            let ring = self.rings.entry(s.cookie).or_insert_with(|| Ring {
                history: Arc::new(History::default()),
                first: seq,
                last: seq,
            });
            if ring.history.needs_write(seq, &sample, cap) {
                Arc::make_mut(&mut ring.history).record(seq, sample, cap);
            }
            ring.last = seq;
        }
        // A socket not seen for a whole window has no sample left in it.
        self.rings.retain(|_, r| r.last + cap as u64 > seq);
        self.last = Some(j);
    }

    /// `snap`, poll `end` (applied, and at most [`SLACK`] before the last), with each socket's
    /// history over the window of `cap` polls ending there.
    pub fn attach(&self, mut snap: Snapshot, end: usize) -> Snapshot {
        let rings = &self.rings;
        snap.sockets = snap.sockets.with_history(end as u64, self.cap, |e| {
            rings.get(&e.cookie).map(|r| (Arc::clone(&r.history), r.first))
        });
        snap
    }
}
