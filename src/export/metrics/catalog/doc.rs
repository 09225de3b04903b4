//! `docs/reference/metrics.md`, written from the catalog: a table of the families and one of
//! their labels' bounds.

use super::{Bound, Family, Kind, Unit, all};

const HEADER: &str = "# Metrics

Every family `bbrtop export` serves on `/metrics`, generated from the catalog
(`src/export/metrics/catalog.rs`); a test holds this file to it, and the shipped rules and
dashboards to its names. Names are as Prometheus stores them: counters end in `_total`; a
histogram's series add `_bucket`, `_sum` and `_count`. A `gaugehistogram` counts the sockets open
now, so its counts fall as they close: read it as a gauge, never with `rate()`. OpenMetrics writes
its count and sum as `_gcount` and `_gsum`; text 0.0.4, which has no such type, as a `histogram`'s
`_count` and `_sum`; protobuf types it `GAUGE_HISTOGRAM`, with native (schema 4) buckets beside the
classic ones. Every label's values are bounded: the second table says by what.
";

/// The whole document.
pub fn markdown() -> String {
    let families: Vec<Family> = all().collect();
    let mut out = String::from(HEADER);
    out.push_str(
        "\n| family | type | unit | labels | served | what |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for f in &families {
        let labels: Vec<String> = f.labels.iter().map(|l| format!("`{}`", l.name)).collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            f.name,
            kind(f.kind),
            unit(f.unit),
            labels.join(", "),
            f.served,
            f.help.replace('|', "\\|")
        ));
    }
    out.push_str("\n| label | values | families |\n| --- | --- | --- |\n");
    // One row per label and bound: `reason` means a different set in different families.
    let mut rows: Vec<(&str, String, Vec<&str>)> = Vec::new();
    for f in &families {
        for l in f.labels {
            let values = bound(l.bound);
            match rows.iter_mut().find(|(n, v, _)| *n == l.name && *v == values) {
                Some(row) => row.2.push(f.name),
                None => rows.push((l.name, values, vec![f.name])),
            }
        }
    }
    for (name, values, fams) in rows {
        let fams =
            if fams.len() == families.iter().filter(|f| f.labels.iter().any(|l| l.name == name)).count() {
                "every family with it".to_string()
            } else {
                fams.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            };
        out.push_str(&format!("| `{name}` | {values} | {fams} |\n"));
    }
    out
}

fn kind(k: Kind) -> &'static str {
    k.openmetrics()
}

fn unit(u: Unit) -> &'static str {
    match u {
        Unit::None => "",
        Unit::Seconds => "seconds",
        Unit::Bytes => "bytes",
        Unit::BytesPerSecond => "bytes/s",
        Unit::Ratio => "ratio",
    }
}

fn bound(b: Bound) -> String {
    match b {
        Bound::OneOf(values) => {
            let v: Vec<String> = values().iter().map(|v| format!("`{v}`")).collect();
            format!("one of {}", v.join(", "))
        }
        Bound::Set(words) => words.to_string(),
    }
}
