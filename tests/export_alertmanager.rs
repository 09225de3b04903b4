//! The Alertmanager pusher against a real `prometheus-alertmanager` on loopback.

mod support;

use bbrtop::export::alertmanager::{PushConfig, Pusher};
use bbrtop::runtime::Published;
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::{AlertStatus, AlertView, Snapshot};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use support::http::free_port;
use support::poll_until;
use support::servers::Alertmanager;
use support::tools::have;

fn alert(status: AlertStatus, fired_at: SystemTime, resolved_at: Option<SystemTime>) -> AlertView {
    AlertView {
        cookie: 42,
        cc: "cubic".into(),
        local: "10.1.0.1:5201".parse().unwrap(),
        peer: "10.1.0.2:40000".parse().unwrap(),
        status,
        srtt_us: 60_000,
        baseline_rtt_us: 10_000,
        ratio: 6.0,
        peak_ratio: 6.0,
        since: fired_at - Duration::from_secs(5),
        fired_at,
        resolved_at,
    }
}

fn snap(seq: u64, alerts: Vec<AlertView>) -> Arc<Snapshot> {
    Arc::new(Snapshot { seq, alerts, ..Snapshot::empty(RuleConfig::default()) })
}

fn config(urls: Vec<String>) -> PushConfig {
    PushConfig {
        urls,
        resend: Duration::from_secs(2),
        instance: "testhost:10027".into(),
        generator_url: "http://testhost:10027/api/alerts".into(),
        runbook_url: "http://testhost:10027/runbook#tcprttinflation".into(),
        groups: Arc::new(PeerGroups::parse("groups: {lab: [10.1.0.0/16]}").unwrap()),
    }
}

#[test]
fn root_firing_then_resolved_reaches_alertmanager() {
    if !have("prometheus-alertmanager") {
        return;
    }
    let am = Alertmanager::start();
    let fired_at = SystemTime::now();
    let published = Published::new(snap(1, vec![alert(AlertStatus::Firing, fired_at, None)]));
    let pusher = Pusher::start(config(vec![am.url()]), Arc::clone(&published)).unwrap();

    let got = poll_until(Duration::from_secs(10), || am.active_rtt_alerts().into_iter().next());
    let a = got.expect("the firing alert never reached Alertmanager");
    let l = &a["labels"];
    assert_eq!((l["cc"].as_str(), l["peer_group"].as_str()), (Some("cubic"), Some("lab")));
    assert_eq!((l["local"].as_str(), l["peer"].as_str()), (Some("10.1.0.1:5201"), Some("10.1.0.2:40000")));
    assert_eq!(l["instance"], "testhost:10027");
    assert_eq!(a["annotations"]["ratio"], "6.00");
    assert_eq!(a["annotations"]["srtt"], "60.0ms");
    assert_eq!(a["generatorURL"], "http://testhost:10027/api/alerts");

    published.publish(snap(2, vec![alert(AlertStatus::Resolved, fired_at, Some(SystemTime::now()))]));
    let gone = poll_until(Duration::from_secs(10), || am.active_rtt_alerts().is_empty().then_some(()));
    assert!(gone.is_some(), "the alert did not resolve: {:?}", am.active_rtt_alerts());
    let stats = pusher.stats().snapshot();
    let ok = stats.iter().find(|((u, r), _)| *u == am.url() && *r == "success").map(|(_, n)| *n);
    assert!(ok.is_some_and(|n| n >= 2), "{stats:?}");
}

#[test]
fn an_unreachable_alertmanager_is_counted_and_retried() {
    // Nothing listens on this port.
    let url = format!("http://127.0.0.1:{}", free_port());
    let published = Published::new(snap(1, vec![alert(AlertStatus::Firing, SystemTime::now(), None)]));
    let pusher = Pusher::start(config(vec![url.clone()]), published).unwrap();
    let errors = poll_until(Duration::from_secs(10), || {
        let n =
            pusher.stats().snapshot().into_iter().find(|((u, r), _)| *u == url && *r == "network_error")?.1;
        (n >= 2).then_some(n)
    });
    assert!(errors.is_some(), "{:?}", pusher.stats().snapshot());
}

#[test]
fn root_a_rejected_post_is_counted_as_a_client_error() {
    if !have("prometheus-alertmanager") {
        return;
    }
    let am = Alertmanager::start();
    // A wrong path prefix: Alertmanager answers 404, which must not count as success nor retry.
    let url = format!("{}/no-such-prefix", am.url());
    let published = Published::new(snap(1, vec![alert(AlertStatus::Firing, SystemTime::now(), None)]));
    let pusher = Pusher::start(config(vec![url.clone()]), published).unwrap();
    let count = |r: &str| {
        pusher
            .stats()
            .snapshot()
            .into_iter()
            .find(|((u, res), _)| *u == url && *res == r)
            .map_or(0, |(_, n)| n)
    };
    assert!(poll_until(Duration::from_secs(10), || (count("client_error") >= 1).then_some(())).is_some());
    assert_eq!(count("success"), 0);
    assert!(am.active_rtt_alerts().is_empty());
}

/// A real Alertmanager running the shipped configuration (routes, inhibit rules).
fn shipped_alertmanager() -> Alertmanager {
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/dashboards/alertmanager/alertmanager.yml"
    ))
    .unwrap();
    Alertmanager::start_config(&shipped)
}

/// The shipped Alertmanager configuration, a pushed alert's labels and a per-host alert as
/// Prometheus sends it: the inhibit rule (equal on instance and cc) suppresses the pushed alert of
/// the same host and cc, not another cc's; and a blackholed Alertmanager beside it (it accepts
/// connections and never answers) delays nothing.
#[test]
fn root_the_shipped_inhibit_rule_matches_pushed_alerts_beside_a_blackholed_alertmanager() {
    if !have("prometheus-alertmanager") {
        return;
    }
    let am = shipped_alertmanager();
    let blackhole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let blackhole_url = format!("http://{}", blackhole.local_addr().unwrap());
    let _held = std::thread::spawn(move || blackhole.incoming().flatten().collect::<Vec<_>>());

    let host = serde_json::json!([{
        "labels": {"alertname": "BbrtopManySocketsInflated", "severity": "warning", "job": "bbrtop",
                   "instance": "edge-01", "cc": "cubic"},
        "annotations": {"summary": "many cubic sockets inflated on edge-01"},
    }]);
    assert_eq!(am.post(&host), 200);
    let fired_at = SystemTime::now();
    let bbr = AlertView { cookie: 43, cc: "bbr".into(), ..alert(AlertStatus::Firing, fired_at, None) };
    let published = Published::new(snap(1, vec![alert(AlertStatus::Firing, fired_at, None), bbr]));
    let cfg = PushConfig { instance: "edge-01".into(), ..config(vec![blackhole_url, am.url()]) };
    let _pusher = Pusher::start(cfg, Arc::clone(&published)).unwrap();

    let both = poll_until(Duration::from_secs(10), || {
        let rtt = am.active_rtt_alerts();
        (rtt.len() == 2).then_some(rtt)
    });
    let rtt = both.expect("both pushed alerts reached the live Alertmanager");
    let state = |cc: &str| {
        let a = rtt.iter().find(|a| a["labels"]["cc"] == cc).unwrap();
        (
            a["status"]["state"].as_str().unwrap_or("").to_string(),
            a["status"]["inhibitedBy"].as_array().map_or(0, Vec::len),
        )
    };
    assert_eq!(
        state("cubic"),
        ("suppressed".to_string(), 1),
        "the per-host cubic alert inhibits its sockets' alerts"
    );
    assert_eq!(state("bbr").0, "active", "another cc on the same host is not inhibited");
    let a = rtt.iter().find(|a| a["labels"]["cc"] == "cubic").unwrap();
    assert_eq!(a["labels"]["severity"], "warning");
    for key in ["summary", "description", "runbook_url"] {
        assert!(a["annotations"][key].as_str().is_some_and(|s| !s.is_empty()), "{key}: {a}");
    }
}

/// The shipped Alertmanager configuration: the page (`BbrtopInflatedTrafficHigh`) inhibits the
/// warning it grew from (`BbrtopManySocketsInflated`) for the same host and cc, not another host's.
#[test]
fn root_the_page_inhibits_its_warning() {
    if !have("prometheus-alertmanager") {
        return;
    }
    let am = shipped_alertmanager();
    let alert = |name: &str, severity: &str, instance: &str| {
        serde_json::json!({
            "labels": {"alertname": name, "severity": severity, "job": "bbrtop", "instance": instance, "cc": "cubic"},
            "annotations": {"summary": name},
        })
    };
    let posted = serde_json::json!([
        alert("BbrtopInflatedTrafficHigh", "critical", "edge-01"),
        alert("BbrtopManySocketsInflated", "warning", "edge-01"),
        alert("BbrtopManySocketsInflated", "warning", "edge-02"),
    ]);
    assert_eq!(am.post(&posted), 200);
    let warnings = poll_until(Duration::from_secs(10), || {
        let w: Vec<(String, String)> = am
            .alerts()
            .into_iter()
            .filter(|a| a["labels"]["alertname"] == "BbrtopManySocketsInflated")
            .map(|a| {
                let instance = a["labels"]["instance"].as_str().unwrap_or("").to_string();
                (instance, a["status"]["state"].as_str().unwrap_or("").to_string())
            })
            .collect();
        (w.len() == 2 && w.iter().all(|(_, s)| s != "unprocessed")).then_some(w)
    });
    let mut w = warnings.expect("both warnings processed");
    w.sort();
    assert_eq!(
        w,
        [("edge-01".to_string(), "suppressed".to_string()), ("edge-02".to_string(), "active".to_string())]
    );
}
