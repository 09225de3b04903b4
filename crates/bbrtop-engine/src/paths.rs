//! The lowest baseline of each peer's connections over the last minutes: a connection born into
//! a queue (a download filling the bottleneck as it opens) never sees the empty path, so its own
//! minimum RTT is the queue's, and measured against it the queue looks like none. Another
//! connection to the same peer that saw the path before knows better. Kept per peer address, not
//! per prefix: hosts of one network can sit behind last miles of different lengths, and a
//! baseline borrowed from a nearer one would inflate the others for good. The cost is a lookup
//! per socket that moved; the memory is bounded by [`MAX_PEERS`].

use rustc_hash::FxHashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How long a peer's lowest baseline stands: as tcp_info's min RTT window does by default
/// (net.ipv4.tcp_min_rtt_wlen, 300 s), so a route that lengthened is taken up in as long.
pub const WINDOW: Duration = Duration::from_secs(300);

/// Peers remembered at most; past it, a new peer's connections keep their own baselines.
pub const MAX_PEERS: usize = 1 << 16;

#[derive(Default)]
pub(crate) struct PathMins {
    peers: FxHashMap<IpAddr, (u32, Instant)>,
}

impl PathMins {
    /// Notes a connection's own baseline `own` to `peer` at `now`, and returns the peer's lower
    /// one, if another connection saw one in the window.
    pub(crate) fn floor(&mut self, peer: IpAddr, own: Option<u32>, now: Instant) -> Option<u32> {
        let own = own?;
        if peer.is_unspecified() {
            return None;
        }
        let full = self.peers.len() >= MAX_PEERS;
        match self.peers.get_mut(&peer) {
            Some((min, at)) if now.saturating_duration_since(*at) <= WINDOW && *min < own => {
                return Some(*min);
            }
            Some(slot) => *slot = (own, now),
            None if full => self.expire(now),
            None => {
                self.peers.insert(peer, (own, now));
            }
        }
        None
    }

    /// Forgets the peers whose baseline is older than the window, once the map is full.
    fn expire(&mut self, now: Instant) {
        self.peers.retain(|_, (_, at)| now.saturating_duration_since(*at) <= WINDOW);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.peers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection to a peer another connection saw at 1 ms, born into a 12 ms queue, takes
    /// the 1 ms; a peer nobody saw before keeps its own; past the window, the newer stands.
    #[test]
    fn a_connection_born_into_a_queue_takes_the_peers_baseline() {
        let (mut paths, t0) = (PathMins::default(), Instant::now());
        let (peer, other): (IpAddr, IpAddr) = ("10.0.0.2".parse().unwrap(), "10.0.0.3".parse().unwrap());
        assert_eq!(paths.floor(peer, Some(1_000), t0), None, "the first sets it");
        assert_eq!(paths.floor(peer, Some(12_000), t0 + Duration::from_secs(5)), Some(1_000));
        assert_eq!(paths.floor(other, Some(12_000), t0), None, "another peer's is its own");
        assert_eq!(
            paths.floor(peer, Some(900), t0 + Duration::from_secs(6)),
            None,
            "a lower one is the floor"
        );
        assert_eq!(paths.floor(peer, Some(12_000), t0 + Duration::from_secs(7)), Some(900));
        let later = t0 + Duration::from_secs(6) + WINDOW + Duration::from_secs(1);
        assert_eq!(paths.floor(peer, Some(12_000), later), None, "expired: the route may have changed");
        assert_eq!(paths.floor(peer, Some(13_000), later), Some(12_000));
        assert_eq!(paths.floor(peer, None, later), None, "no baseline of its own, none to floor");
    }

    /// The map stops at MAX_PEERS: a new peer past it is not remembered until old ones expire.
    #[test]
    fn the_peers_remembered_are_bounded() {
        let (mut paths, t0) = (PathMins::default(), Instant::now());
        for i in 1..=MAX_PEERS as u32 {
            paths.floor(IpAddr::from(i.to_be_bytes()), Some(1_000), t0);
        }
        let new: IpAddr = "203.0.113.9".parse().unwrap();
        paths.floor(new, Some(1_000), t0 + Duration::from_secs(1));
        assert_eq!(paths.len(), MAX_PEERS);
        paths.floor(new, Some(1_000), t0 + WINDOW + Duration::from_secs(1));
        assert_eq!(paths.len(), 0, "all expired; the next note of the peer remembers it");
        assert_eq!(paths.floor(new, Some(1_000), t0 + WINDOW + Duration::from_secs(2)), None);
        assert_eq!(paths.len(), 1);
    }
}
