//! A recording on disk as the player reads it.

use super::Polls;
use crate::record::Recording;
use bbrtop_core::snapshot::Snapshot;
use std::ops::Range;
use std::time::SystemTime;

impl Polls for Recording {
    fn len(&self) -> usize {
        self.polls().len()
    }

    fn at(&self, i: usize) -> SystemTime {
        self.polls()[i].at
    }

    fn read(&mut self, range: Range<usize>) -> anyhow::Result<Vec<Snapshot>> {
        Recording::read(self, range)
    }

    fn alert_onsets(&self) -> &[usize] {
        Recording::alert_onsets(self)
    }
}
