//! The one-shot reader: a second [`DumpSink`] beside the engine. It derives each socket the
//! moment it arrives, as the engine would on first sight, tracks nothing, and hands the views
//! over in batches, so `snapshot --json` writes while the kernel is still dumping.

use crate::EngineConfig;
use bbrtop_core::model::{Cookie, SocketRecord};
use bbrtop_core::rule::{AlertTracker, RuleConfig};
use bbrtop_core::seam::{Aborted, DumpSink, Now, Walk, WalkFailed};
use bbrtop_core::snapshot::kernel::KernelOnset;
use bbrtop_core::snapshot::{Facts, HistoryView, RecordRef, SocketView, ViewAt};
use bbrtop_core::units::unix_ms;
use bbrtop_core::wire::{Dump, DumpStats};
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// Sockets per batch: about one netlink receive buffer's worth.
const BATCH: usize = 1024;

pub struct FirstSight<F: FnMut(Vec<SocketView>)> {
    cfg: EngineConfig,
    now: Now,
    batch: Vec<SocketRecord>,
    /// Sockets already handed over: a family the kernel restarted lists them again, and a
    /// stream cannot take back what it wrote.
    seen: FxHashSet<Cookie>,
    out: F,
    stats: DumpStats,
}

impl<F: FnMut(Vec<SocketView>)> FirstSight<F> {
    /// `out` gets each batch of views, in the order the kernel listed the sockets.
    pub fn new(cfg: EngineConfig, out: F) -> Self {
        FirstSight {
            cfg,
            now: Now::system(),
            batch: Vec::with_capacity(BATCH),
            seen: FxHashSet::default(),
            out,
            stats: DumpStats::default(),
        }
    }

    /// What reading the dump cost, once it has ended.
    pub fn stats(&self) -> DumpStats {
        self.stats
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = Arc::new(std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH)));
        let views = (0..batch.len() as u32)
            .map(|i| view(&self.cfg.rule, RecordRef::new(Arc::clone(&batch), i), self.now))
            .collect();
        (self.out)(views);
    }
}

/// The view the engine would publish of a socket it sees for the first time, without tracking it.
fn view(rule: &RuleConfig, record: RecordRef, now: Now) -> SocketView {
    let mut alert = AlertTracker::default();
    crate::tracked::evaluate(rule, &mut alert, &record, None, KernelOnset::Untimed, now.mono);
    let at_ms = unix_ms(now.wall);
    let facts = Facts {
        first_seen_ms: at_ms,
        read_at_ms: at_ms,
        inflated_since_ms: alert.onset.map(|o| unix_ms(now.wall_of(o))),
        alert_firing: alert.firing(),
        limited_by: crate::tracked::lifetime_limit(&record),
        ..Facts::default()
    };
    let at = ViewAt { at_ms, rule: *rule, ..ViewAt::default() };
    SocketView { derived: facts.derived(&record, &at), record, history: HistoryView::none() }
}

impl<F: FnMut(Vec<SocketView>)> DumpSink for FirstSight<F> {
    fn begin(&mut self, now: Now) {
        self.now = now;
    }

    fn record(&mut self, _idx: u32, rec: &SocketRecord) {
        if !self.cfg.filter.matches(rec) || !self.seen.insert(rec.cookie) {
            return;
        }
        self.batch.push(rec.clone());
        if self.batch.len() == BATCH {
            self.flush();
        }
    }

    fn end(&mut self, dump: Dump) {
        self.flush();
        self.stats = dump.stats;
    }

    fn abort(&mut self, _: Aborted) {
        self.batch.clear();
    }

    /// A one-shot read takes one namespace's dump; it starts no walk.
    fn walk_part(&mut self, _: Now, _: Vec<SocketRecord>, _: Vec<Cookie>) {}
    fn walked(&mut self, _: Result<Walk, WalkFailed>) {}
}
