//! The engine: the single writer. It applies collectors' updates to its state and publishes an
//! immutable [`Snapshot`] on each tick. Time is always a parameter ([`Now`]), so tests drive it.

pub mod aggregate;
mod alerts;
pub mod first_sight;
mod kernel;
mod totals;
mod tracked;
mod view;

use alerts::Alerts;
use bbrtop_core::filter::Filter;
use bbrtop_core::model::derive::{self, Counters, Rates};
use bbrtop_core::model::{Cookie, SocketRecord, Tally};
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::rule::{RuleConfig, Sample as RuleSample};
use bbrtop_core::seam::{self, Now, Update, Walk, WalkFailed};
use bbrtop_core::snapshot::history::{self, HistoryView};
use bbrtop_core::snapshot::{CollectorStatus, RecordRef, Snapshot, SocketView};
use bbrtop_core::wire::Dump;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Duration;
use tracked::{GRACE, Tracked, evaluate};
use view::{derived, overlay, quiet_view};

#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub rule: RuleConfig,
    /// Samples of history per socket.
    pub history: usize,
    /// Sockets outside the filter are not tracked at all.
    pub filter: Filter,
    /// Resolved alerts kept for display.
    pub recent_alerts: usize,
    /// The peer groups the counters are kept per (`--peer-groups.file`).
    pub groups: Arc<PeerGroups>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            rule: RuleConfig::default(),
            history: history::DEFAULT_HISTORY,
            filter: Filter::default(),
            recent_alerts: 50,
            groups: Arc::default(),
        }
    }
}

pub struct Engine {
    cfg: EngineConfig,
    /// Where each socket is in `tracked`: a small map, and the state itself stays dense.
    index: FxHashMap<Cookie, u32>,
    tracked: Vec<Tracked>,
    /// Whether the dump being read needs no filtering.
    unfiltered: bool,
    generation: u64,
    seq: u64,
    netlink: CollectorStatus,
    /// The kernel walk's status, once it has walked.
    walk: CollectorStatus,
    /// The last snapshot published: a socket that did not move keeps its view, with its clocks
    /// brought forward, instead of having it derived again (most sockets, with the walk).
    last: Option<Arc<Snapshot>>,
    /// Sockets whose close record came before any walk or dump listed them: the next walk may
    /// still hold the record of their last move, which must not bring them back.
    closed_untracked: rustc_hash::FxHashSet<Cookie>,
    alerts: Alerts,
    kernel: kernel::KernelState,
    totals: totals::Totals,
    /// Whether a close record of a socket never tracked counts: only with no filter but states
    /// (the close record cannot be filtered as a socket is).
    count_untracked: bool,
    /// The namespace whose sockets the engine sees, while only netlink reads them; None once the
    /// walk reads every namespace's. Close records of other namespaces are not counted.
    scope: Option<u64>,
    /// When the dump being read was read.
    reading: Now,
}

impl Engine {
    pub fn new(cfg: EngineConfig) -> Engine {
        Engine {
            index: FxHashMap::default(),
            tracked: Vec::new(),
            unfiltered: true,
            generation: 0,
            seq: 0,
            netlink: CollectorStatus::netlink(),
            walk: CollectorStatus::walk(),
            closed_untracked: Default::default(),
            last: None,
            alerts: Alerts { keep: cfg.recent_alerts, ..Alerts::default() },
            totals: totals::Totals::new(Arc::clone(&cfg.groups)),
            count_untracked: Filter { states: None, ..cfg.filter.clone() }.is_empty(),
            scope: None,
            cfg,
            kernel: kernel::KernelState::default(),
            reading: Now::system(),
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Applies what a collector learned besides sockets (those come through [`sink::DumpSink`]).
    pub fn apply(&mut self, update: Update) {
        match update {
            Update::Kernel(k) => {
                if let Some(&slot) = self.index.get(&k.cookie()) {
                    self.tracked[slot as usize].stale_view = true;
                }
                self.kernel.apply(k)
            }
            Update::Closed(c) => {
                match self.index.get(&c.cookie) {
                    Some(&slot) => {
                        let t = &mut self.tracked[slot as usize];
                        t.closed = true;
                        self.totals.count(&mut t.account, &c.cc, c.peer.ip(), &c.counts);
                    }
                    None => {
                        self.closed_untracked.insert(c.cookie);
                        let ours = self.scope.is_none_or(|ns| ns == u64::from(c.netns));
                        if self.count_untracked && ours {
                            self.totals.closed_untracked(&c);
                        }
                    }
                }
                self.kernel.close(*c)
            }
            Update::BpfStatus(poll) => self.kernel.bpf_poll(poll),
        }
    }

    /// One socket of the dump being read; `idx` is its place in that dump's record vector.
    /// Returns its slot, unless the filter leaves it out.
    fn observe(&mut self, idx: u32, rec: &SocketRecord, now: Now) -> Option<u32> {
        if !self.unfiltered && !self.cfg.filter.matches(rec) {
            return None;
        }
        let (rule, cap, generation) = (self.cfg.rule, self.cfg.history, self.generation);
        let cookie = rec.cookie;
        let counters = Counters::of(&rec.tcp_info);
        let slot = *self.index.entry(cookie).or_insert_with(|| {
            let account = self.totals.open(cookie, rec.cc_name(), rec.peer.ip());
            self.tracked.push(Tracked::new(rec, counters, now.mono, generation, account));
            (self.tracked.len() - 1) as u32
        });
        let t = &mut self.tracked[slot as usize];
        self.totals.count(&mut t.account, rec.cc_name(), rec.peer.ip(), &Tally::of(&rec.tcp_info));
        let dt = now.mono.saturating_duration_since(t.counters_at);
        if dt > Duration::ZERO {
            t.rates = derive::rates(&t.counters, &counters, dt);
            let interval = match (counters.limits, t.counters.limits) {
                (Some(c), Some(p)) => Some(c.since(p)),
                _ => None,
            };
            let limits = interval.filter(|l| l.busy_us > 0).or(counters.limits);
            t.limited_by = limits.and_then(|l| derive::limited_by(l, rec.tcp_info.app_limited()));
            t.counters = counters;
            t.counters_at = now.mono;
        }
        t.next_idx = idx;
        t.generation = generation;

        let (sample, tr) = evaluate(&rule, t, rec, self.kernel.onset(cookie), now.mono);
        self.alerts.record(rec, &t.alert, sample, tr, now);
        let sample = history::sample_of(rec);
        // Only a change is written: an idle socket's ring stays shared with the snapshots.
        if t.history.needs_write(generation, &sample, cap) {
            Arc::make_mut(&mut t.history).record(generation, sample, cap);
        }
        Some(slot)
    }

    /// Ends the dump whose records were observed: sockets of its namespace it does not list have
    /// closed (sockets of other namespaces, which a kernel walk reported, are not its to end).
    fn end_dump(&mut self, dump: Dump, now: Now) {
        self.netlink.saw_dump(&dump.stats, now.wall);
        // Once a walk has succeeded, netlink only reconciles: the walk's view spans every namespace.
        if self.walk.last_success_at.is_none() {
            self.scope = dump.netns;
        }
        // A dump lists only sockets still open: a close seen before it needs no remembering.
        self.closed_untracked.clear();
        let (generation, records) = (self.generation, Arc::new(dump.sockets));
        // A restarted family was observed twice: a socket seen only the first time may point at
        // another socket's place now. It is gone; the check costs a pass only after a restart.
        let recheck = dump.stats.intr_retries > 0;
        // A dump of one namespace speaks for that namespace's sockets only.
        let ours = |t: &Tracked| {
            let netns = t.rec.as_ref().and_then(|r| r.netns);
            dump.netns.is_none() || netns.is_none() || netns == dump.netns
        };
        let mut slot = 0;
        while slot < self.tracked.len() {
            let t = &mut self.tracked[slot];
            let listed = t.generation == generation
                && (!recheck || records.get(t.next_idx as usize).is_some_and(|r| r.cookie == t.cookie));
            if listed {
                t.rec = Some(RecordRef::new(Arc::clone(&records), t.next_idx));
                t.missed = 0;
            } else if ours(t) && !self.keep_missing(slot, now) {
                continue;
            }
            slot += 1;
        }
        self.kernel.prune(generation, |c| self.index.contains_key(&c));
    }

    /// Sockets the walk found moving; the others are as they were. A socket eBPF saw close goes
    /// now (its record stays in the closed flows), and so does one the walk saw enter CLOSE (a
    /// second sign, for a close record the kernel did not trace). Each walked record gets an
    /// allocation of its own: a socket that stays quiet for hours must not keep a whole
    /// walk's batch alive.
    fn walk_moved(&mut self, w: Walk) {
        self.generation += 1;
        // The walk hands over only the states asked for, as the kernel does for a dump.
        self.unfiltered = Filter { states: None, ..self.cfg.filter.clone() }.is_empty();
        let (now, generation) = (w.now, self.generation);
        self.scope = None;
        self.walk.saw_walk(&w.stats, w.duration, now.wall);
        for cookie in &w.gone {
            if let Some(&slot) = self.index.get(cookie) {
                self.tracked[slot as usize].closed = true;
            }
        }
        for rec in w.sockets {
            if self.closed_untracked.contains(&rec.cookie) {
                continue;
            }
            if let Some(slot) = self.observe(0, &rec, now) {
                let t = &mut self.tracked[slot as usize];
                t.rec = Some(RecordRef::single(rec));
                t.missed = 0;
            }
        }
        let mut slot = 0;
        while slot < self.tracked.len() {
            let t = &mut self.tracked[slot];
            let quiet = t.generation != generation;
            if quiet && t.lingering(now.mono) {
                self.end_socket(slot, now);
                continue;
            }
            if quiet && t.closed && !self.keep_missing(slot, now) {
                continue;
            }
            if quiet {
                self.age(slot, now);
            }
            slot += 1;
        }
        self.closed_untracked.clear();
        self.kernel.prune(generation, |c| self.index.contains_key(&c));
    }

    /// A tracked socket its source did not list: kept for a grace poll (true), or ended and
    /// pruned, keeping `tracked` dense (false: `slot` now holds another socket).
    fn keep_missing(&mut self, slot: usize, now: Now) -> bool {
        let t = &mut self.tracked[slot];
        if t.missed < GRACE && !t.closed && t.rec.is_some() {
            // Kept, unseen, for a poll.
            t.missed += 1;
            return true;
        }
        self.end_socket(slot, now);
        false
    }

    /// Ends a tracked socket: its alert resolves, and `slot` now holds another socket.
    fn end_socket(&mut self, slot: usize, now: Now) {
        let t = &mut self.tracked[slot];
        let tr = t.alert.end();
        self.alerts.ended(t.cookie, tr, now);
        self.remove(slot);
    }

    /// A socket that did not move since the last walk: no ACK came since. While its last ACK is
    /// within the rule's activity window, a spell of inflation the kernel timed goes on (a socket
    /// asked once a second is quiet between answers); after that it ends, as the rule says of an
    /// idle socket.
    fn age(&mut self, slot: usize, now: Now) {
        let rule = self.cfg.rule;
        let onset = self.kernel.onset(self.tracked[slot].cookie).since();
        let t = &mut self.tracked[slot];
        let (Some(r), Some(_)) = (t.rec.clone(), t.alert.onset) else { return };
        let quiet_for = now.mono.saturating_duration_since(t.counters_at);
        let since_ack = r.tcp_info.last_ack_recv_ms().map(|ms| Duration::from_millis(ms.into()) + quiet_for);
        let sample = rule.sample(&r).map(|s| RuleSample { active: rule.active(since_ack), ..s });
        let tr = match (onset, sample) {
            (Some(_), Some(s)) if s.active => t.alert.step(&rule, now.mono, onset, None),
            _ => t.alert.eval(&rule, now.mono, sample.map(|s| RuleSample { active: false, ..s })),
        };
        t.stale_view = true;
        self.alerts.record(&r, &t.alert, sample, tr, now);
    }

    /// Drops a dump that failed midway: sockets first seen in it go (their records went with
    /// it); the rest keep pointing into the last complete dump.
    fn abort_dump(&mut self) {
        let mut slot = 0;
        while slot < self.tracked.len() {
            if self.tracked[slot].rec.is_none() {
                self.remove(slot);
            } else {
                slot += 1;
            }
        }
    }

    fn remove(&mut self, slot: usize) {
        let t = &self.tracked[slot];
        if !t.closed {
            // Its close record may still come, and must add only what it sent since.
            self.totals.retire(t.cookie, t.account);
        }
        self.index.remove(&self.tracked[slot].cookie);
        self.tracked.swap_remove(slot);
        if let Some(moved) = self.tracked.get(slot) {
            self.index.insert(moved.cookie, slot as u32);
        }
    }

    /// Says what each socket collector is for here (shown with its status): the kernel walk
    /// reads the sockets that move, and netlink seeds and reconciles; or netlink reads them all.
    pub fn set_roles(&mut self, netlink: String, walk: Option<String>) {
        self.netlink.role = Some(netlink);
        self.walk.role = walk;
    }

    fn collectors(&self) -> Vec<CollectorStatus> {
        let mut c = vec![self.netlink.clone(), self.kernel.status.clone()];
        if self.walk.role.is_some() || self.walk.polls_total > 0 {
            c.push(self.walk.clone());
        }
        c
    }

    /// Publishes the state as of `now`.
    pub fn tick(&mut self, now: Now) -> Arc<Snapshot> {
        self.seq += 1;
        let (rule, cap, poll) = (self.cfg.rule, self.cfg.history, self.generation);
        // Sized up front: 100k views are 30 MB, and growing by doubling would copy them again.
        let mut sockets: Vec<SocketView> = Vec::with_capacity(self.tracked.len());
        let last = self.last.take();
        for t in self.tracked.iter_mut().filter(|t| t.missed == 0) {
            let Some(r) = t.rec.as_ref() else { continue };
            let history = HistoryView::new(Arc::clone(&t.history), t.first_poll, poll, cap);
            let kept = last
                .as_ref()
                .and_then(|l| l.sockets.get(t.view as usize))
                .filter(|v| t.generation != poll && !t.stale_view && v.record.cookie == t.cookie);
            let view = match kept {
                Some(v) => quiet_view(v, t, history, now.mono),
                None => {
                    let mut d = derived(&rule, t, r, now.mono);
                    if t.generation != poll {
                        // Quiet since the last poll: nothing moved, so no rate.
                        d.rates = Rates::default();
                    }
                    let derived = overlay(d, self.kernel.socket(r.cookie), r);
                    SocketView { record: r.clone(), derived, history }
                }
            };
            (t.view, t.stale_view) = (sockets.len() as u32, false);
            sockets.push(view);
        }
        let mut by_cc = bbrtop_core::snapshot::aggregate::by_cc(&sockets, rule.loopback);
        let (sums, growth) = self.totals.tick(now.mono);
        aggregate::add_totals(&mut by_cc, sums, growth);
        let alerts = self.alerts.firing.values().rev().chain(self.alerts.recent.iter()).cloned().collect();
        let snap = Arc::new(Snapshot {
            seq: self.seq,
            taken_at: now.wall,
            sockets,
            by_cc,
            alerts,
            collectors: self.collectors(),
            closed: self.kernel.closed(),
            closed_by_cc: self.kernel.closed_by_cc(),
            inflation_onsets_total: self.alerts.onsets.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            totals: self.totals.snapshot(),
            rule,
        });
        self.last = Some(Arc::clone(&snap));
        snap
    }
}

impl seam::DumpSink for Engine {
    fn begin(&mut self, now: Now) {
        self.reading = now;
        self.generation += 1;
        // The collector already asked the kernel for these states: with no other filter, every
        // record is kept without a look.
        self.unfiltered = Filter { states: None, ..self.cfg.filter.clone() }.is_empty();
    }

    fn record(&mut self, idx: u32, rec: &SocketRecord) {
        self.observe(idx, rec, self.reading);
    }

    fn end(&mut self, dump: Dump) {
        self.end_dump(dump, self.reading);
    }

    fn walked(&mut self, walk: Result<Walk, WalkFailed>) {
        match walk {
            Ok(w) => self.walk_moved(w),
            Err(WalkFailed { error, duration }) => self.walk.walk_failed(error, duration),
        }
    }

    fn abort(&mut self, why: seam::Aborted) {
        self.abort_dump();
        if let seam::Aborted::Failed { error, duration } = why {
            self.netlink.failed(error, duration);
        }
    }
}

impl seam::Feed for Engine {
    fn apply(&mut self, update: Update) {
        Engine::apply(self, update);
    }
}

#[cfg(test)]
mod tests;
