use super::group::{WORST, by_group};
use super::*;
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::{AlertStatus, AlertView, Snapshot};
use std::time::{Duration, Instant, SystemTime};

fn groups() -> Arc<PeerGroups> {
    Arc::new(PeerGroups::parse("groups: {lab: [10.9.0.0/16]}").unwrap())
}

fn cfg() -> PushConfig {
    PushConfig {
        urls: vec![],
        resend: Duration::from_secs(60),
        instance: "host:10027".into(),
        generator_url: "http://host:10027/api/alerts".into(),
        runbook_url: "http://host:10027/runbook#tcprttinflation".into(),
        groups: groups(),
    }
}

/// Socket `cookie`'s alert, to a peer in "lab" (10.9.x.x) or, for `peer` outside it, "other".
fn view(
    cookie: u64,
    peer: &str,
    ratio: f64,
    fired_at: SystemTime,
    resolved_at: Option<SystemTime>,
) -> AlertView {
    AlertView {
        cookie,
        cc: "cubic".into(),
        local: "10.9.0.1:5201".parse().unwrap(),
        peer: format!("{peer}:{}", 40000 + cookie).parse().unwrap(),
        status: if resolved_at.is_some() { AlertStatus::Resolved } else { AlertStatus::Firing },
        srtt_us: (ratio * 10_000.0).round() as u32,
        baseline_rtt_us: 10_000,
        ratio,
        peak_ratio: ratio,
        since: fired_at - Duration::from_secs(5),
        fired_at,
        resolved_at,
    }
}

fn snap(alerts: Vec<AlertView>) -> Snapshot {
    Snapshot { alerts, ..Snapshot::empty(RuleConfig::default()) }
}

fn w0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)
}

#[test]
fn sockets_group_by_cc_and_peer_group_with_the_worst_first() {
    let w0 = w0();
    let ratios = [2.0, 6.0, 1.6, 4.5, 3.0];
    let mut alerts: Vec<AlertView> = ratios
        .iter()
        .enumerate()
        .map(|(i, r)| view(i as u64, "10.9.0.2", *r, w0 + Duration::from_secs(i as u64), None))
        .collect();
    alerts.push(view(10, "192.0.2.7", 9.0, w0 + Duration::from_secs(1), None));
    alerts.push(AlertView { cc: "bbr".into(), ..view(11, "10.9.0.3", 2.5, w0, None) });

    let by = by_group(&alerts, &groups());
    let keys: Vec<(&str, &str)> = by.keys().map(|(c, g)| (c.as_str(), g.as_str())).collect();
    assert_eq!(keys, [("bbr", "lab"), ("cubic", "lab"), ("cubic", "other")]);
    let lab = &by[&("cubic".to_string(), "lab".to_string())];
    assert_eq!(lab.sockets, 5);
    assert_eq!(lab.worst.iter().map(|a| a.ratio).collect::<Vec<_>>(), [6.0, 4.5, 3.0]);
    assert_eq!(lab.worst.len(), WORST);
    assert_eq!(lab.since, w0, "the earliest socket's fired_at");
    assert_eq!(by[&("cubic".to_string(), "other".to_string())].sockets, 1);
}

#[test]
fn one_alert_per_group_counts_its_sockets_and_names_the_worst() {
    let mut t = Tracker::new(cfg());
    let w0 = w0();
    let alerts: Vec<AlertView> =
        (0..40).map(|i| view(i, "10.9.0.2", 1.5 + i as f64 / 10.0, w0, None)).collect();
    let due = t.due(&snap(alerts), Instant::now(), w0);
    assert_eq!(due.len(), 1, "40 sockets of one (cc, peer group): one alert");
    let a = &due[0];
    let names: Vec<&str> = a.labels.keys().copied().collect();
    assert_eq!(names, ["alertname", "cc", "instance", "peer_group", "severity"], "no per-socket label");
    assert_eq!(a.labels["alertname"], "TcpRttInflation");
    assert_eq!(a.labels["peer_group"], "lab");
    assert_eq!(a.labels["severity"], "warning");
    assert_eq!(a.annotations["sockets"], "40");
    assert_eq!(a.annotations["ratio"], "5.40", "the worst socket's");
    assert_eq!(a.annotations["srtt"], "54.0ms");
    let worst = &a.annotations["worst"];
    assert_eq!(worst.matches(" -> ").count(), WORST, "{worst}");
    assert!(
        worst.starts_with("10.9.0.1:5201 -> 10.9.0.2:40039 5.40x (srtt 54.0ms, baseline 10.0ms)"),
        "{worst}"
    );
    assert!(a.annotations["summary"].contains("40 cubic socket(s) to peer group lab"), "{:?}", a.annotations);
    assert!(a.annotations["description"].contains(worst.as_str()));
    assert_eq!(a.annotations["runbook_url"], "http://host:10027/runbook#tcprttinflation");
}

#[test]
fn a_group_fires_resends_and_resolves_when_none_of_its_sockets_fire() {
    let mut t = Tracker::new(cfg());
    let (t0, w0) = (Instant::now(), w0());
    let at = |s: u64| (t0 + Duration::from_secs(s), w0 + Duration::from_secs(s));

    let (m, w) = at(0);
    let due = t.due(&snap(vec![view(1, "10.9.0.2", 4.5, w0, None)]), m, w);
    assert_eq!(due.len(), 1);
    assert_eq!(
        (due[0].starts_at, due[0].ends_at),
        (w0, w + Duration::from_secs(240)),
        "endsAt = now + 4 x resend"
    );

    // A second socket joins: the same alert, not sent again before the interval, its start kept.
    let two = snap(vec![
        view(1, "10.9.0.2", 4.5, w0, None),
        view(2, "10.9.0.3", 2.0, w0 + Duration::from_secs(20), None),
    ]);
    let (m, w) = at(30);
    assert!(t.due(&two, m, w).is_empty(), "not again before the resend interval");
    let (m, w) = at(60);
    let due = t.due(&two, m, w);
    assert_eq!((due.len(), due[0].annotations["sockets"].as_str(), due[0].starts_at), (1, "2", w0));

    // One resolves: the group still fires.
    let one_left = snap(vec![
        view(1, "10.9.0.2", 4.5, w0, Some(w0 + Duration::from_secs(65))),
        view(2, "10.9.0.3", 2.0, w0 + Duration::from_secs(20), None),
    ]);
    let (m, w) = at(66);
    assert!(t.due(&one_left, m, w).is_empty(), "the group fires on");

    // The last resolves: sent at once, endsAt = the engine's resolve time of the last.
    let last = w0 + Duration::from_secs(70);
    let none = snap(vec![
        view(1, "10.9.0.2", 4.5, w0, Some(w0 + Duration::from_secs(65))),
        view(2, "10.9.0.3", 2.0, w0 + Duration::from_secs(20), Some(last)),
    ]);
    let (m, w) = at(71);
    let due = t.due(&none, m, w);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].ends_at, last);
    // Resent for five minutes, then forgotten; the engine may have dropped its alerts meanwhile.
    let (m, w) = at(131);
    assert_eq!(t.due(&snap(vec![]), m, w).len(), 1);
    let (m, w) = at(71 + 300);
    assert!(t.due(&snap(vec![]), m, w).is_empty());
}

#[test]
fn closed_sockets_resolve_now_and_firing_again_is_a_new_alert() {
    let mut t = Tracker::new(cfg());
    let (t0, w0) = (Instant::now(), w0());
    assert_eq!(t.due(&snap(vec![view(1, "10.9.0.2", 3.0, w0, None)]), t0, w0).len(), 1);
    // The socket closed: the engine lists nothing, so the group resolves at `now`.
    let (m, w) = (t0 + Duration::from_secs(2), w0 + Duration::from_secs(2));
    let due = t.due(&snap(vec![]), m, w);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].ends_at, w);
    // Another socket of the group fires: a new alert, started at its own fired_at.
    let again = w0 + Duration::from_secs(3);
    let (m, w) = (t0 + Duration::from_secs(4), w0 + Duration::from_secs(4));
    let due = t.due(&snap(vec![view(2, "10.9.0.2", 3.0, again, None)]), m, w);
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].starts_at, due[0].ends_at), (again, w + Duration::from_secs(240)));
}

#[test]
fn json_has_the_v2_field_names() {
    let mut t = Tracker::new(cfg());
    let w0 = w0();
    let due = t.due(&snap(vec![view(1, "10.9.0.2", 4.5, w0, None)]), Instant::now(), w0);
    let v: serde_json::Value = serde_json::from_str(&serde_json::to_string(&due).unwrap()).unwrap();
    for k in ["labels", "annotations", "startsAt", "endsAt", "generatorURL"] {
        assert!(v[0].get(k).is_some(), "{k} missing in {v}");
    }
    assert_eq!(v[0]["startsAt"], "1970-01-12T13:46:40.000Z");
}

/// The `alertmanager` label (and log field) of a URL with a password shows it masked.
#[test]
fn the_label_of_a_url_with_a_password_masks_it() {
    let published = crate::runtime::Published::new(Arc::new(snap(vec![])));
    let urls = vec!["http://u:s3cret@127.0.0.1:9/".to_string()];
    let pusher = Pusher::start(PushConfig { urls, ..cfg() }, published).unwrap();
    let labels: Vec<(String, &str)> = pusher.stats().snapshot().into_iter().map(|(k, _)| k).collect();
    assert_eq!(labels.len(), RESULTS.len(), "{labels:?}");
    assert!(labels.iter().all(|(am, _)| am == "http://u:xxxxx@127.0.0.1:9/"), "{labels:?}");
}
