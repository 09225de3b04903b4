//! The engine: the single writer. It applies collectors' updates to its state and publishes an
//! immutable [`Snapshot`] on each tick. Time is always a parameter ([`Now`]), so tests drive it.

pub mod aggregate;
mod alerts;
pub mod first_sight;
mod inventory;
mod kernel;
pub mod labels;
mod paths;
mod timers;
mod totals;
mod tracked;

use alerts::Alerts;
use bbrtop_core::filter::Filter;
use bbrtop_core::geo::GeoCell;
use bbrtop_core::model::{Cookie, SocketRecord, Tally};
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::rule::{AlertTracker, RuleConfig, Sample as RuleSample};
use bbrtop_core::seam::{self, Now, Update, Walk, WalkFailed};
use bbrtop_core::snapshot::entry::Kept;
use bbrtop_core::snapshot::history::{self, History};
use bbrtop_core::snapshot::sockets::{Map, Slot};
use bbrtop_core::snapshot::{CollectorStatus, Entry, Facts, Snapshot, Sockets, ViewAt};
use bbrtop_core::units::unix_ms;
use bbrtop_core::wire::Dump;
use bbrtop_core::wire::walk::WalkStats;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracked::{CLOSING_QUIET, GRACE, PACK_AFTER, Tracked, evaluate};

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
    /// The AS and country databases the counters are kept per too, and how many labels of
    /// each are shown (`--peer-groups.asn.file`, `--peer-groups.country.file`,
    /// `--peer-groups.top`).
    pub geo: Arc<GeoCell>,
    pub top_labels: usize,
    /// A running experiment's arms (`bbrtop experiment`): its sockets' counters and response
    /// times are kept per arm as well.
    pub arms: Option<bbrtop_core::seam::Arms>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            rule: RuleConfig::default(),
            history: history::DEFAULT_HISTORY,
            filter: Filter::default(),
            recent_alerts: 50,
            groups: Arc::default(),
            geo: Arc::default(),
            top_labels: labels::DEFAULT_TOP,
            arms: None,
        }
    }
}

/// The engine. Its cost per poll follows what moved: a socket the walk did not list, or a dump
/// listed unchanged but for its ages, costs a lookup at most; its entry stays shared with the
/// snapshots, and the per-cc figures, alert timers and history change only for what moved.
pub struct Engine {
    cfg: EngineConfig,
    /// Every socket tracked: the engine's own state of each.
    tracked: FxHashMap<Cookie, Tracked>,
    /// The entries of the sockets shown, shared with the snapshots: a tick clones the map, which
    /// costs nothing, and a socket that moves replaces its entry.
    published: Map,
    /// The per-cc figures, kept as entries change.
    inventory: inventory::Inventory,
    /// Each peer's lowest baseline of late, for connections born into a queue.
    paths: paths::PathMins,
    /// Sockets whose entry changed in this poll, and in the one before: at the next poll those
    /// that did not move again lose their rates (nothing moved since) and count as seen before.
    moved: Vec<Cookie>,
    moved_before: Vec<Cookie>,
    /// The last version given to an entry (see [`Entry::version`]).
    versions: u64,
    /// Quiet sockets to look at again at some time: an open inflation spell, a closing socket.
    timers: timers::Timers,
    /// Sockets that closed (eBPF's close record, the walk's sign) and are still tracked.
    closing: FxHashSet<Cookie>,
    /// The entries the dump being read made, published when it ends (a dump that fails midway
    /// leaves the last complete one's).
    pending: Option<FxHashMap<Cookie, Arc<Entry>>>,
    /// The entries of sockets a dump missed, kept through their grace poll (not shown).
    hidden: FxHashMap<Cookie, Arc<Entry>>,
    /// Sockets first seen in the dump being read: they go if it fails.
    fresh: Vec<Cookie>,
    /// The cookie at each place of the dump being read, for the check after a restart: the
    /// collector keeps no records, so the engine keeps their cookies (8 bytes a socket).
    places: Vec<Cookie>,
    /// Whether the dump being read needs no filtering.
    unfiltered: bool,
    generation: u64,
    seq: u64,
    netlink: CollectorStatus,
    /// The kernel walk's status, once it has walked.
    walk: CollectorStatus,
    /// Sockets whose close record came before any walk or dump listed them: the next walk may
    /// still hold the record of their last move, which must not bring them back.
    closed_untracked: FxHashSet<Cookie>,
    alerts: Alerts,
    kernel: kernel::KernelState,
    totals: totals::Totals,
    /// Whether a close record of a socket never tracked counts: only with no filter but states
    /// (the close record cannot be filtered as a socket is).
    count_untracked: bool,
    /// The namespace whose sockets the engine sees, while only netlink reads them; None once the
    /// walk reads every namespace's. Close records of other namespaces are not counted.
    scope: Option<u64>,
    /// The walk being read in parts, as of when it began.
    walking: Option<Now>,
    /// When the dump being read was read.
    reading: Now,
}

impl Engine {
    pub fn new(cfg: EngineConfig) -> Engine {
        Engine {
            tracked: FxHashMap::default(),
            published: Map::new(),
            inventory: inventory::Inventory::new(cfg.rule.loopback),
            paths: paths::PathMins::default(),
            moved: Vec::new(),
            moved_before: Vec::new(),
            versions: 0,
            timers: timers::Timers::default(),
            closing: FxHashSet::default(),
            pending: None,
            hidden: FxHashMap::default(),
            fresh: Vec::new(),
            places: Vec::new(),
            unfiltered: true,
            generation: 0,
            seq: 0,
            netlink: CollectorStatus::netlink(),
            walk: CollectorStatus::walk(),
            closed_untracked: Default::default(),
            alerts: Alerts { keep: cfg.recent_alerts, ..Alerts::default() },
            totals: totals::Totals::new(
                Arc::clone(&cfg.groups),
                labels::PeerLabels::new(Arc::clone(&cfg.geo), cfg.top_labels),
                cfg.arms.clone(),
            ),
            count_untracked: Filter { states: None, ..cfg.filter.clone() }.is_empty(),
            scope: None,
            walking: None,
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
                let cookie = k.cookie();
                self.kernel.apply(k);
                let kernel = self.kernel.socket(cookie).cloned();
                self.republish(cookie, |f| f.kernel = kernel);
            }
            Update::Closed(c) => {
                match self.tracked.get_mut(&c.cookie) {
                    Some(t) => {
                        t.closed = true;
                        self.closing.insert(c.cookie);
                        let held = self.published.get(&c.cookie).map(|e| Tally::of(&e.record().tcp_info));
                        self.totals.count(&mut t.account, &c.cc, c.peer.ip(), &c.counts, held.as_ref());
                    }
                    None => {
                        self.closed_untracked.insert(c.cookie);
                        let ours = self.scope.is_none_or(|ns| ns == u64::from(c.netns));
                        if self.count_untracked && ours {
                            self.totals.closed_untracked(&c);
                        }
                    }
                }
                let cookie = c.cookie;
                self.kernel.close(*c);
                self.republish(cookie, |f| f.kernel = None);
            }
            Update::BpfStatus(poll) => self.kernel.bpf_poll(poll),
            Update::Response(r) => {
                let ours = r.served && self.scope.is_none_or(|ns| ns == u64::from(r.netns));
                let peer = std::net::SocketAddr::new(r.peer, 0);
                if ours && (self.cfg.rule.loopback || !bbrtop_core::model::is_loopback_peer(peer)) {
                    let tracked = self.tracked.get(&r.cookie).map(|t| &t.account);
                    self.totals.response(tracked, r.cookie, &r.cc, r.peer, r.bytes, r.took.as_secs_f64());
                }
            }
        }
    }

    /// Whether a published socket counts as seen once (no interval yet) at this poll.
    fn seen_once(&self, e: &Entry) -> bool {
        e.first_poll == self.generation
    }

    /// Publishes `entry` for `cookie` (replacing its last) as a new version of the socket,
    /// keeping the per-cc figures in step.
    fn publish(&mut self, cookie: Cookie, mut entry: Entry) {
        self.versions += 1;
        entry.version = self.versions;
        if let Some(p) = &mut self.pending {
            p.insert(cookie, Arc::new(entry));
            return;
        }
        self.publish_now(cookie, Arc::new(entry));
    }

    fn publish_now(&mut self, cookie: Cookie, entry: Arc<Entry>) {
        let once = self.seen_once(&entry);
        if let Some(old) = self.published.insert(cookie, Slot(Arc::clone(&entry))) {
            let t = self.tracked.get(&cookie).expect("a published socket is tracked");
            self.inventory.remove(&old, t.counted_once);
        }
        self.inventory.add(&entry, once);
        if let Some(t) = self.tracked.get_mut(&cookie) {
            t.counted_once = once;
        }
        self.moved.push(cookie);
    }

    /// A socket's latest entry: the one the dump being read made, or the one published.
    fn current(&self, cookie: Cookie) -> Option<Arc<Entry>> {
        let pending = self.pending.as_ref().and_then(|p| p.get(&cookie));
        pending.or_else(|| self.published.get(&cookie).map(|s| &s.0)).cloned()
    }

    /// Takes a socket out of the view (ended, or missing from a dump); its last entry.
    fn unpublish(&mut self, cookie: Cookie) -> Option<Arc<Entry>> {
        let old = self.published.remove(&cookie)?;
        let once = self.tracked.get(&cookie).is_some_and(|t| t.counted_once);
        self.inventory.remove(&old, once);
        Some(old.0)
    }

    /// Publishes a published socket's entry again with its facts changed by `f`.
    fn republish(&mut self, cookie: Cookie, f: impl FnOnce(&mut Facts)) {
        let Some(last) = self.current(cookie) else { return };
        let mut e = Entry::clone(&last);
        f(&mut e.facts);
        if e.facts != last.facts {
            self.publish(cookie, e);
        }
    }

    /// One socket of the dump being read (`idx` its place in that dump's record vector), or of
    /// a walk (`idx` 0). A record that says nothing moved since the last costs a lookup, unless
    /// the socket is inflated (the rule still reads its ACKs' ages) or was not shown.
    fn observe(&mut self, idx: u32, rec: &SocketRecord, now: Now) {
        if !self.unfiltered && !self.cfg.filter.matches(rec) {
            return;
        }
        let (cookie, generation) = (rec.cookie, self.generation);
        let last = match self.current(cookie) {
            Some(e) => Some(e),
            None => self.hidden.remove(&cookie),
        };
        let t = match self.tracked.get_mut(&cookie) {
            Some(t) => t,
            None => {
                let account = self.totals.open(cookie, rec.cc_name(), rec.peer.ip());
                self.fresh.push(cookie);
                self.tracked.entry(cookie).or_insert(Tracked::new(now.mono, generation, account))
            }
        };
        (t.next_idx, t.generation) = (idx, generation);
        let shown = std::mem::take(&mut t.missed) == 0;
        let prev = last.as_ref().map(|l| l.record());
        if shown && t.alert.get().onset.is_none() && prev.as_ref().is_some_and(|p| p.same_but_ages(rec)) {
            return self.listed_unchanged(cookie, now);
        }
        t.moved = generation;
        let (tally, held) = (Tally::of(&rec.tcp_info), prev.as_ref().map(|p| Tally::of(&p.tcp_info)));
        self.totals.count(&mut t.account, rec.cc_name(), rec.peer.ip(), &tally, held.as_ref());
        // Its entry will hold this record, which then stands for what was counted.
        t.account.held(&tally);
        let record = Kept::Whole(Arc::new(rec.clone()));
        // Beside the walk, a dump seeds and reconciles: the sockets that move, the walk reads
        // next; the rest are idle, and kept packed from the start.
        let record =
            if self.pending.is_some() && self.walk.role.is_some() { record.packed() } else { record };
        let whole = !record.is_packed();
        let mut entry = match (&last, &prev) {
            (Some(last), Some(prev)) => {
                let history = self.with_sample(last, prev, rec, generation);
                Entry { record, history, ..Entry::clone(last) }
            }
            // First seen: its one sample is its record's, which an entry keeps for nothing.
            _ => self.new_entry(cookie, record, now, generation),
        };
        let t = self.tracked.get_mut(&cookie).expect("tracked above");
        let dt = now.mono.saturating_duration_since(t.counters_at);
        if let Some(prev) = prev.filter(|_| dt > Duration::ZERO) {
            let (rates, limited_by) = tracked::interval(&prev, rec, dt);
            entry.facts.set_rates(rates);
            entry.facts.limited_by = limited_by;
            t.counters_at = now.mono;
        }
        entry.facts.read_at_ms = unix_ms(now.wall);
        let (rule, onset) = (&self.cfg.rule, self.kernel.onset(cookie));
        let floor = self.paths.floor(rec.peer.ip(), rule.baseline.of(rec), now.mono);
        entry.facts.baseline_floor_us = floor;
        let (sample, tr) = t.alert.update(|a| evaluate(rule, a, rec, floor, onset, now.mono));
        self.alerts.record(rec, t.alert.get(), sample, tr, now);
        alert_facts(&mut entry.facts, t, now);
        self.arm(cookie, rec, whole, now.mono);
        self.publish(cookie, entry);
    }

    /// The history of a socket that moved (`prev` its record before, `rec` now) with the new
    /// sample in it: only a change is written, so an idle socket's ring stays shared.
    fn with_sample(
        &self,
        last: &Entry,
        prev: &SocketRecord,
        rec: &SocketRecord,
        poll: u64,
    ) -> Option<Arc<History>> {
        let (sample, cap) = (history::sample_of(rec), self.cfg.history);
        let mut ring = last.history_ring(prev);
        if !ring.needs_write(poll, &sample, cap) {
            return last.history.clone();
        }
        Arc::make_mut(&mut ring).record(poll, sample, cap);
        Some(ring)
    }

    /// The entry of a socket seen for the first time (or again, after it left the view).
    fn new_entry(&self, cookie: Cookie, record: Kept, now: Now, generation: u64) -> Entry {
        let facts = Facts {
            first_seen_ms: unix_ms(now.wall),
            read_at_ms: unix_ms(now.wall),
            // No interval yet: the socket's life so far.
            limited_by: tracked::lifetime_limit(&record.get()),
            kernel: self.kernel.socket(cookie).cloned(),
            ..Facts::default()
        };
        Entry { cookie, record, facts, history: None, first_poll: generation, version: 0 }
    }

    /// A socket a dump listed with nothing moved: its counters are as they were when last read,
    /// so the interval its next rates span starts now. Nothing else of it changes (a quiet
    /// socket has no rate, as the walk shows it).
    fn listed_unchanged(&mut self, cookie: Cookie, now: Now) {
        if let Some(t) = self.tracked.get_mut(&cookie) {
            t.counters_at = now.mono;
        }
    }

    /// Arms the socket's timer when it may change without moving: an open inflation spell, a
    /// closing state, a record kept whole (`whole`) to pack once it has been quiet a while.
    fn arm(&mut self, cookie: Cookie, r: &SocketRecord, whole: bool, now: Instant) {
        let kernel_timed = self.kernel.onset(cookie).since().is_some();
        let Some(t) = self.tracked.get_mut(&cookie) else { return };
        let rule = &self.cfg.rule;
        let mut due = None;
        let alert = t.alert.get();
        if let Some(onset) = alert.onset {
            due = Some(if kernel_timed {
                // It fires at onset + hold; the spell ends once no ACK came within the activity
                // window. Each is looked at at the first poll after.
                let fire = alert.fired.is_none().then(|| onset + rule.hold);
                let since_ack = r
                    .tcp_info
                    .last_ack_recv_ms()
                    .map_or(Duration::ZERO, |ms| Duration::from_millis(ms.into()));
                let quiet_end = now + rule.active_within.saturating_sub(since_ack);
                fire.map_or(quiet_end, |f| f.min(quiet_end))
            } else {
                // Netlink's judgement needs a fresh sample: a poll without one ends the spell.
                now
            });
        }
        let mut sooner = |at: Instant| due = Some(due.map_or(at, |d: Instant| d.min(at)));
        if tracked::closing(r) {
            sooner(t.counters_at + CLOSING_QUIET);
        }
        if whole {
            sooner(t.counters_at + PACK_AFTER);
        }
        if let Some(due) = due {
            self.timers.arm(&mut t.due, cookie, due);
        }
    }

    /// Ends the dump whose records were observed: sockets of its namespace it does not list have
    /// closed (sockets of other namespaces, which a kernel walk reported, are not its to end).
    fn end_dump(&mut self, dump: Dump, now: Now) {
        for (cookie, e) in self.pending.take().unwrap_or_default() {
            self.publish_now(cookie, e);
        }
        self.netlink.saw_dump(&dump.stats, now.wall);
        // Once a walk has succeeded, netlink only reconciles: the walk's view spans every namespace.
        if self.walk.last_success_at.is_none() {
            self.scope = dump.netns;
        }
        // A dump lists only sockets still open: a close seen before it needs no remembering.
        self.closed_untracked.clear();
        self.fresh = Vec::new();
        let generation = self.generation;
        // A restarted family was observed twice: a socket seen only the first time may point at
        // another socket's place now. It is gone; the check costs a pass only after a restart.
        let recheck = dump.stats.intr_retries > 0;
        let places = std::mem::take(&mut self.places);
        let mut missing = Vec::new();
        for (&cookie, t) in &self.tracked {
            let listed =
                t.generation == generation && (!recheck || places.get(t.next_idx as usize) == Some(&cookie));
            if listed {
                continue;
            }
            // A dump of one namespace speaks for that namespace's sockets only.
            let netns = self.published.get(&cookie).and_then(|e| e.record().netns);
            if dump.netns.is_none() || netns.is_none() || netns == dump.netns {
                missing.push(cookie);
            }
        }
        for cookie in missing {
            self.keep_missing(cookie, now);
        }
        self.settle(now);
        self.kernel.prune(generation, |c| self.tracked.contains_key(&c));
    }

    /// A walk's read begins (its first part, or its whole): it is read as of `now`.
    fn walk_begin(&mut self, now: Now) {
        self.generation += 1;
        // The walk hands over only the states asked for, as the kernel does for a dump.
        self.unfiltered = Filter { states: None, ..self.cfg.filter.clone() }.is_empty();
        self.scope = None;
        self.walking = Some(now);
    }

    /// Part of a walk's read: sockets the walk found moving; the others are as they were. A
    /// socket eBPF saw close goes at the walk's end (its record stays in the closed flows), and
    /// so does one the walk saw enter CLOSE (a second sign, for a close record the kernel did
    /// not trace).
    fn walk_part(&mut self, now: Now, sockets: &[SocketRecord], gone: &[Cookie]) {
        let now = match self.walking {
            Some(began) => began,
            None => {
                self.walk_begin(now);
                now
            }
        };
        for cookie in gone {
            if let Some(t) = self.tracked.get_mut(cookie) {
                t.closed = true;
                self.closing.insert(*cookie);
            }
        }
        for rec in sockets {
            if !self.closed_untracked.contains(&rec.cookie) {
                self.observe(0, rec, now);
            }
        }
    }

    /// The walk's read ended: `read` names what it read, or why it stopped (the parts fed
    /// before stay: they were read; the closed sockets wait for the next walk).
    fn walk_end(&mut self, read: Result<(&WalkStats, Duration), WalkFailed>) {
        // A read begins with its first part (`walked` hands its own sockets over as one), so
        // only a read that failed before any part has none to end.
        let Some(now) = self.walking.take() else {
            if let Err(WalkFailed { error, duration }) = read {
                self.walk.walk_failed(error, duration);
            }
            return;
        };
        let generation = self.generation;
        self.fresh = Vec::new();
        match read {
            Ok((stats, duration)) => {
                self.walk.saw_walk(stats, duration, now.wall);
                let closed: Vec<Cookie> = self.closing.iter().copied().collect();
                for cookie in closed {
                    if self.tracked.get(&cookie).is_some_and(|t| t.generation != generation) {
                        self.keep_missing(cookie, now);
                    }
                }
            }
            Err(WalkFailed { error, duration }) => self.walk.walk_failed(error, duration),
        }
        self.settle(now);
        self.closed_untracked.clear();
        self.kernel.prune(generation, |c| self.tracked.contains_key(&c));
    }

    /// The end of a poll: timers that came due, and the sockets that moved in the poll before
    /// but not in this one (no rate any more, and no longer seen once).
    fn settle(&mut self, now: Now) {
        for (at, cookie) in self.timers.due(now.mono) {
            let Some(t) = self.tracked.get_mut(&cookie) else { continue };
            if t.due != Some(at) {
                continue;
            }
            t.due = None;
            if t.moved != self.generation {
                self.quiet_due(cookie, now);
            } else if let Some(e) = self.published.get(&cookie).map(|s| Arc::clone(&s.0)) {
                // It moved in this poll: its timer is for later.
                self.arm(cookie, &e.record(), !e.record.is_packed(), now.mono);
            }
        }
        let before = std::mem::take(&mut self.moved_before);
        for cookie in before {
            // A socket that moved again, and was not counted seen once, has nothing to settle:
            // its entry is not looked up (at 100k moving sockets, a lookup each is a tenth of
            // the engine's update).
            let Some(t) = self.tracked.get_mut(&cookie) else { continue };
            if t.moved == self.generation && !t.counted_once {
                continue;
            }
            let Some(slot) = self.published.get(&cookie) else { continue };
            let e = Arc::clone(&slot.0);
            if t.moved != self.generation && e.facts.rates.is_some() {
                let facts = Facts { rates: None, ..e.facts.clone() };
                self.publish(cookie, Entry { facts, ..Entry::clone(&e) });
            } else if t.counted_once && e.first_poll != self.generation {
                // Seen before now: counted by what it did in the interval, not the moment.
                t.counted_once = false;
                self.inventory.remove(&e, true);
                self.inventory.add(&e, false);
            }
        }
        self.moved_before = std::mem::take(&mut self.moved);
    }

    /// A quiet socket whose time came: a closing one that lingered goes; an inflated one ages;
    /// one quiet for [`PACK_AFTER`] has its record packed.
    fn quiet_due(&mut self, cookie: Cookie, now: Now) {
        let Some(e) = self.published.get(&cookie).map(|s| Arc::clone(&s.0)) else { return };
        let r = e.record();
        let Some(t) = self.tracked.get(&cookie) else { return };
        if t.lingering(&r, now.mono) {
            return self.end_socket(cookie, now);
        }
        let whole = !e.record.is_packed();
        if whole && now.mono.saturating_duration_since(t.counters_at) >= PACK_AFTER {
            self.pack(&e, &r);
        }
        self.age(cookie, &r, now);
        self.arm(
            cookie,
            &r,
            whole && !self.published.get(&cookie).is_some_and(|s| s.record.is_packed()),
            now.mono,
        );
    }

    /// Keeps a quiet socket's entry packed: its record, and its history where it is all the
    /// record's own sample. The same version: nothing about the socket changed.
    fn pack(&mut self, e: &Entry, r: &SocketRecord) {
        let one = e.history.as_deref().and_then(History::only).is_some_and(|s| *s == history::sample_of(r));
        let history = if one { None } else { e.history.clone() };
        let packed = Entry { record: e.record.packed(), history, ..e.clone() };
        self.published.insert(e.cookie, Slot(Arc::new(packed)));
    }

    /// A tracked socket its source did not list: kept, unseen, for a grace poll, or ended.
    fn keep_missing(&mut self, cookie: Cookie, now: Now) {
        let Some(t) = self.tracked.get_mut(&cookie) else { return };
        if t.missed < GRACE && !t.closed && self.published.contains_key(&cookie) {
            t.missed += 1;
            if let Some(e) = self.unpublish(cookie) {
                self.hidden.insert(cookie, e);
            }
            return;
        }
        self.end_socket(cookie, now);
    }

    /// Ends a tracked socket: its alert resolves, and it leaves the view.
    fn end_socket(&mut self, cookie: Cookie, now: Now) {
        let e = self.unpublish(cookie).or_else(|| self.hidden.remove(&cookie));
        self.closing.remove(&cookie);
        let Some(mut t) = self.tracked.remove(&cookie) else { return };
        let tr = t.alert.update(AlertTracker::end);
        self.alerts.ended(cookie, tr, now);
        if !t.closed {
            // Its close record may still come, and must add only what it sent since.
            let held = e.map(|e| Tally::of(&e.record().tcp_info));
            self.totals.retire(cookie, t.account, held.as_ref());
        }
    }

    /// A socket that did not move since the last walk: no ACK came since. While its last ACK is
    /// within the rule's activity window, a spell of inflation the kernel timed goes on (a socket
    /// asked once a second is quiet between answers); after that it ends, as the rule says of an
    /// idle socket.
    fn age(&mut self, cookie: Cookie, r: &SocketRecord, now: Now) {
        let rule = self.cfg.rule;
        let onset = self.kernel.onset(cookie).since();
        let Some(t) = self.tracked.get_mut(&cookie) else { return };
        if t.alert.get().onset.is_none() {
            return;
        }
        let quiet_for = now.mono.saturating_duration_since(t.counters_at);
        let since_ack = r.tcp_info.last_ack_recv_ms().map(|ms| Duration::from_millis(ms.into()) + quiet_for);
        let sample = rule.sample(r).map(|s| RuleSample { active: rule.active(since_ack), ..s });
        let tr = match (onset, sample) {
            (Some(_), Some(s)) if s.active => t.alert.update(|a| a.step(&rule, now.mono, onset, None)),
            _ => {
                t.alert.update(|a| a.eval(&rule, now.mono, sample.map(|s| RuleSample { active: false, ..s })))
            }
        };
        self.alerts.record(r, t.alert.get(), sample, tr, now);
        let mut facts = None;
        if let Some(slot) = self.published.get(&cookie) {
            let mut f = slot.0.facts.clone();
            alert_facts(&mut f, t, now);
            facts = Some(f);
        }
        if let Some(f) = facts {
            self.republish(cookie, |x| *x = f);
        }
    }

    /// Drops a dump that failed midway: sockets first seen in it go (they were never in a
    /// complete dump); the others keep what it said of them.
    fn abort_dump(&mut self) {
        // What was counted of a socket stands for its entry's record: the entries dropped here
        // held what was counted.
        for (cookie, e) in self.pending.take().unwrap_or_default() {
            if let Some(t) = self.tracked.get_mut(&cookie) {
                t.account.keep(Some(&Tally::of(&e.record().tcp_info)));
            }
        }
        self.places = Vec::new();
        for cookie in std::mem::take(&mut self.fresh) {
            self.unpublish(cookie);
            self.hidden.remove(&cookie);
            if let Some(t) = self.tracked.remove(&cookie) {
                self.totals.retire(cookie, t.account, None);
            }
            self.moved.retain(|c| *c != cookie);
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

    /// Publishes the state as of `now`. The sockets are the published map, shared: what did not
    /// move since the last tick costs nothing here.
    pub fn tick(&mut self, now: Now) -> Arc<Snapshot> {
        self.seq += 1;
        let rule = self.cfg.rule;
        let at = ViewAt { at_ms: unix_ms(now.wall), poll: self.generation, history: self.cfg.history, rule };
        let mut by_cc = self.inventory.by_cc(&self.published, &rule);
        let (sums, growth) = self.totals.tick(now.mono);
        aggregate::add_totals(&mut by_cc, sums, growth);
        let alerts = self.alerts.firing.values().rev().chain(self.alerts.recent.iter()).cloned().collect();
        Arc::new(Snapshot {
            seq: self.seq,
            taken_at: now.wall,
            sockets: Sockets::new(self.published.clone(), at),
            by_cc,
            alerts,
            collectors: self.collectors(),
            closed: self.kernel.closed(),
            closed_by_cc: self.kernel.closed_by_cc(),
            inflation_onsets_total: self.alerts.onsets.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            totals: self.totals.snapshot(),
            rule,
        })
    }
}

/// The alert tracker's state as an entry shows it: when the spell began, and whether it fires.
fn alert_facts(f: &mut Facts, t: &Tracked, now: Now) {
    f.inflated_since_ms = t.alert.get().onset.map(|o| unix_ms(now.wall_of(o)));
    f.alert_firing = t.alert.get().firing();
}

impl seam::DumpSink for Engine {
    fn begin(&mut self, now: Now) {
        self.reading = now;
        self.pending = Some(FxHashMap::default());
        self.places.clear();
        self.places.reserve(self.tracked.len());
        self.generation += 1;
        // The collector already asked the kernel for these states: with no other filter, every
        // record is kept without a look.
        self.unfiltered = Filter { states: None, ..self.cfg.filter.clone() }.is_empty();
    }

    fn record(&mut self, idx: u32, rec: &SocketRecord) {
        // A place before the last ones is a restarted family's: the places after it go.
        self.places.truncate(idx as usize);
        self.places.push(rec.cookie);
        self.observe(idx, rec, self.reading);
    }

    fn end(&mut self, dump: Dump) {
        self.end_dump(dump, self.reading);
    }

    fn walk_part(&mut self, now: Now, sockets: Vec<SocketRecord>, gone: Vec<Cookie>) {
        Engine::walk_part(self, now, &sockets, &gone);
    }

    fn walked(&mut self, walk: Result<Walk, WalkFailed>) {
        match walk {
            Ok(w) => {
                self.walk_part(w.now, &w.sockets, &w.gone);
                self.walk_end(Ok((&w.stats, w.duration)));
            }
            Err(failed) => self.walk_end(Err(failed)),
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
