//! The engine's firing alerts, one per socket, as one Alertmanager alert per (cc, peer group):
//! how many sockets fire there and the worst few, so a queue that inflates a thousand sockets is
//! one alert with bounded labels, not a thousand. Pure.

use super::{ALERT_NAME, AmAlert, PushConfig, SEVERITY};
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::snapshot::AlertView;
use bbrtop_core::units::micros;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The sockets an alert names in its annotations, worst first.
pub const WORST: usize = 3;

/// (cc, peer group): what one pushed alert stands for.
pub type Key = (String, String);

/// The firing sockets of one (cc, peer group).
#[derive(Clone, Debug, PartialEq)]
pub struct Firing {
    /// How many fire.
    pub sockets: usize,
    /// The [`WORST`] highest ratios, highest first.
    pub worst: Vec<AlertView>,
    /// The earliest of their `fired_at`.
    pub since: SystemTime,
    /// Each one's (cookie, fired_at), to find when they resolved.
    pub ids: Vec<(u64, SystemTime)>,
}

/// Firing alerts by (cc, peer group), the group named by `groups` from the peer's address.
pub fn by_group<'a>(
    firing: impl IntoIterator<Item = &'a AlertView>,
    groups: &PeerGroups,
) -> BTreeMap<Key, Firing> {
    let mut out: BTreeMap<Key, Firing> = BTreeMap::new();
    for a in firing {
        let key = (a.cc.clone(), groups.group(a.peer.ip()).to_string());
        let f = out.entry(key).or_insert_with(|| Firing {
            sockets: 0,
            worst: Vec::with_capacity(WORST + 1),
            since: a.fired_at,
            ids: Vec::new(),
        });
        f.sockets += 1;
        f.since = f.since.min(a.fired_at);
        f.ids.push((a.cookie, a.fired_at));
        keep_worst(&mut f.worst, a);
    }
    out
}

/// Inserts `a` into `worst` (highest ratio first, then by cookie so the order is stable) and
/// keeps the first [`WORST`].
fn keep_worst(worst: &mut Vec<AlertView>, a: &AlertView) {
    let at = worst.partition_point(|w| w.ratio > a.ratio || (w.ratio == a.ratio && w.cookie < a.cookie));
    if at < WORST {
        worst.insert(at, a.clone());
        worst.truncate(WORST);
    }
}

/// The alert Alertmanager gets for one (cc, peer group). Labels: the alert's name, severity,
/// instance, cc and peer group, all bounded; the sockets are in the annotations.
pub fn am_alert(cfg: &PushConfig, (cc, group): &Key, f: &Firing, ends_at: SystemTime) -> AmAlert {
    let labels = BTreeMap::from([
        ("alertname", ALERT_NAME.to_string()),
        ("severity", SEVERITY.to_string()),
        ("instance", cfg.instance.clone()),
        ("cc", cc.clone()),
        ("peer_group", group.clone()),
    ]);
    let n = f.sockets;
    let summary = format!("TCP RTT inflation on {}: {n} {cc} socket(s) to peer group {group}", cfg.instance);
    let description = format!(
        "{n} {cc} socket(s) of {} towards peer group {group} hold srtt above the alert rule's ratio of \
         their baseline (min RTT): a queue is building on their paths. Worst: {}.",
        cfg.instance,
        worst_line(&f.worst)
    );
    let mut annotations = BTreeMap::from([
        ("summary", summary),
        ("description", description),
        ("runbook_url", cfg.runbook_url.clone()),
        ("sockets", n.to_string()),
        ("worst", worst_line(&f.worst)),
    ]);
    // The worst socket's figures, as the per-socket alert carried them.
    if let Some(w) = f.worst.first() {
        annotations.insert("ratio", format!("{:.2}", w.ratio));
        annotations.insert("srtt", micros(w.srtt_us));
        annotations.insert("baseline", micros(w.baseline_rtt_us));
        annotations.insert("since", humantime::format_rfc3339_millis(w.since).to_string());
    }
    AmAlert { labels, annotations, starts_at: f.since, ends_at, generator_url: cfg.generator_url.clone() }
}

/// `local -> peer RATIOx (srtt S, baseline B)` for each, `; ` between them.
fn worst_line(worst: &[AlertView]) -> String {
    let one = |a: &AlertView| {
        format!(
            "{} -> {} {:.2}x (srtt {}, baseline {})",
            a.local,
            a.peer,
            a.ratio,
            micros(a.srtt_us),
            micros(a.baseline_rtt_us)
        )
    };
    worst.iter().map(one).collect::<Vec<_>>().join("; ")
}
