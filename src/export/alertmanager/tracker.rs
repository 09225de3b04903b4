//! Which alerts are due for sending, per (cc, peer group). Pure: the clock is passed in.

use super::group::{Firing, Key, am_alert, by_group};
use super::{AmAlert, PushConfig, RESOLVED_RESEND_FOR};
use bbrtop_core::snapshot::Snapshot;
use std::collections::{BTreeMap, HashSet};
use std::time::{Instant, SystemTime};

/// One (cc, peer group)'s alert: from its first socket firing to none firing.
struct Spell {
    /// The group's firing sockets as last seen (kept once it resolves, for the resends).
    firing: Firing,
    last_sent: Option<Instant>,
    /// (monotonic, wall) time of resolution.
    resolved: Option<(Instant, SystemTime)>,
}

/// Alerts per (cc, peer group). A group whose sockets stop firing resolves; one that fires again
/// after that is a new alert.
pub struct Tracker {
    cfg: PushConfig,
    spells: BTreeMap<Key, Spell>,
}

impl Tracker {
    pub fn new(cfg: PushConfig) -> Tracker {
        Tracker { cfg, spells: BTreeMap::new() }
    }

    /// Takes in a snapshot and returns the alerts due now: a group that starts or stops firing at
    /// once, a firing one every resend interval (with its sockets as of then), a resolved one every
    /// resend interval for [`RESOLVED_RESEND_FOR`].
    pub fn due(&mut self, snap: &Snapshot, now: Instant, wall: SystemTime) -> Vec<AmAlert> {
        let mut firing = by_group(snap.firing(), &self.cfg.groups);
        for (key, s) in self.spells.iter_mut() {
            match firing.remove(key) {
                Some(f) if s.resolved.is_none() => {
                    // The same spell: its start stays the first socket's.
                    s.firing = Firing { since: s.firing.since.min(f.since), ..f };
                }
                Some(f) => *s = Spell { firing: f, last_sent: None, resolved: None },
                None if s.resolved.is_none() => {
                    s.resolved = Some((now, resolved_at(snap, &s.firing).unwrap_or(wall)));
                    s.last_sent = None;
                }
                None => {}
            }
        }
        for (key, f) in firing {
            self.spells.insert(key, Spell { firing: f, last_sent: None, resolved: None });
        }
        self.spells
            .retain(|_, s| s.resolved.is_none_or(|(t, _)| now.duration_since(t) < RESOLVED_RESEND_FOR));
        let cfg = &self.cfg;
        let mut out = Vec::new();
        for (key, s) in self.spells.iter_mut() {
            if s.last_sent.is_some_and(|t| now.duration_since(t) < cfg.resend) {
                continue;
            }
            s.last_sent = Some(now);
            let ends_at = s.resolved.map_or(wall + 4 * cfg.resend, |(_, at)| at);
            out.push(am_alert(cfg, key, &s.firing, ends_at));
        }
        out
    }
}

/// When the last of a group's sockets stopped firing, as the engine says (it lists resolved
/// alerts a while); None when it lists none of them (their sockets closed).
fn resolved_at(snap: &Snapshot, f: &Firing) -> Option<SystemTime> {
    let ids: HashSet<_> = f.ids.iter().collect();
    snap.alerts.iter().filter(|a| ids.contains(&(a.cookie, a.fired_at))).filter_map(|a| a.resolved_at).max()
}
