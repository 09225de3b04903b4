//! The catalog against real scrapes of a populated [`Scrape`](crate::export::metrics::Scrape), and
//! against its generated reference.

use super::super::tests::populated;
use super::super::{render_openmetrics, render_protobuf, to_text_004};
use super::*;
use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::{self as pb, MetricFamily};
use prost::Message;
use std::collections::{BTreeMap, BTreeSet};

/// Each family of an OpenMetrics text as (name as Prometheus stores it, `# TYPE`), with the
/// label names and values of its samples.
struct Served {
    kind: String,
    labels: BTreeMap<String, BTreeSet<String>>,
}

fn served(om: &str) -> BTreeMap<String, Served> {
    let mut out: BTreeMap<String, Served> = BTreeMap::new();
    // The stored name of each family the text declares (counters get `_total`).
    let mut by_descriptor: Vec<(String, String)> = Vec::new();
    for line in om.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name type");
            let stored = if kind == "counter" { format!("{name}_total") } else { name.to_string() };
            out.insert(stored.clone(), Served { kind: kind.to_string(), labels: BTreeMap::new() });
            by_descriptor.push((name.to_string(), stored));
        } else if !line.starts_with('#') {
            let (series, labels) = match line.split_once('{') {
                Some((s, rest)) => (s, rest.rsplit_once('}').expect("closing brace").0),
                None => (line.split(' ').next().expect("a name"), ""),
            };
            // The sample's family: the longest declared name its series starts with.
            let (_, stored) = by_descriptor
                .iter()
                .filter(|(d, _)| series.starts_with(d.as_str()))
                .max_by_key(|(d, _)| d.len())
                .unwrap_or_else(|| panic!("{series} belongs to no declared family"));
            let fam = out.get_mut(stored).expect("declared");
            for pair in labels.split("\",").filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once("=\"").expect("label=\"value\"");
                fam.labels.entry(k.to_string()).or_default().insert(v.trim_end_matches('"').to_string());
            }
        }
    }
    out
}

/// Every family a populated scrape serves is in the catalog with the type the catalog
/// declares, carries only declared labels, and each label's values within a listed bound; and
/// the populated scrape serves every family the catalog declares, so none is dead.
#[test]
fn a_populated_scrape_serves_exactly_the_catalog() {
    let om = render_openmetrics(populated());
    let served = served(&om);
    for (name, s) in &served {
        let f = family_of(name).unwrap_or_else(|| panic!("{name} is served but not in the catalog"));
        assert_eq!(f.name, name.as_str(), "{name} is served under a name the catalog does not declare");
        assert_eq!(s.kind, f.kind.openmetrics(), "{name}'s type");
        for (label, values) in &s.labels {
            if label == "le" && f.kind.is_histogram() {
                continue;
            }
            let l = f.labels.iter().find(|l| l.name == label);
            let l = l.unwrap_or_else(|| panic!("{name} carries {label}, which the catalog does not declare"));
            if let Bound::OneOf(allowed) = l.bound {
                let allowed = allowed();
                for v in values {
                    assert!(
                        allowed.contains(&v.as_str()),
                        "{name}{{{label}=\"{v}\"}}: not one of {allowed:?}"
                    );
                }
            }
        }
    }
    let declared: BTreeSet<&str> = all().map(|f| f.name).collect();
    let unserved: Vec<&&str> = declared.iter().filter(|n| !served.contains_key(**n)).collect();
    assert!(unserved.is_empty(), "declared but not served by the populated scrape: {unserved:?}");
}

/// The protobuf scrape's families carry the catalog's types and help: its histograms of the
/// open sockets are `GAUGE_HISTOGRAM`s, the response times `HISTOGRAM`s.
#[test]
fn the_protobuf_scrape_carries_the_catalogs_types_and_help() {
    let body = render_protobuf(populated());
    let mut rest = &body[..];
    let mut families: Vec<MetricFamily> = Vec::new();
    while !rest.is_empty() {
        families.push(MetricFamily::decode_length_delimited(&mut rest).expect("a delimited MetricFamily"));
    }
    assert_eq!(families.len(), all().count(), "every family");
    for f in &families {
        let c = family_of(&f.name).unwrap_or_else(|| panic!("{} is not in the catalog", f.name));
        let kind = match c.kind {
            Kind::Counter => pb::MetricType::Counter,
            Kind::Gauge => pb::MetricType::Gauge,
            Kind::Histogram => pb::MetricType::Histogram,
            Kind::GaugeHistogram => pb::MetricType::GaugeHistogram,
        };
        assert_eq!(f.r#type, kind as i32, "{}'s type", f.name);
        assert_eq!(f.help, c.help, "{}'s help", f.name);
    }
}

/// Text 0.0.4 names the same families, in the catalog's names.
#[test]
fn text_004_declares_the_catalogs_names() {
    let text = to_text_004(&render_openmetrics(populated()));
    let names: BTreeSet<&str> =
        text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(names, all().map(|f| f.name).collect());
}

/// Names are unique, follow the conventions (prefix, base unit, `_total` for counters only),
/// and no family declares a label twice.
#[test]
fn names_follow_the_conventions() {
    let mut seen = BTreeSet::new();
    for f in all() {
        assert!(seen.insert(f.name), "{} declared twice", f.name);
        assert!(f.name.starts_with("bbrtop_") || f.name.starts_with("process_"), "{}", f.name);
        let base = f.name.strip_suffix("_total");
        assert_eq!(base.is_some(), f.kind == Kind::Counter, "{}: `_total` is for counters", f.name);
        assert!(base.unwrap_or(f.name).ends_with(f.unit.suffix()), "{} is not in {:?}", f.name, f.unit);
        let labels: BTreeSet<&str> = f.labels.iter().map(|l| l.name).collect();
        assert_eq!(labels.len(), f.labels.len(), "{} declares a label twice", f.name);
        assert!(!f.help.is_empty() && !f.served.is_empty(), "{}", f.name);
    }
}

/// A histogram's series resolve to their family; a gauge's do not take histogram suffixes.
#[test]
fn series_resolve_to_their_family() {
    assert_eq!(family_of("bbrtop_srtt_seconds_bucket").map(|f| f.name), Some("bbrtop_srtt_seconds"));
    assert_eq!(
        family_of("bbrtop_response_delivery_seconds_count").map(|f| f.name),
        Some("bbrtop_response_delivery_seconds")
    );
    assert_eq!(family_of("bbrtop_sockets").map(|f| f.name), Some("bbrtop_sockets"));
    assert!(family_of("bbrtop_sockets_count").is_none());
    assert!(family_of("bbrtop_closed_flows").is_none(), "a counter is stored with _total");
}

/// `docs/reference/metrics.md` is the generator's output.
#[test]
fn the_reference_is_generated_from_the_catalog() {
    let want = markdown();
    crate::generated_docs::hold(
        "docs/reference/metrics.md",
        &want,
        "cargo test -p bbrtop --lib export::metrics::catalog",
    );
}
