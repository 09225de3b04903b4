//! A running experiment's own families (`bbrtop experiment --web.listen-address`): one series per
//! arm, and a verdict per (test arm, group); the groups are bounded as the peer labels are (the
//! peer groups, the top ASs and countries, four size classes). The counters and response times per
//! arm are the default families' with an `arm` label.

use super::{Enc, catalog, counters, gauges};
use crate::experiment::status::Status;

pub fn encode(enc: &mut Enc, s: &Status) -> std::fmt::Result {
    let arm = |c: &crate::experiment::ArmCount| [("arm", c.cc.clone())];
    gauges(enc, &catalog::ARM_SHARE, s.arms.iter().map(|c| (arm(c), c.percent / 100.0)))?;
    gauges(enc, &catalog::ARM_OPEN, s.arms.iter().map(|c| (arm(c), u64::from(s.stop_of(&c.cc).is_none()))))?;
    gauges(
        enc,
        &catalog::GUARD_STOPPED,
        s.stopped.iter().map(|st| ([("arm", st.arm.clone()), ("reason", st.reason.clone())], 1u64)),
    )?;
    counters(enc, &catalog::ASSIGNED, s.arms.iter().map(|c| (arm(c), c.assigned)))?;
    counters(enc, &catalog::REDIRECTED, s.arms.iter().map(|c| (arm(c), c.redirected)))?;
    counters(enc, &catalog::SETSOCKOPT_FAILURES, s.arms.iter().map(|c| (arm(c), c.setsockopt_failures)))?;
    gauges(
        enc,
        &catalog::VERDICT,
        s.verdicts
            .iter()
            .map(|v| ([("arm", v.arm.clone()), ("group", v.group.clone()), ("call", v.call.clone())], 1u64)),
    )
}
