//! `/metrics`: every series is built at scrape time from the latest snapshot, so a closed socket
//! leaves no stale series and the histograms describe the sockets open now.
//!
//! Each family is declared once in [`catalog`] (name, type, unit, help, labels): the encoders
//! here take those from it and add the values. Names (prefix `bbrtop_`, base units) are fixed:
//! the shipped rules and dashboards use them.
//! prometheus-client encodes OpenMetrics text, and Prometheus' own protobuf
//! (`io.prometheus.client.MetricFamily`), the one format that carries native histograms;
//! [`to_text_004`] turns the text into the classic text format for scrapers (and `promtool
//! check metrics`) that ask for neither.
//!
//! The distributions of open sockets are over each cc's senders (`SocketView::role`), as the
//! snapshot's per-cc figures are; `bbrtop_sockets` counts every socket.

use bbrtop_core::model::bbr::is_bbr;
use bbrtop_core::model::{Count, Phase, TcpState};
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::snapshot::CcAggregate;
use bbrtop_core::snapshot::CcTotals;
use bbrtop_core::snapshot::ClosedAggregate;
use bbrtop_core::snapshot::hist::Hist;
use bbrtop_core::snapshot::{CollectorStatus, Role, Snapshot, SocketView};
use catalog::{Family, Kind};
use live_hist::LiveHist;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeLabelSet, MetricEncoder, NativeHistogram,
    NativeHistogramBuckets, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The hard cap on `--metrics.per-socket.top-k`.
pub const TOP_K_CAP: usize = 1000;

/// `bbrtop_alertmanager_posts_total` values: ((alertmanager, result), count).
pub type PostCounts = Vec<((String, &'static str), u64)>;

/// Everything one scrape reads.
#[derive(Debug)]
pub struct Scrape {
    pub snap: Arc<Snapshot>,
    pub groups: Arc<PeerGroups>,
    pub top_k: usize,
    /// The opt-in aggregates by pod namespace.
    pub by_pod_namespace: bool,
    pub posts: PostCounts,
    /// The exporter's own process (`process_*`), read at the edge; None leaves them out.
    pub process: Option<super::process::Process>,
    /// Bytes hindsight holds in memory; None when it is off.
    pub hindsight_memory_bytes: Option<u64>,
    /// Bytes of hindsight's spool on disk; None when it is off or held in memory.
    pub hindsight_spool_bytes: Option<u64>,
    /// The OTLP shipper's counts; None when it is off.
    pub otlp: Option<OtlpCounts>,
    /// A running experiment's arms and verdicts (`bbrtop experiment`); None elsewhere.
    pub experiment: Option<crate::experiment::status::Status>,
    /// `--metrics.response-histograms.classic`: the response times per AS and country in classic
    /// buckets too (`responses.rs`).
    pub response_classic: bool,
}

/// One scrape as encoded in a format: `native` when it carries native histograms (protobuf).
#[derive(Debug)]
struct Rendered {
    scrape: Scrape,
    native: bool,
}

/// What the OTLP shipper sent, dropped (by reason) and holds, as one scrape reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OtlpCounts {
    pub sent: u64,
    pub sent_bytes: u64,
    pub dropped: Vec<(&'static str, u64)>,
    pub failed_requests: u64,
    pub queued: usize,
}

impl OtlpCounts {
    pub fn of(h: &super::otlp::Handle) -> OtlpCounts {
        OtlpCounts {
            sent: h.stats.sent(),
            sent_bytes: h.stats.sent_bytes(),
            dropped: h.stats.dropped().map(|(d, n)| (d.label(), n)).collect(),
            failed_requests: h.stats.failed_requests(),
            queued: h.queued(),
        }
    }
}

/// The histograms of the sockets open now: their counts fall when sockets close, which
/// OpenMetrics types `gaugehistogram` (samples `_bucket`, `_gcount`, `_gsum`) and protobuf
/// `GAUGE_HISTOGRAM`. prometheus-client has no such type yet, so they are encoded as histograms
/// and retyped: the text by [`as_gauge_histograms`], the protobuf in [`render_protobuf`].
fn live_histograms_names() -> impl Iterator<Item = &'static str> {
    catalog::FAMILIES.iter().filter(|f| f.kind == Kind::GaugeHistogram).map(|f| f.name)
}

/// Encodes one scrape as OpenMetrics text (ending in `# EOF`).
pub fn render_openmetrics(s: Scrape) -> String {
    let mut reg = Registry::default();
    reg.register_collector(Box::new(Rendered { scrape: s, native: false }));
    let mut out = String::with_capacity(64 * 1024);
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    as_gauge_histograms(&out)
}

/// The media type of [`render_protobuf`]'s body, which Prometheus asks for when its native
/// histograms are on (`--enable-feature=native-histograms`).
pub const PROTOBUF: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// Encodes one scrape as Prometheus' protobuf exposition: `io.prometheus.client.MetricFamily`
/// messages, each after its length as a varint. The live histograms carry native buckets beside
/// the classic ones, as client_golang's do, and are typed `GAUGE_HISTOGRAM`.
pub fn render_protobuf(s: Scrape) -> Vec<u8> {
    use prometheus_client::encoding::prometheus_protobuf::{encode, prometheus_data_model::MetricType};
    use prost::Message;
    let mut reg = Registry::default();
    reg.register_collector(Box::new(Rendered { scrape: s, native: true }));
    // The collector writes to memory: only a bug of ours could make it fail, and then the
    // families encoded so far are still served.
    let families = encode(&reg).unwrap_or_default();
    let mut out = Vec::with_capacity(64 * 1024);
    for mut f in families {
        if live_histograms_names().any(|n| n == f.name) {
            f.r#type = MetricType::GaugeHistogram as i32;
        }
        // Writing to a Vec cannot fail.
        let _ = f.encode_length_delimited(&mut out);
    }
    out
}

/// The live histogram family `text` starts with, and the rest of it.
fn live(text: &str) -> Option<(&'static str, &str)> {
    live_histograms_names().find_map(|f| text.strip_prefix(f).map(|tail| (f, tail)))
}

/// The live histograms retyped as OpenMetrics gaugehistograms: the TYPE line, and `_count`
/// and `_sum` renamed `_gcount` and `_gsum`. Every other line is copied as it is.
fn as_gauge_histograms(om: &str) -> String {
    let mut out = String::with_capacity(om.len() + 1024);
    for line in om.lines() {
        match line.strip_prefix("# TYPE ").and_then(live) {
            Some((family, " histogram")) => {
                out.push_str("# TYPE ");
                out.push_str(family);
                out.push_str(" gaugehistogram");
            }
            _ => match live(line) {
                Some((family, tail)) if tail.starts_with("_count") || tail.starts_with("_sum") => {
                    out.push_str(family);
                    out.push_str("_g");
                    out.push_str(&tail[1..]);
                }
                _ => out.push_str(line),
            },
        }
        out.push('\n');
    }
    out
}

/// Rewrites OpenMetrics text as Prometheus text 0.0.4: counters are named with `_total` in
/// HELP/TYPE, and `# UNIT`/`# EOF` lines go (0.0.4 has neither). 0.0.4 has no gaugehistogram
/// either: those go back to `histogram` with `_count` and `_sum`, the documented fallback (their
/// counts still fall when sockets close: read them as gauges, never with rate()).
pub fn to_text_004(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    let mut lines = om.lines().peekable();
    while let Some(line) = lines.next() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(family) = line.strip_prefix("# TYPE ").and_then(|r| r.strip_suffix(" gaugehistogram")) {
            out.push_str(&format!("# TYPE {family} histogram\n"));
            continue;
        }
        let gauge_sample = live(line).filter(|(_, t)| t.starts_with("_gcount") || t.starts_with("_gsum"));
        if let Some((family, tail)) = gauge_sample {
            out.push_str(&format!("{family}_{}\n", &tail[2..]));
            continue;
        }
        let counter_help = line.starts_with("# HELP ")
            && lines.peek().is_some_and(|n| n.starts_with("# TYPE ") && n.ends_with(" counter"));
        if counter_help || (line.starts_with("# TYPE ") && line.ends_with(" counter")) {
            let mut parts = line.splitn(4, ' ');
            let (hash, kind, name, rest) = (
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
                parts.next(),
            );
            out.push_str(&format!("{hash} {kind} {name}_total"));
            if let Some(r) = rest {
                out.push(' ');
                out.push_str(r);
            }
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

use catalog::{PHASES, ROLES};
/// Kernel TCP states are 1..=12; one slot per value.
const STATES: usize = 16;

fn phase_index(p: Option<Phase>, bbr: bool) -> usize {
    match p {
        None if bbr => 1,
        None => 0,
        Some(Phase::Startup) => 2,
        Some(Phase::Drain) => 3,
        Some(Phase::ProbeBw(_)) => 4,
        Some(Phase::ProbeRtt) => 5,
    }
}

fn role_index(r: Role) -> usize {
    match r {
        Role::Sender => 0,
        Role::Receiver => 1,
        Role::Idle => 2,
        Role::Loopback => 3,
    }
}

/// One congestion control's counts during a scrape.
struct PerCc {
    name: String,
    bbr: bool,
    by_state: [[u64; PHASES.len()]; STATES],
    inflated: u64,
    /// Indexed by peer group (the last is "other").
    groups: Vec<Option<Group>>,
}

/// One (cc, peer group)'s sockets.
struct Group {
    roles: [u64; ROLES.len()],
    /// The goodput of the senders inflated now: how much traffic the inflated paths carry.
    inflated_goodput: f64,
    /// The senders' distributions.
    hists: Hists,
}

impl PerCc {
    fn new(name: &str, groups: usize) -> PerCc {
        PerCc {
            name: name.to_string(),
            bbr: is_bbr(name),
            by_state: [[0; PHASES.len()]; STATES],
            inflated: 0,
            groups: (0..groups).map(|_| None).collect(),
        }
    }

    /// Counts one socket whose peer is in group `group`; `loopback` counts loopback sockets as
    /// any other (the rule's `--loopback`). The hot path: once per socket per scrape.
    #[inline]
    fn add(&mut self, s: &SocketView, group: usize, loopback: bool) {
        self.by_state[s.record.state as usize % STATES][phase_index(s.derived.phase, self.bbr)] += 1;
        self.inflated += u64::from(s.derived.inflated);
        let role = s.role(loopback);
        let g = self.groups[group].get_or_insert_with(|| Group {
            roles: [0; ROLES.len()],
            inflated_goodput: 0.0,
            hists: Hists::new(),
        });
        g.roles[role_index(role)] += 1;
        if role == Role::Sender {
            g.hists.observe(&values(s));
            if s.derived.inflated {
                g.inflated_goodput += s.derived.rates.goodput_bytes_per_sec.unwrap_or(0.0);
            }
        }
    }
}

/// Every open socket counted into its congestion control's accumulator, sorted by cc name.
fn per_cc(sockets: impl IntoIterator<Item = SocketView>, groups: &PeerGroups, loopback: bool) -> Vec<PerCc> {
    // Per-cc accumulators found by a short linear scan: a host has a handful of algorithms,
    // and this loop runs once per socket (100k sockets in 10-15 ms, see examples/scrape_bench.rs).
    let n_groups = groups.len() + 1;
    let mut ccs: Vec<PerCc> = Vec::new();
    let mut last = 0;
    for s in sockets {
        let cc = s.record.cc_name();
        if ccs.get(last).is_none_or(|c| c.name != cc) {
            last = match ccs.iter().position(|c| c.name == cc) {
                Some(i) => i,
                None => {
                    ccs.push(PerCc::new(cc, n_groups));
                    ccs.len() - 1
                }
            };
        }
        ccs[last].add(&s, groups.index(s.record.peer.ip()), loopback);
    }
    ccs.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    ccs
}

/// The five per-(cc, peer_group) histograms.
struct Hists {
    srtt: LiveHist,
    min_rtt: LiveHist,
    ratio: LiveHist,
    bbr_bw: LiveHist,
    delivery: LiveHist,
}

impl Hists {
    fn new() -> Hists {
        use live_hist::{RATE, RATIO, RTT};
        Hists {
            srtt: LiveHist::new(RTT),
            min_rtt: LiveHist::new(RTT),
            ratio: LiveHist::new(RATIO),
            bbr_bw: LiveHist::new(RATE),
            delivery: LiveHist::new(RATE),
        }
    }

    /// Adds one socket's values; a value the socket does not have is not observed.
    #[inline]
    fn observe(&mut self, v: &Values) {
        let pairs = [
            (&mut self.srtt, v.srtt),
            (&mut self.min_rtt, v.min_rtt),
            (&mut self.ratio, v.ratio),
            (&mut self.bbr_bw, v.bbr_bw),
            (&mut self.delivery, v.delivery),
        ];
        for (hist, val) in pairs {
            if let Some(x) = val {
                hist.observe(x);
            }
        }
    }
}

/// The values the live histograms observe, in the units the metrics use.
struct Values {
    srtt: Option<f64>,
    min_rtt: Option<f64>,
    ratio: Option<f64>,
    bbr_bw: Option<f64>,
    delivery: Option<f64>,
}

fn values(s: &SocketView) -> Values {
    use bbrtop_core::columns::{BBR_BW, DELIVERY, INFLATION, MIN_RTT, SRTT};
    Values {
        srtt: SRTT.base_value(s),
        min_rtt: MIN_RTT.base_value(s),
        ratio: INFLATION.base_value(s),
        bbr_bw: BBR_BW.base_value(s),
        delivery: DELIVERY.base_value(s),
    }
}

type Enc<'a> = DescriptorEncoder<'a>;

type HistPick = fn(&Group) -> &LiveHist;

const NO_LABELS: [(&str, &str); 0] = [];

/// The family's descriptor, its name, help and type from the catalog; `kind` is what the
/// caller encodes, held to the declaration.
fn descriptor<'e>(enc: &'e mut Enc, f: &Family, kind: Kind) -> Result<MetricEncoder<'e>, std::fmt::Error> {
    debug_assert_eq!(f.kind, kind, "{} is declared a {:?}", f.name, f.kind);
    let t = match kind {
        Kind::Counter => MetricType::Counter,
        Kind::Gauge => MetricType::Gauge,
        // Retyped after encoding: prometheus-client has no gauge histogram.
        Kind::Histogram | Kind::GaugeHistogram => MetricType::Histogram,
    };
    enc.encode_descriptor(f.descriptor_name(), f.help, None, t)
}

fn gauges<L: EncodeLabelSet, V: prometheus_client::encoding::EncodeGaugeValue>(
    enc: &mut Enc,
    f: &Family,
    rows: impl IntoIterator<Item = (L, V)>,
) -> std::fmt::Result {
    let mut m = descriptor(enc, f, Kind::Gauge)?;
    for (l, v) in rows {
        m.encode_family(&l)?.encode_gauge(&v)?;
    }
    Ok(())
}

fn counters<L: EncodeLabelSet, V: EncodeCounterValue>(
    enc: &mut Enc,
    f: &Family,
    rows: impl IntoIterator<Item = (L, V)>,
) -> std::fmt::Result {
    let mut m = descriptor(enc, f, Kind::Counter)?;
    for (l, v) in rows {
        m.encode_family(&l)?.encode_counter::<NoLabelSet, _, u64>(&v, None)?;
    }
    Ok(())
}

/// Classic histograms (closed flows').
fn histograms<'h, L: EncodeLabelSet + 'h>(
    enc: &mut Enc,
    f: &Family,
    rows: impl IntoIterator<Item = (L, &'h Hist)>,
) -> std::fmt::Result {
    let mut m = descriptor(enc, f, Kind::Histogram)?;
    for (l, h) in rows {
        m.encode_family(&l)?.encode_histogram::<NoLabelSet>(h.sum(), h.count(), &h.buckets(), None)?;
    }
    Ok(())
}

/// Histograms with native buckets, and the classic ones beside them where a row's flag says so
/// (the live distributions always). Text formats carry the classic ones only, so every row of a
/// text scrape must have them.
fn live_histograms<'h, L: EncodeLabelSet + 'h>(
    enc: &mut Enc,
    f: &Family,
    rows: impl IntoIterator<Item = (L, &'h LiveHist, bool)>,
) -> std::fmt::Result {
    // Both kinds carry native buckets: the open sockets' and the response times'.
    let kind = if f.kind.is_histogram() { f.kind } else { Kind::Histogram };
    let mut m = descriptor(enc, f, kind)?;
    for (l, h, classic) in rows {
        let n = h.native();
        let native = NativeHistogram {
            schema: live_hist::SCHEMA,
            zero_threshold: live_hist::ZERO_THRESHOLD,
            zero_count: n.zero_count,
            negative: NativeHistogramBuckets { spans: &[], deltas: &[] },
            positive: NativeHistogramBuckets { spans: &n.spans, deltas: &n.deltas },
            created: None,
        };
        let buckets = if classic { h.classic() } else { Vec::new() };
        m.encode_family(&l)?.encode_histogram_with_native::<NoLabelSet>(
            h.sum(),
            h.count(),
            &buckets,
            None,
            native,
        )?;
    }
    Ok(())
}

/// Each (cc, peer group) that has sockets, sorted by names.
type ByGroup<'s> = Vec<((&'s str, &'s str), &'s Group)>;

fn by_group<'s>(ccs: &'s [PerCc], groups: &'s PeerGroups) -> ByGroup<'s> {
    let mut out: ByGroup = Vec::new();
    for c in ccs {
        for (g, group) in c.groups.iter().enumerate() {
            if let Some(group) = group {
                out.push(((c.name.as_str(), groups.name(g)), group));
            }
        }
    }
    out.sort_unstable_by_key(|(k, _)| *k);
    out
}

impl Collector for Rendered {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let s = &self.scrape;
        let (snap, groups) = (&s.snap, &s.groups);
        // A scrape reads every socket: each view is derived as it is counted, so a scrape of
        // 100k sockets never holds 100k views (the opt-in per-socket and per-pod series below
        // keep them for their own passes).
        let ccs = per_cc(snap.sockets.iter(), groups, snap.rule.loopback);
        let by_group = by_group(&ccs, groups);
        encode_sockets(&mut enc, &ccs)?;
        encode_roles(&mut enc, &by_group)?;
        encode_histograms(&mut enc, &by_group)?;
        encode_inflation(&mut enc, &ccs, snap)?;
        encode_inflated_goodput(&mut enc, &by_group)?;
        encode_closed(&mut enc, &snap.closed_by_cc)?;
        encode_totals(&mut enc, &snap.totals)?;
        let form = responses::Form { native: self.native, classic_per_peer: s.response_classic };
        responses::encode(&mut enc, &snap.totals, form)?;
        encode_ecn(&mut enc, &snap.by_cc)?;
        let views = if s.top_k > 0 || s.by_pod_namespace { snap.sockets.to_vec() } else { Vec::new() };
        if s.top_k > 0 {
            encode_top_k(&mut enc, &views, groups, s.top_k.min(TOP_K_CAP))?;
        }
        if s.by_pod_namespace {
            pods::encode(&mut enc, &views)?;
        }
        // Self-metrics: collector health, netlink and eBPF counters, pushes, build info.
        encode_collectors(&mut enc, &snap.collectors)?;
        encode_collector_totals(&mut enc, &snap.collectors)?;
        encode_posts(&mut enc, &s.posts)?;
        if let Some(p) = &s.process {
            encode_process(&mut enc, p)?;
        }
        if let Some(bytes) = s.hindsight_memory_bytes {
            gauges(&mut enc, &catalog::HINDSIGHT_MEMORY, [(NO_LABELS, bytes as f64)])?;
        }
        if let Some(o) = &s.otlp {
            encode_otlp(&mut enc, o)?;
        }
        if let Some(e) = &s.experiment {
            experiment::encode(&mut enc, e)?;
        }
        if let Some(bytes) = s.hindsight_spool_bytes {
            gauges(&mut enc, &catalog::HINDSIGHT_SPOOL, [(NO_LABELS, bytes as f64)])?;
        }
        encode_build_info(&mut enc)
    }
}

/// The counter of each [`Count`] as the encoder names it (without `_total`, which it appends),
/// and its help.
pub fn count_metric(c: Count) -> (&'static str, &'static str) {
    let f = catalog::count_family(c);
    (f.descriptor_name(), f.help)
}

/// The counters per (cc, peer group): each live socket's growth at every poll and a closed
/// socket's last, so they never fall when sockets close (the engine's `totals`).
fn encode_totals(enc: &mut Enc, totals: &[CcTotals]) -> std::fmt::Result {
    for c in Count::ALL {
        // The labels of one bucket: `asn` and `country` where their database is given, `arm` for
        // an experiment's sockets.
        let rows = totals.iter().map(|t| (t.key().labels(), t.counts[c]));
        counters(enc, catalog::count_family(c), rows)?;
    }
    Ok(())
}

/// ECN per cc, from the snapshot's aggregates: sockets that negotiated it, and the CE-marked
/// fraction of what the open sockets delivered (a ratio of two live sums, hence a gauge).
fn encode_ecn(enc: &mut Enc, by_cc: &[CcAggregate]) -> std::fmt::Result {
    gauges(
        enc,
        &catalog::ECN_SOCKETS,
        by_cc.iter().map(|a| ([("cc", a.cc.as_str())], a.ecn_sockets as u64)),
    )?;
    gauges(
        enc,
        &catalog::CE_MARKED,
        by_cc.iter().filter_map(|a| Some(([("cc", a.cc.as_str())], a.ce_marked_fraction?))),
    )
}

/// `bbrtop_sockets`: one series per (cc, state, phase) that has sockets: every open socket.
fn encode_sockets(enc: &mut Enc, ccs: &[PerCc]) -> std::fmt::Result {
    let mut by_state: Vec<([(&str, &str); 3], u64)> = Vec::new();
    for c in ccs {
        for st in TcpState::ALL {
            for (p, label) in PHASES.iter().enumerate() {
                let n = c.by_state[st as usize % STATES][p];
                if n > 0 {
                    by_state.push(([("cc", c.name.as_str()), ("state", st.label()), ("phase", label)], n));
                }
            }
        }
    }
    gauges(enc, &catalog::SOCKETS, by_state)
}

/// `bbrtop_sockets_by_role`: each (cc, peer group) that has sockets, every role (0 included).
fn encode_roles(enc: &mut Enc, by_group: &ByGroup) -> std::fmt::Result {
    let rows = by_group.iter().flat_map(|((cc, pg), g)| {
        ROLES.iter().zip(g.roles).map(|(role, n)| ([("cc", *cc), ("peer_group", *pg), ("role", *role)], n))
    });
    gauges(enc, &catalog::SOCKETS_BY_ROLE, rows)
}

/// The five histograms of the senders, one series per (cc, peer group) with observations.
fn encode_histograms(enc: &mut Enc, by_group: &ByGroup) -> std::fmt::Result {
    use catalog::{BBR_BW, DELIVERY, INFLATION, MIN_RTT, SRTT};
    let fams: [(&Family, HistPick); 5] = [
        (&SRTT, |h| &h.hists.srtt),
        (&MIN_RTT, |h| &h.hists.min_rtt),
        (&INFLATION, |h| &h.hists.ratio),
        (&BBR_BW, |h| &h.hists.bbr_bw),
        (&DELIVERY, |h| &h.hists.delivery),
    ];
    for (family, pick) in fams {
        let rows = by_group.iter().filter_map(|(k, g)| {
            let h = pick(g);
            (h.count() > 0).then_some(([("cc", k.0), ("peer_group", k.1)], h, true))
        });
        live_histograms(enc, family, rows)?;
    }
    Ok(())
}

/// The goodput the inflated senders carry, per (cc, peer group) with sockets: what the page
/// (`BbrtopInflatedTrafficHigh`) weighs, since an inflated path that carries little traffic
/// hurts little.
fn encode_inflated_goodput(enc: &mut Enc, by_group: &ByGroup) -> std::fmt::Result {
    gauges(
        enc,
        &catalog::INFLATED_GOODPUT,
        by_group.iter().map(|((cc, pg), g)| ([("cc", *cc), ("peer_group", *pg)], g.inflated_goodput)),
    )
}

/// Inflated sockets and firing alerts per cc (0 for a cc with open sockets or onsets but none of
/// them), and the inflation onsets per cc since start.
fn encode_inflation(enc: &mut Enc, ccs: &[PerCc], snap: &Snapshot) -> std::fmt::Result {
    let mut inflated: BTreeMap<&str, u64> = ccs.iter().map(|c| (c.name.as_str(), c.inflated)).collect();
    let mut firing: BTreeMap<&str, u64> = ccs.iter().map(|c| (c.name.as_str(), 0)).collect();
    // Firing alerts per cc, from the engine's alert list.
    for a in snap.firing() {
        *firing.entry(a.cc.as_str()).or_default() += 1;
    }
    let onsets: BTreeMap<&str, u64> =
        snap.inflation_onsets_total.iter().map(|(cc, n)| (cc.as_str(), *n)).collect();
    for cc in onsets.keys() {
        inflated.entry(cc).or_default();
        firing.entry(cc).or_default();
    }
    gauges(enc, &catalog::SOCKETS_INFLATED, by_cc(&inflated))?;
    gauges(enc, &catalog::ALERTS_FIRING, by_cc(&firing))?;
    counters(enc, &catalog::INFLATION_ONSETS, by_cc(&onsets))
}

/// One series per cc, labelled `cc`.
fn by_cc<'a>(m: &'a BTreeMap<&str, u64>) -> impl Iterator<Item = ([(&'static str, &'a str); 1], u64)> {
    m.iter().map(|(cc, n)| ([("cc", *cc)], *n))
}

/// Closed flows per cc: present only with eBPF, so absent (not zero) tells "off" from "no flows".
fn encode_closed(enc: &mut Enc, closed: &[ClosedAggregate]) -> std::fmt::Result {
    if closed.is_empty() {
        return Ok(());
    }
    counters(enc, &catalog::CLOSED_FLOWS, closed.iter().map(|c| ([("cc", c.cc.as_str())], c.count)))?;
    histograms(
        enc,
        &catalog::CLOSED_SRTT,
        closed.iter().map(|c| ([("cc", c.cc.as_str())], &c.srtt_seconds)),
    )?;
    histograms(
        enc,
        &catalog::CLOSED_THROUGHPUT,
        closed.iter().map(|c| ([("cc", c.cc.as_str())], &c.throughput_bytes_per_second)),
    )
}

/// The `k` sockets with the highest inflation ratio, highest first (ties by cookie).
fn most_inflated(sockets: &[SocketView], k: usize) -> Vec<&SocketView> {
    let mut worst: Vec<(&SocketView, f64)> =
        sockets.iter().filter_map(|s| Some((s, s.derived.inflation_ratio?))).collect();
    let by_ratio = |a: &(&SocketView, f64), b: &(&SocketView, f64)| {
        b.1.total_cmp(&a.1).then(a.0.record.cookie.cmp(&b.0.record.cookie))
    };
    if worst.len() > k {
        worst.select_nth_unstable_by(k, by_ratio);
        worst.truncate(k);
    }
    worst.sort_unstable_by(by_ratio);
    worst.into_iter().map(|(s, _)| s).collect()
}

/// The `k` sockets with the highest inflation ratio, as per-socket gauges: one family for each
/// column of the catalog that names a metric.
fn encode_top_k(enc: &mut Enc, sockets: &[SocketView], groups: &PeerGroups, k: usize) -> std::fmt::Result {
    let rows: Vec<([(&str, String); 5], &SocketView)> =
        most_inflated(sockets, k).into_iter().map(|s| (socket_labels(s, groups), s)).collect();
    for c in bbrtop_core::columns::ALL {
        let Some(f) = catalog::per_socket(c) else { continue };
        gauges(enc, &f, rows.iter().filter_map(|(l, s)| Some((l.as_slice(), c.base_value(s)?))))?;
    }
    Ok(())
}

/// One socket's labels in the per-socket series.
fn socket_labels(s: &SocketView, groups: &PeerGroups) -> [(&'static str, String); 5] {
    let r = &s.record;
    [
        ("cookie", r.cookie.to_string()),
        ("local", r.local.to_string()),
        ("peer", r.peer.to_string()),
        ("cc", r.cc_name().to_string()),
        ("peer_group", groups.group(r.peer.ip()).to_string()),
    ]
}

/// Each collector's health and polls, one series per collector.
fn encode_collectors(enc: &mut Enc, cs: &[CollectorStatus]) -> std::fmt::Result {
    // Enabled and healthy apart: a collector that is off by design (eBPF not built, or not
    // allowed here) is not a failing one, and an alert on `up == 0` must not page for it.
    gauges(enc, &catalog::COLLECTOR_ENABLED, by_collector(cs, |c| u64::from(c.health.enabled())))?;
    gauges(
        enc,
        &catalog::COLLECTOR_UP,
        cs.iter()
            .filter(|c| c.health.enabled())
            .map(|c| ([("collector", c.name)], u64::from(c.health.last_success()))),
    )?;
    // One series per collector that is off or degraded; the reason label comes from a fixed
    // set (the human line is in the snapshot and the TUI), so it stays one series per collector.
    gauges(
        enc,
        &catalog::COLLECTOR_DEGRADED,
        cs.iter().filter_map(|c| {
            Some(([("collector", c.name), ("reason", c.health.reason()?.cause.label())], 1u64))
        }),
    )?;
    // Each eBPF feature, on or off on this kernel (the feature set and reasons are fixed).
    let features = || cs.iter().flat_map(|c| c.features.iter());
    gauges(
        enc,
        &catalog::BPF_FEATURE_ENABLED,
        features().map(|f| ([("feature", f.feature.label())], u64::from(f.off.is_none()))),
    )?;
    gauges(
        enc,
        &catalog::BPF_FEATURE_DISABLED,
        features().filter_map(|f| {
            Some(([("feature", f.feature.label()), ("reason", f.off.as_ref()?.cause.label())], 1u64))
        }),
    )?;
    gauges(enc, &catalog::COLLECTOR_LAST_DURATION, by_collector(cs, |c| c.last_duration_seconds))?;
    counters(enc, &catalog::COLLECTOR_POLLS, by_collector(cs, |c| c.polls_total))?;
    counters(enc, &catalog::COLLECTOR_ERRORS, by_collector(cs, |c| c.errors_total))?;
    gauges(
        enc,
        &catalog::COLLECTOR_LAST_SUCCESS,
        cs.iter().filter_map(|c| {
            let at = c.last_success_at?.duration_since(std::time::UNIX_EPOCH).ok()?;
            Some(([("collector", c.name)], at.as_secs_f64()))
        }),
    )
}

/// `process_*`, as the Prometheus client libraries name them.
fn encode_process(enc: &mut Enc, p: &super::process::Process) -> std::fmt::Result {
    let one = |v| [(NO_LABELS, v)];
    counters(enc, &catalog::PROCESS_CPU, [(NO_LABELS, p.cpu_seconds)])?;
    gauges(enc, &catalog::PROCESS_RESIDENT, one(p.resident_memory_bytes))?;
    gauges(enc, &catalog::PROCESS_VIRTUAL, one(p.virtual_memory_bytes))?;
    gauges(enc, &catalog::PROCESS_OPEN_FDS, one(p.open_fds))?;
    if let Some(max) = p.max_fds {
        gauges(enc, &catalog::PROCESS_MAX_FDS, one(max))?;
    }
    gauges(enc, &catalog::PROCESS_START_TIME, [(NO_LABELS, p.start_time_seconds)])
}

/// One series per collector, labelled `collector`.
fn by_collector<V>(
    cs: &[CollectorStatus],
    f: fn(&CollectorStatus) -> V,
) -> impl Iterator<Item = ([(&'static str, &'static str); 1], V)> {
    cs.iter().map(move |c| ([("collector", c.name)], f(c)))
}

/// Netlink and eBPF counters, summed over the collectors, as unlabelled (or kind-labelled) series.
fn encode_collector_totals(enc: &mut Enc, cs: &[CollectorStatus]) -> std::fmt::Result {
    let sum = |f: fn(&CollectorStatus) -> u64| cs.iter().map(f).sum::<u64>();
    counters(enc, &catalog::DUMP_INTR_RETRIES, [(NO_LABELS, sum(|c| c.dump_intr_retries_total))])?;
    counters(
        enc,
        &catalog::TCP_INFO_SIZE_MISMATCH,
        [
            ([("kind", "short")], sum(|c| c.tcp_info_short_total)),
            ([("kind", "long")], sum(|c| c.tcp_info_long_total)),
        ],
    )?;
    gauges(
        enc,
        &catalog::BPF_PROGRAMS_ATTACHED,
        [(NO_LABELS, sum(|c| u64::from(c.programs_attached.unwrap_or(0))))],
    )?;
    counters(enc, &catalog::BPF_RINGBUF_LOST, [(NO_LABELS, sum(|c| c.ringbuf_lost_total.unwrap_or(0)))])?;
    counters(
        enc,
        &catalog::WALK_RECORDS_DROPPED,
        [(NO_LABELS, sum(|c| c.walk_records_dropped_total.unwrap_or(0)))],
    )?;
    counters(
        enc,
        &catalog::WALK_RECORDS_REFILLED,
        [(NO_LABELS, sum(|c| c.walk_records_refilled_total.unwrap_or(0)))],
    )?;
    counters(
        enc,
        &catalog::BPF_UNDECODABLE,
        [(NO_LABELS, sum(|c| c.undecodable_events_total.unwrap_or(0)))],
    )?;
    // For tcp_destroy_sock, each miss is a close that has no record (nor a ring-buffer loss).
    counters(
        enc,
        &catalog::BPF_RECURSION_MISSES,
        cs.iter().flat_map(|c| c.recursion_misses_total.iter().map(|(p, n)| ([("program", *p)], *n))),
    )
}

/// POSTs to Alertmanager by result; absent when no Alertmanager is configured.
fn encode_posts(enc: &mut Enc, posts: &[((String, &str), u64)]) -> std::fmt::Result {
    if posts.is_empty() {
        return Ok(());
    }
    counters(
        enc,
        &catalog::ALERTMANAGER_POSTS,
        posts.iter().map(|((am, res), n)| ([("alertmanager", am.as_str()), ("result", *res)], *n)),
    )
}

/// The OTLP shipper: every closed flow it took is sent or dropped, by reason.
fn encode_otlp(enc: &mut Enc, o: &OtlpCounts) -> std::fmt::Result {
    counters(enc, &catalog::OTLP_SENT, [(NO_LABELS, o.sent)])?;
    counters(enc, &catalog::OTLP_SENT_BYTES, [(NO_LABELS, o.sent_bytes)])?;
    counters(enc, &catalog::OTLP_DROPPED, o.dropped.iter().map(|(r, n)| ([("reason", *r)], *n)))?;
    counters(enc, &catalog::OTLP_FAILED_REQUESTS, [(NO_LABELS, o.failed_requests)])?;
    gauges(enc, &catalog::OTLP_QUEUE, [(NO_LABELS, o.queued as f64)])
}

fn encode_build_info(enc: &mut Enc) -> std::fmt::Result {
    let features = if cfg!(feature = "bpf") { "bpf" } else { "none" };
    gauges(
        enc,
        &catalog::BUILD_INFO,
        [(
            [
                ("version", env!("CARGO_PKG_VERSION")),
                ("rustc", env!("BBRTOP_RUSTC_VERSION")),
                ("features", features),
            ],
            1u64,
        )],
    )
}

pub mod catalog;
mod experiment;
mod live_hist;
mod pods;
mod responses;
#[cfg(test)]
mod series_tests;
#[cfg(test)]
mod tests;
