//! Opt-in aggregates by pod namespace (`--metrics.by-pod-namespace`): the sockets of pods only,
//! grouped by the pod's Kubernetes namespace and cc. Four gauge families, one series each per
//! (namespace, cc) with sockets; the node's own sockets stay in the default families only.

use super::{Enc, catalog, gauges};
use bbrtop_core::snapshot::SocketView;
use bbrtop_core::stats::percentiles;
use std::collections::BTreeMap;

#[derive(Default)]
struct Group {
    sockets: u64,
    inflated: u64,
    delivery: f64,
    srtt_us: Vec<u32>,
}

/// The pod namespace of a socket, when its pod is named.
fn pod_namespace(s: &SocketView) -> Option<&str> {
    s.record.origin.as_deref()?.pod.as_ref()?.namespace.as_deref()
}

fn groups(sockets: &[SocketView]) -> BTreeMap<(&str, &str), Group> {
    let mut out: BTreeMap<(&str, &str), Group> = BTreeMap::new();
    for s in sockets {
        let Some(ns) = pod_namespace(s) else { continue };
        let g = out.entry((ns, s.record.cc_name())).or_default();
        g.sockets += 1;
        g.inflated += u64::from(s.derived.inflated);
        g.delivery += s.record.tcp_info.delivery_rate_bytes_per_sec().unwrap_or(0) as f64;
        g.srtt_us.extend(s.record.tcp_info.srtt_us());
    }
    out
}

/// One family's series: (namespace, cc) labels and a value.
type Series<'a> = Vec<([(&'static str, &'a str); 2], f64)>;

fn series<'a>(gs: &BTreeMap<(&'a str, &'a str), Group>, f: fn(&Group) -> f64) -> Series<'a> {
    gs.iter().map(|(k, g)| ([("pod_namespace", k.0), ("cc", k.1)], f(g))).collect()
}

pub fn encode(enc: &mut Enc, sockets: &[SocketView]) -> std::fmt::Result {
    let mut gs = groups(sockets);
    gauges(enc, &catalog::POD_SOCKETS, series(&gs, |g| g.sockets as f64))?;
    gauges(enc, &catalog::POD_INFLATED, series(&gs, |g| g.inflated as f64))?;
    gauges(enc, &catalog::POD_DELIVERY, series(&gs, |g| g.delivery))?;
    let p95: Series = gs
        .iter_mut()
        .filter_map(|(k, g)| {
            let p95 = percentiles(&mut g.srtt_us, &[95.0], u32::cmp)[0]?;
            Some(([("pod_namespace", k.0), ("cc", k.1)], f64::from(p95) / 1e6))
        })
        .collect();
    gauges(enc, &catalog::POD_SRTT_P95, p95)
}
