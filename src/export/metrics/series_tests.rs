//! The series budget: what a scrape costs in series, counted in real scrapes of a reference host
//! and held to docs/export-and-alert.md's figures, which are the formula of the code's own constants.

use super::live_hist::{Ladder, RATE, RATIO, RESPONSE, RTT};
use super::tests::{bare, rec, snapshot, value};
use super::*;
use bbrtop_core::model::Tally;
use bbrtop_core::snapshot::responses::{Responses, SizeClass};
use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::{Metric, MetricFamily};
use prost::Message;

const GROUPS: &str = "groups: {edge: [10.1.0.0/16], transit: [10.2.0.0/16]}";
/// A peer in each of the three groups: edge, transit, other.
const PEERS: [&str; 3] = ["10.1.0.2", "10.2.0.2", "192.0.2.2"];
const CCS: [&str; 2] = ["bbr", "cubic"];
const COUNTRIES: [&str; 20] = [
    "US", "DE", "FR", "GB", "JP", "BR", "IN", "NL", "SE", "PL", "ES", "IT", "CA", "AU", "KR", "SG", "ZA",
    "MX", "AR", "TR",
];
/// A response of each size class.
const SIZES: [u64; 4] = [10_000, 100_000, 1_000_000, 5_000_000];

/// docs/export-and-alert.md's reference host ("Series per host"): a BBR and a CUBIC sender towards each of 3 peer groups, and the
/// totals the engine keeps with both databases and `--peer-groups.top 20`: per (cc, peer group),
/// the top 20 ASs, each in a country of its own, and `other` in `other`, 21 pairs, each with
/// responses of every size class.
fn reference_host() -> Arc<Snapshot> {
    let recs = CCS
        .iter()
        .flat_map(|cc| PEERS.iter().map(move |p| (cc, p)))
        .zip(1u64..)
        .map(|((cc, p), cookie)| rec(cookie, cc, &format!("{p}:{}", 40_000 + cookie), 30_000, 10_000))
        .collect();
    let mut snap = (*snapshot(recs)).clone();
    snap.totals = Vec::new();
    for cc in CCS {
        for pg in ["edge", "other", "transit"] {
            for i in 0..=COUNTRIES.len() {
                let (asn, country) = match COUNTRIES.get(i) {
                    Some(c) => (format!("AS{}", 64_500 + i), c.to_string()),
                    None => ("other".into(), "other".into()),
                };
                let mut responses = Responses::default();
                for (k, bytes) in SIZES.into_iter().enumerate() {
                    responses.observe(bytes, 0.01 * (1 + i + k) as f64);
                }
                snap.totals.push(CcTotals {
                    cc: cc.into(),
                    peer_group: pg.into(),
                    asn: Some(asn),
                    country: Some(country),
                    arm: None,
                    counts: Tally::from_counts([(Count::BytesSent, 1_000 * (i as u64 + 1))]),
                    responses,
                });
            }
        }
    }
    Arc::new(snap)
}

fn scrape_of(snap: &Arc<Snapshot>, response_classic: bool) -> Scrape {
    Scrape {
        groups: Arc::new(PeerGroups::parse(GROUPS).expect("groups")),
        response_classic,
        ..bare(Arc::clone(snap))
    }
}

fn decode(mut body: &[u8]) -> Vec<MetricFamily> {
    let mut out = Vec::new();
    while !body.is_empty() {
        out.push(MetricFamily::decode_length_delimited(&mut body).expect("a delimited MetricFamily"));
    }
    out
}

/// Series per family of a text scrape: its sample lines, each under the `# TYPE` before it.
fn text_series(text: &str) -> BTreeMap<String, usize> {
    let (mut out, mut family) = (BTreeMap::new(), "");
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("# TYPE ") {
            family = t.split(' ').next().unwrap_or("");
        } else if !line.starts_with('#') && !line.is_empty() {
            *out.entry(family.to_string()).or_default() += 1;
        }
    }
    out
}

fn is_native(m: &Metric) -> bool {
    m.histogram
        .as_ref()
        .is_some_and(|h| h.schema != 0 || h.zero_threshold > 0.0 || !h.positive_span.is_empty())
}

/// Series per family of a protobuf scrape as a Prometheus with native histograms on stores them:
/// a native histogram is one series (the classic buckets beside it are dropped unless it is told
/// to keep them too), a classic one a series per bucket and its `_count` and `_sum`, else one.
fn protobuf_series(families: &[MetricFamily]) -> BTreeMap<String, usize> {
    let series = |m: &Metric| match &m.histogram {
        Some(h) if !is_native(m) => h.bucket.len() + 2,
        _ => 1,
    };
    families.iter().map(|f| (f.name.clone(), f.metric.iter().map(series).sum())).collect()
}

/// The families whose series grow with ccs, peer groups, ASs, countries and size classes.
fn scaling(family: &str) -> bool {
    live_histograms_names().any(|n| n == family)
        || [
            "bbrtop_sockets_by_role",
            "bbrtop_inflated_goodput_bytes_per_second",
            "bbrtop_response_delivery_seconds",
        ]
        .contains(&family)
        || Count::ALL.iter().any(|c| family == catalog::count_family(*c).name)
}

/// (the scaling families' series, the rest's) of one scrape.
fn split(series: &BTreeMap<String, usize>) -> (usize, usize) {
    let of = |s: bool| series.iter().filter(|(f, _)| scaling(f) == s).map(|(_, n)| n).sum();
    (of(true), of(false))
}

/// docs/export-and-alert.md's formula from the code's constants, for `ccs` ccs (half BBR) × `groups` peer
/// groups × `pairs` (AS, country) pairs × every size class: text, text with
/// `--metrics.response-histograms.classic`, and protobuf with native histograms.
fn formula(groups: usize, pairs: usize) -> [usize; 3] {
    // Each bound, +Inf, `_count` and `_sum`.
    let classic = |l: Ladder| l.bounds().count() + 3;
    let cubic = 2 * classic(RTT) + classic(RATIO) + classic(RATE);
    let bbr = cubic + classic(RATE);
    let (cells, sizes) = (CCS.len() * groups, SizeClass::ALL.len());
    let common = cells * (ROLES.len() + 1) + cells * pairs * Count::ALL.len();
    let live = groups * (cubic + bbr) + common;
    [
        live + cells * sizes * classic(RESPONSE),
        live + cells * pairs * sizes * classic(RESPONSE),
        groups * (2 * live_histograms_names().count() - 1) + common + cells * pairs * sizes,
    ]
}

/// The numbers of the sizing table row ("Series per host", docs/export-and-alert.md) that starts
/// with `label`, one per column.
fn readme_row(label: &str) -> Vec<usize> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/export-and-alert.md");
    let doc = std::fs::read_to_string(path).expect(path);
    let line =
        doc.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no row {label:?} in {path}"));
    let cells = line.split('|').map(str::trim).filter(|c| !c.is_empty()).skip(1);
    cells
        .map(|c| c.replace(',', "").parse().unwrap_or_else(|_| panic!("{label}: {c:?} is no number")))
        .collect()
}

/// The reference host's series, counted in its scrapes in each format, are the formula of the
/// ladders and labels, and the docs' figures; the rest and the whole stay within the budget
/// docs/export-and-alert.md states.
#[test]
fn a_reference_host_has_the_documented_series_count() {
    let snap = reference_host();
    let text = to_text_004(&render_openmetrics(scrape_of(&snap, false)));
    let classic = to_text_004(&render_openmetrics(scrape_of(&snap, true)));
    let proto = render_protobuf(scrape_of(&snap, false));
    let counted =
        [text_series(&text), text_series(&classic), protobuf_series(&decode(&proto))].map(|s| split(&s));
    let scaled = counted.map(|(n, _)| n);
    let bytes = [text.len(), classic.len(), proto.len()];
    println!("series (text, text with classic per AS, protobuf): {counted:?}, bytes {bytes:?}");
    assert_eq!(scaled, formula(PEERS.len(), COUNTRIES.len() + 1));
    assert_eq!(readme_row("| a reference host's series |"), scaled);
    let fleet = readme_row("| 500 such hosts |");
    assert_eq!(fleet, scaled.map(|n| 500 * n).to_vec());
    let (rest, budget) = (readme_row("| the rest, at most |"), readme_row("| the budget |"));
    for (i, (n, r)) in counted.iter().enumerate() {
        assert!(r <= &rest[i], "column {i}: {r} other series, over the docs' {}", rest[i]);
        assert!(n + r <= budget[i], "column {i}: {} series, over the budget {}", n + r, budget[i]);
    }
    // The budget bites: per AS in classic buckets is what it keeps out by default.
    assert!(scaled[1] > budget[0], "{scaled:?} {budget:?}");
}

/// Per AS and country, the response times are native histograms only; a text scrape sums them
/// over AS and country; the flag brings back each one's classic buckets; a row without AS or
/// country keeps its classic buckets beside the native ones, as the live distributions do.
#[test]
fn response_times_per_as_are_native_and_summed_in_text() {
    const NAME: &str = "bbrtop_response_delivery_seconds";
    let snap = reference_host();
    let text = to_text_004(&render_openmetrics(scrape_of(&snap, false)));
    assert!(!text.lines().any(|l| l.starts_with(NAME) && l.contains("asn=")), "per AS in text");
    let edge_bbr = |c: SizeClass| -> u64 {
        let rows = snap.totals.iter().filter(|t| t.cc == "bbr" && t.peer_group == "edge");
        rows.map(|t| t.responses.get(c).count()).sum()
    };
    assert_eq!(edge_bbr(SizeClass::UpTo2M), 21);
    let summed = value(&text, &format!(r#"{NAME}_count{{cc="bbr",peer_group="edge",size="le2MB"}}"#));
    assert_eq!(summed, Some(edge_bbr(SizeClass::UpTo2M) as f64));
    assert!(
        text.contains(
            r#"bbrtop_sent_bytes_total{cc="bbr",peer_group="edge",asn="AS64500",country="US"} 1000"#
        )
    );

    let responses =
        |body: &[u8]| decode(body).into_iter().find(|f| f.name == NAME).expect("the family").metric;
    let label = |m: &Metric, k: &str| m.label.iter().find(|l| l.name == k).map(|l| l.value.clone());
    let native = responses(&render_protobuf(scrape_of(&snap, false)));
    assert_eq!(native.len(), 2 * 3 * 21 * 4);
    for m in &native {
        assert!(label(m, "asn").is_some() && label(m, "country").is_some(), "{m:?}");
        let h = m.histogram.as_ref().expect("a histogram");
        assert!(is_native(m) && h.bucket.is_empty() && h.sample_count == 1, "{h:?}");
    }
    let with_flag = responses(&render_protobuf(scrape_of(&snap, true)));
    assert!(
        with_flag.iter().all(|m| is_native(m) && m.histogram.as_ref().is_some_and(|h| h.bucket.len() == 130))
    );
    let classic = to_text_004(&render_openmetrics(scrape_of(&snap, true)));
    let per_as =
        format!(r#"{NAME}_count{{cc="cubic",peer_group="other",asn="other",country="other",size="gt2MB"}}"#);
    assert_eq!(value(&classic, &per_as), Some(1.0));

    // Without the databases a row has neither label: classic buckets beside the native ones.
    let mut plain = (*snap).clone();
    plain.totals.retain(|t| t.asn.as_deref() == Some("other"));
    for t in &mut plain.totals {
        (t.asn, t.country) = (None, None);
    }
    let plain = responses(&render_protobuf(scrape_of(&Arc::new(plain), false)));
    assert_eq!(plain.len(), 2 * 3 * 4);
    assert!(
        plain.iter().all(|m| is_native(m) && m.histogram.as_ref().is_some_and(|h| h.bucket.len() == 130))
    );
}
