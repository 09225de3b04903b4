//! The whole alert path on real kernels and servers: a CUBIC flow through the lab's deep tbf
//! buffer, `bbrtop export --netns` watching the sender, and a real Alertmanager. Privileged
//! (CAP_NET_ADMIN, CAP_SYS_ADMIN).

mod support;

use std::time::Duration;
use support::alert_rig::Rig;
use support::guard;
use support::http::get;
use support::tools::have;

#[test]
fn root_cubic_through_a_deep_buffer_alerts_in_alertmanager_and_resolves() {
    if !guard::lab("the alert lab test") || !have("prometheus-alertmanager") {
        return;
    }
    let mut rig = Rig::start();
    let (alert, took, flow) = rig.onset();
    eprintln!("alert reached Alertmanager {:.2} s after the flow started", took.as_secs_f64());
    let l = &alert["labels"];
    assert_eq!(l["cc"], "cubic");
    assert_eq!(l["peer"], flow.peer.to_string());
    assert_eq!(l["peer_group"], "other");
    assert!(l["instance"].as_str().is_some_and(|i| i.ends_with(&format!(":{}", rig.port))), "{l}");
    let ratio: f64 = alert["annotations"]["ratio"].as_str().and_then(|r| r.parse().ok()).unwrap_or(0.0);
    assert!(ratio >= 1.5, "{alert}");
    // The rule holds for 5 s, so the alert cannot be earlier; the bound is 7 s.
    assert!(took >= Duration::from_secs(5), "alert after {took:?}: before the 5 s hold");
    assert!(took <= Duration::from_secs(7), "alert after {took:?}: later than 7 s");

    rig.lab.stop_flow(&flow);
    rig.wait_resolved();
    let (_, metrics) = get(rig.port, "/metrics", None).unwrap();
    let ok = metrics
        .lines()
        .find(|l| l.starts_with("bbrtop_alertmanager_posts_total{") && l.contains("result=\"success\""))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
    assert!(ok.is_some_and(|n| n >= 2.0), "posts: {metrics}");
}
