//! Is BBR hurting? On real flows: the retransmit counters never fall while thousands of short
//! connections close under a scraping Prometheus; on the lab's shallow buffer, bbrtop's retransmit
//! counts agree with `ss -tin`, and the shipped rules' BBR retransmit alert goes active there but
//! not on the deep-buffer `ab` path. Privileged.

mod support;

use bbrtop::export::metrics::count_metric;
use bbrtop::lab::run::lab_config;
use bbrtop::lab::scenario::Scenario;
use bbrtop::lab::ss::SsSocket;
use bbrtop::lab::{Flow, Lab, LabConfig};
use bbrtop_collect::InetDiag;
use bbrtop_collect::netns::NetnsSpec;
use bbrtop_core::model::{Count, StateSet};
use bbrtop_core::seam::Now;
use bbrtop_engine::{Engine, EngineConfig};
use std::time::Duration;
use support::lab::ss_established;
use support::servers::Prometheus;
use support::tools::have;
use support::{guard, poll_until};

/// A Prometheus scraping these exporters every second, with the shipped rules.
fn prometheus(ports: &[u16]) -> Prometheus {
    let root = env!("CARGO_MANIFEST_DIR");
    let targets: Vec<String> = ports.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
    Prometheus::start_config(&format!(
        "global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}\n\
         rule_files: ['{root}/dashboards/prometheus/bbrtop-recording.rules.yml', '{root}/dashboards/prometheus/bbrtop-alerts.rules.yml']\n\
         scrape_configs:\n  - job_name: bbrtop\n    static_configs: [{{targets: [{}]}}]\n",
        targets.join(", ")
    ))
}

fn value(sample: &serde_json::Value) -> f64 {
    sample["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

/// 2,000 connections of 4 KB each open and close in the watched namespace while Prometheus
/// scrapes every second, beside a bulk flow. No counter ever falls (`resets()` is 0 for every
/// series of every counter), and the short connections' bytes are all counted: most lived and
/// died between two polls, so only the eBPF close records can count them.
#[test]
fn root_counters_never_fall_while_short_connections_close() {
    if !guard::lab("the counters test") || !guard::bpf("close records") || !have("prometheus") {
        return;
    }
    // No delay line: 2,000 connections one after another take seconds, not minutes.
    let mut lab = Lab::new(LabConfig { delay: None, ..LabConfig::default() }).unwrap();
    lab.start_flow("bbr").unwrap();
    let (_export, port) = support::lab::exporter(&lab);
    let prom = prometheus(&[port]);
    let scraped = poll_until(Duration::from_secs(20), || {
        Some(()).filter(|_| !prom.query("bbrtop_sent_bytes_total{cc=\"bbr\"}").is_empty())
    });
    assert!(scraped.is_some(), "no counters scraped");
    // Ten rounds half a second apart, so the closes spread over many scrapes.
    let mut done = 0;
    for _ in 0..10 {
        done += lab.short_flows("cubic", 200).unwrap();
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(done >= 1900, "only {done} of 2000 short connections completed");
    // Two more scrapes after the last close.
    std::thread::sleep(Duration::from_secs(3));

    // Every counter `/metrics` serves per cc and peer group.
    for c in Count::ALL {
        let name = format!("{}_total", count_metric(c).0);
        let series = prom.query(&format!("resets({name}[10m])"));
        assert!(!series.is_empty(), "{name}: no series");
        for s in &series {
            assert_eq!(value(s), 0.0, "{name} fell: {s}");
        }
    }
    let sent = prom.query("max_over_time(bbrtop_sent_bytes_total{cc=\"cubic\"}[10m])");
    let cubic_sent: f64 = sent.iter().map(value).sum();
    eprintln!("short connections: {done} completed, cubic bytes sent counted: {cubic_sent}");
    assert!(cubic_sent >= done as f64 * 4096.0, "{cubic_sent} bytes counted for {done} x 4096 sent");
}

fn of<'a>(socks: &'a [SsSocket], f: &Flow) -> &'a SsSocket {
    socks.iter().find(|s| s.local == Some(f.local) && s.peer == Some(f.peer)).expect("flow in ss")
}

/// Whether `ours` lies between the two `ss` readings (each absent while zero).
fn between<T: Into<u64> + Copy>(ours: Option<u64>, before: Option<T>, after: Option<T>) -> bool {
    let (lo, hi) = (before.map_or(0, Into::into), after.map_or(0, Into::into));
    ours.is_some_and(|v| lo <= v && v <= hi)
}

/// The shallow scenario's path with its BBR and CUBIC flows: bbrtop's retransmit counts sit
/// between two `ss -tin` readings, and once Prometheus has the counters, the BBR retransmit
/// alert is active (pending: its `for` is 15 minutes) on that host and not on the ab scenario's
/// deep-buffer host beside it.
#[test]
fn root_shallow_buffer_raises_the_retransmit_alert_and_ab_does_not() {
    if !guard::lab("the shallow-buffer test") || !have("prometheus") {
        return;
    }
    let mut shallow = Lab::new(lab_config(&Scenario::Shallow.plan())).unwrap();
    let mut ab = Lab::new(lab_config(&Scenario::Ab.plan())).unwrap();
    let flows: Vec<Flow> = ["bbr", "cubic"].iter().map(|cc| shallow.start_flow(cc).unwrap()).collect();
    for cc in ["bbr", "cubic"] {
        ab.start_flow(cc).unwrap();
    }
    let (_e1, shallow_port) = support::lab::exporter(&shallow);
    let (_e2, ab_port) = support::lab::exporter(&ab);
    let prom = prometheus(&[shallow_port, ab_port]);

    // Against ss while the alert's rates gather: in 8 reads some retransmits have happened.
    let ns = NetnsSpec(shallow.sender_netns().to_path_buf());
    let mut diag = InetDiag::open(Some(&ns), StateSet::default_filter()).unwrap();
    let mut engine = Engine::new(EngineConfig::default());
    let mut misses = Vec::new();
    for read in 0..8 {
        std::thread::sleep(Duration::from_secs(1));
        let before = ss_established(&shallow);
        let now = Now::system();
        diag.dump_into(&mut engine, now).unwrap();
        let snap = engine.tick(now);
        let after = ss_established(&shallow);
        for f in &flows {
            let v = snap.sockets.iter().find(|s| s.record.local == f.local && s.record.peer == f.peer);
            let i = &v.expect("flow in the snapshot").record.tcp_info;
            let (b, a) = (of(&before, f), of(&after, f));
            let checks = [
                ("retrans", between(i.total_retrans_segs().map(u64::from), b.retrans_total, a.retrans_total)),
                ("bytes_retrans", between(i.bytes_retrans(), b.bytes_retrans, a.bytes_retrans)),
                ("dsack_dups", between(i.dsack_dups().map(u64::from), b.dsack_dups, a.dsack_dups)),
            ];
            for (what, ok) in checks {
                if !ok {
                    misses.push(format!("read {read}, {}: {what} {i:?} not within ss {b:?} .. {a:?}", f.cc));
                }
            }
        }
    }
    assert!(misses.is_empty(), "{misses:#?}");
    let last = engine.tick(Now::system());
    let retransmitted = last.sockets.iter().filter(|s| s.record.tcp_info.bytes_retrans() > Some(0)).count();
    assert!(retransmitted > 0, "no flow retransmitted on a 7-packet buffer");

    let by_port = |s: &serde_json::Value| s["metric"]["instance"].as_str().map(str::to_owned);
    let alert = r#"ALERTS{alertname="BbrtopBbrRetransmitRegression"}"#;
    let active = poll_until(Duration::from_secs(30), || {
        let a = prom.query(alert);
        a.iter().any(|s| by_port(s) == Some(format!("127.0.0.1:{shallow_port}"))).then_some(a)
    });
    let ratios = prom.query("instance_cc:bbrtop_retransmitted_bytes_per_sent_bytes:ratio_rate5m");
    let shares = prom.query("instance_cc_peer_group:bbrtop_acked_bytes:share_rate5m");
    let show = |v: &[serde_json::Value]| -> Vec<String> {
        v.iter()
            .map(|s| format!("{} {} {:.4}", s["metric"]["instance"], s["metric"]["cc"], value(s)))
            .collect()
    };
    eprintln!(
        "shallow :{shallow_port}, ab :{ab_port}\nretransmit ratios: {:#?}\ngoodput shares: {:#?}",
        show(&ratios),
        show(&shares)
    );
    let active = active.expect("the BBR retransmit alert is active on the shallow-buffer host");
    assert_eq!(active[0]["metric"]["cc"], "bbr", "{active:?}");
    assert!(
        !active.iter().any(|s| by_port(s) == Some(format!("127.0.0.1:{ab_port}"))),
        "the alert is active on the deep-buffer host too: {active:?}"
    );
}
