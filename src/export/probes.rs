//! What `/-/healthy` and `/-/ready` mean. Healthy: the poller is alive and its polls advance (a
//! dead or stuck poller would leave `/metrics` serving its last snapshot forever). Ready: the
//! netlink collector, the one every socket comes from, has succeeded recently. Both answer
//! without auth, as Prometheus' own probes do: they tell nothing private.

use bbrtop_core::snapshot::Snapshot;
use std::time::{Duration, Instant, SystemTime};

/// How old the newest data may be: three polls, and never less than 10 s, so that one slow poll
/// of a busy host does not flap the probes.
pub fn stale_after(poll_interval: Duration) -> Duration {
    (poll_interval * 3).max(Duration::from_secs(10))
}

#[derive(Clone, Copy, Debug)]
pub struct Probes {
    pub stale_after: Duration,
    /// When serving began: before the first poll, the poller has that long to publish.
    pub started: Instant,
}

impl Probes {
    pub fn new(poll_interval: Duration) -> Probes {
        Probes { stale_after: stale_after(poll_interval), started: Instant::now() }
    }

    pub fn healthy(&self, snap: &Snapshot, now: SystemTime) -> bool {
        if snap.seq == 0 {
            return self.started.elapsed() <= self.stale_after;
        }
        fresh(Some(snap.taken_at), now, self.stale_after)
    }

    pub fn ready(&self, snap: &Snapshot, now: SystemTime) -> bool {
        let netlink = snap.collectors.iter().find(|c| c.name == "netlink");
        fresh(netlink.and_then(|c| c.last_success_at), now, self.stale_after)
    }
}

/// Whether `at` is within `within` of `now` (a time slightly ahead of `now` is fresh).
fn fresh(at: Option<SystemTime>, now: SystemTime, within: Duration) -> bool {
    at.is_some_and(|t| now.duration_since(t).map_or(true, |age| age <= within))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::rule::RuleConfig;
    use bbrtop_core::snapshot::status::CollectorStatus;

    fn snap(seq: u64, taken_at: SystemTime, netlink_ok_at: Option<SystemTime>) -> Snapshot {
        let netlink = CollectorStatus { last_success_at: netlink_ok_at, ..CollectorStatus::netlink() };
        Snapshot { seq, taken_at, collectors: vec![netlink], ..Snapshot::empty(RuleConfig::default()) }
    }

    #[test]
    fn healthy_while_polls_advance_and_ready_while_netlink_succeeds() {
        let p = Probes::new(Duration::from_secs(1));
        assert_eq!(p.stale_after, Duration::from_secs(10));
        let now = SystemTime::now();
        let ago = |s: u64| now - Duration::from_secs(s);
        assert!(p.healthy(&snap(0, SystemTime::UNIX_EPOCH, None), now), "just started, no poll yet");
        assert!(!p.ready(&snap(0, SystemTime::UNIX_EPOCH, None), now), "no successful dump yet");
        assert!(
            p.healthy(&snap(5, ago(2), Some(ago(2))), now) && p.ready(&snap(5, ago(2), Some(ago(2))), now)
        );
        // The poller goes on, but every dump fails: alive, not ready.
        let failing = snap(40, ago(1), Some(ago(30)));
        assert!(p.healthy(&failing, now) && !p.ready(&failing, now));
        // The poller stopped: the last snapshot grows old.
        assert!(!p.healthy(&snap(40, ago(30), Some(ago(30))), now));
        assert_eq!(Probes::new(Duration::from_secs(60)).stale_after, Duration::from_secs(180));
    }
}
