//! The socket model: one record per socket, keyed by socket cookie, holding what the kernel said.
//! Values derived from it live in [`derive`].

pub mod derive;
pub mod phase;
pub mod state;
pub mod tcp_info;

pub use phase::{Phase, ProbeBwStep, Source};
pub use state::{StateSet, TcpState};
pub use tcp_info::{InfoSize, TcpInfo};

use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// The kernel's socket cookie: unique per socket for the life of the host, and carried by both
/// inet_diag and every TCP tracepoint, so it joins eBPF data with netlink data.
pub type Cookie = u64;

/// `struct tcp_bbr_info`, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BbrInfo {
    /// BBR's bottleneck bandwidth estimate (max filter of delivery rate).
    pub bw_bytes_per_sec: u64,
    /// BBR's own min RTT: a 10 s windowed minimum, re-measured in PROBE_RTT.
    pub min_rtt_us: u32,
    /// pacing_gain as a ratio (the kernel sends it x256).
    pub pacing_gain: f64,
    /// cwnd_gain as a ratio (the kernel sends it x256).
    pub cwnd_gain: f64,
}

impl BbrInfo {
    /// Size of `struct tcp_bbr_info`: bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain (u32 each).
    pub const LEN: usize = 20;

    /// Decodes the payload of an `INET_DIAG_BBRINFO` attribute. `None` if it is too short.
    pub fn parse(b: &[u8]) -> Option<BbrInfo> {
        let u = |i: usize| -> Option<u32> {
            let s = b.get(i * 4..i * 4 + 4)?;
            Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
        };
        Some(BbrInfo {
            bw_bytes_per_sec: (u(1)? as u64) << 32 | u(0)? as u64,
            min_rtt_us: u(2)?,
            pacing_gain: u(3)? as f64 / 256.0,
            cwnd_gain: u(4)? as f64 / 256.0,
        })
    }
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
    /// Decodes `SK_MEMINFO_*` u32s. Needs the first eight; `drops` came later.
    pub fn parse(b: &[u8]) -> Option<MemInfo> {
        let u = |i: usize| -> Option<u32> {
            let s = b.get(i * 4..i * 4 + 4)?;
            Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
        };
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
    /// Congestion-control algorithm (`INET_DIAG_CONG`), e.g. "bbr" or "cubic". Shared: a host
    /// has a handful of names and 100k sockets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<Arc<str>>,
    pub tcp_info: TcpInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bbr: Option<BbrInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skmem: Option<MemInfo>,
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
            cc: None,
            tcp_info: TcpInfo::default(),
            bbr: None,
            skmem: None,
        }
    }

    pub fn cc_name(&self) -> &str {
        self.cc.as_deref().unwrap_or("unknown")
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
        let i = BbrInfo::parse(&b).unwrap();
        assert_eq!(i.bw_bytes_per_sec, (1u64 << 32) | 0x10);
        assert_eq!(i.min_rtt_us, 5000);
        assert_eq!(i.pacing_gain, 1.25);
        assert_eq!(i.cwnd_gain, 2.0);
        assert!(BbrInfo::parse(&b[..19]).is_none());
    }

    #[test]
    fn meminfo_without_drops() {
        let b: Vec<u8> = (1u32..=8).flat_map(|v| v.to_ne_bytes()).collect();
        let m = MemInfo::parse(&b).unwrap();
        assert_eq!((m.rmem_alloc, m.backlog, m.drops), (1, 8, 0));
        assert!(MemInfo::parse(&b[..28]).is_none());
    }
}
