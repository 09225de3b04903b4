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
    assert_eq!(l["peer_group"], "other");
    // One alert per (cc, peer group): the flow's socket is its one socket, and its worst.
    assert_eq!(alert["annotations"]["sockets"], "1", "{alert}");
    let worst = alert["annotations"]["worst"].as_str().unwrap_or("");
    assert!(worst.contains(&format!("-> {} ", flow.peer)), "{alert}");
    assert!(l["instance"].as_str().is_some_and(|i| i.ends_with(&format!(":{}", rig.port))), "{l}");
    let ratio: f64 = alert["annotations"]["ratio"].as_str().and_then(|r| r.parse().ok()).unwrap_or(0.0);
    assert!(ratio >= 1.5, "{alert}");
    // The rule holds for 5 s, so the alert cannot be earlier; the bound is 7 s.
    assert!(took >= Duration::from_secs(5), "alert after {took:?}: before the 5 s hold");
    assert!(took <= Duration::from_secs(7), "alert after {took:?}: later than 7 s");

    // What the shipped rules read while it fires: the flow is a sender, inflated, and its goodput
    // is the inflated goodput of its (cc, peer group).
    let (_, metrics) = get(rig.port, "/metrics", None).unwrap();
    let goodput = sample(&metrics, "bbrtop_inflated_goodput_bytes_per_second{", &["cc=\"cubic\""]);
    assert!(goodput.is_some_and(|g| g > 0.0), "{metrics}");
    let senders = sample(&metrics, "bbrtop_sockets_by_role{", &["cc=\"cubic\"", "role=\"sender\""]);
    assert!(senders.is_some_and(|n| n >= 1.0), "{metrics}");

    rig.lab.stop_flow(&flow);
    rig.wait_resolved();
    let (_, metrics) = get(rig.port, "/metrics", None).unwrap();
    let ok = sample(&metrics, "bbrtop_alertmanager_posts_total{", &["result=\"success\""]);
    assert!(ok.is_some_and(|n| n >= 2.0), "posts: {metrics}");
}

/// The value of the first sample of `metrics` (text format) that starts with `name` and carries
/// every one of `labels`.
fn sample(metrics: &str, name: &str, labels: &[&str]) -> Option<f64> {
    let line = metrics.lines().find(|l| l.starts_with(name) && labels.iter().all(|m| l.contains(m)))?;
    line.rsplit(' ').next()?.parse().ok()
}
