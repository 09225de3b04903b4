//! The seam: everything a collector hands the engine, and nothing else. Sockets come in through
//! one trait ([`DumpSink`]): a netlink dump of one namespace, read a socket at a time, or a walk
//! of the sockets that moved in every namespace. What else a collector learns (kernel events, a
//! closed socket's last record, its own health) comes as an [`Update`]. Collectors import this
//! module and the model; they never see the engine or the snapshot.

pub mod bpf_poll;
pub mod features;
pub mod health;
pub mod sink;

pub use bpf_poll::BpfPoll;
pub use features::{Feature, FeatureState};
pub use health::{Cause, Reason};
pub use sink::{Aborted, DumpSink, Dumping, Feed, Source, feed_dump};

use crate::model::{BbrState, ClosedFlow, Cookie, SocketRecord};
use crate::wire::walk::WalkStats;
use std::time::{Duration, Instant, SystemTime};

/// The moment an update or tick happens: monotonic for arithmetic, wall-clock for reports.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    pub mono: Instant,
    pub wall: SystemTime,
}

impl Now {
    /// The clock, read: only at the edges (a collector's poll, the poller, one-shot commands).
    pub fn system() -> Now {
        Now { mono: Instant::now(), wall: SystemTime::now() }
    }

    /// The wall-clock time of an earlier monotonic instant.
    pub fn wall_of(&self, t: Instant) -> SystemTime {
        self.wall - self.mono.saturating_duration_since(t)
    }

    pub fn after(&self, d: Duration) -> Now {
        Now { mono: self.mono + d, wall: self.wall + d }
    }
}

/// Which arm of a running experiment (`bbrtop experiment`) a socket was drawn into. The engine
/// asks once for each socket it starts counting, and for a response whose socket it does not
/// count yet (a response may come before its socket is counted); the answer is read from the experiment's map in the kernel, so
/// an implementation is an edge, as a [`Source`] is.
pub trait ArmOf: Send + Sync {
    /// The socket's arm, an index into [`ArmOf::names`]; None outside the experiment.
    fn arm_of(&self, cookie: Cookie) -> Option<u8>;
    /// The arms' names, in the order the indices count.
    fn names(&self) -> &[String];
}

/// A shared [`ArmOf`], for a configuration that is cloned and printed.
#[derive(Clone)]
pub struct Arms(pub std::sync::Arc<dyn ArmOf>);

impl std::fmt::Debug for Arms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Arms").field(&self.0.names()).finish()
    }
}

/// What collectors hand the engine besides sockets: plain values, never kernel bytes.
pub enum Update {
    /// eBPF: a live socket's kernel state changed (BBR phase, inflation onset or end).
    Kernel(KernelUpdate),
    /// eBPF: a socket closed; its final record.
    Closed(Box<ClosedFlow>),
    /// eBPF collector health, sent at every poll.
    BpfStatus(BpfPoll),
    /// eBPF: a socket delivered one response.
    Response(Response),
}

/// One response a socket delivered: from the first byte the application wrote to the idle
/// socket to the ACK of the last byte it wrote (or, where that ACK came after the socket left
/// ESTABLISHED, to the socket's end).
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub cookie: Cookie,
    pub netns: u32,
    pub cc: String,
    pub peer: std::net::IpAddr,
    pub bytes: u64,
    pub took: std::time::Duration,
    /// Sent by a server (an accepted socket): a client's request is not a response.
    pub served: bool,
}

/// What the eBPF programs learned about one live socket.
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

/// One socket walk's records: every socket that moved since the last walk, of every network
/// namespace. A partial dump: a socket it does not list did not move.
pub struct Walk {
    pub sockets: Vec<SocketRecord>,
    /// Sockets the walk saw enter CLOSE: gone, whether or not their close record comes.
    pub gone: Vec<Cookie>,
    pub stats: WalkStats,
    pub duration: Duration,
    /// When it was read.
    pub now: Now,
}

/// A walk that could not be read: the sockets stay as they were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkFailed {
    pub error: String,
    pub duration: Duration,
}
