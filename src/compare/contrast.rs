//! What a comparison compares: which ccs each side's sockets ran, and so whether B − A can speak
//! of the cc at all. Two recordings are an observation, never a randomized experiment: time,
//! load and neighbours differ between them as well, so a difference between two sides of one cc
//! is theirs alone (an A/A test must give no cc verdict), and a change of cc is confounded with
//! them. Where a cc ran on both sides without changing its share, its own B − A is a control: what
//! time and neighbours did without a change of cc. Pure.

use super::report::{Group, GroupRows, MetricRow};
use super::summary::SocketSummary;
use bbrtop_core::stats::MIN_SOCKETS;
use bbrtop_core::units::percent;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A cc's share of sockets moving by less than this (10 points) between the sides is no change
/// of mix: both sides ran the same ccs, and that cc can be a control.
pub const SAME_SHARE: f64 = 0.1;

/// A side "ran" a cc when at least this share of its sockets did.
pub const RAN: f64 = 0.9;

/// One cc on one side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CcShare {
    pub sockets: usize,
    /// Its sockets over the side's.
    pub socket_share: f64,
    /// The bytes its sockets sent over the side's; none when the side sent nothing.
    pub byte_share: Option<f64>,
}

/// A side's ccs, by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct CcMix(pub BTreeMap<String, CcShare>);

impl CcMix {
    pub fn of(sockets: &[SocketSummary]) -> CcMix {
        let mut by: BTreeMap<String, (usize, u64)> = BTreeMap::new();
        for s in sockets {
            let e = by.entry(s.cc.clone()).or_default();
            (e.0, e.1) = (e.0 + 1, e.1 + s.bytes_sent);
        }
        let bytes: u64 = by.values().map(|v| v.1).sum();
        CcMix(
            by.into_iter()
                .map(|(cc, (n, b))| {
                    let share = CcShare {
                        sockets: n,
                        socket_share: n as f64 / sockets.len() as f64,
                        byte_share: (bytes > 0).then(|| b as f64 / bytes as f64),
                    };
                    (cc, share)
                })
                .collect(),
        )
    }

    /// A cc's share of sockets (0 where none ran it).
    pub fn share(&self, cc: &str) -> f64 {
        self.0.get(cc).map_or(0.0, |s| s.socket_share)
    }

    fn sockets(&self, cc: &str) -> usize {
        self.0.get(cc).map_or(0, |s| s.sockets)
    }

    /// The cc more than half the sockets ran.
    pub fn majority(&self) -> Option<&str> {
        self.0.iter().find(|(_, s)| s.socket_share > 0.5).map(|(cc, _)| cc.as_str())
    }

    /// The cc at least [`RAN`] of the sockets ran.
    fn ran(&self) -> Option<&str> {
        self.0.iter().find(|(_, s)| s.socket_share >= RAN).map(|(cc, _)| cc.as_str())
    }

    /// The ccs, the largest share of sockets first (ties by name).
    pub fn ranked(&self) -> Vec<(&String, &CcShare)> {
        let mut ccs: Vec<(&String, &CcShare)> = self.0.iter().collect();
        ccs.sort_by(|x, y| y.1.socket_share.total_cmp(&x.1.socket_share).then_with(|| x.0.cmp(y.0)));
        ccs
    }

    /// "bbr 98%, cubic 2.0%" (of sockets), largest first.
    pub fn words(&self) -> String {
        if self.0.is_empty() {
            return "no sockets".into();
        }
        let ccs: Vec<String> =
            self.ranked().iter().map(|(cc, s)| format!("{cc} {}", percent(s.socket_share))).collect();
        ccs.join(", ")
    }
}

/// What the sides' ccs make of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Every cc's share moved by less than [`SAME_SHARE`]: the differences are not the cc's.
    SameCc,
    /// Most sockets ran one cc on A and another on B: the differences are the cc's and
    /// whatever else changed between the recordings.
    CcChange,
    /// The mix changed, but no one cc replaced another.
    Mixed,
    /// A side holds no sockets.
    Empty,
}

/// A cc that ran on both sides without changing its share: its own B − A.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Control {
    pub cc: String,
    pub share_a: f64,
    pub share_b: f64,
    /// Its group's rows, as in `groups`.
    pub metrics: Vec<MetricRow>,
}

/// The comparison's design, as the table's headline and the JSON's `contrast` say it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Contrast {
    pub kind: Kind,
    /// Always true: two recordings are observed, not drawn at random (`bbrtop experiment` draws
    /// each connection's cc).
    pub observational: bool,
    /// Whether B − A may be read as the cc's (observed, so confounded with time): only for a
    /// change of cc.
    pub cc_verdict: bool,
    /// The design in words, with why there is no cc verdict where there is none.
    pub headline: String,
    /// Empty for [`Kind::SameCc`] (everything is a control there) and [`Kind::Empty`].
    pub controls: Vec<Control>,
}

/// What every comparison is, and where a cc verdict comes from instead.
pub const OBSERVATIONAL: &str = "Observational: two recordings (before and after, a canary against the rest), \
     not a randomized experiment: time, load and neighbours differ between them whatever the ccs; for a cc verdict, \
     `bbrtop experiment` draws each connection's cc at random.";

impl Contrast {
    /// The sides' mixes judged, and each control's rows taken from `groups`.
    pub fn new(a: &CcMix, b: &CcMix, groups: &[GroupRows]) -> Contrast {
        let (kind, headline) = judge(a, b);
        let controls = match kind {
            Kind::SameCc | Kind::Empty => Vec::new(),
            Kind::CcChange | Kind::Mixed => controls(a, b, groups),
        };
        Contrast { kind, observational: true, cc_verdict: kind == Kind::CcChange, headline, controls }
    }
}

/// Every cc either side ran.
fn ccs<'m>(a: &'m CcMix, b: &'m CcMix) -> BTreeSet<&'m String> {
    a.0.keys().chain(b.0.keys()).collect()
}

/// Whether a cc's share of sockets moved between the sides.
fn moved(a: &CcMix, b: &CcMix, cc: &str) -> bool {
    (b.share(cc) - a.share(cc)).abs() >= SAME_SHARE
}

/// The kind of comparison the mixes make, and the headline that says it.
fn judge(a: &CcMix, b: &CcMix) -> (Kind, String) {
    if a.0.is_empty() || b.0.is_empty() {
        let which = match (a.0.is_empty(), b.0.is_empty()) {
            (true, true) => "neither side",
            (true, false) => "A",
            _ => "B",
        };
        return (Kind::Empty, format!("{which} holds no sockets: no verdict of any kind."));
    }
    if !ccs(a, b).into_iter().any(|cc| moved(a, b, cc)) {
        let ran = match (a.ran(), b.ran()) {
            (Some(x), Some(y)) if x == y => x.to_string(),
            _ => format!("the same mix of ccs (A {}; B {})", a.words(), b.words()),
        };
        let says =
            format!("Both sides ran {ran}: differences are time and neighbours, not the cc (no cc verdict).");
        return (Kind::SameCc, says);
    }
    match (a.majority(), b.majority()) {
        (Some(x), Some(y)) if x != y => (
            Kind::CcChange,
            format!(
                "A ran {x}, B ran {y}: a cc verdict, but an observed one: the differences are the cc's and whatever \
                 else changed between the recordings (time, load, neighbours)."
            ),
        ),
        _ => (
            Kind::Mixed,
            format!(
                "The mix of ccs changed (A {}; B {}) but no one cc replaced another: all sockets' differences mix it \
                 with time and neighbours, and each cc's rows compare it with itself (no cc verdict).",
                a.words(),
                b.words()
            ),
        ),
    }
}

/// The ccs on both sides, with enough sockets on each for an interval, whose share did not move
/// and which neither side's majority ran: the sockets that kept their cc, so their B − A is time's.
fn controls(a: &CcMix, b: &CcMix, groups: &[GroupRows]) -> Vec<Control> {
    let majorities = [a.majority(), b.majority()];
    ccs(a, b)
        .into_iter()
        .filter(|cc| !moved(a, b, cc) && !majorities.contains(&Some(cc.as_str())))
        .filter(|cc| a.sockets(cc) >= MIN_SOCKETS && b.sockets(cc) >= MIN_SOCKETS)
        .filter_map(|cc| {
            let rows = groups.iter().find(|g| g.group == Group::Cc(cc.clone()))?;
            Some(Control {
                cc: cc.clone(),
                share_a: a.share(cc),
                share_b: b.share(cc),
                metrics: rows.metrics.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::report::{Metric, Verdict, compare};
    use crate::compare::tests::side;

    fn contrast(a: &[(&str, f64)], b: &[(&str, f64)]) -> Contrast {
        let (a, b) = (side(a).sockets, side(b).sockets);
        Contrast::new(&CcMix::of(&a), &CcMix::of(&b), &compare(&a, &b, false))
    }

    /// Shares of sockets and of bytes apart: one CUBIC socket that sent three times a BBR one's.
    #[test]
    fn a_sides_mix_counts_sockets_and_bytes() {
        let mut s = side(&[("bbr", 40.0), ("bbr", 40.0), ("bbr", 40.0), ("cubic", 40.0)]).sockets;
        s[3].bytes_sent *= 3;
        let mix = CcMix::of(&s);
        assert_eq!((mix.0["bbr"].sockets, mix.0["bbr"].socket_share), (3, 0.75));
        assert_eq!((mix.0["cubic"].socket_share, mix.0["cubic"].byte_share), (0.25, Some(0.5)));
        assert_eq!((mix.majority(), mix.words().as_str()), (Some("bbr"), "bbr 75%, cubic 25%"));
        assert_eq!(CcMix::of(&[]).words(), "no sockets");
        s.iter_mut().for_each(|s| s.bytes_sent = 0);
        assert_eq!(CcMix::of(&s).0["bbr"].byte_share, None, "no bytes, no byte share");
        let v = serde_json::to_value(CcMix::of(&s[..1])).unwrap();
        assert_eq!(v, serde_json::json!({"bbr": {"sockets": 1, "socket_share": 1.0, "byte_share": null}}));
    }

    /// The A/A test: both sides BBR, B 14 ms faster (time and neighbours): no cc verdict, and
    /// the headline says why; the same with a stray CUBIC socket on one side.
    #[test]
    fn one_cc_on_both_sides_is_no_cc_verdict() {
        let c = contrast(&[("bbr", 61.0); 6], &[("bbr", 46.0); 6]);
        assert_eq!((c.kind, c.cc_verdict, c.observational), (Kind::SameCc, false, true));
        assert_eq!(
            c.headline,
            "Both sides ran bbr: differences are time and neighbours, not the cc (no cc verdict)."
        );
        assert!(c.controls.is_empty());
        let mut b = vec![("bbr", 46.0); 19];
        b.push(("cubic", 46.0));
        let c = contrast(&[("bbr", 61.0); 20], &b);
        assert_eq!((c.kind, c.cc_verdict), (Kind::SameCc, false));
        assert!(c.headline.starts_with("Both sides ran bbr: "), "{}", c.headline);
        // Half and half on both sides: the same mix, named.
        let half = [("bbr", 40.0), ("cubic", 40.0), ("bbr", 40.0), ("cubic", 40.0)];
        let c = contrast(&half, &half);
        assert_eq!(c.kind, Kind::SameCc);
        assert!(c.headline.contains("the same mix of ccs (A bbr 50%, cubic 50%; B bbr 50%, cubic 50%)"));
    }

    /// CUBIC on A, BBR on B: a cc verdict, observational; a mix that moved without one cc
    /// replacing another, and an empty side, give none.
    #[test]
    fn a_change_of_cc_is_a_verdict_and_still_observational() {
        let c = contrast(&[("cubic", 500.0); 6], &[("bbr", 40.0); 6]);
        assert_eq!((c.kind, c.cc_verdict, c.observational), (Kind::CcChange, true, true));
        assert!(c.headline.starts_with("A ran cubic, B ran bbr: "), "{}", c.headline);
        let mut b = vec![("bbr", 40.0); 4];
        b.extend([("cubic", 40.0); 6]);
        let c = contrast(&[("cubic", 40.0); 10], &b);
        assert_eq!((c.kind, c.cc_verdict), (Kind::Mixed, false));
        assert!(c.headline.contains("(A cubic 100%; B cubic 60%, bbr 40%)"), "{}", c.headline);
        let c = contrast(&[], &[("bbr", 40.0); 6]);
        assert_eq!(
            (c.kind, c.cc_verdict, c.headline.as_str()),
            (Kind::Empty, false, "A holds no sockets: no verdict of any kind.")
        );
    }

    /// Reno replaced by BBR while CUBIC's quarter of the sockets stayed CUBIC: CUBIC is the
    /// control, its own B − A (10 ms lower) beside all sockets'. CUBIC that lost its share is none.
    #[test]
    fn a_cc_that_kept_its_share_on_both_sides_is_the_control() {
        let mut a = vec![("reno", 80.0); 18];
        a.extend([("cubic", 60.0); 6]);
        let mut b = vec![("bbr", 40.0); 18];
        b.extend([("cubic", 50.0); 6]);
        let c = contrast(&a, &b);
        assert_eq!((c.kind, c.cc_verdict), (Kind::CcChange, true));
        assert_eq!(c.controls.len(), 1, "{:?}", c.controls);
        let ctl = &c.controls[0];
        assert_eq!((ctl.cc.as_str(), ctl.share_a, ctl.share_b), ("cubic", 0.25, 0.25));
        let p50 = ctl.metrics.iter().find(|m| m.metric == Metric::SrttP50Ms).unwrap();
        assert_eq!((p50.diff, p50.verdict), (Some(-10.0), Some(Verdict::Better)));
        // CUBIC on both sides, but most of A's CUBIC became BBR: not the same sockets.
        let mut b = vec![("bbr", 40.0); 18];
        b.extend([("cubic", 50.0); 6]);
        assert!(contrast(&[("cubic", 60.0); 24], &b).controls.is_empty());
        // Too few sockets for an interval: no control.
        let mut a = vec![("reno", 80.0); 12];
        a.extend([("cubic", 60.0); 3]);
        let mut b = vec![("bbr", 40.0); 12];
        b.extend([("cubic", 50.0); 3]);
        assert!(contrast(&a, &b).controls.is_empty());
    }
}
