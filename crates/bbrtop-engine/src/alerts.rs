//! Firing and recently resolved alerts, and onset counts per cc, kept in step with the sockets'
//! trackers.

use bbrtop_core::model::{Cookie, SocketRecord};
use bbrtop_core::rule::{AlertTracker, Sample as RuleSample, Transition};
use bbrtop_core::seam::Now;
use bbrtop_core::snapshot::{AlertStatus, AlertView};
use std::collections::{BTreeMap, VecDeque};

/// Firing and recently resolved alerts, and onset counts, kept in step with the trackers.
#[derive(Default)]
pub(crate) struct Alerts {
    pub(crate) firing: BTreeMap<Cookie, AlertView>,
    pub(crate) recent: VecDeque<AlertView>,
    pub(crate) onsets: BTreeMap<String, u64>,
    pub(crate) keep: usize,
}

impl Alerts {
    pub(crate) fn record(
        &mut self,
        r: &SocketRecord,
        tracker: &AlertTracker,
        sample: Option<RuleSample>,
        tr: Option<Transition>,
        now: Now,
    ) {
        match tr {
            Some(Transition::Onset) => *self.onsets.entry(r.cc_name().to_string()).or_default() += 1,
            Some(Transition::Fired { began }) => {
                if began {
                    *self.onsets.entry(r.cc_name().to_string()).or_default() += 1;
                }
                if let (Some(onset), Some(fired)) = (tracker.onset, tracker.fired) {
                    self.firing.insert(
                        r.cookie,
                        AlertView {
                            cookie: r.cookie,
                            cc: r.cc_name().to_string(),
                            local: r.local,
                            peer: r.peer,
                            status: AlertStatus::Firing,
                            srtt_us: 0,
                            baseline_rtt_us: 0,
                            ratio: 0.0,
                            peak_ratio: 0.0,
                            since: now.wall_of(onset),
                            fired_at: now.wall_of(fired),
                            resolved_at: None,
                        },
                    );
                }
            }
            tr @ Some(Transition::Ended { .. }) => self.ended(r.cookie, tr, now),
            None => {}
        }
        // Keep a firing alert's figures current.
        if let (Some(a), Some(s)) = (self.firing.get_mut(&r.cookie), sample) {
            a.srtt_us = s.srtt_us;
            a.baseline_rtt_us = s.baseline_us;
            a.ratio = s.ratio();
            a.peak_ratio = tracker.peak_ratio;
        }
    }
}

impl Alerts {
    /// A socket's inflation ended, or the socket closed: its firing alert, if any, resolves.
    pub(crate) fn ended(&mut self, cookie: Cookie, tr: Option<Transition>, now: Now) {
        if !matches!(tr, Some(Transition::Ended { .. })) {
            return;
        }
        if let Some(mut a) = self.firing.remove(&cookie) {
            a.status = AlertStatus::Resolved;
            a.resolved_at = Some(now.wall);
            self.recent.push_front(a);
            self.recent.truncate(self.keep);
        }
    }
}
