//! The socket model: one record per socket, keyed by socket cookie, holding what the kernel said.
//! Values derived from it live in [`derive`].

pub mod bbr;
pub mod closed;
pub mod derive;
pub mod ecn;
pub mod origin;
pub mod packed;
pub mod phase;
pub mod state;
pub mod tally;
pub mod tcp_info;

pub use bbr::{BbrExt, BbrInfo, BbrLayout, BbrVersion, DctcpInfo, HostBbr, StructBbr};
pub use closed::{ClosedBbr, ClosedFlow};
pub use ecn::Ecn;
pub use origin::{Origin, Pod};
pub use phase::{Phase, ProbeBwStep, Source};
pub use state::{StateSet, TcpState};
pub use tally::{Count, Tally};
pub use tcp_info::{InfoSize, TcpInfo};

use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// The kernel's socket cookie: unique per socket for the life of the host, and carried by both
/// inet_diag and every TCP tracepoint, so it joins eBPF data with netlink data.
pub type Cookie = u64;

/// The `i`th native-endian u32 of a kernel struct's bytes, if they reach that far.
fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i * 4..i * 4 + 4)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// `INET_DIAG_SKMEMINFO`: the socket's memory accounting, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemInfo {
    pub rmem_alloc: u32,
    pub rcvbuf: u32,
    pub wmem_alloc: u32,
    pub sndbuf: u32,
    pub fwd_alloc: u32,
    pub wmem_queued: u32,
    pub optmem: u32,
    pub backlog: u32,
    /// Packets dropped (a count, not bytes). Absent on old kernels.
    pub drops: u32,
}

impl MemInfo {
    /// Its fields in `SK_MEMINFO_*` order.
    pub fn fields(&self) -> [u32; 9] {
        let m = self;
        [
            m.rmem_alloc,
            m.rcvbuf,
            m.wmem_alloc,
            m.sndbuf,
            m.fwd_alloc,
            m.wmem_queued,
            m.optmem,
            m.backlog,
            m.drops,
        ]
    }

    /// The inverse of [`MemInfo::fields`].
    pub fn from_fields(f: [u32; 9]) -> MemInfo {
        let [rmem_alloc, rcvbuf, wmem_alloc, sndbuf, fwd_alloc, wmem_queued, optmem, backlog, drops] = f;
        MemInfo { rmem_alloc, rcvbuf, wmem_alloc, sndbuf, fwd_alloc, wmem_queued, optmem, backlog, drops }
    }

    /// Decodes `SK_MEMINFO_*` u32s. Needs the first eight; `drops` came later.
    pub fn parse(b: &[u8]) -> Option<MemInfo> {
        let u = |i: usize| u32_at(b, i);
        Some(MemInfo {
            rmem_alloc: u(0)?,
            rcvbuf: u(1)?,
            wmem_alloc: u(2)?,
            sndbuf: u(3)?,
            fwd_alloc: u(4)?,
            wmem_queued: u(5)?,
            optmem: u(6)?,
            backlog: u(7)?,
            drops: u(8).unwrap_or(0),
        })
    }
}

/// One socket's RTT samples since the last read, counted per ACK by bbrtop's eBPF program on
/// tcp_probe and handed back by inet_diag with the dump (the socket-local storage). It sees every
/// ACK that arrives with data in flight (the others carry no RTT sample), where tcp_info shows one
/// srtt per poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RttWindow {
    /// ACKs with data in flight (RTT samples) since the last read.
    pub samples: u32,
    /// srtt after the latest ACK, even when none came since the last read.
    pub last_srtt_us: u32,
    /// The smallest and largest srtt since the last read; absent when no ACK came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_srtt_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_srtt_us: Option<u32>,
    /// BBR's own state at the latest ACK (`struct bbr`), for BBR sockets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bbr: Option<BbrState>,
    /// The RTT samples themselves since the last read (srtt smooths them), and the smallest.
    pub rtt_samples: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_min_us: Option<u32>,
    /// The prompt ones: taken by an ACK that left data in flight, so no delayed ACK or idle
    /// application is in them (crates/bbrtop-collect/bpf/bbrtop.h). The alert judges these.
    pub prompt_samples: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_min_us: Option<u32>,
}

/// `struct bbr`'s state, read by eBPF: at a socket's latest ACK (its RTT window), or at a mode
/// change (an event, which also carries BBR's min RTT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BbrState {
    /// 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT.
    pub mode: u8,
    /// PROBE_BW's place in its gain cycle: 0 probing up, 1 draining, 2 to 7 cruising (v3: 2
    /// cruising, 3 refilling).
    pub cycle_idx: u8,
    /// `cycle_idx` counts v3's steps: the kernel's `struct bbr` has v3's layout.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cycle_v3: bool,
    pub full_bw_reached: bool,
    /// The long-term (policer) bandwidth mode (v1 only).
    pub lt_use_bw: bool,
    /// BBR's own min RTT, where the reading carries it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u32>,
}

impl BbrState {
    pub fn phase(&self) -> Option<Phase> {
        Phase::from_kernel(self.mode, self.cycle_idx, self.cycle_v3)
    }
}

/// Byte offsets of `struct bbrtop_rtt_window` (crates/bbrtop-collect/bpf/bbrtop.h); a test checks
/// each against the eBPF skeleton's types.
pub mod window_off {
    pub const EPOCH: usize = 0;
    pub const SAMPLES: usize = 4;
    pub const LAST_SRTT_US: usize = 8;
    pub const MIN_SRTT_US: usize = 12;
    pub const MAX_SRTT_US: usize = 16;
    pub const BBR: usize = 20;
    pub const BBR_MODE: usize = 21;
    pub const CYCLE_IDX: usize = 22;
    pub const BBR_FLAGS: usize = 23;
    pub const RTT_SAMPLES: usize = 24;
    pub const RTT_MIN_US: usize = 28;
    pub const PROMPT_SAMPLES: usize = 32;
    pub const PROMPT_MIN_US: usize = 36;
}

impl RttWindow {
    /// Size of `struct bbrtop_rtt_window` (crates/bbrtop-collect/bpf/bbrtop.h), first in the
    /// storage value.
    pub const LEN: usize = 40;

    /// Decodes one window (a walk record's, or one of a storage value's two), read at `epoch`: a
    /// window of another epoch saw no ACK since the last read. `None` if too short, or if no
    /// ACK ever came with data in flight (a window's count restarts at 1, so 0 means never).
    pub fn parse(b: &[u8], epoch: u32) -> Option<RttWindow> {
        use window_off as o;
        let u = |off: usize| u32_at(b, off / 4);
        let (window_epoch, samples) = (u(o::EPOCH)?, u(o::SAMPLES)?);
        let (last, min, max) = (u(o::LAST_SRTT_US)?, u(o::MIN_SRTT_US)?, u(o::MAX_SRTT_US)?);
        if samples == 0 {
            return None;
        }
        let current = window_epoch == epoch;
        let byte = |off: usize| b.get(off).copied();
        let bbr = (byte(o::BBR) == Some(1)).then_some(()).and_then(|()| {
            let flags = byte(o::BBR_FLAGS)?;
            Some(BbrState {
                mode: byte(o::BBR_MODE)?,
                cycle_idx: byte(o::CYCLE_IDX)?,
                cycle_v3: flags & 4 != 0,
                full_bw_reached: flags & 1 != 0,
                lt_use_bw: flags & 2 != 0,
                min_rtt_us: None,
            })
        });
        // Counted only in this read's window; a count of 0 leaves its minimum unknown.
        let count = |off: usize| if current { u(off).unwrap_or(0) } else { 0 };
        let (rtt_samples, prompt_samples) = (count(o::RTT_SAMPLES), count(o::PROMPT_SAMPLES));
        Some(RttWindow {
            samples: if current { samples } else { 0 },
            last_srtt_us: last,
            min_srtt_us: current.then_some(min),
            max_srtt_us: current.then_some(max),
            bbr,
            rtt_samples,
            rtt_min_us: (rtt_samples > 0).then(|| u(o::RTT_MIN_US)).flatten(),
            prompt_samples,
            prompt_min_us: (prompt_samples > 0).then(|| u(o::PROMPT_MIN_US)).flatten(),
        })
    }
}

impl RttWindow {
    /// Decodes a socket's storage value, which starts with two windows by the read epoch's parity
    /// (crates/bbrtop-collect/bpf/sock_state.h), dumped after the epoch was bumped past `read`: the
    /// window of `read` is whole, and no hook writes it any more. Without an ACK in that epoch, the
    /// newer of the two still says the latest srtt and BBR state, with no samples.
    pub fn parse_stored(b: &[u8], read: u32) -> Option<RttWindow> {
        let (first, second) = (b.get(..Self::LEN)?, b.get(Self::LEN..2 * Self::LEN)?);
        let (this, other) = if read & 1 == 0 { (first, second) } else { (second, first) };
        // Epochs back from the current one (read + 1); a window never begun is the oldest.
        let age = |w: &[u8]| match (u32_at(w, window_off::SAMPLES / 4), u32_at(w, window_off::EPOCH / 4)) {
            (Some(1..), Some(e)) => read.wrapping_add(1).wrapping_sub(e),
            _ => u32::MAX,
        };
        let whole = u32_at(this, window_off::EPOCH / 4) == Some(read);
        Self::parse(if whole || age(this) < age(other) { this } else { other }, read)
    }
}

/// Everything one inet_diag message says about one socket.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SocketRecord {
    pub cookie: Cookie,
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub state: TcpState,
    pub uid: u32,
    pub inode: u32,
    /// Inode number of the socket's network namespace, when the collector knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netns: Option<u64>,
    /// Id of the socket's cgroup (v2: the inode of its directory), when the collector knows it
    /// (the kernel walk does; netlink does not say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_id: Option<u64>,
    /// Where it lives (namespace name, cgroup path, pod), when the collector could say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Arc<Origin>>,
    /// Congestion-control algorithm (`INET_DIAG_CONG`), e.g. "bbr" or "cubic". Shared: a host
    /// has a handful of names and 100k sockets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<Arc<str>>,
    pub tcp_info: TcpInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bbr: Option<BbrInfo>,
    /// DCTCP's ECN state (`tcp_dctcp_info`), for dctcp sockets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dctcp: Option<DctcpInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skmem: Option<MemInfo>,
    /// Per-ACK RTT since the last read (eBPF); absent when eBPF is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_rtt: Option<RttWindow>,
}

impl SocketRecord {
    /// The record of a socket with only its identity known; the rest is filled by the parser.
    pub fn new(cookie: Cookie, local: SocketAddr, peer: SocketAddr, state: TcpState) -> Self {
        SocketRecord {
            cookie,
            local,
            peer,
            state,
            uid: 0,
            inode: 0,
            netns: None,
            cgroup_id: None,
            origin: None,
            cc: None,
            tcp_info: TcpInfo::default(),
            bbr: None,
            dctcp: None,
            skmem: None,
            kernel_rtt: None,
        }
    }

    pub fn cc_name(&self) -> &str {
        self.cc.as_deref().unwrap_or("unknown")
    }

    /// A later read of the same socket says nothing moved: all is equal but tcp_info's ages
    /// (milliseconds since data or an ACK went either way), which grow by themselves.
    pub fn same_but_ages(&self, later: &SocketRecord) -> bool {
        self.tcp_info.same_but_ages(&later.tcp_info)
            && SocketRecord { tcp_info: later.tcp_info, ..self.clone() } == *later
    }

    /// A socket of the host talking to itself: its peer is a loopback address (127.0.0.0/8,
    /// ::1, or 127.x mapped into IPv6).
    pub fn is_loopback(&self) -> bool {
        is_loopback_peer(self.peer)
    }
}

/// Whether a socket whose peer is `peer` talks to its own host (see
/// [`SocketRecord::is_loopback`]); closed flows and alerts carry the peer without the record.
pub fn is_loopback_peer(peer: SocketAddr) -> bool {
    match peer.ip() {
        std::net::IpAddr::V4(a) => a.is_loopback(),
        std::net::IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bbr_info_decodes_gains_and_u64_bw() {
        let mut b = Vec::new();
        for v in [0x0000_0010u32, 0x1, 5000, 320, 512] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        let i = BbrInfo::parse(&b, Some("bbr")).unwrap();
        assert_eq!(i.bw_bytes_per_sec, (1u64 << 32) | 0x10);
        assert_eq!(i.min_rtt_us, 5000);
        assert_eq!(i.pacing_gain, 1.25);
        assert_eq!(i.cwnd_gain, 2.0);
        assert!(BbrInfo::parse(&b[..19], Some("bbr")).is_none());
    }

    #[test]
    fn rtt_window_of_this_read_or_not() {
        let mut b: Vec<u8> = [7u32, 3, 1200, 1000, 1500, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let w = RttWindow::parse(&b, 7).unwrap();
        assert_eq!(
            (w.samples, w.last_srtt_us, w.min_srtt_us, w.max_srtt_us),
            (3, 1200, Some(1000), Some(1500))
        );
        assert_eq!(w.bbr, None, "not a BBR socket");
        b[20..24].copy_from_slice(&[1, 2, 5, 0b01]);
        let bbr = RttWindow::parse(&b, 7).unwrap().bbr.unwrap();
        assert_eq!(bbr, BbrState { mode: 2, cycle_idx: 5, full_bw_reached: true, ..BbrState::default() });
        b[20..24].copy_from_slice(&[1, 2, 3, 0b110]);
        let bbr = RttWindow::parse(&b, 7).unwrap().bbr.unwrap();
        let want = BbrState { mode: 2, cycle_idx: 3, cycle_v3: true, lt_use_bw: true, ..BbrState::default() };
        assert_eq!(bbr, want);
        assert_eq!(bbr.phase(), Some(Phase::ProbeBw(ProbeBwStep::Refill)));
        b[20..24].copy_from_slice(&[1, 2, 5, 0b01]);
        // An older epoch: no ACK since the last read, but the last srtt stands.
        let w = RttWindow::parse(&b, 8).unwrap();
        assert_eq!((w.samples, w.last_srtt_us, w.min_srtt_us, w.max_srtt_us), (0, 1200, None, None));
        assert!(RttWindow::parse(&b[..19], 7).is_none());
        // Storage made at connect time, before any ACK with data in flight: no window.
        assert_eq!(RttWindow::parse(&[0; RttWindow::LEN], 0), None);
    }

    /// A window of `epoch` with `samples` ACKs and srtt `last`, as the hooks write it.
    fn window(epoch: u32, samples: u32, last: u32) -> Vec<u8> {
        let mut b: Vec<u8> =
            [epoch, samples, last, last, last, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        b.resize(RttWindow::LEN, 0);
        b
    }

    #[test]
    fn stored_windows_are_read_by_parity() {
        let stored = |even: Vec<u8>, odd: Vec<u8>| [even, odd].concat();
        let seen = |w: Option<RttWindow>| w.map(|w| (w.samples, w.last_srtt_us));
        // Read 6 (dumped after the bump to 7): the even window is whole, whatever 7's ACKs wrote.
        let b = stored(window(6, 4, 1000), window(7, 2, 3000));
        assert_eq!(seen(RttWindow::parse_stored(&b, 6)), Some((4, 1000)));
        // Read 7: no ACK in 7, whose window is older (5): the even one (6) says the latest srtt.
        let b = stored(window(6, 4, 1000), window(5, 9, 900));
        assert_eq!(seen(RttWindow::parse_stored(&b, 7)), Some((0, 1000)));
        // ... and a window of 8, begun since the bump, is newer still.
        let b = stored(window(8, 1, 1100), window(5, 9, 900));
        assert_eq!(seen(RttWindow::parse_stored(&b, 7)), Some((0, 1100)));
        // A window never begun (storage made at connect) is older than any.
        let b = stored(window(0, 0, 0), window(1, 3, 2000));
        assert_eq!(seen(RttWindow::parse_stored(&b, 2)), Some((0, 2000)));
        assert_eq!(RttWindow::parse_stored(&[0; 2 * RttWindow::LEN], 0), None);
        assert_eq!(RttWindow::parse_stored(&b[..RttWindow::LEN], 0), None, "one window: too short");
    }

    #[test]
    fn meminfo_without_drops() {
        let b: Vec<u8> = (1u32..=8).flat_map(|v| v.to_ne_bytes()).collect();
        let m = MemInfo::parse(&b).unwrap();
        assert_eq!((m.rmem_alloc, m.backlog, m.drops), (1, 8, 0));
        assert!(MemInfo::parse(&b[..28]).is_none());
    }
}
