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

/// One socket's record: inside the dump it came from (a one-shot read's records stay in the one
/// vector the parser filled), or in an allocation of its own, shared with the snapshot's entry.
#[derive(Clone)]
pub struct RecordRef(Held);

#[derive(Clone)]
enum Held {
    InDump(Arc<Vec<SocketRecord>>, u32),
    Own(Arc<SocketRecord>),
}

impl RecordRef {
    /// The `idx`th record of `dump`. Panics if there is none: callers index what they hold.
    pub fn new(dump: Arc<Vec<SocketRecord>>, idx: u32) -> RecordRef {
        assert!((idx as usize) < dump.len(), "record {idx} of a dump of {}", dump.len());
        RecordRef(Held::InDump(dump, idx))
    }

    /// A record on its own (tests, and sources with one socket at a time).
    pub fn single(r: SocketRecord) -> RecordRef {
        RecordRef(Held::Own(Arc::new(r)))
    }

    /// A record already shared (a snapshot's entry).
    pub fn shared(r: Arc<SocketRecord>) -> RecordRef {
        RecordRef(Held::Own(r))
    }

    /// The record in an allocation of its own (shared if it has one already).
    pub fn to_arc(&self) -> Arc<SocketRecord> {
        match &self.0 {
            Held::Own(r) => Arc::clone(r),
            Held::InDump(..) => Arc::new((**self).clone()),
        }
    }
}

impl std::ops::Deref for RecordRef {
    type Target = SocketRecord;
    fn deref(&self) -> &SocketRecord {
        match &self.0 {
            Held::InDump(dump, idx) => &dump[*idx as usize],
            Held::Own(r) => r,
        }
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
    /// Sent data (some of it acked, or retransmitted), at least as much as it received.
    Sender,
    /// Received data, and sent none or less: a client asking for responses is one, though its
    /// requests are data too (their RTTs and delivery rates are a request's, not a transfer's).
    Receiver,
    /// Moved nothing.
    Idle,
    /// Its peer is this host, and loopback is not counted.
    Loopback,
}

impl SocketView {
    /// What this socket did in the last interval (see [`role`]).
    pub fn role(&self, loopback: bool) -> Role {
        // Seen once: no interval yet (no rates), at most one poll of history.
        let once = self.history.len() <= 1 && self.derived.rates == Rates::default();
        role(&self.record, &self.derived.rates, once, loopback)
    }
}

/// What a socket did in the interval its `rates` cover; a loopback socket is `Loopback` unless
/// `loopback` says to count it as any other. Seen once (a one-shot read, a first poll), with no
/// interval yet, it is judged by the moment: data in flight is a sender, data received in the
/// last second a receiver. Seen before and without rates, it did not move. A socket that both
/// sent and received takes the direction that carried more bytes.
pub fn role(r: &SocketRecord, rates: &Rates, seen_once: bool, loopback: bool) -> Role {
    let i = &r.tcp_info;
    let moved = |v: Option<f64>| v.is_some_and(|v| v > 0.0);
    let (sent, received) = if seen_once {
        (i.unacked_segs().is_some_and(|n| n > 0), i.last_data_recv_ms().is_some_and(|ms| ms < 1000))
    } else {
        let (out, inn) =
            (rates.goodput_bytes_per_sec.unwrap_or(0.0), rates.recv_bytes_per_sec.unwrap_or(0.0));
        let sent = moved(rates.goodput_bytes_per_sec) || moved(rates.retrans_segs_per_sec);
        (sent && out >= inn, moved(rates.recv_bytes_per_sec))
    };
    if !loopback && r.is_loopback() {
        Role::Loopback
    } else if sent {
        Role::Sender
    } else if received {
        Role::Receiver
    } else {
        Role::Idle
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
