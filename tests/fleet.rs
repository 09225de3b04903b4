//! The fleet A/B of the guides (../shared/guides/003): four edge hosts on one bloated path each,
//! one BBR (the canary, labelled canary="true") and three CUBIC, each running `bbrtop export`;
//! each host also answers request/response traffic on a keep-alive connection beside its flow;
//! one real Prometheus scrapes them with the shipped rules. The fleet query gives p95 srtt per host, lower on the BBR host; every
//! query of the shipped Grafana dashboard returns data; and the canary alerts' comparisons of the
//! BBR canary with the CUBIC rest have both sides. Privileged.

mod support;

use bbrtop::lab::exchange::{Exchange, ExchangeConfig};
use bbrtop::lab::{Lab, LabConfig};
use std::collections::BTreeMap;
use std::time::Duration;
use support::servers::Prometheus;
use support::tools::have;
use support::{grafana, guard, poll_until};

/// Fields drop in order: the exchange stops before its lab goes.
struct Host {
    name: &'static str,
    port: u16,
    _export: support::Exporter,
    _exchange: Exchange,
    _lab: Lab,
}

/// A host with a bulk flow and request/response traffic beside it (the response times' panel).
fn edge(name: &'static str, cc: &str) -> Host {
    let mut lab = Lab::new(LabConfig::default()).unwrap();
    lab.start_flow(cc).unwrap();
    let ask = ExchangeConfig {
        interval: Duration::from_millis(200),
        think: Duration::ZERO,
        ..ExchangeConfig::default()
    };
    let exchange = lab.start_exchange(cc, ask).unwrap();
    let (export, port) = support::lab::exporter(&lab);
    Host { name, port, _export: export, _exchange: exchange, _lab: lab }
}

fn value(sample: &serde_json::Value) -> f64 {
    sample["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

#[test]
fn root_fleet_ab_shows_bbr_lower_p95_srtt_and_every_dashboard_query_has_data() {
    if !guard::lab("fleet test") || !have("prometheus") {
        return;
    }
    let hosts = [
        edge("edge-bbr", "bbr"),
        edge("edge-cubic-1", "cubic"),
        edge("edge-cubic-2", "cubic"),
        edge("edge-cubic-3", "cubic"),
    ];
    let root = env!("CARGO_MANIFEST_DIR");
    // The BBR host is the canary (labelled as dashboards/README.md says), the rest CUBIC.
    let targets: Vec<String> = hosts[1..].iter().map(|h| format!("'127.0.0.1:{}'", h.port)).collect();
    let config = format!(
        "global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}\n\
         rule_files: ['{root}/dashboards/prometheus/bbrtop-recording.rules.yml', '{root}/dashboards/prometheus/bbrtop-alerts.rules.yml']\n\
         scrape_configs:\n  - job_name: bbrtop\n    static_configs: [{{targets: ['127.0.0.1:{}'], labels: {{canary: 'true'}}}}, {{targets: [{}]}}]\n",
        hosts[0].port,
        targets.join(", ")
    );
    let prom = Prometheus::start_config(&config);
    let by_port: BTreeMap<String, &str> =
        hosts.iter().map(|h| (format!("127.0.0.1:{}", h.port), h.name)).collect();

    // Bounded: CUBIC needs a few seconds to build its standing queue; the rules evaluate each second.
    let per_host = poll_until(Duration::from_secs(60), || {
        let r = prom.query("instance:bbrtop_srtt_seconds:p95");
        let m: BTreeMap<&str, f64> = r
            .iter()
            .filter_map(|s| Some((*by_port.get(s["metric"]["instance"].as_str()?)?, value(s))))
            .collect();
        let cubic_built = m.iter().filter(|(h, v)| h.starts_with("edge-cubic") && **v > 0.1).count() == 3;
        (m.len() == 4 && cubic_built).then_some(m)
    })
    .expect("p95 srtt per host for all four hosts, with CUBIC's queues built");
    eprintln!("fleet A/B, p95 srtt per host (s): {per_host:?}");
    let bbr = per_host["edge-bbr"];
    for (h, v) in &per_host {
        if h.starts_with("edge-cubic") {
            assert!(bbr < *v, "BBR host p95 {bbr} s is not below {h}'s {v} s");
        }
    }

    // Every dashboard query returns data from this fleet.
    let dash = grafana::dashboard();
    let mut empty = Vec::new();
    for (title, expr) in grafana::exprs(&dash) {
        let q = grafana::substitute(&expr);
        let got = poll_until(Duration::from_secs(10), || Some(prom.query(&q)).filter(|r| !r.is_empty()));
        if got.is_none() {
            empty.push(format!("{title}: {q}"));
        }
    }
    assert!(empty.is_empty(), "dashboard queries with no data:\n{}", empty.join("\n"));

    // The canary alerts' comparisons have both sides in a fleet whose canary runs BBR and the
    // rest CUBIC: each joins the canary to the rest per peer group and AS, whatever the cc.
    for (canary, rest) in [
        (
            "canary_instance_peer_group_asn:bbrtop_retransmitted_bytes_per_sent_bytes:ratio_rate5m",
            "canary_peer_group_asn:bbrtop_retransmitted_bytes_per_sent_bytes:ratio_rate5m",
        ),
        (
            "canary_instance_peer_group_asn:bbrtop_response_delivery_seconds:p95_rate15m",
            "canary_peer_group_asn:bbrtop_response_delivery_seconds:p95_rate15m",
        ),
    ] {
        let q = format!("{canary} - on (peer_group, asn) group_left {rest}{{canary=\"\"}}");
        let got = poll_until(Duration::from_secs(10), || Some(prom.query(&q)).filter(|r| !r.is_empty()));
        assert!(got.is_some(), "the canary alert's comparison found nothing to compare: {q}");
    }
}
