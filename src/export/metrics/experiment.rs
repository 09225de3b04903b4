//! A running experiment's own families (`bbrtop experiment --web.listen-address`): one series per
//! arm, and a verdict per (test arm, group); the groups are bounded as the peer labels are (the
//! peer groups, the top ASs and countries, four size classes). The counters and response times per
//! arm are the default families' with an `arm` label.

use super::{Enc, counters, gauges};
use crate::experiment::status::Status;

pub fn encode(enc: &mut Enc, s: &Status) -> std::fmt::Result {
    let arm = |c: &crate::experiment::ArmCount| [("arm", c.cc.clone())];
    gauges(
        enc,
        "bbrtop_experiment_arm_share_ratio",
        "The share of new connections the experiment draws for each arm.",
        s.arms.iter().map(|c| (arm(c), c.percent / 100.0)),
    )?;
    gauges(
        enc,
        "bbrtop_experiment_arm_open",
        "1 while the arm is given new connections, 0 once the harm guard stopped it.",
        s.arms.iter().map(|c| (arm(c), u64::from(s.stop_of(&c.cc).is_none()))),
    )?;
    gauges(
        enc,
        "bbrtop_experiment_guard_stopped",
        "1 for an arm the harm guard stopped, labelled with the bound it crossed (retrans_ratio, p95, control_share).",
        s.stopped.iter().map(|st| ([("arm", st.arm.clone()), ("reason", st.reason.clone())], 1u64)),
    )?;
    counters(
        enc,
        "bbrtop_experiment_assigned_connections",
        "Connections the experiment's program gave each arm (in a dry run, would have).",
        s.arms.iter().map(|c| (arm(c), c.assigned)),
    )?;
    counters(
        enc,
        "bbrtop_experiment_redirected_connections",
        "Connections drawn for an arm the guard had stopped, given the control instead.",
        s.arms.iter().map(|c| (arm(c), c.redirected)),
    )?;
    counters(
        enc,
        "bbrtop_experiment_setsockopt_failures",
        "Connections whose congestion control the kernel refused to set (bpf_setsockopt TCP_CONGESTION).",
        s.arms.iter().map(|c| (arm(c), c.setsockopt_failures)),
    )?;
    gauges(
        enc,
        "bbrtop_experiment_verdict",
        "1 for the call (better, worse, no clear difference, not yet known) on a test arm against the control in a group, from confidence sequences at 95%.",
        s.verdicts
            .iter()
            .map(|v| ([("arm", v.arm.clone()), ("group", v.group.clone()), ("call", v.call.clone())], 1u64)),
    )
}
