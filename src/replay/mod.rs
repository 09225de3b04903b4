//! Replaying a recording: the [`Player`] turns recorded polls into the snapshots the TUI draws,
//! one poll at a time at the recorded pace (or faster), with time controls, and rebuilds each
//! socket's history from consecutive polls (the detail pane's charts reach further back than the
//! live 60 polls). It reads polls through [`Polls`], so it is pure logic over what a recording
//! holds; time is a parameter and nothing here sleeps.

mod history;
mod player;
mod recording;
#[cfg(test)]
mod tests;
mod time;

pub use history::Histories;
pub use player::{Control, MAX_SPEED, MIN_SPEED, Player, PlayerOptions, Status};
pub use time::{format_time, parse_time, resolve};

use bbrtop_core::snapshot::Snapshot;
use std::ops::Range;
use std::time::SystemTime;

/// A recording's polls, as the player reads them.
pub trait Polls {
    /// How many polls there are.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// When poll `i` was taken (`i < len()`); polls are in time order.
    fn at(&self, i: usize) -> SystemTime;
    /// Polls `range` decoded, one snapshot each, in order; their history may be empty.
    fn read(&mut self, range: Range<usize>) -> anyhow::Result<Vec<Snapshot>>;
    /// The polls at which an alert began firing, ascending.
    fn alert_onsets(&self) -> &[usize];
}

/// Snapshots in memory as a recording, for tests.
#[cfg(any(test, feature = "test-support"))]
#[derive(Clone, Debug, Default)]
pub struct InMemory {
    snaps: Vec<Snapshot>,
    onsets: Vec<usize>,
}

#[cfg(any(test, feature = "test-support"))]
impl InMemory {
    pub fn new(snaps: Vec<Snapshot>) -> InMemory {
        let onsets = alert_onsets(&snaps);
        InMemory { snaps, onsets }
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Polls for InMemory {
    fn len(&self) -> usize {
        self.snaps.len()
    }

    fn at(&self, i: usize) -> SystemTime {
        self.snaps[i].taken_at
    }

    fn read(&mut self, range: Range<usize>) -> anyhow::Result<Vec<Snapshot>> {
        self.snaps.get(range.clone()).map(<[Snapshot]>::to_vec).ok_or_else(|| {
            anyhow::anyhow!("polls {}..{} of {} asked for", range.start, range.end, self.snaps.len())
        })
    }

    fn alert_onsets(&self) -> &[usize] {
        &self.onsets
    }
}

/// The polls at which some socket's alert is firing that was not firing at the poll before.
#[cfg(any(test, feature = "test-support"))]
pub fn alert_onsets(snaps: &[Snapshot]) -> Vec<usize> {
    let firing = |s: &Snapshot| s.firing().map(|a| a.cookie).collect::<std::collections::BTreeSet<_>>();
    let mut before = Default::default();
    let mut out = Vec::new();
    for (i, s) in snaps.iter().enumerate() {
        let now = firing(s);
        if now.difference(&before).next().is_some() {
            out.push(i);
        }
        before = now;
    }
    out
}
