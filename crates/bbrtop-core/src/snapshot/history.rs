//! Per-socket history: the last N samples, one per poll, run-length encoded by the poll number
//! each value began at.
//!
//! Most sockets on a busy host are idle, and an idle socket's sample does not change from one
//! poll to the next. A run stores where it began, not its length, so an unchanged sample costs no
//! write at all, and a snapshot can share the ring (an `Arc`) without the engine copying it.

use crate::model::{Phase, SocketRecord};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Arc;

/// One poll's values for the charts. Rates are f32: plenty for display, half the memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Sample {
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    pub cwnd_segs: u32,
    pub bbr_bw_bytes_per_sec: f32,
    pub delivery_rate_bytes_per_sec: f32,
    pub pacing_rate_bytes_per_sec: f32,
    pub phase: Option<Phase>,
}

/// A record's history sample: what the detail pane's charts plot for one poll (the replay
/// rebuilds history from recorded records with it).
pub fn sample_of(r: &SocketRecord) -> Sample {
    let i = &r.tcp_info;
    Sample {
        srtt_us: i.srtt_us().unwrap_or(0),
        min_rtt_us: i.min_rtt_us().unwrap_or(0),
        cwnd_segs: i.snd_cwnd_segs().unwrap_or(0),
        bbr_bw_bytes_per_sec: r.bbr.map_or(0.0, |b| b.bw_bytes_per_sec as f32),
        delivery_rate_bytes_per_sec: i.delivery_rate_bytes_per_sec().unwrap_or(0) as f32,
        pacing_rate_bytes_per_sec: i.pacing_rate_bytes_per_sec().unwrap_or(0) as f32,
        phase: crate::model::derive::netlink_phase(r).map(|(p, _)| p),
    }
}

/// How many samples a socket keeps by default: 60 s at the default 1 s interval.
pub const DEFAULT_HISTORY: usize = 60;

/// The runs of one socket's samples: (value, poll it began at), oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    runs: VecDeque<(Sample, u64)>,
}

impl History {
    /// One sample, from poll `seq` on.
    pub fn of_one(s: Sample, seq: u64) -> History {
        History { runs: VecDeque::from([(s, seq)]) }
    }

    /// Its only sample, when it has one run (an idle socket's whole history).
    pub fn only(&self) -> Option<&Sample> {
        (self.runs.len() == 1).then(|| self.last()).flatten()
    }

    pub fn last(&self) -> Option<&Sample> {
        self.runs.back().map(|(s, _)| s)
    }

    /// Whether recording `s` at poll `seq` would change anything (a new value, or an old run
    /// falling out of a window of `cap` polls).
    pub fn needs_write(&self, seq: u64, s: &Sample, cap: usize) -> bool {
        self.last() != Some(s) || self.runs.get(1).is_some_and(|(_, start)| *start + cap as u64 <= seq + 1)
    }

    /// Records `s` as the value from poll `seq` on, and forgets runs older than `cap` polls.
    pub fn record(&mut self, seq: u64, s: Sample, cap: usize) {
        if self.last() != Some(&s) {
            // Most sockets never leave their first run: allocate for one.
            if self.runs.capacity() == 0 {
                self.runs.reserve_exact(1);
            }
            self.runs.push_back((s, seq));
        }
        // A run is needed while the next one began inside the window.
        while self.runs.get(1).is_some_and(|(_, start)| *start + cap as u64 <= seq + 1) {
            self.runs.pop_front();
        }
    }
}

/// A socket's history as of one snapshot: the shared ring, and the poll the snapshot was taken at.
#[derive(Clone, Debug)]
pub struct HistoryView {
    ring: Arc<History>,
    first: u64,
    end: u64,
}

impl HistoryView {
    /// The window `[end + 1 - cap, end]` of `ring`, starting no earlier than `first_seen`.
    pub fn new(ring: Arc<History>, first_seen: u64, end: u64, cap: usize) -> HistoryView {
        HistoryView { ring, first: first_seen.max((end + 1).saturating_sub(cap as u64)), end }
    }

    /// No samples: a socket seen once and not tracked (one-shot reads). The empty ring is shared.
    pub fn none() -> HistoryView {
        static EMPTY: std::sync::LazyLock<Arc<History>> = std::sync::LazyLock::new(Arc::default);
        HistoryView { ring: Arc::clone(&EMPTY), first: 1, end: 0 }
    }

    /// Samples, oldest first, one per poll.
    pub fn iter(&self) -> impl Iterator<Item = &Sample> + '_ {
        let runs = &self.ring.runs;
        runs.iter().enumerate().flat_map(move |(i, (s, start))| {
            let next = runs.get(i + 1).map_or(self.end + 1, |(_, n)| *n);
            let (from, to) = ((*start).max(self.first), next.min(self.end + 1));
            std::iter::repeat_n(s, to.saturating_sub(from) as usize)
        })
    }

    pub fn len(&self) -> usize {
        (self.end + 1).saturating_sub(self.first) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn last(&self) -> Option<&Sample> {
        self.ring.last()
    }

    /// The ring, and the first poll the window starts at: what an entry keeps.
    pub fn ring(&self) -> (Arc<History>, u64) {
        (Arc::clone(&self.ring), self.first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(srtt: u32) -> Sample {
        Sample { srtt_us: srtt, ..Sample::default() }
    }

    fn window(values: &[u32], cap: usize) -> (History, Vec<u32>) {
        let mut h = History::default();
        for (seq, v) in values.iter().enumerate() {
            h.record(seq as u64, s(*v), cap);
        }
        let view = HistoryView::new(Arc::new(h.clone()), 0, values.len() as u64 - 1, cap);
        assert_eq!(view.iter().count(), view.len());
        let got = view.iter().map(|x| x.srtt_us).collect();
        (h, got)
    }

    #[test]
    fn keeps_the_last_cap_samples_in_order() {
        let (h, got) = window(&[1, 1, 2, 3, 3, 3, 4], 5);
        assert_eq!(got, vec![2, 3, 3, 3, 4]);
        assert_eq!(h.runs.len(), 3, "the run of 1s fell out of the window");
        assert_eq!(window(&[5, 6], 60).1, vec![5, 6]);
    }

    #[test]
    fn idle_socket_is_one_run_and_needs_no_write() {
        let (h, got) = window(&[7; 1000], 60);
        assert_eq!(got.len(), 60);
        assert_eq!(h.runs.len(), 1);
        assert!(!h.needs_write(1000, &s(7), 60));
        assert!(h.needs_write(1000, &s(8), 60));
    }

    #[test]
    fn first_seen_bounds_a_young_socket() {
        let mut h = History::default();
        h.record(10, s(1), 60);
        h.record(11, s(2), 60);
        let v = HistoryView::new(Arc::new(h), 10, 12, 60);
        assert_eq!(v.iter().map(|x| x.srtt_us).collect::<Vec<_>>(), vec![1, 2, 2]);
    }
}
