//! What the engine keeps of one socket between polls besides its published entry, and the step
//! of its alert tracker.

use crate::totals;
use bbrtop_core::model::derive::{self, Counters, LimitedBy, Rates};
use bbrtop_core::model::{SocketRecord, TcpState};
use bbrtop_core::rule::{AlertTracker, RuleConfig, Sample as RuleSample, Transition};
use bbrtop_core::snapshot::kernel::KernelOnset;
use std::time::{Duration, Instant};

/// The engine's own state of one socket. Its record, rates and history are in its published
/// entry (`Engine::published`), which the snapshots share.
pub(crate) struct Tracked {
    /// When its counters were last read: the interval its next rates span starts there.
    pub(crate) counters_at: Instant,
    pub(crate) alert: Alert,
    /// The dump or walk generation that last listed it, and the one it last moved in (a dump
    /// lists sockets that did not move).
    pub(crate) generation: u64,
    pub(crate) moved: u64,
    /// Its place in the dump being read.
    pub(crate) next_idx: u32,
    /// Complete dumps in a row that did not list it (see [`GRACE`]); while above zero it is not
    /// published.
    pub(crate) missed: u8,
    /// eBPF sent its close record: the next dump that does not list it ends it, without grace.
    pub(crate) closed: bool,
    /// Its published entry was counted in the per-cc figures as seen once (no interval yet).
    pub(crate) counted_once: bool,
    /// The earliest time its timer is armed for (see `timers`).
    pub(crate) due: Option<Instant>,
    /// What of its counts went into the counters.
    pub(crate) account: totals::Account,
}

/// Complete dumps a tracked socket may be missing from before it counts as closed. A dump is not
/// atomic: a socket can slip through one (moved between hash buckets while the kernel walked
/// them), and ending it there would resolve its alert only to fire it again.
pub(crate) const GRACE: u8 = 1;

/// How long a socket in a closing state (FIN-WAIT-1/2, CLOSING, LAST-ACK) may go without moving
/// before it leaves the view. It carries no data any more; the kernel only retransmits its FIN
/// into a path that may be gone (a namespace deleted under it) or waits for the peer's, and
/// destroys it when its retries or tcp_fin_timeout run out, minutes later. Were it to move
/// again, the walk would show it again.
pub(crate) const CLOSING_QUIET: Duration = Duration::from_secs(30);

/// How long a socket stays quiet before its entry keeps its record packed: long enough that a
/// socket asked once a second, or a bulk flow, stays whole; an idle socket's record then takes a
/// third of the memory.
pub(crate) const PACK_AFTER: Duration = Duration::from_secs(10);

impl Tracked {
    pub(crate) fn new(now: Instant, generation: u64, account: totals::Account) -> Tracked {
        Tracked {
            counters_at: now,
            alert: Alert::default(),
            generation,
            moved: generation,
            next_idx: 0,
            missed: 0,
            closed: false,
            counted_once: false,
            due: None,
            account,
        }
    }

    /// Closing (its record says so), and quiet for [`CLOSING_QUIET`] as of `now`.
    pub(crate) fn lingering(&self, r: &SocketRecord, now: Instant) -> bool {
        closing(r) && now.saturating_duration_since(self.counters_at) >= CLOSING_QUIET
    }
}

/// A socket's alert tracker, which takes no memory while the socket is calm (most are).
#[derive(Default)]
pub(crate) struct Alert(Option<Box<AlertTracker>>);

static CALM: AlertTracker = AlertTracker { onset: None, fired: None, peak_ratio: 0.0 };

impl Alert {
    pub(crate) fn get(&self) -> &AlertTracker {
        self.0.as_deref().unwrap_or(&CALM)
    }

    /// Runs `f` on the tracker; a tracker left calm goes.
    pub(crate) fn update<R>(&mut self, f: impl FnOnce(&mut AlertTracker) -> R) -> R {
        let t = self.0.get_or_insert_default();
        let r = f(t);
        if **t == CALM {
            self.0 = None;
        }
        r
    }
}

/// In a state that only ends (FIN-WAIT-1/2, CLOSING, LAST-ACK).
pub(crate) fn closing(r: &SocketRecord) -> bool {
    use bbrtop_core::model::TcpState::*;
    matches!(r.state, FinWait1 | FinWait2 | Closing | LastAck)
}

/// Rates and the limit verdict of a socket read again: over the interval since `prev` was read
/// `dt` ago, or over its life when nothing was busy in between (an idle socket).
pub(crate) fn interval(prev: &SocketRecord, cur: &SocketRecord, dt: Duration) -> (Rates, Option<LimitedBy>) {
    let (p, c) = (Counters::of(&prev.tcp_info), Counters::of(&cur.tcp_info));
    let rates = derive::rates(&p, &c, dt);
    let interval = match (c.limits, p.limits) {
        (Some(c), Some(p)) => Some(c.since(p)),
        _ => None,
    };
    let limits = interval.filter(|l| l.busy_us > 0).or(c.limits);
    (rates, limits.and_then(|l| derive::limited_by(l, cur.tcp_info.app_limited())))
}

/// The limit verdict of a socket seen for the first time: over its life so far.
pub(crate) fn lifetime_limit(r: &SocketRecord) -> Option<LimitedBy> {
    Counters::of(&r.tcp_info).limits.and_then(|l| derive::limited_by(l, r.tcp_info.app_limited()))
}

/// Steps a socket's alert tracker on its new record, its baseline no higher than `floor` (its
/// peer's lowest of late, `paths.rs`). `kernel_onset` is the kernel's timing of the inflation
/// (eBPF), when it has one.
pub(crate) fn evaluate(
    rule: &RuleConfig,
    alert: &mut AlertTracker,
    r: &SocketRecord,
    floor: Option<u32>,
    kernel_onset: KernelOnset,
    now: Instant,
) -> (Option<RuleSample>, Option<Transition>) {
    let own = rule.sample(r);
    let sample =
        own.map(|s| RuleSample { baseline_us: floor.map_or(s.baseline_us, |f| f.min(s.baseline_us)), ..s });
    // The kernel judges against the socket's own min RTT, which for a connection born into a
    // queue is the queue's: where only the peer's floor says inflated, the polls time it.
    // tcp_probe fires in ESTABLISHED only: a socket past it (CLOSE_WAIT still answering,
    // FIN_WAIT1 draining its last bytes) has no kernel timing, so the polls time it too.
    let kernel_onset = match (kernel_onset, own, sample) {
        (KernelOnset::Calm | KernelOnset::Since(_), ..) if r.state != TcpState::Established => {
            KernelOnset::Untimed
        }
        (KernelOnset::Calm, Some(o), Some(s))
            if s.baseline_us < o.baseline_us && rule.inflated(s.srtt_us, s.baseline_us) =>
        {
            KernelOnset::Untimed
        }
        (k, ..) => k,
    };
    let tr = match (kernel_onset, sample) {
        // The kernel timed the onset per prompt RTT sample; netlink still says whether ACKs arrive.
        (k @ (KernelOnset::Calm | KernelOnset::Since(_)), Some(s)) if s.active => {
            alert.step(rule, now, k.since(), Some(s.ratio()))
        }
        // The kernel judges this socket: idle, or not one the rule judges, it is not inflated.
        (KernelOnset::Calm | KernelOnset::Since(_), _) => alert.end(),
        (KernelOnset::Untimed, s) => alert.eval(rule, now, s),
    };
    (sample, tr)
}
