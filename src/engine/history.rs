//! Per-socket history: a ring of the last N samples, run-length encoded.
//!
//! Most sockets on a busy host are idle, and an idle socket's sample does not change from one poll
//! to the next, so runs keep 100k sockets x 60 s of history in a few MB instead of hundreds.

use crate::model::Phase;
use serde::Serialize;
use std::collections::VecDeque;

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

/// The last `cap` samples of one socket, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct History {
    runs: VecDeque<(Sample, u32)>,
    len: usize,
    cap: usize,
}

/// How many samples a socket keeps by default: 60 s at the default 1 s interval.
pub const DEFAULT_HISTORY: usize = 60;

impl History {
    pub fn new(cap: usize) -> History {
        History { runs: VecDeque::new(), len: 0, cap: cap.max(1) }
    }

    pub fn push(&mut self, s: Sample) {
        match self.runs.back_mut() {
            Some((last, n)) if *last == s => *n += 1,
            _ => self.runs.push_back((s, 1)),
        }
        self.len += 1;
        while self.len > self.cap {
            let Some(front) = self.runs.front_mut() else { break };
            front.1 -= 1;
            self.len -= 1;
            if front.1 == 0 {
                self.runs.pop_front();
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Samples, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Sample> + '_ {
        self.runs.iter().flat_map(|(s, n)| std::iter::repeat_n(s, *n as usize))
    }

    pub fn last(&self) -> Option<&Sample> {
        self.runs.back().map(|(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(srtt: u32) -> Sample {
        Sample { srtt_us: srtt, ..Sample::default() }
    }

    #[test]
    fn keeps_the_last_cap_samples_in_order() {
        let mut h = History::new(5);
        for v in [1, 1, 2, 3, 3, 3, 4] {
            h.push(s(v));
        }
        let got: Vec<u32> = h.iter().map(|x| x.srtt_us).collect();
        assert_eq!(got, vec![2, 3, 3, 3, 4]);
        assert_eq!(h.len(), 5);
        assert_eq!(h.last().unwrap().srtt_us, 4);
    }

    #[test]
    fn idle_socket_is_one_run() {
        let mut h = History::new(60);
        for _ in 0..1000 {
            h.push(s(7));
        }
        assert_eq!(h.len(), 60);
        assert_eq!(h.runs.len(), 1);
        assert_eq!(h.iter().count(), 60);
    }
}
