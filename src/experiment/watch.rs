//! The experiment's loop: at every interval (the one periodic worker, `crate::worker`) it reads
//! each arm's figures from the latest snapshot's per-arm totals, steps the harm guard of each
//! test arm and closes in the program an arm the guard stops, logs a status line, and publishes
//! the status for whoever shows it; it ends when stopped, when its duration is over, or when the
//! cgroup is gone.

use super::guard::ArmGuard;
use super::status::{Latest, Status, Stopped};
use super::summary::status_line;
use super::{Arm, ArmCount, verdict};
use bbrtop_core::sequential::Bounds;
use bbrtop_core::snapshot::{CcTotals, Snapshot};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the loop reads and moves of the program running in the kernel (`attach::Running`).
pub trait Program {
    /// The counts so far, per arm.
    fn counts(&self) -> Vec<ArmCount>;
    /// Sends arm `i`'s new connections to the control from now on.
    fn close(&mut self, i: usize);
    /// Whether the cgroup is gone, so the program runs for nothing.
    fn cgroup_removed(&self) -> bool;
}

/// How often the loop looks, and for how long it runs (`None`: until stopped).
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    pub every: Duration,
    pub until: Option<Duration>,
}

/// Why the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Stopped, or its duration is over.
    Stopped,
    /// The cgroup is gone (removed, or removed and made again).
    CgroupRemoved,
}

/// The experiment as its loop watches it: the arms' names, the guard per test arm (the whole arm
/// and each of its peer groups and ASs), and what it stopped.
pub struct Watch {
    names: Vec<String>,
    guards: Vec<ArmGuard>,
    stopped: Vec<Stopped>,
    began: Instant,
}

impl Watch {
    pub fn new(arms: &[Arm], bounds: Bounds) -> Watch {
        let names: Vec<String> = arms.iter().map(|a| a.cc.clone()).collect();
        let guards = vec![ArmGuard::new(bounds); names.len()];
        Watch { names, guards, stopped: Vec::new(), began: Instant::now() }
    }

    /// Looks at every `schedule.every` until `stopped()`, the schedule's end or the cgroup's
    /// removal; publishes each look to `shown`, with its verdicts, where something shows it
    /// (every group's intervals are the costly part, and the guard reads the figures alone).
    pub fn run(
        &mut self,
        program: &mut impl Program,
        schedule: Schedule,
        stopped: impl Fn() -> bool,
        latest: impl Fn() -> Arc<Snapshot>,
        shown: Option<&Latest>,
    ) -> End {
        let began = self.began;
        let mut end = End::Stopped;
        let over = || stopped() || schedule.until.is_some_and(|d| began.elapsed() >= d);
        crate::worker::run(schedule.every, over, |now| {
            if program.cgroup_removed() {
                end = End::CgroupRemoved;
                return ControlFlow::Break(());
            }
            let status = self.step(now, program, &latest().totals, shown.is_some());
            tracing::info!(arms = %status_line(&status.figures), "experiment running");
            if let Some(shown) = shown {
                shown.publish(Arc::new(status));
            }
            ControlFlow::Continue(())
        });
        end
    }

    /// The last look, with its verdicts: what the summary reports.
    pub fn last(&self, program: &impl Program, totals: &[CcTotals]) -> Status {
        self.look(program.counts(), totals, true)
    }

    /// One look at the arms: their figures from the engine's per-arm `totals`, and their verdicts
    /// when `verdicts`.
    fn look(&self, arms: Vec<ArmCount>, totals: &[CcTotals], verdicts: bool) -> Status {
        let conns: Vec<u64> = arms.iter().map(|c| c.assigned).collect();
        let seconds = self.began.elapsed().as_secs_f64();
        Status {
            figures: verdict::arms(totals, &self.names, &conns, seconds),
            verdicts: if verdicts { verdict::verdicts(totals, &self.names) } else { Vec::new() },
            arms,
            stopped: self.stopped.clone(),
            seconds,
        }
    }

    /// A look, and the guard's step on it: an arm it stops is closed in the program at once.
    fn step(
        &mut self,
        now: Instant,
        program: &mut impl Program,
        totals: &[CcTotals],
        verdicts: bool,
    ) -> Status {
        let mut status = self.look(program.counts(), totals, verdicts);
        let figs = &status.figures;
        for (i, test) in figs.iter().enumerate().skip(1) {
            if self.stopped.iter().any(|s| s.arm == test.arm) {
                continue;
            }
            if let Some(t) = self.guards[i].step(now, totals, &figs[0], test) {
                program.close(i);
                let stop = t.stopped(&test.arm, self.began.elapsed().as_secs_f64());
                tracing::warn!(arm = %test.arm, why = %stop.why, "harm guard: the arm's new connections go to the control from now on");
                self.stopped.push(stop);
            }
        }
        status.stopped = self.stopped.clone();
        status
    }
}

#[cfg(feature = "bpf")]
impl Program for super::attach::Running<'_> {
    fn counts(&self) -> Vec<ArmCount> {
        super::attach::Running::counts(self)
    }
    fn close(&mut self, i: usize) {
        self.set_open(i, false);
    }
    fn cgroup_removed(&self) -> bool {
        super::attach::Running::cgroup_removed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::rule::RuleConfig;
    use bbrtop_core::snapshot::GroupKey;
    use std::cell::Cell;

    /// The program as the loop sees it, in memory: its counts, the arms closed, and a cgroup
    /// that goes away after `looks` looks.
    struct InMemory {
        counts: Vec<ArmCount>,
        closed: Vec<usize>,
        looks: Cell<usize>,
    }

    impl Program for InMemory {
        fn counts(&self) -> Vec<ArmCount> {
            self.counts.clone()
        }
        fn close(&mut self, i: usize) {
            self.closed.push(i);
        }
        fn cgroup_removed(&self) -> bool {
            self.looks.set(self.looks.get().saturating_sub(1));
            self.looks.get() == 0
        }
    }

    fn arm(cc: &str) -> ArmCount {
        ArmCount { cc: cc.into(), percent: 50.0, assigned: 100, setsockopt_failures: 0, redirected: 0 }
    }

    /// An arm's totals: `segs` (retransmitted, sent) and 500 responses of 50 ms.
    fn totals(arm: &str, segs: (u64, u64)) -> CcTotals {
        let key = GroupKey { cc: arm, peer_group: "edge", asn: None, country: None, arm: Some(arm) };
        crate::experiment::arm_totals(key, segs, segs.1 * 1448, std::iter::repeat_n(0.05, 500))
    }

    /// The test arm retransmits 10% of 100,000 segments against a 1% bound with no hold: the
    /// loop's first look stops it, closes it in the program once, publishes the stop, and the
    /// loop ends by itself when the cgroup goes.
    #[test]
    fn the_loop_closes_an_arm_the_guard_stops_and_ends_with_its_cgroup() {
        let arms = [Arm { cc: "cubic".into(), parts: 5000 }, Arm { cc: "bbr".into(), parts: 5000 }];
        let bounds = Bounds { hold: Duration::ZERO, ..Bounds::default() };
        let snap = Arc::new(Snapshot {
            totals: vec![totals("cubic", (100, 100_000)), totals("bbr", (10_000, 100_000))],
            ..Snapshot::empty(RuleConfig::default())
        });
        let mut program =
            InMemory { counts: vec![arm("cubic"), arm("bbr")], closed: Vec::new(), looks: Cell::new(4) };
        let shown = Latest::default();
        let mut watch = Watch::new(&arms, bounds);
        let schedule = Schedule { every: Duration::from_millis(1), until: None };
        let end = watch.run(&mut program, schedule, || false, || Arc::clone(&snap), Some(&shown));
        assert_eq!(end, End::CgroupRemoved);
        assert_eq!(program.closed, [1], "the test arm, closed once");
        let status = shown.latest();
        assert_eq!(status.arms, program.counts);
        assert_eq!(status.figures.iter().map(|f| f.arm.as_str()).collect::<Vec<_>>(), ["cubic", "bbr"]);
        assert_eq!(status.stopped.len(), 1);
        assert_eq!(
            (status.stopped[0].arm.as_str(), status.stopped[0].reason.as_str()),
            ("bbr", "retrans_ratio")
        );
        assert!(!status.verdicts.is_empty(), "shown: the verdicts are worked out");
        let last = watch.last(&program, &snap.totals);
        assert_eq!(last.stopped, status.stopped);
    }
}
