//! What an experiment's arms say so far, from the engine's counters kept per arm
//! (`CcTotals::arm`): each arm's figures, and for every group (all, each peer group, AS, country
//! and size class) each test arm against the control, with confidence sequences
//! (`bbrtop_core::sequential`) that stay valid however often the user looks, and a call in words.
//! Also the guard's view of the arms. Pure: the command hands it a snapshot's totals, the
//! connections each arm was given and the seconds the experiment has run.

use bbrtop_core::model::{Count, Tally};
use bbrtop_core::sequential::{ArmStats, Call, Comparison, compare_proportion, compare_quantile_hist};
use bbrtop_core::snapshot::CcTotals;
use bbrtop_core::snapshot::loghist::LogHist;
use bbrtop_core::snapshot::responses::{MARGIN_SECONDS, Responses, SizeClass};
use bbrtop_core::stats::{Interval, Margin};
use serde::{Deserialize, Deserializer, Serialize};

/// The confidence sequences' joint level: each arm's interval holds at α/2.
pub const ALPHA: f64 = 0.05;

/// A retransmit ratio difference that matters: a quarter of the control's, and at least 0.2
/// percentage points (the guides' "about 1%" sits well above it).
pub const RETRANS_MARGIN: Margin = Margin { rel: 0.25, abs: 0.002 };

/// One arm's figures since the experiment began.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ArmFigures {
    pub arm: String,
    /// Connections the program gave it.
    pub connections: u64,
    pub responses: u64,
    /// p50, p95, p99 of its response delivery times, seconds.
    pub delivery: Option<[f64; 3]>,
    pub segs_out: u64,
    pub retrans_segs: u64,
    pub retrans_ratio: Option<f64>,
    /// Bytes its connections had acknowledged, per second of the experiment.
    pub goodput_bytes_per_sec: f64,
    /// Its share of every arm's goodput.
    pub goodput_share: f64,
    /// The ccs its connections ran, by the segments each sent: the arm's own, or what the kernel
    /// made of it (`dctcp-reno`, dctcp without ECN), or the cc a connection was given since.
    #[serde(default)]
    pub ccs: Vec<CcRun>,
    #[serde(skip)]
    pub hist: LogHist,
}

/// One cc an arm's connections ran, and the segments they sent with it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CcRun {
    pub cc: String,
    pub segs_out: u64,
}

impl ArmFigures {
    /// What the guard reads: goodput per connection, so arms of unequal shares compare.
    pub fn guard_stats(&self) -> ArmStats<'_> {
        ArmStats {
            delivery: &self.hist,
            retrans_segs: self.retrans_segs,
            sent_segs: self.segs_out,
            goodput_bytes_per_sec: self.goodput_bytes_per_sec / self.connections.max(1) as f64,
        }
    }
}

/// One arm's counters and responses in `group`, summed over its buckets.
pub(super) fn sums(totals: &[CcTotals], arm: &str, group: &Group) -> (Tally, Responses) {
    let mut counts = Tally::default();
    let mut resp = Responses::default();
    for t in totals.iter().filter(|t| t.arm.as_deref() == Some(arm) && group.holds(t)) {
        counts.add(&t.counts);
        resp.add(&t.responses);
    }
    (counts, resp)
}

/// Each arm's figures, in the arms' order (`connections[i]` for `names[i]`).
pub fn arms(totals: &[CcTotals], names: &[String], connections: &[u64], seconds: f64) -> Vec<ArmFigures> {
    let mut out: Vec<ArmFigures> = names
        .iter()
        .zip(connections)
        .map(|(arm, conns)| {
            let (c, r) = sums(totals, arm, &Group::All);
            let hist = r.all();
            ArmFigures {
                arm: arm.clone(),
                connections: *conns,
                responses: hist.count(),
                delivery: bbrtop_core::snapshot::responses::percentiles(&hist),
                segs_out: c[Count::SegsOut],
                retrans_segs: c[Count::RetransSegs],
                retrans_ratio: (c[Count::SegsOut] > 0)
                    .then(|| c[Count::RetransSegs] as f64 / c[Count::SegsOut] as f64),
                goodput_bytes_per_sec: c[Count::BytesAcked] as f64 / seconds.max(1e-9),
                goodput_share: 0.0,
                ccs: ccs_run(totals, arm),
                hist,
            }
        })
        .collect();
    let total: f64 = out.iter().map(|a| a.goodput_bytes_per_sec).sum();
    for a in &mut out {
        a.goodput_share = if total > 0.0 { a.goodput_bytes_per_sec / total } else { 0.0 };
    }
    out
}

/// The ccs `arm`'s connections ran, in the totals' order, by segments sent.
fn ccs_run(totals: &[CcTotals], arm: &str) -> Vec<CcRun> {
    let mut out: Vec<CcRun> = Vec::new();
    for t in totals.iter().filter(|t| t.arm.as_deref() == Some(arm)) {
        let segs = t.counts[Count::SegsOut];
        match out.iter_mut().find(|r| r.cc == t.cc) {
            Some(r) => r.segs_out += segs,
            None => out.push(CcRun { cc: t.cc.clone(), segs_out: segs }),
        }
    }
    out
}

/// A slice of the experiment's connections a verdict is given for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    All,
    PeerGroup(String),
    Asn(String),
    Country(String),
    Size(SizeClass),
}

impl Group {
    fn holds(&self, t: &CcTotals) -> bool {
        match self {
            Group::All | Group::Size(_) => true,
            Group::PeerGroup(g) => t.peer_group == *g,
            Group::Asn(a) => t.asn.as_deref() == Some(a.as_str()),
            Group::Country(c) => t.country.as_deref() == Some(c.as_str()),
        }
    }

    /// The groups the arms' buckets hold: all, then every peer group, AS, country and size class.
    fn of(totals: &[CcTotals]) -> Vec<Group> {
        let mut g = vec![Group::All];
        for t in totals.iter().filter(|t| t.arm.is_some()) {
            g.push(Group::PeerGroup(t.peer_group.clone()));
            g.extend(t.asn.clone().map(Group::Asn));
            g.extend(t.country.clone().map(Group::Country));
            g.extend(SizeClass::ALL.into_iter().filter(|c| t.responses.get(*c).count() > 0).map(Group::Size));
        }
        g.sort();
        g.dedup();
        g
    }
}

impl std::fmt::Display for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Group::All => f.write_str("all"),
            Group::PeerGroup(g) => write!(f, "peer_group={g}"),
            Group::Asn(a) => write!(f, "asn={a}"),
            Group::Country(c) => write!(f, "country={c}"),
            Group::Size(s) => write!(f, "size={}", s.label()),
        }
    }
}

/// An interval whose ends may be unbounded yet: infinite, null in JSON (read back as NaN).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Ends {
    #[serde(deserialize_with = "or_nan")]
    pub lo: f64,
    #[serde(deserialize_with = "or_nan")]
    pub hi: f64,
}

fn or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl From<Interval> for Ends {
    fn from(i: Interval) -> Ends {
        Ends { lo: i.lo, hi: i.hi }
    }
}

impl Ends {
    /// `lo..hi`, each end times `scale` to `decimals` places, `?` for an end not bounded yet:
    /// as the summary and the TUI view print an interval.
    pub fn show(self, scale: f64, decimals: usize) -> String {
        let end = |v: f64| if v.is_finite() { format!("{:.*}", decimals, v * scale) } else { "?".into() };
        format!("{}..{}", end(self.lo), end(self.hi))
    }

    /// Seconds shown as milliseconds.
    pub fn ms(self) -> String {
        self.show(1e3, 1)
    }

    /// A ratio shown as a percentage.
    pub fn percent(self) -> String {
        self.show(100.0, 2)
    }
}

/// One figure of a test arm against the control: its call and intervals.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figure {
    pub call: String,
    pub control: Ends,
    pub test: Ends,
    /// test − control.
    pub diff: Ends,
}

impl From<Comparison> for Figure {
    fn from(c: Comparison) -> Figure {
        Figure {
            call: word(c.call).into(),
            control: c.control.into(),
            test: c.test.into(),
            diff: c.diff.into(),
        }
    }
}

pub fn word(c: Call) -> &'static str {
    match c {
        Call::Better => "better",
        Call::Worse => "worse",
        Call::WithinMargin => "no clear difference",
        Call::NotYetKnown => "not yet known",
    }
}

/// A test arm against the control in one group.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupVerdict {
    pub group: String,
    pub arm: String,
    pub control: String,
    /// Better, worse, no clear difference or not yet known, on response delivery times (the
    /// guides' measure of a win), lower being better: worse if any of p50, p95 and p99 is surely
    /// worse, better if one is surely better and none worse, no clear difference if all are
    /// within their margins. The retransmit ratio has its own call beside it (a cost the guard
    /// bounds, not the users' win).
    pub call: String,
    /// Responses each side had (control, test).
    pub responses: [u64; 2],
    pub delivery_p50: Figure,
    pub delivery_p95: Figure,
    pub delivery_p99: Figure,
    /// Retransmitted over sent segments; none for a size class (counters are not kept per size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrans_ratio: Option<Figure>,
}

fn overall(calls: &[Call]) -> Call {
    if calls.contains(&Call::Worse) {
        Call::Worse
    } else if calls.contains(&Call::Better) {
        Call::Better
    } else if calls.iter().all(|c| *c == Call::WithinMargin) {
        Call::WithinMargin
    } else {
        Call::NotYetKnown
    }
}

/// Every test arm (each after the first) against the first, in every group.
pub fn verdicts(totals: &[CcTotals], names: &[String]) -> Vec<GroupVerdict> {
    let Some((control, tests)) = names.split_first() else { return Vec::new() };
    let mut out = Vec::new();
    for group in Group::of(totals) {
        let side = |arm: &str| {
            let (c, r) = sums(totals, arm, &group);
            let hist = match &group {
                Group::Size(s) => r.get(*s).clone(),
                _ => r.all(),
            };
            (c, hist)
        };
        let (cc, ch) = side(control);
        for test in tests {
            let (tc, th) = side(test);
            let q = |p| compare_quantile_hist(&ch, &th, p, ALPHA, MARGIN_SECONDS);
            let (p50, p95, p99) = (q(0.5), q(0.95), q(0.99));
            let retrans = (!matches!(group, Group::Size(_))).then(|| {
                let seg = |t: &Tally| (t[Count::RetransSegs], t[Count::SegsOut]);
                compare_proportion(seg(&cc), seg(&tc), ALPHA, RETRANS_MARGIN)
            });
            let calls = [p50.call, p95.call, p99.call];
            out.push(GroupVerdict {
                group: group.to_string(),
                arm: test.clone(),
                control: control.clone(),
                call: word(overall(&calls)).into(),
                responses: [ch.count(), th.count()],
                delivery_p50: p50.into(),
                delivery_p95: p95.into(),
                delivery_p99: p99.into(),
                retrans_ratio: retrans.map(Figure::from),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::snapshot::GroupKey;

    fn bucket(arm: &str, cc: &str, group: &str, times: &[f64], segs: (u64, u64), acked: u64) -> CcTotals {
        let key = GroupKey { cc, peer_group: group, asn: None, country: None, arm: Some(arm) };
        crate::experiment::arm_totals(key, segs, acked, times.iter().copied())
    }

    fn spread(center: f64, n: usize) -> Vec<f64> {
        (0..n).map(|i| center * (0.8 + 0.4 * i as f64 / n as f64)).collect()
    }

    fn names() -> Vec<String> {
        vec!["cubic".into(), "bbr".into()]
    }

    #[test]
    fn a_clear_win_in_one_group_and_too_little_in_another() {
        let totals = vec![
            bucket("cubic", "cubic", "mobile", &spread(0.200, 3000), (300, 100_000), 9_000_000),
            bucket("bbr", "bbr", "mobile", &spread(0.100, 3000), (310, 100_000), 9_000_000),
            bucket("cubic", "cubic", "local", &spread(0.010, 20), (0, 1000), 100_000),
            bucket("bbr", "bbr", "local", &spread(0.010, 20), (0, 1000), 100_000),
            // Outside the experiment: left out.
            CcTotals { arm: None, ..bucket("x", "bbr", "mobile", &spread(9.0, 3000), (90_000, 100_000), 1) },
        ];
        let v = verdicts(&totals, &names());
        let of = |g: &str| v.iter().find(|x| x.group == g).unwrap();
        assert_eq!(of("peer_group=mobile").call, "better", "{:?}", of("peer_group=mobile"));
        assert_eq!(of("peer_group=mobile").delivery_p50.call, "better");
        assert_eq!(of("peer_group=local").call, "not yet known");
        assert_eq!(of("all").responses, [3020, 3020]);
        assert_eq!(of("size=le15kB").retrans_ratio.as_ref().map(|f| f.call.as_str()), None);
        let a = arms(&totals, &names(), &[90, 10], 10.0);
        assert_eq!((a[0].segs_out, a[1].retrans_segs), (101_000, 310));
        assert!((a[0].goodput_share - 0.5).abs() < 1e-9);
        // Per connection, the test arm's 10 connections each carried nine times the control's.
        let (c, t) = (a[0].guard_stats(), a[1].guard_stats());
        assert!((t.goodput_bytes_per_sec / c.goodput_bytes_per_sec - 9.0).abs() < 1e-9);
        // Each arm ran its own cc, summed over its groups; the socket outside is no arm's.
        let run = |cc: &str, segs_out| CcRun { cc: cc.into(), segs_out };
        assert_eq!(
            (a[0].ccs.clone(), a[1].ccs.clone()),
            (vec![run("cubic", 101_000)], vec![run("bbr", 101_000)])
        );
    }

    /// An arm's connections that run another cc than the arm's (dctcp without ECN becomes
    /// dctcp-reno) are counted under the cc they ran.
    #[test]
    fn an_arms_ccs_are_those_its_connections_ran() {
        let totals = vec![
            bucket("dctcp", "dctcp", "dc", &[], (0, 400), 0),
            bucket("dctcp", "dctcp-reno", "dc", &[], (0, 100), 0),
            bucket("dctcp", "dctcp-reno", "edge", &[], (0, 50), 0),
            bucket("cubic", "cubic", "dc", &[], (0, 700), 0),
        ];
        let a = arms(&totals, &["cubic".into(), "dctcp".into()], &[1, 1], 1.0);
        let run = |cc: &str, segs_out| CcRun { cc: cc.into(), segs_out };
        assert_eq!(a[1].ccs, [run("dctcp", 400), run("dctcp-reno", 150)]);
        assert_eq!(a[0].ccs, [run("cubic", 700)]);
    }

    /// The call as docs/experiment.md words it: `worse` if any of p50, p95 and p99 is surely worse,
    /// `better` if one is surely better and none worse, `no clear difference` when all three are
    /// within their margins, `not yet known` otherwise.
    #[test]
    fn the_call_reads_the_three_delivery_quantiles() {
        use Call::*;
        assert_eq!(overall(&[Better, Better, Worse]), Worse);
        assert_eq!(overall(&[Worse, NotYetKnown, WithinMargin]), Worse);
        assert_eq!(overall(&[Better, NotYetKnown, NotYetKnown]), Better);
        assert_eq!(overall(&[WithinMargin, Better, WithinMargin]), Better);
        assert_eq!(overall(&[WithinMargin; 3]), WithinMargin);
        assert_eq!(overall(&[WithinMargin, WithinMargin, NotYetKnown]), NotYetKnown);
        // On data: a test arm whose median is half the control's and whose slowest 6% take a
        // second is worse.
        let mut tail = vec![0.05; 18_800];
        tail.extend([1.0; 1_200]);
        let totals = vec![
            bucket("cubic", "cubic", "edge", &[0.1; 20_000], (100, 100_000), 1),
            bucket("bbr", "bbr", "edge", &tail, (100, 100_000), 1),
        ];
        let all = verdicts(&totals, &names()).into_iter().find(|v| v.group == "all").unwrap();
        assert_eq!(
            [&all.delivery_p50.call, &all.delivery_p95.call, &all.delivery_p99.call, &all.call],
            ["better", "worse", "worse", "worse"]
        );
    }

    /// Retransmits have their own call: faster answers at a higher retransmit ratio are better
    /// for the users, and the retransmits are called worse beside it.
    #[test]
    fn retransmits_are_called_apart_from_the_delivery_times() {
        let totals = vec![
            bucket("cubic", "cubic", "edge", &spread(0.10, 2000), (100, 100_000), 1),
            bucket("bbr", "bbr", "edge", &spread(0.05, 2000), (5_000, 100_000), 1),
        ];
        let v = verdicts(&totals, &names());
        let all = v.iter().find(|x| x.group == "all").unwrap();
        assert_eq!(all.retrans_ratio.as_ref().unwrap().call, "worse");
        assert_eq!(all.call, "better");
        // Equal arms whose every quantile falls in one histogram bucket: within the margin.
        let same = vec![
            bucket("cubic", "cubic", "edge", &[0.05; 20_000], (100, 100_000), 1),
            bucket("bbr", "bbr", "edge", &[0.05; 20_000], (100, 100_000), 1),
        ];
        let v = verdicts(&same, &names());
        assert_eq!(v[0].call, "no clear difference", "{:?}", v[0]);
    }
}
