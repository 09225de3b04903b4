//! The shipped Prometheus rules and Grafana dashboards read only what the exporter serves: every
//! metric name in their queries is a family of the catalog (a histogram's `_bucket`, `_sum` and
//! `_count` being its family's) or a recording rule the rules define. Unprivileged and fast:
//! files and the catalog only.

use bbrtop::export::metrics::catalog;
use serde_json::Value as Json;
use serde_norway::Value as Yaml;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Series the rules read that the user records, on purpose: the per-peer-group page threshold
/// (`bbrtop-recording.rules.yml`, "a recording rule of yours"), absent unless set.
const USER_RECORDED: [&str; 1] = ["peer_group:bbrtop_inflated_goodput_bytes_per_second:page_threshold"];

/// The files of `dir` (under the repository) whose names end in `ext`, sorted.
fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(Path::new(ROOT).join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.to_str().is_some_and(|n| n.ends_with(ext)))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no {ext} in {dir}");
    out
}

/// Each rule of every rules file: (file, what names it, its expression, what it records).
struct Rule {
    file: String,
    name: String,
    expr: String,
    record: Option<String>,
}

fn rules() -> Vec<Rule> {
    let mut out = Vec::new();
    for path in files("dashboards/prometheus", ".yml") {
        let text = fs::read_to_string(&path).expect("read");
        let doc: Yaml = serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let groups = doc.get("groups").and_then(Yaml::as_sequence).map(Vec::as_slice).unwrap_or(&[]);
        for rule in
            groups.iter().flat_map(|g| g.get("rules").and_then(Yaml::as_sequence).into_iter().flatten())
        {
            let s = |k: &str| rule.get(k).and_then(Yaml::as_str).map(String::from);
            out.push(Rule {
                file: path.file_name().unwrap().to_string_lossy().into(),
                name: s("alert").or(s("record")).unwrap_or_default(),
                expr: s("expr").unwrap_or_else(|| panic!("{path:?}: a rule without expr")),
                record: s("record"),
            });
        }
    }
    assert!(!out.is_empty(), "no rules in dashboards/prometheus");
    out
}

/// Every query string of a Grafana dashboard: panels' `expr`, variables' `definition` and `query`.
fn queries(v: &Json, out: &mut Vec<String>) {
    match v {
        Json::Object(m) => {
            for (k, v) in m {
                match v {
                    Json::String(s) if ["expr", "definition", "query"].contains(&k.as_str()) => {
                        out.push(s.clone())
                    }
                    _ => queries(v, out),
                }
            }
        }
        Json::Array(a) => a.iter().for_each(|v| queries(v, out)),
        _ => {}
    }
}

/// The metric names a PromQL expression reads: identifiers outside quotes that name an
/// exporter's series (`bbrtop_*`, `process_*`) or a recorded one (`level:metric:operation`).
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let (mut in_quote, mut cur) = (false, String::new());
    for ch in expr.chars().chain([' ']) {
        if ch == '"' {
            in_quote = !in_quote;
        }
        if !in_quote && (ch.is_ascii_alphanumeric() || ch == '_' || ch == ':') {
            cur.push(ch);
            continue;
        }
        let id = std::mem::take(&mut cur);
        let recorded = id.contains(':') && id.starts_with(|c: char| c.is_ascii_alphabetic());
        if recorded || id.starts_with("bbrtop_") || id.starts_with("process_") {
            out.insert(id);
        }
    }
    out
}

/// Whatever `names` holds that neither the catalog nor the recording rules define.
fn unknown(names: &BTreeSet<String>, recorded: &BTreeSet<String>) -> Vec<String> {
    names.iter().filter(|n| !recorded.contains(*n) && catalog::family_of(n).is_none()).cloned().collect()
}

#[test]
fn the_rules_read_only_declared_metrics() {
    let rules = rules();
    let mut recorded: BTreeSet<String> = rules.iter().filter_map(|r| r.record.clone()).collect();
    recorded.extend(USER_RECORDED.map(String::from));
    let mut read = BTreeSet::new();
    let mut bad = Vec::new();
    for r in &rules {
        let names = metric_names(&r.expr);
        for n in unknown(&names, &recorded) {
            bad.push(format!("{} {}: {n}", r.file, r.name));
        }
        read.extend(names);
    }
    assert!(bad.is_empty(), "rules read metrics the catalog does not declare:\n{}", bad.join("\n"));
    // The check read real queries: the page's families among them.
    for family in ["bbrtop_alerts_firing", "bbrtop_inflated_goodput_bytes_per_second", "bbrtop_collector_up"]
    {
        assert!(read.contains(family), "no rule reads {family}: did the parse find the expressions?");
    }
}

#[test]
fn the_dashboards_read_only_declared_metrics() {
    let recorded: BTreeSet<String> = rules().into_iter().filter_map(|r| r.record).collect();
    let mut bad = Vec::new();
    let mut families = BTreeSet::new();
    for path in files("dashboards/grafana", ".json") {
        let dash: Json = serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("JSON");
        let mut qs = Vec::new();
        queries(&dash, &mut qs);
        assert!(!qs.is_empty(), "{path:?} has no queries");
        for q in &qs {
            let names = metric_names(q);
            for n in unknown(&names, &recorded) {
                bad.push(format!("{}: {n} in {q}", path.file_name().unwrap().to_string_lossy()));
            }
            families.extend(names.iter().filter_map(|n| catalog::family_of(n)).map(|f| f.name));
        }
    }
    assert!(bad.is_empty(), "dashboards read metrics the catalog does not declare:\n{}", bad.join("\n"));
    assert!(families.contains("bbrtop_srtt_seconds"), "the dashboards' queries were not found");
}

/// The name scan itself: quoted label values and durations are not names; a recorded name, a
/// histogram's series and a typo are.
#[test]
fn names_are_read_from_queries() {
    let q = r#"sum by (le) (rate(bbrtop_srtt_seconds_bucket{cc="bbrtop_x"}[5m:1m])) / instance_cc:bbrtop_srtt_seconds:p95 > bbrtop_sockts"#;
    let names = metric_names(q);
    let want = ["bbrtop_sockts", "bbrtop_srtt_seconds_bucket", "instance_cc:bbrtop_srtt_seconds:p95"];
    assert_eq!(names, want.map(String::from).into());
    let recorded = BTreeSet::from(["instance_cc:bbrtop_srtt_seconds:p95".to_string()]);
    assert_eq!(unknown(&names, &recorded), ["bbrtop_sockts"]);
}
