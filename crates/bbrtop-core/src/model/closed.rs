//! A closed socket's last record, as the eBPF close hook reads it: its counts, RTTs and BBR state
//! at the close. Collectors make it; the engine counts it; snapshots keep the latest.

#[cfg(any(test, feature = "test-support"))]
use super::Count;
use super::{Cookie, Tally};
use crate::units::serde_time;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::SystemTime;

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
    /// 0 when the socket closed without an RTT sample (a listener).
    pub min_rtt_us: u32,
    pub delivery_rate_bytes_per_sec: Option<u64>,
    pub bbr: Option<ClosedBbr>,
    pub peak_inflation_ratio: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedBbr {
    #[serde(deserialize_with = "crate::units::interned::deserialize")]
    pub mode: crate::units::interned::Name,
    pub min_rtt_us: u32,
    pub bw_bytes_per_sec: u64,
}

#[cfg(any(test, feature = "test-support"))]
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
