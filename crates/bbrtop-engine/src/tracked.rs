//! What the engine keeps of one socket between polls, and the step of its alert tracker.

use crate::totals;
use bbrtop_core::model::derive::{self, Counters, LimitedBy, Rates};
use bbrtop_core::model::{Cookie, SocketRecord};
use bbrtop_core::rule::{AlertTracker, RuleConfig, Sample as RuleSample, Transition};
use bbrtop_core::snapshot::kernel::KernelOnset;
use bbrtop_core::snapshot::{RecordRef, history::History};
use std::sync::Arc;
use std::time::Instant;

/// What the engine keeps of one socket between polls. The record itself stays in the dump or
/// walk it came from, so a poll moves no record.
pub(crate) struct Tracked {
    pub(crate) cookie: Cookie,
    /// Its latest record, in a dump or walk that ended (`None` until it is in one).
    pub(crate) rec: Option<RecordRef>,
    /// Its place in the dump being read.
    pub(crate) next_idx: u32,
    pub(crate) first_seen: Instant,
    pub(crate) counters: Counters,
    pub(crate) counters_at: Instant,
    pub(crate) rates: Rates,
    /// The verdict over the last interval, or over the socket's life when it was idle.
    pub(crate) limited_by: Option<LimitedBy>,
    pub(crate) history: Arc<History>,
    /// The poll this socket was first seen at.
    pub(crate) first_poll: u64,
    pub(crate) alert: AlertTracker,
    /// The dump generation that last saw this socket.
    pub(crate) generation: u64,
    /// Complete dumps in a row that did not list it (see [`GRACE`]).
    pub(crate) missed: u8,
    /// eBPF sent its close record: the next dump that does not list it ends it, without grace.
    pub(crate) closed: bool,
    /// Its view's place in the last snapshot, which a quiet socket's next view is copied from.
    pub(crate) view: u32,
    /// Something besides a new record changed its view (its alert aged, a kernel event).
    pub(crate) stale_view: bool,
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
pub(crate) const CLOSING_QUIET: std::time::Duration = std::time::Duration::from_secs(30);

impl Tracked {
    /// Closing, and quiet for [`CLOSING_QUIET`] as of `now`.
    pub(crate) fn lingering(&self, now: Instant) -> bool {
        use bbrtop_core::model::TcpState::*;
        let closing =
            self.rec.as_ref().is_some_and(|r| matches!(r.state, FinWait1 | FinWait2 | Closing | LastAck));
        closing && now.saturating_duration_since(self.counters_at) >= CLOSING_QUIET
    }
}

impl Tracked {
    pub(crate) fn new(
        rec: &SocketRecord,
        counters: Counters,
        now: Instant,
        generation: u64,
        account: totals::Account,
    ) -> Tracked {
        Tracked {
            cookie: rec.cookie,
            rec: None,
            next_idx: 0,
            first_seen: now,
            counters,
            counters_at: now,
            rates: Rates::default(),
            // No interval yet: the socket's life so far.
            limited_by: counters.limits.and_then(|l| derive::limited_by(l, rec.tcp_info.app_limited())),
            history: Arc::new(History::default()),
            first_poll: generation,
            alert: AlertTracker::default(),
            generation,
            missed: 0,
            closed: false,
            view: u32::MAX,
            stale_view: true,
            account,
        }
    }
}

/// Steps a socket's alert tracker on its new record. `kernel_onset` is the kernel's timing of the
/// inflation (eBPF), when it has one.
pub(crate) fn evaluate(
    rule: &RuleConfig,
    t: &mut Tracked,
    r: &SocketRecord,
    kernel_onset: KernelOnset,
    now: Instant,
) -> (Option<RuleSample>, Option<Transition>) {
    let sample = rule.sample(r);
    let tr = match (kernel_onset, sample) {
        // The kernel timed the onset per prompt RTT sample; netlink still says whether ACKs arrive.
        (k @ (KernelOnset::Calm | KernelOnset::Since(_)), Some(s)) if s.active => {
            t.alert.step(rule, now, k.since(), Some(s.ratio()))
        }
        // The kernel judges this socket: idle, or not one the rule judges, it is not inflated.
        (KernelOnset::Calm | KernelOnset::Since(_), _) => t.alert.end(),
        (KernelOnset::Untimed, s) => t.alert.eval(rule, now, s),
    };
    (sample, tr)
}
