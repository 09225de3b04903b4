//! The eBPF half of the engine: per-cookie kernel state (true BBR phase, kernel-timed inflation
//! onset), closed flows with per-cc aggregates, and the BPF collector's status.

use super::hist::{Hist, RATE_BOUNDS, RTT_BOUNDS};
use super::status::CollectorStatus;
use bbrtop_core::model::{BbrState, Cookie, Count, Tally};
use bbrtop_core::units::serde_time;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// What the BPF collector learned about one live socket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelUpdate {
    Phase {
        cookie: Cookie,
        netns: u32,
        bbr: BbrState,
        entered: u32,
    },
    /// `onset` is None when the spell ended.
    Inflation {
        cookie: Cookie,
        netns: u32,
        onset: Option<Instant>,
        peak_ratio: f64,
    },
}

impl KernelUpdate {
    pub fn cookie(&self) -> Cookie {
        match self {
            KernelUpdate::Phase { cookie, .. } | KernelUpdate::Inflation { cookie, .. } => *cookie,
        }
    }
}

/// What the kernel's per-ACK timing says of one socket's inflation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelOnset {
    /// The kernel has not timed this socket: the netlink path evaluates the rule on its own.
    #[default]
    Untimed,
    /// Not inflated.
    Calm,
    /// Inflated since then (the kernel's onset is authoritative).
    Since(Instant),
}

impl KernelOnset {
    pub fn since(self) -> Option<Instant> {
        match self {
            KernelOnset::Since(t) => Some(t),
            _ => None,
        }
    }
}

/// The latest kernel state of one socket, shown in the snapshot's `derived.kernel`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct KernelSocket {
    pub netns: u32,
    pub bbr: Option<BbrState>,
    /// Mode-change events seen (PROBE_BW steps come with each dump, in the RTT window).
    pub phase_changes: u64,
    /// Times the present mode was entered.
    pub mode_entered: u32,
    #[serde(skip)]
    pub inflation: KernelOnset,
    pub peak_ratio: f64,
}

/// One closed TCP socket, from the kernel at destroy time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedFlow {
    /// Monotonic per engine: consumers stream records with a seq above the last they printed.
    pub seq: u64,
    pub cookie: Cookie,
    pub netns: u32,
    pub cc: String,
    pub local: SocketAddr,
    pub peer: SocketAddr,
    #[serde(with = "serde_time")]
    pub closed_at: SystemTime,
    /// None when tcp_probe never saw the socket (no RTT sample).
    pub lifetime_seconds: Option<f64>,
    /// Its counters at the close (bytes sent, retransmitted, acked, ...).
    #[serde(flatten)]
    pub counts: Tally,
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    pub delivery_rate_bytes_per_sec: Option<u64>,
    pub bbr: Option<ClosedBbr>,
    pub peak_inflation_ratio: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedBbr {
    #[serde(deserialize_with = "bbrtop_core::units::interned::deserialize")]
    pub mode: bbrtop_core::units::interned::Name,
    pub min_rtt_us: u32,
    pub bw_bytes_per_sec: u64,
}

/// Closed flows of one congestion control since start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedAggregate {
    pub cc: String,
    pub count: u64,
    pub bytes_acked_total: u64,
    /// Final smoothed RTTs, in seconds.
    pub srtt_seconds: Hist,
    /// Bytes acked over the flow's life, per second (flows whose lifetime is known).
    pub throughput_bytes_per_second: Hist,
}

impl ClosedAggregate {
    fn new(cc: &str) -> ClosedAggregate {
        ClosedAggregate {
            cc: cc.to_string(),
            count: 0,
            bytes_acked_total: 0,
            srtt_seconds: Hist::new(RTT_BOUNDS),
            throughput_bytes_per_second: Hist::new(RATE_BOUNDS),
        }
    }

    fn add(&mut self, c: &ClosedFlow) {
        self.count += 1;
        let acked = c.counts[Count::BytesAcked];
        self.bytes_acked_total += acked;
        self.srtt_seconds.observe(f64::from(c.srtt_us) / 1e6);
        if let Some(life) = c.lifetime_seconds.filter(|l| *l > 0.0) {
            self.throughput_bytes_per_second.observe(acked as f64 / life);
        }
    }
}

/// Kernel state the engine holds.
pub struct KernelState {
    /// Shared with the snapshots (an `Arc` each), so a tick copies nothing; with the poll each
    /// was last updated at.
    sockets: FxHashMap<Cookie, (Arc<KernelSocket>, u64)>,
    /// The engine's poll count, for [`KernelState::prune`].
    poll: u64,
    closed: VecDeque<ClosedFlow>,
    closed_by_cc: BTreeMap<String, ClosedAggregate>,
    closed_seq: u64,
    keep_closed: usize,
    pub status: CollectorStatus,
}

/// The closed records kept in each snapshot.
pub const DEFAULT_KEEP_CLOSED: usize = 16384;

impl Default for KernelState {
    fn default() -> Self {
        KernelState {
            sockets: FxHashMap::default(),
            poll: 0,
            closed: VecDeque::new(),
            closed_by_cc: BTreeMap::new(),
            closed_seq: 0,
            keep_closed: DEFAULT_KEEP_CLOSED,
            status: CollectorStatus::bpf_off(),
        }
    }
}

impl KernelState {
    pub fn apply(&mut self, u: KernelUpdate) {
        match u {
            KernelUpdate::Phase { cookie, netns, bbr, entered } => {
                let k = self.entry(cookie);
                k.netns = netns;
                k.bbr = Some(bbr);
                k.phase_changes += 1;
                k.mode_entered = entered;
            }
            KernelUpdate::Inflation { cookie, netns, onset, peak_ratio } => {
                let k = self.entry(cookie);
                k.netns = netns;
                k.inflation = onset.map_or(KernelOnset::Calm, KernelOnset::Since);
                k.peak_ratio = k.peak_ratio.max(peak_ratio);
            }
        }
    }

    fn entry(&mut self, cookie: Cookie) -> &mut KernelSocket {
        let e = self.sockets.entry(cookie).or_default();
        e.1 = self.poll;
        Arc::make_mut(&mut e.0)
    }

    /// Forgets sockets the netlink dumps no longer list (`listed` says which they do) and the
    /// kernel has not spoken of since the last poll: a close record can be lost (ring buffer
    /// full), and a socket of another namespace is never listed. One poll of grace covers a
    /// socket whose first event beats its first dump. Call at the end of each dump.
    pub fn prune(&mut self, poll: u64, listed: impl Fn(Cookie) -> bool) {
        self.sockets.retain(|c, (_, updated)| listed(*c) || *updated + 1 >= poll);
        self.poll = poll;
    }

    /// Sockets with kernel state held.
    pub fn held(&self) -> usize {
        self.sockets.len()
    }

    pub fn close(&mut self, mut c: ClosedFlow) {
        self.sockets.remove(&c.cookie);
        self.closed_seq += 1;
        c.seq = self.closed_seq;
        self.closed_by_cc.entry(c.cc.clone()).or_insert_with(|| ClosedAggregate::new(&c.cc)).add(&c);
        self.closed.push_front(c);
        self.closed.truncate(self.keep_closed);
    }

    pub fn socket(&self, cookie: Cookie) -> Option<&Arc<KernelSocket>> {
        self.sockets.get(&cookie).map(|(k, _)| k)
    }

    /// The kernel's timing of this socket's inflation, for the alert rule.
    pub fn onset(&self, cookie: Cookie) -> KernelOnset {
        self.socket(cookie).map_or(KernelOnset::Untimed, |k| k.inflation)
    }

    pub fn closed(&self) -> Vec<ClosedFlow> {
        self.closed.iter().cloned().collect()
    }

    pub fn closed_by_cc(&self) -> Vec<ClosedAggregate> {
        self.closed_by_cc.values().cloned().collect()
    }
}

#[cfg(test)]
impl ClosedFlow {
    /// A closed flow for tests: cookie 1, 10 bytes acked in 2 s.
    pub fn example(cc: &str, srtt_us: u32, rate: Option<u64>) -> ClosedFlow {
        ClosedFlow {
            seq: 0,
            cookie: 1,
            netns: 1,
            cc: cc.into(),
            local: "10.0.0.1:1".parse().unwrap(),
            peer: "10.0.0.2:2".parse().unwrap(),
            closed_at: SystemTime::UNIX_EPOCH,
            lifetime_seconds: Some(2.0),
            counts: Tally::from_counts([(Count::BytesAcked, 10)]),
            srtt_us,
            min_rtt_us: 0,
            delivery_rate_bytes_per_sec: rate,
            bbr: None,
            peak_inflation_ratio: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(cc: &str, srtt_us: u32, rate: Option<u64>) -> ClosedFlow {
        ClosedFlow::example(cc, srtt_us, rate)
    }

    #[test]
    fn closed_aggregates_and_seq() {
        let mut k = KernelState::default();
        k.apply(KernelUpdate::Inflation { cookie: 1, netns: 1, onset: None, peak_ratio: 2.0 });
        assert_eq!(k.onset(1), KernelOnset::Calm);
        k.close(flow("cubic", 50, Some(1_000_000)));
        k.close(flow("cubic", 5_000, None));
        k.close(flow("bbr", 2_000_000, Some(u64::MAX)));
        assert_eq!(k.onset(1), KernelOnset::Untimed, "close forgets the socket");
        let agg = k.closed_by_cc();
        assert_eq!(
            agg.iter().map(|a| (a.cc.as_str(), a.count)).collect::<Vec<_>>(),
            [("bbr", 1), ("cubic", 2)]
        );
        // cubic: 50 µs and 5 ms srtt; bbr: 2 s.
        let cubic = &agg[1].srtt_seconds;
        assert_eq!(cubic.count(), 2);
        assert_eq!(
            cubic.buckets().iter().filter(|(_, n)| *n > 0).map(|(le, _)| *le).collect::<Vec<_>>(),
            [0.0001, 0.005]
        );
        assert!(agg[0].srtt_seconds.buckets().contains(&(2.5, 1)));
        // Two cubic flows of 10 bytes over a 2 s life: 5 bytes/s each.
        assert_eq!(agg[1].throughput_bytes_per_second.sum(), 10.0);
        assert_eq!(agg[1].throughput_bytes_per_second.count(), 2);
        assert_eq!(k.closed().iter().map(|c| c.seq).collect::<Vec<_>>(), [3, 2, 1]);
    }

    #[test]
    fn phase_updates_keep_latest() {
        let mut k = KernelState::default();
        let p = BbrState { mode: 2, cycle_idx: 1, ..Default::default() };
        k.apply(KernelUpdate::Phase { cookie: 9, netns: 4, bbr: BbrState::default(), entered: 1 });
        k.apply(KernelUpdate::Phase { cookie: 9, netns: 4, bbr: p, entered: 1 });
        let s = k.socket(9).unwrap();
        assert_eq!((s.bbr.unwrap().phase(), s.phase_changes), (p.phase(), 2));
        assert_eq!(k.onset(9), KernelOnset::Untimed, "no inflation info yet: netlink decides");
    }
}
