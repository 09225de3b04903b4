//! The whole alert path on real kernels and servers: a CUBIC flow through the lab's deep tbf
//! buffer, `bbrtop export --netns` watching the sender, and a real Alertmanager. Privileged
//! (CAP_NET_ADMIN, CAP_SYS_ADMIN).

mod support;

use bbrtop::lab::{Flow, Lab, LabConfig};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::http::{free_port, get};
use support::servers::Alertmanager;
use support::tools::have;
use support::{Proc, guard, poll_until};

const BIN: &str = env!("CARGO_BIN_EXE_bbrtop");

/// Alertmanager, a lab, and `bbrtop export` on the lab's sender namespace.
struct Rig {
    am: Alertmanager,
    port: u16,
    _exporter: Proc,
    lab: Lab,
}

impl Rig {
    fn start() -> Rig {
        let am = Alertmanager::start();
        let lab = Lab::new(LabConfig::default()).unwrap();
        let port = free_port();
        let exporter = Proc(
            Command::new(BIN)
                .arg("export")
                .arg(format!("--netns={}", lab.sender_netns().display()))
                .args(["--web.listen-address", &format!("127.0.0.1:{port}")])
                .args(["--interval", "250ms", "--cc", "cubic", "--alertmanager.url", &am.url()])
                .args(["--alertmanager.resend-interval", "5s"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let ready =
            poll_until(Duration::from_secs(10), || get(port, "/-/ready", None).ok().filter(|r| r.0 == 200));
        assert!(ready.is_some(), "bbrtop export never became ready");
        Rig { am, port, _exporter: exporter, lab }
    }

    /// Starts a CUBIC flow; returns the first alert Alertmanager lists, how long after the start
    /// it appeared, and the flow (stop it with `lab.stop_flow`).
    fn onset(&mut self) -> (serde_json::Value, Duration, Flow) {
        let t0 = Instant::now();
        let flow = self.lab.start_flow("cubic").unwrap();
        let alert = poll_until(Duration::from_secs(15), || self.am.active_rtt_alerts().into_iter().next());
        let took = t0.elapsed();
        let alert = alert.expect("no TcpRttInflation alert reached Alertmanager within 15 s");
        (alert, took, flow)
    }

    fn wait_resolved(&self) {
        let resolved =
            poll_until(Duration::from_secs(15), || self.am.active_rtt_alerts().is_empty().then_some(()));
        assert!(
            resolved.is_some(),
            "the alert did not resolve after the flow stopped: {:?}",
            self.am.active_rtt_alerts()
        );
    }
}

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

/// A benchmark, not a check: flow start to alert in Alertmanager, over 10 onsets.
///     cargo test --release --test export_alert_lab -- --ignored --nocapture
#[test]
#[ignore]
fn root_alert_latency_over_10_onsets() {
    if !guard::lab("the alert latency benchmark") || !have("prometheus-alertmanager") {
        return;
    }
    let mut rig = Rig::start();
    let mut secs: Vec<f64> = (0..10)
        .map(|i| {
            let (_, took, flow) = rig.onset();
            rig.lab.stop_flow(&flow);
            rig.wait_resolved();
            eprintln!("onset {i}: {:.2} s", took.as_secs_f64());
            took.as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    eprintln!(
        "alert latency over 10 onsets (hold 5 s, poll 250 ms): min {:.2} s, median {:.2} s, max {:.2} s",
        secs[0], secs[5], secs[9]
    );
}
