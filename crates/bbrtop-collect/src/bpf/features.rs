//! Each feature of the eBPF collector, on or off here and why, from what became of its programs
//! (left out by the plan, refused by the verifier, not attached) and what they read of
//! `struct bbr`. Pure: the loader's status and the walk's verdict in, states out.

use super::BpfStatus;
use super::plan::{Fate, PROGRAMS};
use bbrtop_core::seam::{Cause, Feature, FeatureState, Reason};

/// The programs each feature needs, all of them (`Responses` needs one of its two starts, below).
fn programs(f: Feature) -> &'static [&'static str] {
    match f {
        Feature::Alert | Feature::BbrState => &["tcp_probe"],
        Feature::ClosedFlows => &["tcp_destroy_sock"],
        Feature::Walk => &["tcp_probe", "tcp_established", "tcp_rcv_space_adjust", "tcp_destroy_sock"],
        Feature::Responses => &["tcp_probe"],
        Feature::Experiment => &[],
    }
}

/// The two programs that start a response: the tracepoint's, or the function entry's instead.
const RESPONSE_STARTS: [&str; 2] = ["tcp_sendmsg_locked", "tcp_sendmsg_fentry"];

/// Why program `name` is not running here, if it is not (`None` for one that stands in for
/// nothing and was not needed).
pub fn program_off(s: &BpfStatus, name: &str) -> Option<Reason> {
    if let Some(r) = &s.reason {
        return Some(r.clone());
    }
    if let Some((_, e)) = s.failed.iter().find(|(n, _)| *n == name) {
        return Some(Reason::new(Cause::NotAttached, format!("{name} did not attach: {e}")));
    }
    match s.fates.iter().find(|(n, _)| *n == name).map(|(_, f)| f) {
        Some(Fate::Lacks(need)) => Some(Reason::new(Cause::KernelLacks, format!("{name}: {need}"))),
        Some(Fate::Rejected(why)) => Some(Reason::new(Cause::Rejected, format!("{name} refused: {why}"))),
        Some(Fate::NotNeeded) => Some(Reason::new(Cause::NotAttached, format!("{name}: not needed"))),
        Some(Fate::Load) if s.attached.contains(&name) => None,
        Some(Fate::Load) | None => Some(Reason::new(Cause::NotAttached, format!("{name} not loaded"))),
    }
}

/// Every collector feature's state. `bbr` is what the programs cannot do with `struct bbr`
/// ([`super::loader::Loaded::bbr_limit`]); `walk` why the walk does not run, if it does not.
pub fn collector_features(s: &BpfStatus, bbr: Option<&Reason>, walk: Option<&Reason>) -> Vec<FeatureState> {
    Feature::COLLECTOR
        .iter()
        .map(|&f| {
            let needed = programs(f).iter().find_map(|p| program_off(s, p));
            let own = match f {
                Feature::BbrState => bbr.filter(|r| r.cause == Cause::BbrStateOff).cloned(),
                Feature::Walk => walk.cloned(),
                Feature::Responses => response_start_off(s),
                _ => None,
            };
            match needed.or(own) {
                Some(why) => FeatureState::off(f, why),
                None => FeatureState::on(f),
            }
        })
        .collect()
}

/// Why no response start runs: each start's own reason, joined.
fn response_start_off(s: &BpfStatus) -> Option<Reason> {
    let offs: Vec<Reason> = RESPONSE_STARTS.iter().map(|p| program_off(s, p)).collect::<Option<_>>()?;
    let cause = offs.iter().map(|r| r.cause).find(|c| *c != Cause::KernelLacks).unwrap_or(Cause::KernelLacks);
    let detail = offs.iter().map(|r| r.detail.as_str()).collect::<Vec<_>>().join("; ");
    Some(Reason::new(cause, detail))
}

/// Every program this build has, for a plan's readers.
pub fn program_names() -> impl Iterator<Item = &'static str> {
    PROGRAMS.iter().map(|p| p.name)
}

#[cfg(test)]
mod tests {
    use super::super::plan::{Need, SK_STORAGE};
    use super::*;

    fn status(fates: &[(&'static str, Fate)]) -> BpfStatus {
        BpfStatus {
            attached: fates.iter().filter(|(_, f)| *f == Fate::Load).map(|(n, _)| *n).collect(),
            fates: fates.to_vec(),
            ..BpfStatus::default()
        }
    }

    fn off(states: &[FeatureState]) -> Vec<(&'static str, Cause)> {
        states.iter().filter_map(|s| s.off.as_ref().map(|r| (s.feature.label(), r.cause))).collect()
    }

    #[test]
    fn on_6_12_everything_runs_with_the_fentry_start() {
        let s = status(&[
            ("tcp_probe", Fate::Load),
            ("tcp_established", Fate::Load),
            ("tcp_rcv_space_adjust", Fate::Load),
            ("tcp_sendmsg_locked", Fate::Lacks(Need::Tracepoint("tcp_sendmsg_locked"))),
            ("tcp_sendmsg_fentry", Fate::Load),
            ("tcp_destroy_sock", Fate::Load),
        ]);
        assert_eq!(off(&collector_features(&s, None, None)), []);
    }

    #[test]
    fn without_any_start_responses_say_both_reasons() {
        let s = status(&[
            ("tcp_probe", Fate::Load),
            ("tcp_sendmsg_locked", Fate::Lacks(Need::Tracepoint("tcp_sendmsg_locked"))),
            ("tcp_sendmsg_fentry", Fate::Rejected("Operation not permitted (log: /tmp/x)".into())),
            ("tcp_destroy_sock", Fate::Load),
        ]);
        let f = collector_features(&s, None, None);
        let r = f.iter().find(|s| s.feature == Feature::Responses).and_then(|s| s.off.clone()).unwrap();
        assert_eq!(r.cause, Cause::Rejected);
        assert_eq!(
            r.detail,
            "tcp_sendmsg_locked: no tracepoint tcp:tcp_sendmsg_locked (Linux 6.16); \
             tcp_sendmsg_fentry refused: Operation not permitted (log: /tmp/x)"
        );
        // The walk lacks its two hooks here; alert and closed flows run.
        assert_eq!(off(&f), [("walk", Cause::NotAttached), ("responses", Cause::Rejected)]);
    }

    #[test]
    fn on_5_10_every_feature_names_what_the_kernel_lacks() {
        let lacks = Fate::Lacks(Need::Helper(SK_STORAGE));
        let s = status(&program_names().map(|n| (n, lacks.clone())).collect::<Vec<_>>());
        let f = collector_features(&s, None, None);
        assert!(f.iter().all(|s| s.off.as_ref().is_some_and(|r| r.cause == Cause::KernelLacks)), "{f:?}");
        let alert = f[0].off.as_ref().unwrap();
        assert_eq!(alert.detail, "tcp_probe: no socket storage in tracing programs (Linux 5.11)");
    }

    #[test]
    fn bbr_state_and_walk_have_reasons_of_their_own() {
        let s = status(&program_names().map(|n| (n, Fate::Load)).collect::<Vec<_>>());
        let bbr = Reason::new(Cause::BbrStateOff, "BBR state off: no struct bbr");
        let partial = Reason::new(Cause::BbrStatePartial, "BBR state partial");
        let walk = Reason::new(Cause::NotAsked, "not asked for");
        let f = collector_features(&s, Some(&bbr), Some(&walk));
        assert_eq!(off(&f), [("bbr_state", Cause::BbrStateOff), ("walk", Cause::NotAsked)]);
        assert_eq!(off(&collector_features(&s, Some(&partial), None)), [], "partial is a limit, not off");
        let whole = BpfStatus { reason: Some(Reason::new(Cause::NoBtf, "no BTF")), ..BpfStatus::default() };
        assert!(
            collector_features(&whole, None, None)
                .iter()
                .all(|s| s.off.as_ref().unwrap().cause == Cause::NoBtf)
        );
    }
}
