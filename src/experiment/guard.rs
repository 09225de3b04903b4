//! The harm guard over each test arm and its parts: the whole arm against the control, and each
//! peer group and AS of it against the control's same group, each with a hold clock of its own
//! (`bbrtop_core::sequential::Guard`), so one AS far past a bound stops the arm while the whole
//! arm, averaged with the rest, stays under it. Pure: the command hands it the engine's per-arm
//! totals at every look.

use super::status::Stopped;
use super::verdict::{ArmFigures, Group, sums};
use bbrtop_core::model::{Count, Tally};
use bbrtop_core::sequential::{ArmStats, Bounds, Guard, Tripped};
use bbrtop_core::snapshot::CcTotals;
use bbrtop_core::snapshot::loghist::LogHist;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// A peer group or AS is watched once its test arm has sent this many segments (the whole arm
/// from the first): below it one loss episode is much of the count, and the retransmit interval
/// takes a burst's segments for independent trials. Its p95 needs some hundreds of responses on
/// each side before its interval is bounded anyway.
pub const MIN_GROUP_SEGS: u64 = 5_000;

/// What stopped an arm: the bound crossed and the part of the arm that crossed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Trip {
    pub group: Group,
    pub tripped: Tripped,
}

impl Trip {
    /// As the summary keeps it: `arm` stopped `at` seconds in.
    pub fn stopped(&self, arm: &str, at: f64) -> Stopped {
        let why = match self.group {
            Group::All => self.tripped.to_string(),
            ref g => format!("in {g}: {}", self.tripped),
        };
        Stopped {
            arm: arm.into(),
            at,
            held: self.tripped.held.as_secs_f64(),
            reason: self.tripped.why.label().into(),
            why,
        }
    }
}

/// The guard of one test arm.
#[derive(Clone, Debug)]
pub struct ArmGuard {
    bounds: Bounds,
    whole: Guard,
    parts: BTreeMap<Group, Guard>,
}

impl ArmGuard {
    pub fn new(bounds: Bounds) -> ArmGuard {
        ArmGuard { bounds, whole: Guard::new(bounds), parts: BTreeMap::new() }
    }

    /// One look at `test` against `control` (their figures, and `totals` for their groups), at
    /// `now`: the whole arm's trip first, else the first group's in order. Every guard is fed,
    /// so each clock runs whatever the others do.
    pub fn step(
        &mut self,
        now: Instant,
        totals: &[CcTotals],
        control: &ArmFigures,
        test: &ArmFigures,
    ) -> Option<Trip> {
        let mut trip = self
            .whole
            .step(now, &control.guard_stats(), &test.guard_stats())
            .map(|tripped| Trip { group: Group::All, tripped });
        for group in parts(totals, &test.arm) {
            let (tc, tr) = sums(totals, &test.arm, &group);
            if tc[Count::SegsOut] < MIN_GROUP_SEGS {
                continue;
            }
            let (cc, cr) = sums(totals, &control.arm, &group);
            let (ch, th) = (cr.all(), tr.all());
            let guard = self.parts.entry(group.clone()).or_insert_with(|| Guard::new(self.bounds));
            if let Some(tripped) = guard.step(now, &stats(&cc, &ch), &stats(&tc, &th)) {
                trip.get_or_insert(Trip { group, tripped });
            }
        }
        trip
    }
}

/// The peer groups and ASs `arm`'s connections fall in.
fn parts(totals: &[CcTotals], arm: &str) -> BTreeSet<Group> {
    let mut out = BTreeSet::new();
    for t in totals.iter().filter(|t| t.arm.as_deref() == Some(arm)) {
        out.insert(Group::PeerGroup(t.peer_group.clone()));
        out.extend(t.asn.clone().map(Group::Asn));
    }
    out
}

/// A group's figures as the guard reads them. No goodput: connections are counted per arm, not
/// per group, so the goodput bound (per connection) is the whole arm's alone.
fn stats<'a>(c: &Tally, delivery: &'a LogHist) -> ArmStats<'a> {
    ArmStats {
        delivery,
        retrans_segs: c[Count::RetransSegs],
        sent_segs: c[Count::SegsOut],
        goodput_bytes_per_sec: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::verdict::arms;
    use bbrtop_core::snapshot::GroupKey;
    use std::time::Duration;

    /// A bucket of `arm` in `group` and `asn`: `segs` (retransmitted, sent), `responses` of 50 ms.
    fn bucket(arm: &str, group: &str, asn: &str, segs: (u64, u64), responses: usize) -> CcTotals {
        let key = GroupKey { cc: arm, peer_group: group, asn: Some(asn), country: None, arm: Some(arm) };
        crate::experiment::arm_totals(key, segs, segs.1 * 1448, std::iter::repeat_n(0.05, responses))
    }

    fn bounds() -> Bounds {
        Bounds { hold: Duration::from_secs(5), ..Bounds::default() }
    }

    /// Looks every second for `secs` seconds at the same totals; the first trip and when.
    fn run(totals: &[CcTotals], secs: u64) -> Option<(u64, Trip)> {
        let names = vec!["cubic".to_string(), "bbr".to_string()];
        let figs = arms(totals, &names, &[100, 100], 60.0);
        let mut guard = ArmGuard::new(bounds());
        let t0 = Instant::now();
        (0..=secs).find_map(|s| {
            let now = t0 + Duration::from_secs(s);
            guard.step(now, totals, &figs[0], &figs[1]).map(|t| (s, t))
        })
    }

    /// One AS at three times the retransmit bound (3% of 20,000 segments) while the whole arm,
    /// with 400,000 clean segments elsewhere, is at 0.15%: the arm stops after the hold, and the
    /// stop names the AS.
    #[test]
    fn one_as_past_the_bound_stops_the_arm_and_is_named() {
        let totals = vec![
            bucket("cubic", "edge", "AS64500", (20, 20_000), 500),
            bucket("cubic", "edge", "AS64501", (400, 400_000), 500),
            bucket("bbr", "edge", "AS64500", (600, 20_000), 500),
            bucket("bbr", "edge", "AS64501", (0, 400_000), 500),
        ];
        let figs = arms(&totals, &["cubic".into(), "bbr".into()], &[100, 100], 60.0);
        assert!(figs[1].retrans_ratio.unwrap() < bounds().max_retrans_ratio / 2.0, "{:?}", figs[1]);
        let (at, trip) = run(&totals, 20).expect("the guard stops the arm");
        assert_eq!(at, 5, "after the hold");
        assert_eq!(trip.group, Group::Asn("AS64500".into()));
        let s = trip.stopped("bbr", 5.0);
        assert_eq!(s.reason, "retrans_ratio");
        assert!(s.why.starts_with("in asn=AS64500: test arm's retransmit ratio 3.00%"), "{}", s.why);
        // Without the AS, the rest of the arm trips nothing.
        assert_eq!(run(&totals[1..2].iter().chain(&totals[3..]).cloned().collect::<Vec<_>>(), 20), None);
    }

    /// A tiny AS, 60 of 200 segments retransmitted: the guard's rule alone would stop the arm on
    /// it, and below the minimum the group is not watched.
    #[test]
    fn a_tiny_group_does_not_trip_it() {
        let totals = vec![
            bucket("cubic", "edge", "AS64501", (100, 100_000), 500),
            bucket("bbr", "edge", "AS64501", (100, 100_000), 500),
            bucket("bbr", "edge", "AS64999", (60, 200), 3),
        ];
        assert_eq!(run(&totals, 60), None);
        // The same figures through the rule: surely above 1%, so the minimum is what spares it.
        let h = LogHist::default();
        let tiny = Tally::from_counts([(Count::RetransSegs, 60), (Count::SegsOut, 200)]);
        let mut g = Guard::new(bounds());
        let t0 = Instant::now();
        let tripped = (0..=10).find_map(|s| {
            g.step(t0 + Duration::from_secs(s), &stats(&Tally::default(), &h), &stats(&tiny, &h))
        });
        assert!(tripped.is_some(), "the rule alone trips on the tiny group");
    }

    /// The whole arm's stop reads as before, and it comes before any group's.
    #[test]
    fn the_whole_arm_stops_first_as_before() {
        let totals = vec![
            bucket("cubic", "edge", "AS64501", (100, 100_000), 500),
            bucket("bbr", "edge", "AS64501", (5_000, 100_000), 500),
        ];
        let (_, trip) = run(&totals, 20).expect("stopped");
        assert_eq!(trip.group, Group::All);
        let s = trip.stopped("bbr", 5.0);
        assert!(s.why.starts_with("test arm's retransmit ratio 5.00%"), "{}", s.why);
    }
}
