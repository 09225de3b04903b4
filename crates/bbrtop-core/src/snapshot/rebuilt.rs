//! Per-socket history for snapshots that carry none (a remote exporter's frames), rebuilt on
//! the reader's side as the engine builds its own (the engine's tests hold the two together).
//! Apart from `history`, which the snapshot's types use: this file needs both.

use super::Snapshot;
use super::history::History;
use std::sync::Arc;

/// Per-socket history rebuilt from consecutive snapshots that carry none (a remote exporter's
/// frames): each socket's sample recorded at each snapshot, as the engine records its own polls.
pub struct Rebuilt {
    cap: usize,
    poll: u64,
    /// Each socket's ring and the poll it was first seen at.
    rings: rustc_hash::FxHashMap<crate::model::Cookie, (Arc<History>, u64)>,
}

impl Rebuilt {
    /// Histories of `cap` samples.
    pub fn new(cap: usize) -> Rebuilt {
        Rebuilt { cap, poll: 0, rings: Default::default() }
    }

    /// Records the next snapshot: each of its sockets gets its history up to it. A socket it
    /// does not list has closed, and its history goes.
    pub fn add(&mut self, snap: &mut Snapshot) {
        self.poll += 1;
        let (poll, cap) = (self.poll, self.cap);
        let mut rings = std::mem::take(&mut self.rings);
        snap.sockets = snap.sockets.with_history(poll, cap, |e| {
            let cookie = e.cookie;
            let (mut ring, first) = rings.remove(&cookie).unwrap_or_else(|| (Arc::default(), poll));
            let sample = super::history::sample_of(&e.record());
            if ring.needs_write(poll, &sample, cap) {
                Arc::make_mut(&mut ring).record(poll, sample, cap);
            }
            self.rings.insert(cookie, (Arc::clone(&ring), first));
            Some((ring, first))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::RuleConfig;
    use crate::snapshot::{Derived, HistoryView, RecordRef, SocketView};

    fn snap(cookies: &[u64]) -> Snapshot {
        let mut s = Snapshot::empty(RuleConfig::default());
        let views = cookies.iter().map(|&c| SocketView {
            record: RecordRef::single(crate::testing::record(c, "bbr").srtt_us(1000).build()),
            derived: Derived::default(),
            history: HistoryView::none(),
        });
        s.sockets = crate::snapshot::Sockets::of_views(views, Default::default());
        s
    }

    /// A socket a snapshot no longer lists has closed: its ring goes (the engine's tests check
    /// the samples themselves against the engine's own history).
    #[test]
    fn a_closed_sockets_history_goes() {
        let mut r = Rebuilt::new(5);
        r.add(&mut snap(&[1, 2]));
        let mut two = snap(&[1, 2]);
        r.add(&mut two);
        assert_eq!(two.sockets.get(2).unwrap().history.len(), 2);
        r.add(&mut snap(&[1, 3]));
        assert_eq!(r.rings.keys().copied().collect::<std::collections::BTreeSet<_>>(), [1, 3].into());
    }
}
