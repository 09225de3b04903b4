//! The declarations: each label's bound, and each family. A new family is one `Family` here,
//! listed in [`FAMILIES`] where the scrape serves it, and its encoding in `metrics.rs` (or a
//! file beside it) that says where its values come from.

use super::{Bound, Family, Kind, Label, Unit};
use bbrtop_core::columns::Column;
use bbrtop_core::model::TcpState;
use bbrtop_core::seam::Feature;
use bbrtop_core::snapshot::responses::SizeClass;

/// A column's per-socket gauge (`--metrics.per-socket.top-k`).
pub fn per_socket(c: &Column) -> Option<Family> {
    let m = c.metric?;
    Some(Family {
        name: m.name,
        kind: Kind::Gauge,
        unit: Unit::of_column(c.unit),
        help: m.help,
        labels: &[COOKIE, LOCAL, PEER, CC, PEER_GROUP],
        served: "with --metrics.per-socket.top-k N, the N most inflated sockets",
    })
}

/// `phase` label values, indexed by the encoder's `phase_index`: `none` for a cc that has no
/// BBR phase, `unknown` for a BBR socket whose phase neither the kernel nor its gains tell.
pub const PHASES: [&str; 6] = ["none", "unknown", "startup", "drain", "probe_bw", "probe_rtt"];
/// `role` label values, indexed by the encoder's `role_index`; the JSON's `by_cc` counts them
/// under the same words, plural.
pub const ROLES: [&str; 4] = ["sender", "receiver", "idle", "loopback"];

const CC: Label = Label { name: "cc", bound: Bound::Set("the congestion controls the host's sockets use") };
const PEER_GROUP: Label =
    Label { name: "peer_group", bound: Bound::Set("the `--peer-groups` names, and `other`") };
const STATE: Label =
    Label { name: "state", bound: Bound::OneOf(|| TcpState::ALL.iter().map(|s| s.label()).collect()) };
const PHASE: Label = Label { name: "phase", bound: Bound::OneOf(|| PHASES.to_vec()) };
const ROLE: Label = Label { name: "role", bound: Bound::OneOf(|| ROLES.to_vec()) };
const ASN: Label = Label {
    name: "asn",
    bound: Bound::Set(
        "with `--peer-groups.asn.file`: the first `--peer-groups.top N` ASs by bytes sent, `unknown` and `other`",
    ),
};
const COUNTRY: Label = Label {
    name: "country",
    bound: Bound::Set(
        "with `--peer-groups.country.file`: the first `--peer-groups.top N` countries by bytes sent, `unknown` and `other`",
    ),
};
const ARM: Label = Label { name: "arm", bound: Bound::Set("`bbrtop experiment`'s arms (their ccs)") };
const SIZE: Label =
    Label { name: "size", bound: Bound::OneOf(|| SizeClass::ALL.iter().map(|c| c.label()).collect()) };
const TOP_K: &str = "one of the top-K sockets (`--metrics.per-socket.top-k`, at most 1000)";
const COOKIE: Label = Label { name: "cookie", bound: Bound::Set(TOP_K) };
const LOCAL: Label = Label { name: "local", bound: Bound::Set(TOP_K) };
const PEER: Label = Label { name: "peer", bound: Bound::Set(TOP_K) };
const POD_NAMESPACE: Label =
    Label { name: "pod_namespace", bound: Bound::Set("the Kubernetes namespaces of the node's pods") };
const COLLECTOR: Label = Label {
    name: "collector",
    bound: Bound::Set("the collectors this run starts (`netlink`, `walk`, `bpf`, ...)"),
};
const CAUSE: Label = Label {
    name: "reason",
    bound: Bound::Set(
        "a cause from the fixed set `bbrtop doctor` explains (`disabled`, `not_built`, `no_btf`, `missing_capabilities`, `kernel_lacks`, ...)",
    ),
};
const FEATURE: Label =
    Label { name: "feature", bound: Bound::OneOf(|| Feature::ALL.iter().map(|f| f.label()).collect()) };
const SIZE_KIND: Label = Label { name: "kind", bound: Bound::OneOf(|| vec!["short", "long"]) };
const PROGRAM: Label = Label { name: "program", bound: Bound::Set("bbrtop's eBPF programs") };
const ALERTMANAGER: Label =
    Label { name: "alertmanager", bound: Bound::Set("the `--alertmanager.url`s, password masked") };
const RESULT: Label =
    Label { name: "result", bound: Bound::OneOf(|| crate::export::alertmanager::RESULTS.to_vec()) };
const DROPPED: Label = Label {
    name: "reason",
    bound: Bound::OneOf(|| crate::export::otlp::queue::Dropped::ALL.iter().map(|d| d.label()).collect()),
};
const GUARD_BOUND: Label =
    Label { name: "reason", bound: Bound::OneOf(|| vec!["retrans_ratio", "p95", "control_share"]) };
const GROUP: Label = Label {
    name: "group",
    bound: Bound::Set("`all`, and each peer group, top AS, country and size class the verdicts are made in"),
};
const CALL: Label = Label {
    name: "call",
    bound: Bound::OneOf(|| {
        use bbrtop_core::sequential::Call;
        [Call::Better, Call::Worse, Call::WithinMargin, Call::NotYetKnown]
            .map(crate::experiment::verdict::word)
            .to_vec()
    }),
};
const VERSION: Label = Label { name: "version", bound: Bound::Set("this build's") };
const RUSTC: Label = Label { name: "rustc", bound: Bound::Set("this build's") };
const BUILD_FEATURES: Label = Label { name: "features", bound: Bound::OneOf(|| vec!["bpf", "none"]) };

/// The counters' labels: per (cc, peer group), and AS, country and arm where they apply.
const TOTALS: &[Label] = &[CC, PEER_GROUP, ASN, COUNTRY, ARM];

const ALWAYS: &str = "always";
const EBPF: &str = "with eBPF";
const PODS: &str = "with --metrics.by-pod-namespace";
const EXPERIMENT: &str = "from `bbrtop experiment --web.listen-address`";
const OTLP: &str = "while the OTLP shipper runs (--otlp.endpoint)";
const PROCESS: &str = "always (read from /proc; `process_max_fds` when there is a limit)";

const fn family(
    name: &'static str,
    kind: Kind,
    unit: Unit,
    labels: &'static [Label],
    served: &'static str,
    help: &'static str,
) -> Family {
    Family { name, kind, unit, help, labels, served }
}

/// A counter of the engine's totals (`Count`): its help gets what they are counted by.
macro_rules! total {
    ($name:literal, $unit:expr, $help:literal) => {
        family($name, Kind::Counter, $unit, TOTALS, ALWAYS, concat!(
            $help,
            " Since start, closed sockets included, by cc and peer group (and the peers' AS and country, with their databases)."
        ))
    };
}

/// A family of `--metrics.by-pod-namespace`: its help gets what it is by.
macro_rules! pods {
    ($name:literal, $unit:expr, $what:literal) => {
        family(
            $name,
            Kind::Gauge,
            $unit,
            &[POD_NAMESPACE, CC],
            PODS,
            concat!($what, ", by the pod's namespace and congestion control."),
        )
    };
}

use Kind::{Counter, Gauge, GaugeHistogram, Histogram};

pub const SOCKETS: Family = family(
    "bbrtop_sockets",
    Gauge,
    Unit::None,
    &[CC, STATE, PHASE],
    ALWAYS,
    "Open sockets by congestion control, TCP state (as node_exporter's tcpstat names it) and BBR phase (none for other algorithms, unknown for a BBR socket whose phase is not known).",
);
pub const SOCKETS_BY_ROLE: Family = family(
    "bbrtop_sockets_by_role",
    Gauge,
    Unit::None,
    &[CC, PEER_GROUP, ROLE],
    ALWAYS,
    "Open sockets by what they did in the last poll interval: sender (sent data), receiver (received data and sent none), idle, loopback (the host talking to itself, counted apart unless --loopback). The distributions are over the senders.",
);
/// The live distributions, over each cc's senders per (cc, peer group).
pub const SRTT: Family = family(
    "bbrtop_srtt_seconds",
    GaugeHistogram,
    Unit::Seconds,
    &[CC, PEER_GROUP],
    ALWAYS,
    "Smoothed RTT of the open sockets that send.",
);
pub const MIN_RTT: Family = family(
    "bbrtop_min_rtt_seconds",
    GaugeHistogram,
    Unit::Seconds,
    &[CC, PEER_GROUP],
    ALWAYS,
    "tcp_info min RTT of the open sockets that send.",
);
pub const INFLATION: Family = family(
    "bbrtop_rtt_inflation_ratio",
    GaugeHistogram,
    Unit::Ratio,
    &[CC, PEER_GROUP],
    ALWAYS,
    "srtt / baseline RTT of the open sockets that send.",
);
pub const BBR_BW: Family = family(
    "bbrtop_bbr_bandwidth_bytes_per_second",
    GaugeHistogram,
    Unit::BytesPerSecond,
    &[CC, PEER_GROUP],
    ALWAYS,
    "BBR bottleneck bandwidth estimate of the open BBR sockets that send.",
);
pub const DELIVERY: Family = family(
    "bbrtop_delivery_rate_bytes_per_second",
    GaugeHistogram,
    Unit::BytesPerSecond,
    &[CC, PEER_GROUP],
    ALWAYS,
    "tcp_info delivery rate of the open sockets that send.",
);
pub const SOCKETS_INFLATED: Family = family(
    "bbrtop_sockets_inflated",
    Gauge,
    Unit::None,
    &[CC],
    ALWAYS,
    "Sockets inflated by the alert rule now.",
);
pub const ALERTS_FIRING: Family =
    family("bbrtop_alerts_firing", Gauge, Unit::None, &[CC], ALWAYS, "RTT inflation alerts firing now.");
pub const INFLATION_ONSETS: Family = family(
    "bbrtop_inflation_onsets_total",
    Counter,
    Unit::None,
    &[CC],
    ALWAYS,
    "Spells of RTT inflation begun since start.",
);
pub const INFLATED_GOODPUT: Family = family(
    "bbrtop_inflated_goodput_bytes_per_second",
    Gauge,
    Unit::BytesPerSecond,
    &[CC, PEER_GROUP],
    ALWAYS,
    "Goodput (bytes acked per second over the last poll interval) of the senders the alert rule has inflated now.",
);
pub const CLOSED_FLOWS: Family = family(
    "bbrtop_closed_flows_total",
    Counter,
    Unit::None,
    &[CC],
    EBPF,
    "TCP flows closed since start (eBPF).",
);
pub const CLOSED_SRTT: Family = family(
    "bbrtop_closed_flow_srtt_seconds",
    Histogram,
    Unit::Seconds,
    &[CC],
    EBPF,
    "Final smoothed RTT of closed flows (eBPF).",
);
pub const CLOSED_THROUGHPUT: Family = family(
    "bbrtop_closed_flow_throughput_bytes_per_second",
    Histogram,
    Unit::BytesPerSecond,
    &[CC],
    EBPF,
    "Average throughput over the life of closed flows (eBPF).",
);
pub const SENT_SEGMENTS: Family = total!(
    "bbrtop_sent_segments_total",
    Unit::None,
    "Segments sent, retransmissions included (tcpi_segs_out)."
);
pub const SENT_BYTES: Family =
    total!("bbrtop_sent_bytes_total", Unit::Bytes, "Bytes sent, retransmissions included (tcpi_bytes_sent).");
pub const RETRANS_SEGMENTS: Family =
    total!("bbrtop_retransmitted_segments_total", Unit::None, "Segments retransmitted (tcpi_total_retrans).");
pub const RETRANS_BYTES: Family =
    total!("bbrtop_retransmitted_bytes_total", Unit::Bytes, "Bytes retransmitted (tcpi_bytes_retrans).");
pub const ACKED_BYTES: Family = total!(
    "bbrtop_acked_bytes_total",
    Unit::Bytes,
    "Bytes the peers acknowledged: goodput (tcpi_bytes_acked)."
);
pub const RECEIVED_BYTES: Family =
    total!("bbrtop_received_bytes_total", Unit::Bytes, "Bytes received (tcpi_bytes_received).");
pub const RTO_TIMEOUTS: Family = total!(
    "bbrtop_rto_timeouts_total",
    Unit::None,
    "Retransmission timeouts (tcpi_total_rto; Linux 6.7 and later)."
);
pub const SPURIOUS_SEGMENTS: Family = total!(
    "bbrtop_spurious_retransmitted_segments_total",
    Unit::None,
    "Retransmissions the peer reported as duplicates with DSACK: spurious (tcpi_dsack_dups)."
);
pub const DELIVERED_SEGMENTS: Family =
    total!("bbrtop_delivered_segments_total", Unit::None, "Segments delivered (tcpi_delivered).");
pub const DELIVERED_CE_SEGMENTS: Family = total!(
    "bbrtop_delivered_ce_segments_total",
    Unit::None,
    "Segments delivered with a CE mark (tcpi_delivered_ce)."
);
pub const RESPONSE_DELIVERY: Family = family(
    "bbrtop_response_delivery_seconds",
    Histogram,
    Unit::Seconds,
    &[CC, PEER_GROUP, ASN, COUNTRY, ARM, SIZE],
    EBPF,
    "Responses servers sent, from the first byte written to an idle socket to the ACK of the last (eBPF), by cc, peer group and size class (le15kB, le200kB, le2MB, gt2MB), since start; by AS and country too where their databases are given, as native histograms (text formats: summed over AS and country, unless --metrics.response-histograms.classic).",
);
pub const ECN_SOCKETS: Family = family(
    "bbrtop_ecn_sockets",
    Gauge,
    Unit::None,
    &[CC],
    ALWAYS,
    "Open sockets that negotiated ECN (tcpi_options ECN), by congestion control.",
);
pub const CE_MARKED: Family = family(
    "bbrtop_ce_marked_ratio",
    Gauge,
    Unit::Ratio,
    &[CC],
    ALWAYS,
    "CE-marked fraction of the segments the open sockets delivered (tcpi_delivered_ce / tcpi_delivered, each summed), by congestion control.",
);
pub const POD_SOCKETS: Family = pods!("bbrtop_pod_namespace_sockets", Unit::None, "Open sockets of pods");
pub const POD_INFLATED: Family = pods!(
    "bbrtop_pod_namespace_sockets_inflated",
    Unit::None,
    "Pods' sockets the alert rule has inflated now"
);
pub const POD_DELIVERY: Family = pods!(
    "bbrtop_pod_namespace_delivery_rate_bytes_per_second",
    Unit::BytesPerSecond,
    "Sum of the pods' sockets' delivery rates"
);
pub const POD_SRTT_P95: Family = pods!(
    "bbrtop_pod_namespace_srtt_p95_seconds",
    Unit::Seconds,
    "95th percentile (nearest rank) of the pods' sockets' smoothed RTT"
);
pub const COLLECTOR_ENABLED: Family = family(
    "bbrtop_collector_enabled",
    Gauge,
    Unit::None,
    &[COLLECTOR],
    ALWAYS,
    "1 if the collector runs on this host (0: off, and bbrtop_collector_degraded says why).",
);
pub const COLLECTOR_UP: Family = family(
    "bbrtop_collector_up",
    Gauge,
    Unit::None,
    &[COLLECTOR],
    ALWAYS,
    "1 if the collector's last poll succeeded; enabled collectors only.",
);
pub const COLLECTOR_DEGRADED: Family = family(
    "bbrtop_collector_degraded",
    Gauge,
    Unit::None,
    &[COLLECTOR, CAUSE],
    ALWAYS,
    "1 while the collector is off or degraded; the reason label says why.",
);
pub const BPF_FEATURE_ENABLED: Family = family(
    "bbrtop_bpf_feature_enabled",
    Gauge,
    Unit::None,
    &[FEATURE],
    EBPF,
    "1 if the eBPF feature runs on this kernel (0: off, and bbrtop_bpf_feature_disabled says why).",
);
pub const BPF_FEATURE_DISABLED: Family = family(
    "bbrtop_bpf_feature_disabled",
    Gauge,
    Unit::None,
    &[FEATURE, CAUSE],
    EBPF,
    "1 for each eBPF feature that is off; the reason label says why (kernel_lacks: this kernel cannot carry it).",
);
pub const COLLECTOR_LAST_DURATION: Family = family(
    "bbrtop_collector_last_duration_seconds",
    Gauge,
    Unit::Seconds,
    &[COLLECTOR],
    ALWAYS,
    "Duration of the collector's last poll.",
);
pub const COLLECTOR_POLLS: Family = family(
    "bbrtop_collector_polls_total",
    Counter,
    Unit::None,
    &[COLLECTOR],
    ALWAYS,
    "Polls (dumps) by collector.",
);
pub const COLLECTOR_ERRORS: Family = family(
    "bbrtop_collector_errors_total",
    Counter,
    Unit::None,
    &[COLLECTOR],
    ALWAYS,
    "Failed polls by collector.",
);
pub const COLLECTOR_LAST_SUCCESS: Family = family(
    "bbrtop_collector_last_success_timestamp_seconds",
    Gauge,
    Unit::Seconds,
    &[COLLECTOR],
    ALWAYS,
    "When the collector's last successful poll ended (Unix time).",
);
pub const DUMP_INTR_RETRIES: Family = family(
    "bbrtop_netlink_dump_intr_retries_total",
    Counter,
    Unit::None,
    &[],
    ALWAYS,
    "inet_diag dumps restarted because the kernel flagged NLM_F_DUMP_INTR.",
);
pub const TCP_INFO_SIZE_MISMATCH: Family = family(
    "bbrtop_netlink_tcp_info_size_mismatch_total",
    Counter,
    Unit::None,
    &[SIZE_KIND],
    ALWAYS,
    "tcp_info payloads shorter (older kernel) or longer (newer kernel) than this build knows.",
);
pub const BPF_PROGRAMS_ATTACHED: Family = family(
    "bbrtop_bpf_programs_attached",
    Gauge,
    Unit::None,
    &[],
    ALWAYS,
    "eBPF programs attached (0 when eBPF is off).",
);
pub const BPF_RINGBUF_LOST: Family = family(
    "bbrtop_bpf_ringbuf_lost_events_total",
    Counter,
    Unit::None,
    &[],
    ALWAYS,
    "eBPF ring-buffer events lost because the buffer was full.",
);
pub const WALK_RECORDS_DROPPED: Family = family(
    "bbrtop_walk_records_dropped_total",
    Counter,
    Unit::None,
    &[],
    ALWAYS,
    "Socket walk records the kernel could not write (map full or out of memory in a burst); those sockets are seen at their next move.",
);
pub const WALK_RECORDS_REFILLED: Family = family(
    "bbrtop_walk_records_refilled_total",
    Counter,
    Unit::None,
    &[],
    ALWAYS,
    "Socket walk records filled again before a read by the refill pass: sockets that stopped moving within the walk's refresh of their last record.",
);
pub const BPF_UNDECODABLE: Family = family(
    "bbrtop_bpf_undecodable_events_total",
    Counter,
    Unit::None,
    &[],
    ALWAYS,
    "eBPF ring-buffer records this build could not decode.",
);
pub const BPF_RECURSION_MISSES: Family = family(
    "bbrtop_bpf_recursion_misses_total",
    Counter,
    Unit::None,
    &[PROGRAM],
    EBPF,
    "Runs of an eBPF program the kernel skipped because one was already running on that CPU.",
);
pub const ALERTMANAGER_POSTS: Family = family(
    "bbrtop_alertmanager_posts_total",
    Counter,
    Unit::None,
    &[ALERTMANAGER, RESULT],
    "with --alertmanager.url",
    "POSTs to Alertmanager by result (success, redirected, client_error, server_error, network_error, dropped).",
);
pub const PROCESS_CPU: Family = family(
    "process_cpu_seconds_total",
    Counter,
    Unit::Seconds,
    &[],
    PROCESS,
    "Total user and system CPU time spent in seconds.",
);
pub const PROCESS_RESIDENT: Family = family(
    "process_resident_memory_bytes",
    Gauge,
    Unit::Bytes,
    &[],
    PROCESS,
    "Resident memory size in bytes.",
);
pub const PROCESS_VIRTUAL: Family =
    family("process_virtual_memory_bytes", Gauge, Unit::Bytes, &[], PROCESS, "Virtual memory size in bytes.");
pub const PROCESS_OPEN_FDS: Family =
    family("process_open_fds", Gauge, Unit::None, &[], PROCESS, "Number of open file descriptors.");
pub const PROCESS_MAX_FDS: Family =
    family("process_max_fds", Gauge, Unit::None, &[], PROCESS, "Maximum number of open file descriptors.");
pub const PROCESS_START_TIME: Family = family(
    "process_start_time_seconds",
    Gauge,
    Unit::Seconds,
    &[],
    PROCESS,
    "Start time of the process since unix epoch in seconds.",
);
pub const HINDSIGHT_MEMORY: Family = family(
    "bbrtop_hindsight_memory_bytes",
    Gauge,
    Unit::Bytes,
    &[],
    "while hindsight is on",
    "Bytes hindsight holds in memory: its encoder's buffers, and its chunks when they are not spooled (at most --hindsight.max-size).",
);
pub const OTLP_SENT: Family = family(
    "bbrtop_otlp_log_records_sent_total",
    Counter,
    Unit::None,
    &[],
    OTLP,
    "Closed flows the OTLP collector accepted, as log records.",
);
pub const OTLP_SENT_BYTES: Family = family(
    "bbrtop_otlp_sent_bytes_total",
    Counter,
    Unit::Bytes,
    &[],
    OTLP,
    "Bytes of the OTLP request bodies the collector accepted, as sent (compressed with --otlp.compression gzip).",
);
pub const OTLP_DROPPED: Family = family(
    "bbrtop_otlp_log_records_dropped_total",
    Counter,
    Unit::None,
    &[DROPPED],
    OTLP,
    "Closed flows not delivered to the OTLP collector, by reason (queue_full, missed, export_failed, rejected, shutdown).",
);
pub const OTLP_FAILED_REQUESTS: Family = family(
    "bbrtop_otlp_failed_requests_total",
    Counter,
    Unit::None,
    &[],
    OTLP,
    "OTLP export requests that failed and were retried or given up (network errors, 429, 502, 503, 504).",
);
pub const OTLP_QUEUE: Family = family(
    "bbrtop_otlp_queue_records",
    Gauge,
    Unit::None,
    &[],
    OTLP,
    "Closed flows waiting to be sent to the OTLP collector (at most --otlp.queue-size).",
);
pub const ARM_SHARE: Family = family(
    "bbrtop_experiment_arm_share_ratio",
    Gauge,
    Unit::Ratio,
    &[ARM],
    EXPERIMENT,
    "The share of new connections the experiment draws for each arm.",
);
pub const ARM_OPEN: Family = family(
    "bbrtop_experiment_arm_open",
    Gauge,
    Unit::None,
    &[ARM],
    EXPERIMENT,
    "1 while the arm is given new connections, 0 once the harm guard stopped it.",
);
pub const GUARD_STOPPED: Family = family(
    "bbrtop_experiment_guard_stopped",
    Gauge,
    Unit::None,
    &[ARM, GUARD_BOUND],
    EXPERIMENT,
    "1 for an arm the harm guard stopped, labelled with the bound it crossed (retrans_ratio, p95, control_share).",
);
pub const ASSIGNED: Family = family(
    "bbrtop_experiment_assigned_connections_total",
    Counter,
    Unit::None,
    &[ARM],
    EXPERIMENT,
    "Connections the experiment's program gave each arm (in a dry run, would have).",
);
pub const REDIRECTED: Family = family(
    "bbrtop_experiment_redirected_connections_total",
    Counter,
    Unit::None,
    &[ARM],
    EXPERIMENT,
    "Connections drawn for an arm the guard had stopped, given the control instead.",
);
pub const SETSOCKOPT_FAILURES: Family = family(
    "bbrtop_experiment_setsockopt_failures_total",
    Counter,
    Unit::None,
    &[ARM],
    EXPERIMENT,
    "Connections whose congestion control the kernel refused to set (bpf_setsockopt TCP_CONGESTION).",
);
pub const VERDICT: Family = family(
    "bbrtop_experiment_verdict",
    Gauge,
    Unit::None,
    &[ARM, GROUP, CALL],
    EXPERIMENT,
    "1 for the call (better, worse, no clear difference, not yet known) on a test arm against the control in a group, from confidence sequences at 95%.",
);
pub const HINDSIGHT_SPOOL: Family = family(
    "bbrtop_hindsight_spool_bytes",
    Gauge,
    Unit::Bytes,
    &[],
    "while hindsight spools to --hindsight.dir",
    "Bytes of hindsight's spool on disk, in --hindsight.dir (at most --hindsight.max-size and a chunk); absent when hindsight is held in memory.",
);
pub const BUILD_INFO: Family = family(
    "bbrtop_build_info",
    Gauge,
    Unit::None,
    &[VERSION, RUSTC, BUILD_FEATURES],
    ALWAYS,
    "Always 1; the labels say which build is running.",
);

/// The declared families, in the order a scrape serves them (the per-socket ones, from the
/// columns, come after the ECN pair).
pub const FAMILIES: &[Family] = &[
    SOCKETS,
    SOCKETS_BY_ROLE,
    SRTT,
    MIN_RTT,
    INFLATION,
    BBR_BW,
    DELIVERY,
    SOCKETS_INFLATED,
    ALERTS_FIRING,
    INFLATION_ONSETS,
    INFLATED_GOODPUT,
    CLOSED_FLOWS,
    CLOSED_SRTT,
    CLOSED_THROUGHPUT,
    SENT_SEGMENTS,
    SENT_BYTES,
    RETRANS_SEGMENTS,
    RETRANS_BYTES,
    ACKED_BYTES,
    RECEIVED_BYTES,
    RTO_TIMEOUTS,
    SPURIOUS_SEGMENTS,
    DELIVERED_SEGMENTS,
    DELIVERED_CE_SEGMENTS,
    RESPONSE_DELIVERY,
    ECN_SOCKETS,
    CE_MARKED,
    POD_SOCKETS,
    POD_INFLATED,
    POD_DELIVERY,
    POD_SRTT_P95,
    COLLECTOR_ENABLED,
    COLLECTOR_UP,
    COLLECTOR_DEGRADED,
    BPF_FEATURE_ENABLED,
    BPF_FEATURE_DISABLED,
    COLLECTOR_LAST_DURATION,
    COLLECTOR_POLLS,
    COLLECTOR_ERRORS,
    COLLECTOR_LAST_SUCCESS,
    DUMP_INTR_RETRIES,
    TCP_INFO_SIZE_MISMATCH,
    BPF_PROGRAMS_ATTACHED,
    BPF_RINGBUF_LOST,
    WALK_RECORDS_DROPPED,
    WALK_RECORDS_REFILLED,
    BPF_UNDECODABLE,
    BPF_RECURSION_MISSES,
    ALERTMANAGER_POSTS,
    PROCESS_CPU,
    PROCESS_RESIDENT,
    PROCESS_VIRTUAL,
    PROCESS_OPEN_FDS,
    PROCESS_MAX_FDS,
    PROCESS_START_TIME,
    HINDSIGHT_MEMORY,
    OTLP_SENT,
    OTLP_SENT_BYTES,
    OTLP_DROPPED,
    OTLP_FAILED_REQUESTS,
    OTLP_QUEUE,
    ARM_SHARE,
    ARM_OPEN,
    GUARD_STOPPED,
    ASSIGNED,
    REDIRECTED,
    SETSOCKOPT_FAILURES,
    VERDICT,
    HINDSIGHT_SPOOL,
    BUILD_INFO,
];

/// The counter of each of the engine's totals.
pub fn count_family(c: bbrtop_core::model::Count) -> &'static Family {
    use bbrtop_core::model::Count;
    match c {
        Count::SegsOut => &SENT_SEGMENTS,
        Count::BytesSent => &SENT_BYTES,
        Count::RetransSegs => &RETRANS_SEGMENTS,
        Count::BytesRetrans => &RETRANS_BYTES,
        Count::BytesAcked => &ACKED_BYTES,
        Count::BytesReceived => &RECEIVED_BYTES,
        Count::Rto => &RTO_TIMEOUTS,
        Count::DsackDups => &SPURIOUS_SEGMENTS,
        Count::DeliveredSegs => &DELIVERED_SEGMENTS,
        Count::DeliveredCeSegs => &DELIVERED_CE_SEGMENTS,
    }
}
