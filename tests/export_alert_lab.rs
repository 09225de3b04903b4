//! The whole alert path on real kernels and servers: a CUBIC flow through a deep tbf buffer in
//! two network namespaces, `bbrtop export --netns` watching the sender, and a real Alertmanager.
//! Privileged (CAP_NET_ADMIN, CAP_SYS_ADMIN).
//!
//! The namespaces are set up here with `ip` and `tc` until the test moves onto `bbrtop::lab`.

#[path = "export/common.rs"]
mod common;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_bbrtop");

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("ip");
    assert!(o.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn privileged() -> bool {
    use bbrtop::caps::{Cap, CapSet, names};
    let missing = CapSet::effective().missing(&[Cap::NetAdmin, Cap::SysAdmin]);
    if missing.is_empty() {
        return true;
    }
    let msg = format!("the alert lab test needs {}", names(&missing));
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{msg}");
    }
    eprintln!("SKIP: {msg}");
    false
}

/// Sender and receiver namespaces joined by a veth pair, the sender's egress shaped by tbf with
/// a deep buffer (20 Mbit/s, 4 MB: up to 1.6 s of queue). Removed on drop.
struct Link {
    sender: String,
    receiver: String,
}

impl Link {
    fn new() -> Link {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let id =
            format!("{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let l = Link { sender: format!("bbrtop-ex{id}-s"), receiver: format!("bbrtop-ex{id}-r") };
        for n in [&l.sender, &l.receiver] {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        ip(&[
            "-n",
            &l.sender,
            "link",
            "add",
            "exs",
            "type",
            "veth",
            "peer",
            "name",
            "exr",
            "netns",
            &l.receiver,
        ]);
        ip(&["-n", &l.sender, "addr", "add", "10.251.0.1/24", "dev", "exs"]);
        ip(&["-n", &l.receiver, "addr", "add", "10.251.0.2/24", "dev", "exr"]);
        ip(&["-n", &l.sender, "link", "set", "exs", "up"]);
        ip(&["-n", &l.receiver, "link", "set", "exr", "up"]);
        let tc = Command::new("tc")
            .args(["-n", &l.sender, "qdisc", "add", "dev", "exs", "root", "tbf"])
            .args(["rate", "20mbit", "burst", "32kb", "limit", "4mb"])
            .output()
            .unwrap();
        assert!(tc.status.success(), "tc: {}", String::from_utf8_lossy(&tc.stderr));
        l
    }

    fn exec(&self, ns: &str, args: &[&str]) -> Proc {
        Proc(
            Command::new("ip")
                .args(["netns", "exec", ns])
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        for n in [&self.sender, &self.receiver] {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// Alertmanager, the link, an iperf3 server in the receiver and `bbrtop export` on the sender.
struct Rig {
    am: Alertmanager,
    port: u16,
    _exporter: Proc,
    _server: Proc,
    link: Link,
}

impl Rig {
    fn start() -> Rig {
        let am = Alertmanager::start();
        let link = Link::new();
        let server = link.exec(&link.receiver, &["iperf3", "-s", "-p", "5201"]);
        let port = free_port();
        let exporter = Proc(
            Command::new(BIN)
                .args([
                    "export",
                    "--netns",
                    &link.sender,
                    "--web.listen-address",
                    &format!("127.0.0.1:{port}"),
                ])
                .args(["--interval", "250ms", "--cc", "cubic", "--alertmanager.url", &am.url()])
                .args(["--alertmanager.resend-interval", "5s"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let ready =
            poll_until(Duration::from_secs(10), || get(port, "/-/ready", None).ok().filter(|r| r.0 == 200));
        assert!(ready.is_some(), "bbrtop export never became ready");
        // The iperf3 server must be listening before a client starts.
        let listening = poll_until(Duration::from_secs(10), || {
            let o =
                Command::new("ss").args(["-N", &link.receiver, "-ltn", "sport", "= :5201"]).output().ok()?;
            String::from_utf8_lossy(&o.stdout).contains("5201").then_some(())
        });
        assert!(listening.is_some(), "iperf3 server did not listen");
        Rig { am, port, _exporter: exporter, _server: server, link }
    }

    /// Starts a CUBIC flow; returns the first alert Alertmanager lists, how long after the start
    /// it appeared, and the flow (stop it by dropping).
    fn onset(&self) -> (serde_json::Value, Duration, Proc) {
        let t0 = Instant::now();
        let client = self.link.exec(
            &self.link.sender,
            &["iperf3", "-c", "10.251.0.2", "-p", "5201", "-t", "60", "-C", "cubic"],
        );
        let alert = poll_until(Duration::from_secs(15), || self.am.active_rtt_alerts().into_iter().next());
        let took = t0.elapsed();
        let alert = alert.expect("no TcpRttInflation alert reached Alertmanager within 15 s");
        (alert, took, client)
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
fn cubic_through_a_deep_buffer_alerts_in_alertmanager_and_resolves() {
    if !privileged() || !have("prometheus-alertmanager") || !have("iperf3") {
        return;
    }
    let rig = Rig::start();
    let (alert, took, client) = rig.onset();
    eprintln!("alert reached Alertmanager {:.2} s after the flow started", took.as_secs_f64());
    let l = &alert["labels"];
    assert_eq!(l["cc"], "cubic");
    assert_eq!(l["peer"], "10.251.0.2:5201");
    assert_eq!(l["peer_group"], "other");
    assert!(l["instance"].as_str().is_some_and(|i| i.ends_with(&format!(":{}", rig.port))), "{l}");
    let ratio: f64 = alert["annotations"]["ratio"].as_str().and_then(|r| r.parse().ok()).unwrap_or(0.0);
    assert!(ratio >= 1.5, "{alert}");
    // The rule holds for 5 s, so the alert cannot be earlier; the issue's bound is 7 s.
    assert!(took >= Duration::from_secs(5), "alert after {took:?}: before the 5 s hold");
    assert!(took <= Duration::from_secs(7), "alert after {took:?}: later than 7 s");

    drop(client);
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
fn alert_latency_over_10_onsets() {
    if !privileged() || !have("prometheus-alertmanager") || !have("iperf3") {
        return;
    }
    let rig = Rig::start();
    let mut secs: Vec<f64> = (0..10)
        .map(|i| {
            let (_, took, client) = rig.onset();
            drop(client);
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
