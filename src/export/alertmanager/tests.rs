use super::*;
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::AlertStatus;

fn cfg() -> PushConfig {
    PushConfig {
        urls: vec![],
        resend: Duration::from_secs(60),
        instance: "host:10027".into(),
        generator_url: "http://host:10027/api/alerts".into(),
        runbook_url: "http://host:10027/runbook#tcprttinflation".into(),
        groups: Arc::new(PeerGroups::parse("groups: {lab: [10.9.0.0/16]}").unwrap()),
    }
}

fn view(cookie: u64, fired_at: SystemTime, resolved_at: Option<SystemTime>) -> AlertView {
    AlertView {
        cookie,
        cc: "cubic".into(),
        local: "10.9.0.1:5201".parse().unwrap(),
        peer: "10.9.0.2:40000".parse().unwrap(),
        status: if resolved_at.is_some() { AlertStatus::Resolved } else { AlertStatus::Firing },
        srtt_us: 45_000,
        baseline_rtt_us: 10_000,
        ratio: 4.5,
        peak_ratio: 4.5,
        since: fired_at - Duration::from_secs(5),
        fired_at,
        resolved_at,
    }
}

fn snap(alerts: Vec<AlertView>) -> Snapshot {
    Snapshot { alerts, ..Snapshot::empty(RuleConfig::default()) }
}

#[test]
fn fires_resends_and_resolves() {
    let mut t = Tracker::new(cfg());
    let (t0, w0) = (Instant::now(), SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000));
    let at = |s: u64| (t0 + Duration::from_secs(s), w0 + Duration::from_secs(s));
    let firing = snap(vec![view(7, w0, None)]);

    let (m, w) = at(0);
    let due = t.due(&firing, m, w);
    assert_eq!(due.len(), 1);
    let a = &due[0];
    assert_eq!(a.labels["alertname"], "TcpRttInflation");
    assert_eq!(a.labels["peer_group"], "lab");
    assert_eq!(a.labels["instance"], "host:10027");
    assert_eq!(a.annotations["srtt"], "45.0ms");
    assert_eq!(a.annotations["ratio"], "4.50");
    // Routable as shipped: a severity, and the annotations every alert of the project carries.
    assert_eq!(a.labels["severity"], "warning");
    assert!(a.annotations["summary"].contains("host:10027") && a.annotations["summary"].contains("cubic"));
    assert!(a.annotations["description"].contains("4.50x its baseline"), "{:?}", a.annotations);
    assert_eq!(a.annotations["runbook_url"], "http://host:10027/runbook#tcprttinflation");
    assert_eq!(a.starts_at, w0);
    assert_eq!(a.ends_at, w + Duration::from_secs(240), "endsAt = now + 4 x resend");

    let (m, w) = at(30);
    assert!(t.due(&firing, m, w).is_empty(), "not again before the resend interval");
    let (m, w) = at(60);
    assert_eq!(t.due(&firing, m, w).len(), 1, "resent after the interval");

    // Resolved: sent at once with endsAt = the engine's resolve time.
    let resolved_at = w0 + Duration::from_secs(70);
    let resolved = snap(vec![view(7, w0, Some(resolved_at))]);
    let (m, w) = at(71);
    let due = t.due(&resolved, m, w);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].ends_at, resolved_at);
    // Resent for five minutes, then forgotten; the engine may have dropped it meanwhile.
    let (m, w) = at(131);
    assert_eq!(t.due(&snap(vec![]), m, w).len(), 1);
    let (m, w) = at(71 + 300);
    assert!(t.due(&snap(vec![]), m, w).is_empty());
    assert!(t.entries.is_empty());
}

#[test]
fn a_vanished_alert_resolves_now_and_refiring_is_a_new_alert() {
    let mut t = Tracker::new(cfg());
    let (t0, w0) = (Instant::now(), SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000));
    assert_eq!(t.due(&snap(vec![view(1, w0, None)]), t0, w0).len(), 1);
    let (m, w) = (t0 + Duration::from_secs(2), w0 + Duration::from_secs(2));
    let due = t.due(&snap(vec![view(1, w0 + Duration::from_secs(1), None)]), m, w);
    // The old one resolves at `now`, the new firing is sent too.
    assert_eq!(due.len(), 2);
    assert!(due.iter().any(|a| a.ends_at == w));
    assert!(due.iter().any(|a| a.ends_at == w + Duration::from_secs(240)));
}

#[test]
fn json_has_the_v2_field_names() {
    let mut t = Tracker::new(cfg());
    let w0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let due = t.due(&snap(vec![view(1, w0, None)]), Instant::now(), w0);
    let v: serde_json::Value = serde_json::from_str(&serde_json::to_string(&due).unwrap()).unwrap();
    for k in ["labels", "annotations", "startsAt", "endsAt", "generatorURL"] {
        assert!(v[0].get(k).is_some(), "{k} missing in {v}");
    }
    assert_eq!(v[0]["startsAt"], "1970-01-12T13:46:40.000Z");
}
