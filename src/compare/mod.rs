//! `bbrtop compare A B`: two recordings, or two ranges of one, or several hosts' recordings on
//! a side (a canary against the rest), side by side. Each socket is summarised over its polls
//! first ([`summary`]), then each group of sockets (all, per cc, per peer group, AS, country and
//! host) is compared by medians over sockets with a bootstrap interval over sockets
//! (`bbrtop_core::stats`, [`report`]); which ccs each side ran says what the comparison can
//! claim ([`contrast`]: no cc verdict where both sides ran one cc, and always observational); the
//! result is a table ([`table`]), JSON, or an SVG of the RTT distributions ([`plot`]). Pure: the
//! command reads the recordings and feeds the snapshots in.

pub mod contrast;
pub mod plot;
pub mod range;
pub mod report;
pub mod responses;
pub mod summary;
pub mod table;

use bbrtop_core::units::serde_time;
use contrast::{CcMix, Contrast};
use report::{GroupRows, METHOD, Method};
use serde::Serialize;
use std::time::SystemTime;
use summary::SocketSummary;

/// One side as the report names it: which polls it covers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideHead {
    /// As given on the command line (`PATH[@FROM..TO]`).
    pub spec: String,
    /// The first and last poll in the range.
    #[serde(with = "serde_time")]
    pub from: SystemTime,
    #[serde(with = "serde_time")]
    pub to: SystemTime,
    pub polls: usize,
    pub sockets: usize,
    /// The hosts whose recordings it holds, in the order given.
    pub hosts: Vec<String>,
}

/// One side: its polls and its sockets' summaries.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub head: SideHead,
    pub sockets: Vec<SocketSummary>,
    /// Its response times over its range, per host, cc, peer group, AS and country.
    pub responses: Vec<responses::ResponseBucket>,
}

/// One side as the report shows it: its head, and the ccs its sockets ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideReport {
    #[serde(flatten)]
    pub head: SideHead,
    pub ccs: CcMix,
}

/// The whole comparison, as the table and the JSON show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub a: SideReport,
    pub b: SideReport,
    /// What the sides' ccs let it claim: a cc verdict or not, and the controls.
    pub contrast: Contrast,
    pub method: Method,
    /// The groups in which B is worse on some metric, first (a cc's doing only where
    /// `contrast.cc_verdict`).
    pub regressed: Vec<report::Regressed>,
    pub groups: Vec<GroupRows>,
    /// Response delivery times per group and size class (eBPF; empty where the recordings hold
    /// none).
    pub responses: Vec<responses::ResponseRows>,
}

impl Comparison {
    pub fn new(a: &Side, b: &Side, by_peer_group: bool) -> Comparison {
        let groups = report::compare(&a.sockets, &b.sockets, by_peer_group);
        let responses = responses::compare(&a.responses, &b.responses, by_peer_group);
        let mut regressed = report::regressed(&groups);
        regressed.extend(responses::regressed(&responses));
        let report = |s: &Side| SideReport { head: s.head.clone(), ccs: CcMix::of(&s.sockets) };
        let (a, b) = (report(a), report(b));
        let contrast = Contrast::new(&a.ccs, &b.ccs, &groups);
        Comparison { a, b, contrast, regressed, groups, responses, method: METHOD }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::time::Duration;

    /// A side of one socket per (cc, median srtt ms), each with that one srtt sample.
    pub(crate) fn side(sockets: &[(&str, f64)]) -> Side {
        let t0 = humantime::parse_rfc3339("2026-11-23T03:00:00Z").unwrap();
        Side {
            head: SideHead {
                spec: "rec".into(),
                from: t0,
                to: t0 + Duration::from_secs(60),
                polls: 61,
                sockets: sockets.len(),
                hosts: vec!["edge-1".into()],
            },
            responses: Vec::new(),
            sockets: sockets
                .iter()
                .enumerate()
                .map(|(i, (cc, ms))| SocketSummary {
                    cookie: i as u64,
                    cc: cc.to_string(),
                    peer_group: "other".into(),
                    asn: None,
                    country: None,
                    host: "edge-1".into(),
                    polls: 61,
                    bytes_sent: 15_000_000,
                    seconds: 60.0,
                    throughput_bits_per_sec: Some(2e6),
                    goodput_bits_per_sec: Some(1.98e6),
                    srtt_p50_ms: Some(*ms),
                    srtt_p95_ms: Some(ms * 1.1),
                    srtt_p99_ms: Some(ms * 1.2),
                    inflation: Some(ms / 40.0),
                    retrans_ratio: Some(0.01),
                    srtt_samples_ms: vec![*ms],
                })
                .collect(),
        }
    }

    #[test]
    fn the_json_names_sides_method_and_groups() {
        let a = side(&[("cubic", 1000.0); 5]);
        let b = side(&[("bbr", 45.0); 5]);
        let v = serde_json::to_value(Comparison::new(&a, &b, false)).unwrap();
        assert_eq!(v["a"]["spec"], "rec");
        assert_eq!(v["a"]["ccs"]["cubic"]["socket_share"], 1.0);
        assert_eq!(v["b"]["ccs"]["bbr"]["byte_share"], 1.0);
        assert_eq!(
            (v["contrast"]["kind"].as_str(), v["contrast"]["cc_verdict"].as_bool()),
            (Some("cc_change"), Some(true))
        );
        assert_eq!(v["contrast"]["observational"], true);
        assert_eq!(v["a"]["from"], "2026-11-23T03:00:00.000Z");
        assert_eq!((v["a"]["sockets"].as_u64(), v["a"]["polls"].as_u64()), (Some(5), Some(61)));
        assert_eq!(v["method"]["resamples"], bbrtop_core::stats::RESAMPLES);
        assert_eq!(v["groups"][0]["group"], serde_json::json!({"by": "all"}));
        assert_eq!(v["groups"][1]["group"], serde_json::json!({"by": "cc", "name": "bbr"}));
        let p50 = &v["groups"][0]["metrics"][2];
        assert_eq!(p50["metric"], "srtt_p50_ms");
        assert_eq!(p50["diff"], -955.0);
        assert_eq!(p50["diff_ci"], serde_json::json!({"lo": -955.0, "hi": -955.0}));
    }
}
