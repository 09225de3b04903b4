//! The Alertmanager pusher against a real `prometheus-alertmanager` on loopback.

mod support;

use bbrtop::export::alertmanager::{PushConfig, Pusher};
use bbrtop::runtime::Published;
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::{AlertStatus, AlertView, Snapshot};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use support::http::free_port;
use support::poll_until;
use support::servers::Alertmanager;
use support::tools::have;

/// Socket `cookie`'s alert towards `peer` (10.1.x.x is peer group "lab", anything else "other").
fn alert(
    cookie: u64,
    peer: &str,
    status: AlertStatus,
    fired_at: SystemTime,
    resolved_at: Option<SystemTime>,
) -> AlertView {
    AlertView {
        cookie,
        cc: "cubic".into(),
        local: "10.1.0.1:5201".parse().unwrap(),
        peer: format!("{peer}:{}", 40000 + cookie).parse().unwrap(),
        status,
        srtt_us: 60_000 + 1_000 * cookie as u32,
        baseline_rtt_us: 10_000,
        ratio: 6.0 + cookie as f64 / 10.0,
        peak_ratio: 6.0,
        since: fired_at - Duration::from_secs(5),
        fired_at,
        resolved_at,
    }
}

/// One firing socket of peer group "lab".
fn firing(fired_at: SystemTime) -> AlertView {
    alert(42, "10.1.0.2", AlertStatus::Firing, fired_at, None)
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

/// Five inflated sockets towards one peer group and one towards another: two alerts in
/// Alertmanager's API, one per (cc, peer group), each counting its sockets; both resolve when none
/// fires.
#[test]
fn root_sockets_reach_alertmanager_as_one_alert_per_peer_group_then_resolve() {
    if !have("prometheus-alertmanager") {
        return;
    }
    let am = Alertmanager::start();
    let fired_at = SystemTime::now();
    let sockets = |status: AlertStatus, resolved_at: Option<SystemTime>| -> Vec<AlertView> {
        let mut v: Vec<AlertView> =
            (1..=5).map(|c| alert(c, &format!("10.1.0.{c}"), status, fired_at, resolved_at)).collect();
        v.push(alert(9, "192.0.2.9", status, fired_at, resolved_at));
        v
    };
    let published = Published::new(snap(1, sockets(AlertStatus::Firing, None)));
    let pusher = Pusher::start(config(vec![am.url()]), Arc::clone(&published)).unwrap();

    let got = poll_until(Duration::from_secs(10), || {
        let a = am.active_rtt_alerts();
        (a.len() == 2).then_some(a)
    });
    let alerts = got.unwrap_or_else(|| panic!("two alerts never reached Alertmanager: {:?}", am.alerts()));
    let group = |g: &str| alerts.iter().find(|a| a["labels"]["peer_group"] == g).expect(g).clone();
    let lab = group("lab");
    let l = &lab["labels"];
    assert_eq!((l["cc"].as_str(), l["instance"].as_str()), (Some("cubic"), Some("testhost:10027")));
    assert!(l.get("peer").is_none() && l.get("local").is_none(), "no per-socket label: {l}");
    assert_eq!(lab["annotations"]["sockets"], "5");
    assert_eq!(lab["annotations"]["ratio"], "6.50", "the worst socket's");
    assert_eq!(lab["annotations"]["srtt"], "65.0ms");
    let worst = lab["annotations"]["worst"].as_str().unwrap_or("");
    assert_eq!(worst.matches(" -> ").count(), 3, "the worst three: {worst}");
    assert!(worst.starts_with("10.1.0.1:5201 -> 10.1.0.5:40005 6.50x"), "{worst}");
    assert_eq!(lab["generatorURL"], "http://testhost:10027/api/alerts");
    assert_eq!(group("other")["annotations"]["sockets"], "1");

    published.publish(snap(2, sockets(AlertStatus::Resolved, Some(SystemTime::now()))));
    let gone = poll_until(Duration::from_secs(10), || am.active_rtt_alerts().is_empty().then_some(()));
    assert!(gone.is_some(), "the alerts did not resolve: {:?}", am.active_rtt_alerts());
    let stats = pusher.stats().snapshot();
    let ok = stats.iter().find(|((u, r), _)| *u == am.url() && *r == "success").map(|(_, n)| *n);
    assert!(ok.is_some_and(|n| n >= 2), "{stats:?}");
}

#[test]
fn an_unreachable_alertmanager_is_counted_and_retried() {
    // Nothing listens on this port.
    let url = format!("http://127.0.0.1:{}", free_port());
    let published = Published::new(snap(1, vec![firing(SystemTime::now())]));
    let pusher = Pusher::start(config(vec![url.clone()]), published).unwrap();
    let errors = poll_until(Duration::from_secs(10), || {
        let n =
            pusher.stats().snapshot().into_iter().find(|((u, r), _)| *u == url && *r == "network_error")?.1;
        (n >= 2).then_some(n)
    });
    assert!(errors.is_some(), "{:?}", pusher.stats().snapshot());
}

/// A receiver on loopback as a load balancer's redirect makes one: every POST is answered 302 to
/// the same place, every GET 200 (as Alertmanager answers a GET of its alerts). It keeps each
/// request's first line.
fn redirecting() -> (String, Arc<Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (to, kept) = (format!("{url}/api/v2/alerts"), Arc::clone(&seen));
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let (mut first, mut line, mut length) = (String::new(), String::new(), 0);
            let _ = r.read_line(&mut first);
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let _ = r.read_exact(&mut vec![0; length]);
            let answer = if first.starts_with("POST") {
                format!("302 Found\r\nLocation: {to}\r\nContent-Length: 0")
            } else {
                "200 OK\r\nContent-Type: application/json\r\nContent-Length: 2".to_string()
            };
            kept.lock().unwrap().push(first.trim_end().to_string());
            let _ = write!(s, "HTTP/1.1 {answer}\r\nConnection: close\r\n\r\n[]");
        }
    });
    (url, seen)
}

/// A redirect is not followed: the pusher would send a GET without the alerts and count the batch
/// a success (main did). It is a failed post, `redirected`.
#[test]
fn a_redirect_is_a_failed_post_and_never_followed_as_a_get() {
    let (url, seen) = redirecting();
    let published = Published::new(snap(1, vec![firing(SystemTime::now())]));
    let pusher = Pusher::start(config(vec![url.clone()]), published).unwrap();
    let count = |r: &str| {
        let stats = pusher.stats().snapshot();
        stats.into_iter().find(|((u, res), _)| *u == url && *res == r).map_or(0, |(_, n)| n)
    };
    let redirected = poll_until(Duration::from_secs(10), || (count("redirected") >= 1).then_some(()));
    assert!(redirected.is_some(), "{:?}", pusher.stats().snapshot());
    assert_eq!((count("success"), count("server_error"), count("network_error")), (0, 0, 0));
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty() && seen.iter().all(|l| l == "POST /api/v2/alerts HTTP/1.1"), "no GET: {seen:?}");
}

#[test]
fn root_a_rejected_post_is_counted_as_a_client_error() {
    if !have("prometheus-alertmanager") {
        return;
    }
    let am = Alertmanager::start();
    // A wrong path prefix: Alertmanager answers 404, which must not count as success nor retry.
    let url = format!("{}/no-such-prefix", am.url());
    let published = Published::new(snap(1, vec![firing(SystemTime::now())]));
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

/// The shipped Alertmanager configuration, pushed alerts and per-host alerts as Prometheus sends
/// them: the inhibit rules suppress the pushed alert of the same host and cc under
/// `BbrtopManySocketsInflated`, and of the same host, cc and peer group under
/// `BbrtopPeerGroupInflated`, not another group's; and a blackholed Alertmanager beside it (it
/// accepts connections and never answers) delays nothing.
#[test]
fn root_the_shipped_inhibit_rules_match_pushed_alerts_beside_a_blackholed_alertmanager() {
    if !have("prometheus-alertmanager") {
        return;
    }
    let am = shipped_alertmanager();
    let blackhole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let blackhole_url = format!("http://{}", blackhole.local_addr().unwrap());
    let _held = std::thread::spawn(move || blackhole.incoming().flatten().collect::<Vec<_>>());

    let host = serde_json::json!([
        {"labels": {"alertname": "BbrtopManySocketsInflated", "severity": "warning", "job": "bbrtop",
                    "instance": "edge-01", "cc": "cubic"},
         "annotations": {"summary": "many cubic senders inflated on edge-01"}},
        {"labels": {"alertname": "BbrtopPeerGroupInflated", "severity": "warning",
                    "instance": "edge-01", "cc": "bbr", "peer_group": "lab"},
         "annotations": {"summary": "bbr goodput to lab crosses inflated queues on its path"}},
    ]);
    assert_eq!(am.post(&host), 200);
    let fired_at = SystemTime::now();
    let bbr = |cookie, peer| AlertView {
        cc: "bbr".into(),
        ..alert(cookie, peer, AlertStatus::Firing, fired_at, None)
    };
    let published =
        Published::new(snap(1, vec![firing(fired_at), bbr(43, "10.1.0.3"), bbr(44, "192.0.2.4")]));
    let cfg = PushConfig { instance: "edge-01".into(), ..config(vec![blackhole_url, am.url()]) };
    let _pusher = Pusher::start(cfg, Arc::clone(&published)).unwrap();

    let all = poll_until(Duration::from_secs(10), || {
        let rtt = am.active_rtt_alerts();
        (rtt.len() == 3 && rtt.iter().all(|a| a["status"]["state"] != "unprocessed")).then_some(rtt)
    });
    let rtt = all.expect("the three pushed alerts reached the live Alertmanager");
    let state = |cc: &str, group: &str| {
        let a = rtt.iter().find(|a| a["labels"]["cc"] == cc && a["labels"]["peer_group"] == group).unwrap();
        (
            a["status"]["state"].as_str().unwrap_or("").to_string(),
            a["status"]["inhibitedBy"].as_array().map_or(0, Vec::len),
        )
    };
    assert_eq!(state("cubic", "lab"), ("suppressed".to_string(), 1), "the per-host cubic alert inhibits it");
    assert_eq!(state("bbr", "lab"), ("suppressed".to_string(), 1), "the peer group's warning inhibits it");
    assert_eq!(state("bbr", "other").0, "active", "another peer group of that cc is not inhibited");
    let a = rtt.iter().find(|a| a["labels"]["cc"] == "cubic").unwrap();
    assert_eq!(a["labels"]["severity"], "warning");
    for key in ["summary", "description", "runbook_url", "sockets", "worst"] {
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
