//! The eBPF half of the engine's state: per-cookie kernel state (true BBR phase, kernel-timed
//! inflation onset), closed flows with per-cc aggregates, and the BPF collector's status.

use bbrtop_core::model::{ClosedFlow, Cookie};
use bbrtop_core::seam::{BpfPoll, KernelUpdate};
use bbrtop_core::snapshot::kernel::{KernelOnset, KernelSocket};
use bbrtop_core::snapshot::{ClosedAggregate, CollectorStatus, DEFAULT_KEEP_CLOSED};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

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
    /// tcp_probe is attached (the last eBPF poll said so).
    judges: bool,
}

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
            judges: false,
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
    #[cfg(test)]
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

    /// The kernel's timing of this socket's inflation, for the alert rule: while tcp_probe is
    /// attached, a socket it has timed no spell for is calm.
    pub fn onset(&self, cookie: Cookie) -> KernelOnset {
        match self.socket(cookie).map(|k| k.inflation) {
            Some(KernelOnset::Untimed) | None if self.judges => KernelOnset::Calm,
            k => k.unwrap_or_default(),
        }
    }

    /// One poll of the eBPF collector: its health, and whether it judges inflation.
    pub fn bpf_poll(&mut self, p: BpfPoll) {
        self.judges = p.judges_inflation && p.programs_attached > 0;
        self.status.bpf_poll(p);
    }

    pub fn closed(&self) -> Vec<ClosedFlow> {
        self.closed.iter().cloned().collect()
    }

    pub fn closed_by_cc(&self) -> Vec<ClosedAggregate> {
        self.closed_by_cc.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::model::BbrState;

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
