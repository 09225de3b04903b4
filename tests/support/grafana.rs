//! The shipped Grafana dashboard's queries, for the static check and the live one.

use serde_json::Value as Json;
use std::fs;

pub fn dashboard() -> Json {
    let text = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/dashboards/grafana/bbrtop.json"))
        .expect("dashboard");
    serde_json::from_str(&text).expect("dashboard JSON")
}

/// Every panel, rows' nested panels included.
pub fn panels(dash: &Json) -> Vec<&Json> {
    let mut out = Vec::new();
    for p in dash["panels"].as_array().expect("panels") {
        out.push(p);
        if let Some(nested) = p["panels"].as_array() {
            out.extend(nested);
        }
    }
    out
}

pub fn exprs(dash: &Json) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in panels(dash) {
        for t in p["targets"].as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("?").to_owned();
            out.push((title, t["expr"].as_str().expect("target expr").to_owned()));
        }
    }
    out
}

/// Grafana's variables replaced by values that select everything.
pub fn substitute(expr: &str) -> String {
    let out = expr
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "15s")
        .replace("$__range", "1h")
        .replace("${job}", ".*")
        .replace("$job", ".*")
        .replace("${cluster}", ".*")
        .replace("$cluster", ".*")
        .replace("${instance}", ".*")
        .replace("$instance", ".*")
        .replace("${cc}", ".*")
        .replace("$cc", ".*");
    assert!(!out.contains('$'), "unsubstituted variable in {expr}");
    out
}
