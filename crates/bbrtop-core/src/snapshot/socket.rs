//! One socket in a snapshot: its record (shared with the dump it came from), what bbrtop
//! derived from it at that tick, and its history.

use super::history::HistoryView;
use super::kernel::KernelSocket;
use crate::model::derive::{LimitedBy, Rates};
use crate::model::{Phase, SocketRecord, Source};
use serde::Serialize;
use std::sync::Arc;

/// Values derived for one socket at one tick.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Derived {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Whether `phase` was read from the kernel (eBPF) or inferred from the gains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_source: Option<Source>,
    /// The min RTT inflation is measured against (see `--alert.baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_rtt_us: Option<u32>,
    /// srtt - baseline: the delay the bottleneck queue adds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_delay_us: Option<u32>,
    /// srtt / baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflation_ratio: Option<f64>,
    /// Inflated by the alert rule now.
    pub inflated: bool,
    /// Seconds the present spell of inflation has lasted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflated_for_seconds: Option<f64>,
    pub alert_firing: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<LimitedBy>,
    /// ECN: negotiated, seen, CE marks (absent for a socket with neither ECN nor marks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<crate::model::Ecn>,
    /// Bytes retransmitted over bytes sent, over the socket's life.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrans_ratio: Option<f64>,
    #[serde(flatten)]
    pub rates: Rates,
    /// Seconds since bbrtop first saw the socket.
    pub seen_for_seconds: f64,
    /// The kernel's own state of this socket (eBPF), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<Arc<KernelSocket>>,
}

/// One socket's record, inside the dump it came from. A dump's records stay in the one vector
/// the parser filled, shared by the engine and every snapshot built from that dump.
#[derive(Clone)]
pub struct RecordRef {
    dump: Arc<Vec<SocketRecord>>,
    idx: u32,
}

impl RecordRef {
    /// The `idx`th record of `dump`. Panics if there is none: callers index what they hold.
    pub fn new(dump: Arc<Vec<SocketRecord>>, idx: u32) -> RecordRef {
        assert!((idx as usize) < dump.len(), "record {idx} of a dump of {}", dump.len());
        RecordRef { dump, idx }
    }

    /// A record on its own (tests, and sources with one socket at a time).
    pub fn single(r: SocketRecord) -> RecordRef {
        RecordRef { dump: Arc::new(vec![r]), idx: 0 }
    }
}

impl std::ops::Deref for RecordRef {
    type Target = SocketRecord;
    fn deref(&self) -> &SocketRecord {
        &self.dump[self.idx as usize]
    }
}

impl std::fmt::Debug for RecordRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for RecordRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// What a socket did in the last interval, for the per-cc figures, which are its senders'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Sent data (some of it acked, or retransmitted).
    Sender,
    /// Received data and sent none.
    Receiver,
    /// Moved nothing.
    Idle,
    /// Its peer is this host, and loopback is not counted.
    Loopback,
}

impl SocketView {
    /// What this socket did in the last interval; a loopback socket is `Loopback` unless
    /// `loopback` says to count it as any other. Seen once (a one-shot read, a first poll), with
    /// no interval yet, it is judged by the moment: data in flight is a sender, data received in
    /// the last second a receiver.
    pub fn role(&self, loopback: bool) -> Role {
        let (r, i) = (&self.derived.rates, &self.record.tcp_info);
        let moved = |v: Option<f64>| v.is_some_and(|v| v > 0.0);
        let first_sight = r.goodput_bytes_per_sec.is_none() && r.recv_bytes_per_sec.is_none();
        let (sent, received) = if first_sight {
            (i.unacked_segs().is_some_and(|n| n > 0), i.last_data_recv_ms().is_some_and(|ms| ms < 1000))
        } else {
            (moved(r.goodput_bytes_per_sec) || moved(r.retrans_segs_per_sec), moved(r.recv_bytes_per_sec))
        };
        if !loopback && self.record.is_loopback() {
            Role::Loopback
        } else if sent {
            Role::Sender
        } else if received {
            Role::Receiver
        } else {
            Role::Idle
        }
    }
}

/// One socket in a snapshot: what the kernel said, what follows from it, and its history.
#[derive(Clone, Debug, Serialize)]
pub struct SocketView {
    #[serde(flatten)]
    pub record: RecordRef,
    pub derived: Derived,
    #[serde(skip)]
    pub history: HistoryView,
}
