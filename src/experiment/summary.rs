//! What `bbrtop experiment` prints when it ends (the summary: the assignment, each arm's figures,
//! what the guard stopped, the verdict per group, as a table or JSON) and the status line its loop
//! logs at each look; pure.

use super::status::Stopped;
use super::verdict::{ALPHA, ArmFigures, Figure, GroupVerdict};
use super::{ArmCount, Unit};
use std::path::PathBuf;

/// The summary printed at the end (`--json`; read back by the tests, which print it as text).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub cgroup: PathBuf,
    pub unit: Unit,
    pub seed: u64,
    pub dry_run: bool,
    pub seconds: f64,
    pub arms: Vec<ArmCount>,
    /// What the engine measured per arm.
    pub figures: Vec<ArmFigures>,
    /// Arms the guard stopped.
    pub stopped: Vec<Stopped>,
    /// Each test arm against the control, per group.
    pub verdicts: Vec<GroupVerdict>,
}

/// The summary as a table per section: the assignment, each arm's figures, what the guard
/// stopped, and the verdict per group.
pub fn text(s: &Summary) -> String {
    let verb = if s.dry_run { "would have assigned" } else { "assigned" };
    let mut t = format!(
        "experiment on {} for {:.1}s, unit {}, seed {}{}\n{:<16} {:>8} {:>20} {:>12} {:>11}\n",
        s.cgroup.display(),
        s.seconds,
        s.unit,
        s.seed,
        if s.dry_run { " (dry run: no cc changed)" } else { "" },
        "arm",
        "share",
        verb,
        "setsockopt failed",
        "redirected"
    );
    for c in &s.arms {
        t += &format!(
            "{:<16} {:>7}% {:>20} {:>12} {:>11}\n",
            c.cc, c.percent, c.assigned, c.setsockopt_failures, c.redirected
        );
    }
    let ms = |v: f64| format!("{:.1}", v * 1000.0);
    t += &format!(
        "\n{:<16} {:>10} {:>9} {:>9} {:>9} {:>9} {:>13} {:>7}\n",
        "arm", "responses", "p50 ms", "p95 ms", "p99 ms", "retrans", "goodput B/s", "share"
    );
    for f in &s.figures {
        let d = |i: usize| f.delivery.map_or("-".into(), |d| ms(d[i]));
        let rx = f.retrans_ratio.map_or("-".into(), |r| format!("{:.2}%", r * 100.0));
        t += &format!(
            "{:<16} {:>10} {:>9} {:>9} {:>9} {:>9} {:>13.0} {:>6.1}%\n",
            f.arm,
            f.responses,
            d(0),
            d(1),
            d(2),
            rx,
            f.goodput_bytes_per_sec,
            f.goodput_share * 100.0
        );
    }
    // An arm whose connections ran another cc than its own says so: dctcp without ECN runs as
    // dctcp-reno, and its figures are that cc's.
    for f in s.figures.iter().filter(|f| f.ccs.iter().any(|r| r.cc != f.arm)) {
        let all: u64 = f.ccs.iter().map(|r| r.segs_out).sum::<u64>().max(1);
        let ran: Vec<String> = f
            .ccs
            .iter()
            .map(|r| format!("{} {:.0}%", r.cc, r.segs_out as f64 * 100.0 / all as f64))
            .collect();
        t += &format!("\narm {}'s connections ran, by segments sent: {}\n", f.arm, ran.join(", "));
    }
    for st in &s.stopped {
        t += &format!("\nharm guard stopped {} at {:.1}s: {}\n", st.arm, st.at, st.why);
    }
    if !s.verdicts.is_empty() {
        t += &format!(
            "\n{:<24} {:<6} {:<20} {:>15} {:>15} {:>13} {:>13}  {}\n",
            "group",
            "arm",
            "call",
            "p95 ms control",
            "p95 ms test",
            "retrans% ctl",
            "retrans% test",
            "retransmits"
        );
        for v in &s.verdicts {
            let rx = |f: &Figure, test: bool| if test { f.test } else { f.control }.percent();
            let (rc, rt, rcall) = v
                .retrans_ratio
                .as_ref()
                .map_or(("-".into(), "-".into(), "-"), |f| (rx(f, false), rx(f, true), f.call.as_str()));
            t += &format!(
                "{:<24} {:<6} {:<20} {:>15} {:>15} {:>13} {:>13}  {}\n",
                v.group,
                v.arm,
                v.call,
                v.delivery_p95.control.ms(),
                v.delivery_p95.test.ms(),
                rc,
                rt,
                rcall
            );
        }
        t += &format!(
            "(intervals: confidence sequences at {:.0}% joint, valid however often the experiment is looked at)\n",
            (1.0 - ALPHA) * 100.0
        );
    }
    t
}

/// One status line: each arm's connections, responses, p95 and retransmit ratio.
pub fn status_line(figs: &[ArmFigures]) -> String {
    let line: Vec<String> = figs
        .iter()
        .map(|f| {
            let p95 = f.delivery.map_or("-".into(), |d| format!("{:.1}ms", d[1] * 1000.0));
            let rx = f.retrans_ratio.map_or("-".into(), |r| format!("{:.2}%", r * 100.0));
            format!("{}: {} conns {} responses p95 {p95} retrans {rx}", f.arm, f.connections, f.responses)
        })
        .collect();
    line.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_says_what_the_guard_stopped_and_unbounded_ends() {
        let json = r#"{"cgroup":"/sys/fs/cgroup/unified/exp","unit":"peer","seed":7,"dry_run":false,"seconds":10.0,
            "arms":[{"cc":"cubic","percent":50.0,"assigned":3,"setsockopt_failures":0,"redirected":0},
                    {"cc":"bbr","percent":50.0,"assigned":2,"setsockopt_failures":0,"redirected":4}],
            "figures":[],
            "stopped":[{"arm":"bbr","at":9.0,"held":5.0,"reason":"retrans_ratio","why":"test arm's retransmit ratio 21.20%"}],
            "verdicts":[{"group":"all","arm":"bbr","control":"cubic","call":"not yet known","responses":[3,4],
              "delivery_p50":{"call":"not yet known","control":{"lo":0.1,"hi":null},"test":{"lo":0.2,"hi":0.3},"diff":{"lo":null,"hi":0.2}},
              "delivery_p95":{"call":"not yet known","control":{"lo":0.1,"hi":null},"test":{"lo":0.2,"hi":0.3},"diff":{"lo":null,"hi":0.2}},
              "delivery_p99":{"call":"not yet known","control":{"lo":0.1,"hi":null},"test":{"lo":0.2,"hi":0.3},"diff":{"lo":null,"hi":0.2}}}]}"#;
        let s: Summary = serde_json::from_str(json).unwrap();
        let t = text(&s);
        assert!(t.contains("harm guard stopped bbr at 9.0s: test arm's retransmit ratio 21.20%"), "{t}");
        assert!(t.contains("100.0..?"), "an unbounded end reads ?: {t}");
        assert!(t.contains("bbr                   50%                    2            0           4"), "{t}");
        assert!(!t.contains("connections ran"), "no figures, nothing to say of their ccs: {t}");
    }

    /// An arm that ran its own cc says nothing more; one whose connections ran another says
    /// which, by segments sent.
    #[test]
    fn an_arm_that_ran_another_cc_says_so() {
        let run = |cc: &str, segs_out| crate::experiment::verdict::CcRun { cc: cc.into(), segs_out };
        let fig = |arm: &str, ccs| ArmFigures { arm: arm.into(), ccs, ..ArmFigures::default() };
        let s = Summary {
            cgroup: "/sys/fs/cgroup/unified/exp".into(),
            unit: Unit::default(),
            seed: 7,
            dry_run: false,
            seconds: 10.0,
            arms: Vec::new(),
            figures: vec![
                fig("cubic", vec![run("cubic", 900)]),
                fig("dctcp", vec![run("dctcp-reno", 300), run("dctcp", 100)]),
            ],
            stopped: Vec::new(),
            verdicts: Vec::new(),
        };
        let t = text(&s);
        assert!(
            t.contains("arm dctcp's connections ran, by segments sent: dctcp-reno 75%, dctcp 25%"),
            "{t}"
        );
        assert!(!t.contains("arm cubic's"), "{t}");
    }
}
