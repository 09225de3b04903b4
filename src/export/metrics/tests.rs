use super::*;
use bbrtop_core::model::SocketRecord;
use bbrtop_core::seam::Now;
use bbrtop_core::seam::feed_dump;
use bbrtop_core::snapshot::status::{Cause, CollectorStatus, Health, Reason};
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};

pub(super) fn rec(cookie: u64, cc: &str, peer: &str, srtt_us: u32, min_rtt_us: u32) -> SocketRecord {
    record(cookie, cc)
        .peer(peer)
        .srtt_us(srtt_us)
        .min_rtt_us(min_rtt_us)
        .delivery_rate_bytes_per_sec(2_000_000)
        .last_ack_recv_ms(0)
        .sending()
        .bbr(5_000_000, min_rtt_us, 2.885, 2.885)
        .build()
}

pub(super) fn snapshot(recs: Vec<SocketRecord>) -> Arc<Snapshot> {
    let mut e = Engine::new(EngineConfig::default());
    let now = Now::system();
    feed_dump(&mut e, Dump { sockets: recs, ..Dump::default() }, now);
    e.tick(now)
}

/// A scrape of `snap` with nothing optional.
pub(super) fn bare(snap: Arc<Snapshot>) -> Scrape {
    Scrape {
        snap,
        groups: Arc::default(),
        top_k: 0,
        by_pod_namespace: false,
        posts: vec![],
        process: None,
        hindsight_memory_bytes: None,
        hindsight_spool_bytes: None,
        otlp: None,
        experiment: None,
        response_classic: false,
    }
}

fn otlp_counts() -> OtlpCounts {
    OtlpCounts {
        sent: 40,
        sent_bytes: 9_000,
        dropped: vec![("queue_full", 2), ("export_failed", 0)],
        failed_requests: 1,
        queued: 5,
    }
}

fn scrape(snap: Arc<Snapshot>, top_k: usize, groups: &str) -> String {
    render_openmetrics(scrape_of(snap, top_k, groups))
}

/// A scrape of `snap` with every process-wide figure given (an Alertmanager post, the process,
/// hindsight, OTLP), no experiment.
fn scrape_of(snap: Arc<Snapshot>, top_k: usize, groups: &str) -> Scrape {
    let groups =
        Arc::new(if groups.is_empty() { PeerGroups::default() } else { PeerGroups::parse(groups).unwrap() });
    Scrape {
        snap,
        groups,
        top_k,
        by_pod_namespace: false,
        posts: vec![(("http://am:9093".into(), "success"), 3)],
        process: Some(crate::export::process::Process {
            cpu_seconds: 1.5,
            resident_memory_bytes: 15_000_000,
            virtual_memory_bytes: 900_000_000,
            open_fds: 12,
            max_fds: Some(1024),
            start_time_seconds: 1_763_900_000.0,
        }),
        hindsight_memory_bytes: Some(48_000_000),
        hindsight_spool_bytes: Some(90_000_000),
        otlp: Some(otlp_counts()),
        experiment: None,
        response_classic: false,
    }
}

/// A classic histogram's buckets in a text scrape: (le, cumulative count), in order, for the
/// series of `family` whose labels after `le` are `labels`.
fn buckets(text: &str, family: &str, labels: &str) -> Vec<(f64, f64)> {
    let prefix = format!("{family}_bucket{{le=\"");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|l| {
            let (le, rest) = l.split_once('"')?;
            let value = rest.strip_prefix(&format!(",{labels}}} "))?;
            Some((le.parse().ok()?, value.parse().ok()?))
        })
        .collect()
}

/// The value of the one sample whose line starts with `prefix` (name and labels).
pub(super) fn value(text: &str, prefix: &str) -> Option<f64> {
    let mut it = text.lines().filter(|l| l.starts_with(prefix));
    let line = it.next()?;
    assert!(it.next().is_none(), "{prefix} matches more than one line");
    line.rsplit(' ').next()?.parse().ok()
}

#[test]
fn aggregates_by_cc_state_phase_and_peer_group() {
    let snap = snapshot(vec![
        rec(1, "bbr", "10.1.0.2:40000", 30_000, 10_000),
        rec(2, "bbr", "192.0.2.9:40001", 12_000, 10_000),
        rec(3, "cubic", "10.1.0.3:40002", 80_000, 10_000),
    ]);
    let om = scrape(snap, 0, "groups: {edge: [10.1.0.0/16]}");
    assert!(om.ends_with("# EOF\n"));
    assert_eq!(value(&om, r#"bbrtop_sockets{cc="bbr",state="established",phase="startup"}"#), Some(2.0));
    assert_eq!(value(&om, r#"bbrtop_sockets{cc="cubic",state="established",phase="none"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_srtt_seconds_gcount{cc="bbr",peer_group="edge"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_srtt_seconds_gcount{cc="bbr",peer_group="other"}"#), Some(1.0));
    // 30 ms: in the bucket whose bounds are 2^(-41/8) = 28.65 ms and 2^(-40/8) = 31.25 ms.
    let edge = buckets(&om, "bbrtop_srtt_seconds", r#"cc="bbr",peer_group="edge""#);
    let first = edge.iter().position(|(_, n)| *n == 1.0).expect("a bucket holds it");
    assert_eq!(edge[first].0, 0.03125, "{edge:?}");
    assert!((edge[first - 1].0 - 0.028656).abs() < 1e-6, "{edge:?}");
    assert_eq!(edge.len(), 146, "145 bounds and +Inf");
    assert_eq!(value(&om, r#"bbrtop_rtt_inflation_ratio_gsum{cc="cubic",peer_group="edge"}"#), Some(8.0));
    // Only BBR sockets have a BBR bandwidth.
    assert!(value(&om, r#"bbrtop_bbr_bandwidth_bytes_per_second_gcount{cc="cubic""#).is_none());
    assert_eq!(
        value(&om, r#"bbrtop_bbr_bandwidth_bytes_per_second_gsum{cc="bbr",peer_group="edge"}"#),
        Some(5e6)
    );
    // The sockets open now: a gaugehistogram in OpenMetrics, a histogram in text 0.0.4.
    assert!(om.contains("# TYPE bbrtop_srtt_seconds gaugehistogram\n"), "{om}");
    assert!(!om.contains("bbrtop_srtt_seconds_count"), "{om}");
    let text = to_text_004(&om);
    assert!(text.contains("# TYPE bbrtop_srtt_seconds histogram\n"), "{text}");
    assert_eq!(value(&text, r#"bbrtop_srtt_seconds_count{cc="bbr",peer_group="edge"}"#), Some(1.0));
    assert_eq!(value(&text, r#"bbrtop_rtt_inflation_ratio_sum{cc="cubic",peer_group="edge"}"#), Some(8.0));
    assert!(!text.contains("gaugehistogram") && !text.contains("_gcount"), "{text}");
    assert_eq!(value(&om, r#"bbrtop_sockets_inflated{cc="bbr"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_sockets_inflated{cc="cubic"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_alerts_firing{cc="bbr"}"#), Some(0.0));
    assert_eq!(value(&om, r#"bbrtop_inflation_onsets_total{cc="cubic"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_collector_up{collector="netlink"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_collector_enabled{collector="netlink"}"#), Some(1.0));
    assert_eq!(value(&om, "process_cpu_seconds_total{"), Some(1.5));
    assert_eq!(value(&om, "process_resident_memory_bytes{"), Some(15e6));
    assert_eq!(value(&om, "process_max_fds{"), Some(1024.0));
    assert_eq!(value(&om, "process_start_time_seconds{"), Some(1_763_900_000.0));
    assert_eq!(value(&om, r#"bbrtop_collector_polls_total{collector="netlink"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_netlink_tcp_info_size_mismatch_total{kind="short"}"#), Some(0.0));
    assert_eq!(
        value(&om, r#"bbrtop_alertmanager_posts_total{alertmanager="http://am:9093",result="success"}"#),
        Some(3.0)
    );
    assert!(om.contains("bbrtop_build_info{version=\""));
    assert!(om.contains(",rustc=\"1."), "the compiler's version: {om}");
    assert!(!om.contains("bbrtop_socket_srtt_seconds"), "per-socket series are opt-in");
    assert!(!om.contains("bbrtop_closed_flows"), "closed flows only with eBPF");
}

#[test]
fn top_k_picks_the_most_inflated_and_closed_sockets_vanish() {
    let recs: Vec<_> =
        (1..=5).map(|i| rec(i, "cubic", "10.1.0.2:40000", 10_000 * i as u32, 10_000)).collect();
    let om = scrape(snapshot(recs), 2, "");
    let ratios: Vec<&str> =
        om.lines().filter(|l| l.starts_with("bbrtop_socket_rtt_inflation_ratio{")).collect();
    assert_eq!(ratios.len(), 2, "{ratios:?}");
    assert!(ratios[0].starts_with(r#"bbrtop_socket_rtt_inflation_ratio{cookie="5",local="10.0.0.1:5201",peer="10.1.0.2:40000",cc="cubic",peer_group="other"} 5"#));
    assert!(ratios[1].contains(r#"cookie="4""#));
    // The next scrape of a snapshot without those sockets has no series for them.
    let om = scrape(snapshot(vec![rec(1, "cubic", "10.1.0.2:40000", 10_000, 10_000)]), 2, "");
    assert!(!om.contains(r#"cookie="5""#));
    assert!(om.contains(r#"cookie="1""#));
}

#[test]
fn text_004_names_counters_with_total_and_drops_eof() {
    let om = "# HELP x_polls Polls.\n# TYPE x_polls counter\nx_polls_total 1\n# HELP g A gauge.\n# TYPE g gauge\ng 2\n# EOF\n";
    assert_eq!(
        to_text_004(om),
        "# HELP x_polls_total Polls.\n# TYPE x_polls_total counter\nx_polls_total 1\n# HELP g A gauge.\n# TYPE g gauge\ng 2\n"
    );
}

#[test]
fn histogram_buckets_are_inclusive() {
    let mut h = Hist::new(&[1.0, 2.0]);
    for v in [0.5, 1.0, 1.5, 3.0, f64::NAN] {
        h.observe(v);
    }
    assert_eq!(h.buckets(), vec![(1.0, 2), (2.0, 1), (f64::INFINITY, 1)]);
    assert_eq!((h.count(), h.sum()), (4, 6.0));
}

#[test]
fn a_degraded_collector_exports_its_reason() {
    let mut snap = (*snapshot(vec![])).clone();
    snap.collectors.retain(|c| c.name != "bpf");
    let why = Reason::new(Cause::BbrStateOff, "BBR state off: kernel BTF has no struct bbr");
    snap.collectors.push(CollectorStatus {
        name: "bpf",
        health: Health::Degraded(why),
        last_success_at: Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000)),
        undecodable_events_total: Some(3),
        recursion_misses_total: [("tcp_destroy_sock", 7), ("tcp_probe", 0)].into_iter().collect(),
        ..Default::default()
    });
    snap.collectors.push(CollectorStatus {
        walk_records_dropped_total: Some(2),
        walk_records_refilled_total: Some(5),
        ..CollectorStatus::walk()
    });
    let om = scrape(Arc::new(snap), 0, "");
    // Counts go in counters, the poller's progress in a timestamp.
    assert_eq!(value(&om, "bbrtop_bpf_undecodable_events_total"), Some(3.0));
    assert_eq!(value(&om, "bbrtop_walk_records_dropped_total"), Some(2.0));
    assert_eq!(value(&om, "bbrtop_walk_records_refilled_total"), Some(5.0));
    assert_eq!(value(&om, r#"bbrtop_bpf_recursion_misses_total{program="tcp_destroy_sock"}"#), Some(7.0));
    assert_eq!(
        value(&om, r#"bbrtop_collector_last_success_timestamp_seconds{collector="bpf"}"#),
        Some(1_700_000_000.0)
    );
    // The label is the cause from a fixed set (the human line is in the snapshot and the TUI).
    assert_eq!(value(&om, r#"bbrtop_collector_degraded{collector="bpf",reason="bbr_state_off"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_collector_up{collector="bpf"}"#), Some(1.0));
    // A healthy collector has no series.
    assert!(!om.contains(r#"bbrtop_collector_degraded{collector="netlink""#), "{om}");

    // Off by design (not allowed here): not enabled, so no `up` to page on, and the reason.
    let mut snap = (*snapshot(vec![])).clone();
    let off = Reason::new(Cause::MissingCapabilities, "eBPF off: CAP_BPF missing");
    snap.collectors.retain(|c| c.name != "bpf");
    snap.collectors.push(CollectorStatus {
        name: "bpf",
        health: Health::Off(Some(off)),
        ..Default::default()
    });
    let om = scrape(Arc::new(snap), 0, "");
    assert_eq!(value(&om, r#"bbrtop_collector_enabled{collector="bpf"}"#), Some(0.0));
    assert_eq!(value(&om, r#"bbrtop_collector_up{collector="bpf"}"#), None, "{om}");
    assert_eq!(
        value(&om, r#"bbrtop_collector_degraded{collector="bpf",reason="missing_capabilities"}"#),
        Some(1.0)
    );
}

/// Each eBPF feature's state, as Debian's 6.1 gives it: responses through the function's entry
/// (on), BBR's state waiting for tcp_bbr (off, its cause the label).
#[test]
fn each_bpf_feature_is_a_series_and_an_off_one_says_why() {
    use bbrtop_core::seam::{Feature, FeatureState};
    let mut snap = (*snapshot(vec![])).clone();
    snap.collectors.retain(|c| c.name != "bpf");
    let bbr = Reason::new(Cause::BbrStateOff, "BBR state off: struct bbr is in no kernel BTF");
    let mut features: Vec<FeatureState> = Feature::COLLECTOR.iter().map(|f| FeatureState::on(*f)).collect();
    features[1] = FeatureState::off(Feature::BbrState, bbr.clone());
    snap.collectors.push(CollectorStatus {
        name: "bpf",
        health: Health::Degraded(bbr),
        features,
        ..Default::default()
    });
    let om = scrape(Arc::new(snap), 0, "");
    assert_eq!(value(&om, r#"bbrtop_bpf_feature_enabled{feature="responses"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_bpf_feature_enabled{feature="bbr_state"}"#), Some(0.0));
    assert_eq!(
        value(&om, r#"bbrtop_bpf_feature_disabled{feature="bbr_state",reason="bbr_state_off"}"#),
        Some(1.0)
    );
    assert!(!om.contains(r#"bbrtop_bpf_feature_disabled{feature="alert""#), "{om}");
    let families = om.lines().filter(|l| l.starts_with("# TYPE bbrtop_bpf_feature_")).count();
    assert_eq!(families, 2, "{om}");
}

/// ECN per cc, through the engine: sockets that negotiated it, and the CE-marked fraction of
/// what the cc's sockets delivered; a cc that delivered nothing has no ratio.
#[test]
fn ecn_sockets_and_ce_marked_ratio_per_cc() {
    let ecn = |cookie, cc: &str, delivered, ce| {
        record(cookie, cc).options(8 | 16).delivered_segs(delivered).delivered_ce_segs(ce).build()
    };
    let plain = record(3, "bbr").options(1 | 2).delivered_segs(200).build();
    let snap = snapshot(vec![ecn(1, "bbr", 800, 50), plain, ecn(4, "dctcp", 0, 0)]);
    let om = scrape(snap, 0, "");
    assert_eq!(value(&om, r#"bbrtop_ecn_sockets{cc="bbr"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_ecn_sockets{cc="dctcp"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_ce_marked_ratio{cc="bbr"}"#), Some(0.05));
    assert_eq!(value(&om, r#"bbrtop_ce_marked_ratio{cc="dctcp"}"#), None);
}

/// `--metrics.by-pod-namespace`: pods' sockets by namespace and cc; the node's own are left out.
#[test]
fn aggregates_by_pod_namespace_are_opt_in() {
    use bbrtop_core::model::{Origin, Pod};
    let in_pod = |cookie, cc: &str, ns: &str, srtt| {
        let mut r = rec(cookie, cc, "10.0.0.2:443", srtt, 10_000);
        let pod = Pod {
            uid: format!("uid-{cookie}"),
            namespace: Some(ns.into()),
            name: Some("p".into()),
            ..Pod::default()
        };
        r.origin = Some(Arc::new(Origin { pod: Some(pod), ..Origin::default() }));
        r
    };
    let snap = snapshot(vec![
        in_pod(1, "bbr", "shop", 12_000),
        in_pod(2, "bbr", "shop", 30_000),
        in_pod(3, "cubic", "kube-system", 11_000),
        rec(4, "bbr", "10.0.0.2:443", 50_000, 10_000),
    ]);
    assert!(!scrape(Arc::clone(&snap), 0, "").contains("bbrtop_pod_namespace"), "off by default");
    let text = render_openmetrics(Scrape { by_pod_namespace: true, ..bare(snap) });
    let v = |p: &str| value(&text, p);
    assert_eq!(v(r#"bbrtop_pod_namespace_sockets{pod_namespace="shop",cc="bbr"}"#), Some(2.0));
    assert_eq!(v(r#"bbrtop_pod_namespace_sockets{pod_namespace="kube-system",cc="cubic"}"#), Some(1.0));
    assert_eq!(v(r#"bbrtop_pod_namespace_srtt_p95_seconds{pod_namespace="shop",cc="bbr"}"#), Some(0.03));
    assert_eq!(
        v(r#"bbrtop_pod_namespace_delivery_rate_bytes_per_second{pod_namespace="shop",cc="bbr"}"#),
        Some(4e6)
    );
    assert_eq!(v(r#"bbrtop_pod_namespace_sockets_inflated{pod_namespace="shop",cc="bbr"}"#), Some(1.0));
    assert_eq!(
        text.matches("bbrtop_pod_namespace_sockets{").count(),
        2,
        "no series for the node's own socket"
    );
}

/// The counters come from the engine's totals, per cc and the engine's peer groups, and keep a
/// closed socket's counts.
#[test]
fn counters_per_cc_and_peer_group_outlive_their_sockets() {
    let groups = "groups: {edge: [10.1.0.0/16]}";
    let cfg =
        EngineConfig { groups: Arc::new(PeerGroups::parse(groups).unwrap()), ..EngineConfig::default() };
    let mut e = Engine::new(cfg);
    let sent = |cookie: u64, cc: &str, peer: &str, bytes: u64, retrans: u64| {
        record(cookie, cc).peer(peer).bytes_sent(bytes).bytes_retrans(retrans).total_retrans_segs(1).build()
    };
    let t0 = Now::system();
    let first = vec![sent(1, "bbr", "10.1.0.2:1", 10_000, 100), sent(2, "cubic", "192.0.2.1:1", 5000, 0)];
    feed_dump(&mut e, Dump { sockets: first, ..Dump::default() }, t0);
    e.tick(t0);
    let t1 = t0.after(std::time::Duration::from_secs(1));
    // 1 grew and 2 closed.
    feed_dump(
        &mut e,
        Dump { sockets: vec![sent(1, "bbr", "10.1.0.2:1", 15_000, 300)], ..Dump::default() },
        t1,
    );
    let om = scrape(e.tick(t1), 0, groups);
    assert_eq!(value(&om, r#"bbrtop_sent_bytes_total{cc="bbr",peer_group="edge"}"#), Some(15_000.0));
    assert_eq!(value(&om, r#"bbrtop_retransmitted_bytes_total{cc="bbr",peer_group="edge"}"#), Some(300.0));
    assert_eq!(
        value(&om, r#"bbrtop_sent_bytes_total{cc="cubic",peer_group="other"}"#),
        Some(5000.0),
        "closed"
    );
    assert_eq!(
        value(&om, r#"bbrtop_retransmitted_segments_total{cc="cubic",peer_group="other"}"#),
        Some(1.0)
    );
    assert!(om.contains("# TYPE bbrtop_rto_timeouts counter"), "{om}");
    let text = to_text_004(&om);
    assert!(text.contains("# TYPE bbrtop_sent_bytes_total counter"), "{text}");
}

/// The live distributions are over the senders (loopback left out unless the rule counts it),
/// `bbrtop_sockets_by_role` counts each role, and `bbrtop_sockets` every socket.
#[test]
fn distributions_count_the_senders_and_roles_count_every_socket() {
    let receiver = |cookie, peer: &str| {
        record(cookie, "cubic").peer(peer).srtt_us(900_000).min_rtt_us(10_000).last_data_recv_ms(10).build()
    };
    let idle = record(3, "cubic")
        .peer("10.1.0.4:1")
        .srtt_us(800_000)
        .min_rtt_us(10_000)
        .last_data_recv_ms(60_000)
        .build();
    let snap = snapshot(vec![
        rec(1, "cubic", "10.1.0.2:40000", 30_000, 10_000),
        receiver(2, "10.1.0.3:1"),
        idle,
        rec(4, "cubic", "127.0.0.1:40003", 700_000, 10_000),
    ]);
    let om = scrape(Arc::clone(&snap), 0, "");
    let v = |p: &str| value(&om, p);
    assert_eq!(v(r#"bbrtop_sockets{cc="cubic",state="established",phase="none"}"#), Some(4.0));
    assert_eq!(v(r#"bbrtop_srtt_seconds_gcount{cc="cubic",peer_group="other"}"#), Some(1.0));
    assert_eq!(v(r#"bbrtop_srtt_seconds_gsum{cc="cubic",peer_group="other"}"#), Some(0.03));
    assert_eq!(
        v(r#"bbrtop_delivery_rate_bytes_per_second_gcount{cc="cubic",peer_group="other"}"#),
        Some(1.0)
    );
    for (role, n) in [("sender", 1.0), ("receiver", 1.0), ("idle", 1.0), ("loopback", 1.0)] {
        let series = format!(r#"bbrtop_sockets_by_role{{cc="cubic",peer_group="other",role="{role}"}}"#);
        assert_eq!(v(&series), Some(n), "{role}: {om}");
    }

    // With the rule's --loopback the loopback sender counts as any other.
    let mut counted = (*snap).clone();
    counted.rule.loopback = true;
    let om = scrape(Arc::new(counted), 0, "");
    assert_eq!(value(&om, r#"bbrtop_srtt_seconds_gcount{cc="cubic",peer_group="other"}"#), Some(2.0));
    assert_eq!(
        value(&om, r#"bbrtop_sockets_by_role{cc="cubic",peer_group="other",role="sender"}"#),
        Some(2.0)
    );
    assert_eq!(
        value(&om, r#"bbrtop_sockets_by_role{cc="cubic",peer_group="other",role="loopback"}"#),
        Some(0.0)
    );
}

/// A BBR socket whose phase nobody knows says `unknown`; `none` is for other algorithms.
#[test]
fn a_bbr_socket_of_unknown_phase_is_labelled_unknown() {
    let odd_gains =
        record(2, "bbr").srtt_us(12_000).min_rtt_us(10_000).bbr(5_000_000, 10_000, 1.0, 1.5).build();
    let snap = snapshot(vec![
        rec(1, "bbr", "10.1.0.2:1", 12_000, 10_000),
        odd_gains,
        rec(3, "cubic", "10.1.0.2:2", 12_000, 10_000),
    ]);
    let om = scrape(snap, 0, "");
    assert_eq!(value(&om, r#"bbrtop_sockets{cc="bbr",state="established",phase="startup"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_sockets{cc="bbr",state="established",phase="unknown"}"#), Some(1.0));
    assert_eq!(value(&om, r#"bbrtop_sockets{cc="cubic",state="established",phase="none"}"#), Some(1.0));
    assert!(!om.contains(r#"cc="bbr",state="established",phase="none""#), "{om}");
}

/// The goodput of the inflated senders, per cc and peer group: what the page weighs.
#[test]
fn inflated_goodput_sums_the_inflated_senders() {
    let groups = "groups: {edge: [10.1.0.0/16]}";
    let mut e = Engine::new(EngineConfig::default());
    let at = |acked: u64| {
        vec![
            // Inflated (30 ms over 10 ms), and a sender once it acks.
            record(1, "cubic")
                .peer("10.1.0.2:1")
                .srtt_us(30_000)
                .min_rtt_us(10_000)
                .last_ack_recv_ms(0)
                .sending()
                .bytes_acked(acked)
                .build(),
            // Not inflated, sending as much.
            record(2, "cubic")
                .peer("10.1.0.3:1")
                .srtt_us(10_500)
                .min_rtt_us(10_000)
                .last_ack_recv_ms(0)
                .sending()
                .bytes_acked(acked)
                .build(),
            // Inflated, to another group.
            record(3, "cubic")
                .peer("192.0.2.1:1")
                .srtt_us(40_000)
                .min_rtt_us(10_000)
                .last_ack_recv_ms(0)
                .sending()
                .bytes_acked(acked / 2)
                .build(),
        ]
    };
    let t0 = Now::system();
    feed_dump(&mut e, Dump { sockets: at(1_000_000), ..Dump::default() }, t0);
    e.tick(t0);
    let t1 = t0.after(std::time::Duration::from_secs(1));
    feed_dump(&mut e, Dump { sockets: at(3_000_000), ..Dump::default() }, t1);
    let om = scrape(e.tick(t1), 0, groups);
    let v = |p: &str| value(&om, p);
    assert_eq!(
        v(r#"bbrtop_inflated_goodput_bytes_per_second{cc="cubic",peer_group="edge"}"#),
        Some(2e6),
        "{om}"
    );
    assert_eq!(v(r#"bbrtop_inflated_goodput_bytes_per_second{cc="cubic",peer_group="other"}"#), Some(1e6));
    assert_eq!(v(r#"bbrtop_sockets_inflated{cc="cubic"}"#), Some(2.0));
}

/// The protobuf scrape: every family of the text, counters named with `_total`, and the live
/// histograms typed GAUGE_HISTOGRAM with native buckets (schema 4) beside the classic ones.
#[test]
fn protobuf_carries_every_family_and_native_buckets() {
    use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::{MetricFamily, MetricType};
    use prost::Message;
    let snap = snapshot(vec![
        rec(1, "bbr", "10.1.0.2:40000", 30_000, 10_000),
        rec(2, "cubic", "10.1.0.3:1", 80_000, 10_000),
    ]);
    let groups = "groups: {edge: [10.1.0.0/16]}";
    let om = scrape(Arc::clone(&snap), 0, groups);
    let body = render_protobuf(Scrape {
        snap,
        groups: Arc::new(PeerGroups::parse(groups).unwrap()),
        top_k: 0,
        by_pod_namespace: false,
        posts: vec![(("http://am:9093".into(), "success"), 3)],
        process: None,
        hindsight_memory_bytes: Some(48_000_000),
        hindsight_spool_bytes: Some(90_000_000),
        otlp: Some(otlp_counts()),
        experiment: None,
        response_classic: false,
    });
    let mut rest = &body[..];
    let mut families = Vec::new();
    while !rest.is_empty() {
        families.push(MetricFamily::decode_length_delimited(&mut rest).expect("a delimited MetricFamily"));
    }
    // The same families as the text (less the process's, left out here), by their series names.
    let text_families: Vec<String> = to_text_004(&om)
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .filter(|n| !n.starts_with("process_"))
        .map(String::from)
        .collect();
    let names: Vec<String> = families.iter().map(|f| f.name.clone()).collect();
    assert_eq!(names, text_families);
    let family = |name: &str| families.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!(family("bbrtop_inflation_onsets_total").r#type, MetricType::Counter as i32);
    let srtt = family("bbrtop_srtt_seconds");
    assert_eq!(srtt.r#type, MetricType::GaugeHistogram as i32);
    let bbr = srtt.metric.iter().find(|m| m.label.iter().any(|l| l.value == "bbr")).expect("bbr's");
    let h = bbr.histogram.as_ref().expect("a histogram");
    assert_eq!((h.sample_count, h.sample_sum), (1, 0.03));
    assert_eq!(h.schema, 4);
    assert!(h.zero_threshold > 0.0, "a zero threshold marks it native");
    // 30 ms lies in (2^(-81/16), 2^(-80/16)] = (29.9 ms, 31.25 ms]: one bucket, at -80.
    assert_eq!(h.positive_span.iter().map(|s| (s.offset, s.length)).collect::<Vec<_>>(), [(-80, 1)]);
    assert_eq!(h.positive_delta, [1]);
    assert_eq!(h.bucket.len(), 146, "the classic buckets too");
    assert_eq!(h.bucket.last().map(|b| (b.upper_bound, b.cumulative_count)), Some((f64::INFINITY, 1)));
    // Closed flows' histograms (none here) and the rest keep their types.
    assert_eq!(family("bbrtop_sockets").r#type, MetricType::Gauge as i32);
}

/// Hindsight's memory and spool are gauges of their own while hindsight is on, and absent when
/// it is off.
#[test]
fn hindsight_memory_is_served_while_hindsight_is_on() {
    let snap = snapshot(vec![rec(1, "bbr", "10.1.0.2:40000", 30_000, 10_000)]);
    let on = scrape(Arc::clone(&snap), 0, "");
    assert_eq!(value(&on, "bbrtop_hindsight_memory_bytes"), Some(48_000_000.0));
    assert_eq!(value(&on, "bbrtop_hindsight_spool_bytes"), Some(90_000_000.0));
    let off = render_openmetrics(bare(snap));
    assert!(!off.contains("bbrtop_hindsight_"), "{off}");
    assert!(!off.contains("bbrtop_otlp_"), "{off}");
}

/// The OTLP shipper's counts, while it runs.
#[test]
fn otlp_counts_are_served_while_the_shipper_runs() {
    let on = scrape(snapshot(vec![]), 0, "");
    assert_eq!(value(&on, "bbrtop_otlp_log_records_sent_total"), Some(40.0));
    assert!(on.contains("bbrtop_otlp_log_records_dropped_total{reason=\"queue_full\"} 2\n"), "{on}");
    assert!(on.contains("bbrtop_otlp_log_records_dropped_total{reason=\"export_failed\"} 0\n"), "{on}");
    assert_eq!(value(&on, "bbrtop_otlp_failed_requests_total"), Some(1.0));
    assert_eq!(value(&on, "bbrtop_otlp_sent_bytes_total"), Some(9_000.0));
    assert_eq!(value(&on, "bbrtop_otlp_queue_records"), Some(5.0));
}

/// A running experiment's families: one series per arm, the bound the guard stopped an arm on,
/// and the verdict per group; absent without one.
#[test]
fn experiment_families_per_arm() {
    use crate::experiment::ArmCount;
    use crate::experiment::status::{Status, Stopped};
    let arm = |cc: &str, percent: f64, assigned: u64, redirected: u64| ArmCount {
        cc: cc.into(),
        percent,
        assigned,
        setsockopt_failures: 0,
        redirected,
    };
    let snap = snapshot(vec![rec(1, "bbr", "10.0.0.2:443", 50_000, 10_000)]);
    let status = Status {
        arms: vec![arm("cubic", 90.0, 900, 0), arm("bbr", 10.0, 100, 7)],
        stopped: vec![Stopped {
            arm: "bbr".into(),
            at: 9.0,
            held: 5.0,
            reason: "retrans_ratio".into(),
            why: "test arm's retransmit ratio".into(),
        }],
        ..Status::default()
    };
    let text = render_openmetrics(Scrape { experiment: Some(status), ..bare(snap) });
    let v = |p: &str| value(&text, p);
    assert_eq!(v(r#"bbrtop_experiment_arm_share_ratio{arm="bbr"}"#), Some(0.1));
    assert_eq!(v(r#"bbrtop_experiment_arm_open{arm="bbr"}"#), Some(0.0));
    assert_eq!(v(r#"bbrtop_experiment_arm_open{arm="cubic"}"#), Some(1.0));
    assert_eq!(v(r#"bbrtop_experiment_guard_stopped{arm="bbr",reason="retrans_ratio"}"#), Some(1.0));
    assert_eq!(v(r#"bbrtop_experiment_assigned_connections_total{arm="cubic"}"#), Some(900.0));
    assert_eq!(v(r#"bbrtop_experiment_redirected_connections_total{arm="bbr"}"#), Some(7.0));
    assert!(!text.contains(r#"bbrtop_experiment_guard_stopped{arm="cubic""#));
    assert!(!scrape(snapshot(vec![]), 0, "").contains("bbrtop_experiment"), "none without one");
}

/// A scrape with every optional part on and every family of the catalog given something to
/// show: two ccs in two peer groups, a pod, closed flows, responses per AS and arm, a degraded
/// eBPF collector with its features, Alertmanager posts, the process, hindsight, OTLP and an
/// experiment. Deterministic, so two renders of it are byte-identical.
pub(super) fn populated() -> Scrape {
    use crate::experiment::ArmCount;
    use crate::experiment::status::{Status, Stopped};
    use crate::experiment::verdict::{Ends, Figure, GroupVerdict};
    use bbrtop_core::model::{Origin, Pod};
    use bbrtop_core::seam::{Feature, FeatureState};
    use bbrtop_core::snapshot::closed::ClosedAggregate;
    use std::time::{Duration, UNIX_EPOCH};
    let groups = "groups: {edge: [10.1.0.0/16]}";
    let mut in_pod = rec(3, "bbr", "10.1.0.4:443", 50_000, 10_000);
    let pod = Pod { uid: "uid-3".into(), namespace: Some("shop".into()), ..Pod::default() };
    in_pod.origin = Some(Arc::new(Origin { pod: Some(pod), ..Origin::default() }));
    let mut snap = (*snapshot(vec![
        rec(1, "bbr", "10.1.0.2:40000", 30_000, 10_000),
        rec(2, "cubic", "192.0.2.9:40001", 80_000, 10_000),
        in_pod,
    ]))
    .clone();
    let mut closed = ClosedAggregate::new("bbr");
    closed.count = 4;
    closed.srtt_seconds.observe(0.02);
    closed.throughput_bytes_per_second.observe(1e6);
    snap.closed_by_cc = vec![closed];
    let mut per_as = snap.totals[0].clone();
    (per_as.asn, per_as.country, per_as.arm) =
        (Some("AS64500".into()), Some("DE".into()), Some("bbr".into()));
    snap.totals.push(per_as);
    for t in &mut snap.totals {
        t.responses.observe(10_000, 0.02);
    }
    let at = Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    for c in &mut snap.collectors {
        (c.last_success_at, c.last_duration_seconds) = (at, 0.004);
    }
    let off = Reason::new(Cause::BbrStateOff, "BBR state off: struct bbr is in no kernel BTF");
    let mut features: Vec<FeatureState> = Feature::COLLECTOR.iter().map(|f| FeatureState::on(*f)).collect();
    features[1] = FeatureState::off(Feature::BbrState, off.clone());
    snap.collectors.retain(|c| c.name != "bpf");
    snap.collectors.push(CollectorStatus {
        name: "bpf",
        health: Health::Degraded(off),
        last_success_at: at,
        programs_attached: Some(5),
        ringbuf_lost_total: Some(1),
        undecodable_events_total: Some(2),
        walk_records_dropped_total: Some(3),
        recursion_misses_total: [("tcp_destroy_sock", 7)].into_iter().collect(),
        features,
        ..Default::default()
    });
    let figure = |call: &str| Figure {
        call: call.into(),
        control: Ends { lo: 0.1, hi: 0.2 },
        test: Ends { lo: 0.1, hi: 0.2 },
        diff: Ends { lo: 0.0, hi: 0.0 },
    };
    let experiment = Status {
        arms: vec![
            ArmCount {
                cc: "cubic".into(),
                percent: 90.0,
                assigned: 90,
                setsockopt_failures: 0,
                redirected: 0,
            },
            ArmCount { cc: "bbr".into(), percent: 10.0, assigned: 10, setsockopt_failures: 1, redirected: 2 },
        ],
        stopped: vec![Stopped {
            arm: "bbr".into(),
            at: 9.0,
            held: 5.0,
            reason: "p95".into(),
            why: "test arm's p95".into(),
        }],
        verdicts: vec![GroupVerdict {
            group: "all".into(),
            arm: "bbr".into(),
            control: "cubic".into(),
            call: "better".into(),
            responses: [10, 20],
            delivery_p50: figure("better"),
            delivery_p95: figure("better"),
            delivery_p99: figure("better"),
            retrans_ratio: None,
        }],
        ..Status::default()
    };
    Scrape { by_pod_namespace: true, experiment: Some(experiment), ..scrape_of(Arc::new(snap), 5, groups) }
}
