//! Per-socket history for snapshots that carry none (a remote exporter's frames), rebuilt on
//! the reader's side as the engine builds its own. Apart from `history`, which the snapshot's
//! types use: this file needs both.

use super::history::{History, HistoryView};
use super::snapshot::Snapshot;
use std::sync::Arc;

/// Per-socket history rebuilt from consecutive snapshots that carry none (a remote exporter's
/// frames): each socket's sample recorded at each snapshot, as the engine records its own polls.
pub struct Rebuilt {
    cap: usize,
    poll: u64,
    /// Each socket's ring and the poll it was first seen at.
    rings: rustc_hash::FxHashMap<bbrtop_core::model::Cookie, (Arc<History>, u64)>,
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
        for s in &mut snap.sockets {
            let (mut ring, first) = rings.remove(&s.record.cookie).unwrap_or_else(|| (Arc::default(), poll));
            let sample = super::sample_of(&s.record);
            if ring.needs_write(poll, &sample, cap) {
                Arc::make_mut(&mut ring).record(poll, sample, cap);
            }
            s.history = HistoryView::new(Arc::clone(&ring), first, poll, cap);
            self.rings.insert(s.record.cookie, (ring, first));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::history::Sample;

    /// Snapshots without history, as a remote sends them, get the history the engine that made
    /// them keeps.
    #[test]
    fn rebuilt_history_is_the_engines() {
        use crate::engine::sink::feed_dump;
        use crate::engine::{Engine, EngineConfig, Now};
        use bbrtop_core::testing::record;
        use std::time::Duration;
        let mut engine = Engine::new(EngineConfig { history: 5, ..EngineConfig::default() });
        let mut rebuilt = Rebuilt::new(5);
        let mut now = Now::system();
        for (poll, srtt) in [10_000, 12_000, 12_000, 15_000, 9_000, 9_000, 20_000].into_iter().enumerate() {
            // Socket 2 closes after the third poll; socket 3 opens at the fifth.
            let mut recs = vec![record(1, "bbr").srtt_us(srtt).build()];
            if poll < 3 {
                recs.push(record(2, "cubic").srtt_us(srtt * 2).build());
            }
            if poll >= 4 {
                recs.push(record(3, "cubic").srtt_us(srtt + 1).build());
            }
            now = now.after(Duration::from_secs(1));
            feed_dump(&mut engine, bbrtop_core::wire::Dump { sockets: recs, ..Default::default() }, now);
            let live = engine.tick(now);
            let mut bare = (*live).clone();
            for s in &mut bare.sockets {
                s.history = HistoryView::none();
            }
            rebuilt.add(&mut bare);
            let samples = |s: &crate::engine::snapshot::Snapshot| {
                s.sockets.iter().map(|v| (v.record.cookie, v.history.iter().copied().collect())).collect()
            };
            let (want, got): (Vec<(u64, Vec<Sample>)>, Vec<_>) = (samples(&live), samples(&bare));
            assert_eq!(got, want, "poll {poll}");
        }
        assert_eq!(rebuilt.rings.len(), 2, "the closed socket's history went");
    }
}
