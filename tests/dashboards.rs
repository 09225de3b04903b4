//! The shipped Prometheus rules, Grafana dashboard and Alertmanager example, checked with the real
//! tools: `promtool check rules`, `promtool test rules`, `amtool check-config`.

mod support;

use bbrtop::export::metrics::catalog;
use serde_json::Value as Json;
use serde_norway::Value as Yaml;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::grafana::{dashboard, exprs, panels, substitute};
use support::tools::tool;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const RULE_FILES: [&str; 2] =
    ["dashboards/prometheus/bbrtop-alerts.rules.yml", "dashboards/prometheus/bbrtop-recording.rules.yml"];

fn path(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

fn yaml(rel: &str) -> Yaml {
    let text = fs::read_to_string(path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn str_of<'a>(v: &'a Yaml, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Yaml::as_str)
}

fn seq<'a>(v: &'a Yaml, key: &str) -> &'a [Yaml] {
    v.get(key).and_then(Yaml::as_sequence).map(Vec::as_slice).unwrap_or(&[])
}

/// Every rule of a rules file, flattened over its groups.
fn rules(rel: &str) -> Vec<Yaml> {
    let doc = yaml(rel);
    seq(&doc, "groups").iter().flat_map(|g| seq(g, "rules").to_vec()).collect()
}

/// The test files under dashboards/prometheus/tests (`*.test.yml`; beside them, rule files only
/// the tests load).
fn rule_test_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(path("dashboards/prometheus/tests"))
        .expect("dashboards/prometheus/tests")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".test.yml")))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no promtool test files");
    files
}

/// PromQL identifiers in an expression (metric names, recorded names, functions, labels).
fn identifiers(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_quote = false;
    let mut cur = String::new();
    for ch in expr.chars() {
        if ch == '"' {
            in_quote = !in_quote;
        }
        if !in_quote && (ch.is_ascii_alphanumeric() || ch == '_' || ch == ':') {
            cur.push(ch);
        } else if !cur.is_empty() {
            out.insert(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.insert(cur);
    }
    out
}

/// The exporter metric families an expression reads (a histogram's series as its family); a
/// `bbrtop_` name the catalog does not declare stays as written, to be reported.
fn metric_families(expr: &str) -> BTreeSet<String> {
    identifiers(expr)
        .into_iter()
        .filter(|id| id.starts_with("bbrtop_") && !id.contains(':'))
        .map(|id| catalog::family_of(&id).map(|f| f.name.to_owned()).unwrap_or(id))
        .collect()
}

/// Fails on a name the exporter's catalog (the contract with `bbrtop export`) does not declare: a
/// typo that would silently match nothing.
fn assert_known_metrics(what: &str, expr: &str) {
    for family in metric_families(expr) {
        assert!(catalog::family_of(&family).is_some(), "{what}: unknown metric {family} in {expr}");
    }
}

/// The names come from the catalog: a histogram's series read as its family, and a typo fails.
#[test]
fn metric_names_are_checked_against_the_catalog() {
    let expr = "histogram_quantile(0.95, rate(bbrtop_srtt_seconds_bucket[5m])) > bbrtop_sockets";
    let families: Vec<String> = metric_families(expr).into_iter().collect();
    assert_eq!(families, ["bbrtop_sockets", "bbrtop_srtt_seconds"]);
    assert_known_metrics("ok", expr);
    let typo = std::panic::catch_unwind(|| assert_known_metrics("typo", "rate(bbrtop_srt_seconds_sum[5m])"));
    assert!(typo.is_err(), "an undeclared name passed");
}

#[test]
fn rules_pass_promtool_check() {
    let Some(promtool) = tool("promtool") else { return };
    for rel in RULE_FILES {
        let out = run(Command::new(&promtool).args(["check", "rules"]).arg(path(rel)));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let expected = format!("SUCCESS: {} rules found", rules(rel).len());
        assert!(stdout.contains(&expected), "{rel}: expected {expected:?} in\n{stdout}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.to_lowercase().contains("warn"), "{rel}: promtool warned:\n{stderr}");
    }
}

#[test]
fn rules_pass_promtool_unit_tests() {
    let Some(promtool) = tool("promtool") else { return };
    let files = rule_test_files();
    let out = run(Command::new(&promtool).args(["test", "rules"]).args(&files));
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert_eq!(stdout.matches("SUCCESS").count(), files.len(), "{stdout}");
}

/// promtool passes a test file that never mentions a rule, so coverage is checked here: each alert
/// is expected to fire in some test and expected silent in another, and each recorded series is
/// queried by some expression test.
#[test]
fn every_rule_has_a_unit_test() {
    let mut fires = BTreeSet::new();
    let mut silent = BTreeSet::new();
    let mut queried = BTreeSet::new();
    let mut loaded = BTreeSet::new();
    for file in rule_test_files() {
        let doc: Yaml = serde_norway::from_str(&fs::read_to_string(&file).expect("read")).expect("yaml");
        for rf in seq(&doc, "rule_files") {
            let rf = file.parent().expect("dir").join(rf.as_str().expect("rule file name"));
            assert!(rf.is_file(), "{}: rule file {} missing", file.display(), rf.display());
            loaded.insert(rf.canonicalize().expect("canonical"));
        }
        for case in seq(&doc, "tests") {
            for t in seq(case, "alert_rule_test") {
                let name = str_of(t, "alertname").expect("alertname").to_owned();
                if seq(t, "exp_alerts").is_empty() {
                    silent.insert(name);
                } else {
                    fires.insert(name);
                }
            }
            for t in seq(case, "promql_expr_test") {
                queried.extend(identifiers(str_of(t, "expr").expect("expr")));
            }
        }
    }
    for rel in RULE_FILES {
        assert!(loaded.contains(&path(rel).canonicalize().expect("canonical")), "{rel} is never tested");
        for rule in rules(rel) {
            if let Some(alert) = str_of(&rule, "alert") {
                assert!(fires.contains(alert), "no test expects {alert} to fire");
                assert!(silent.contains(alert), "no test expects {alert} to stay silent");
            } else {
                let record = str_of(&rule, "record").expect("record or alert");
                assert!(queried.contains(record), "no promql_expr_test reads {record}");
            }
        }
    }
}

/// level:metric:operation, where the level names the labels the aggregation keeps.
#[test]
fn recording_rules_follow_the_naming_convention() {
    let recording = rules(RULE_FILES[1]);
    assert!(!recording.is_empty());
    for rule in recording {
        let record = str_of(&rule, "record").expect("record");
        let expr = str_of(&rule, "expr").expect("expr");
        let parts: Vec<&str> = record.split(':').collect();
        assert_eq!(parts.len(), 3, "{record}: not level:metric:operation");
        let (level, metric) = (parts[0], parts[1]);
        // A ratio is named X_per_Y (both read), anything else after the metric it reads.
        let ratio = parts[2].starts_with("ratio");
        let read = match metric.split_once("_per_").filter(|_| ratio) {
            Some((x, y)) => vec![x.to_string(), format!("bbrtop_{y}")],
            None => vec![metric.to_string()],
        };
        for m in read {
            assert!(expr.contains(&m), "{record}: {m} not in {expr}");
        }
        let by = expr.split("by (").nth(1).and_then(|s| s.split(')').next()).unwrap_or("");
        let kept: Vec<&str> = by.split(',').map(str::trim).filter(|l| !l.is_empty() && *l != "le").collect();
        if kept.is_empty() {
            assert_eq!(level, "fleet", "{record}: aggregates everything, level must be fleet");
        } else {
            assert_eq!(level, kept.join("_"), "{record}: level does not name the labels kept ({by})");
        }
        assert_known_metrics(record, expr);
    }
}

/// A pattern of `dashboards/prometheus/settings.yml` (`runbook_url_pattern`,
/// `kubernetes_runbook_url_pattern`): the rules' setting of where runbook links go.
fn runbook_url_pattern(key: &str) -> String {
    let settings = yaml("dashboards/prometheus/settings.yml");
    str_of(&settings, key).unwrap_or_else(|| panic!("settings.yml: no {key}")).to_string()
}

/// The alerting rules file with every alert's `runbook_url` line made from `pattern`, the rest
/// (comments included) as it was.
fn with_runbook_urls(text: &str, pattern: &str) -> String {
    let mut alert = String::new();
    let mut out = String::new();
    for line in text.lines() {
        if let Some(name) = line.trim_start().strip_prefix("- alert: ") {
            alert = name.trim().to_string();
        }
        match line.split_once("runbook_url: ") {
            Some((indent, _)) if indent.trim().is_empty() => {
                let url = pattern.replace("%s", &alert.to_lowercase());
                out.push_str(&format!("{indent}runbook_url: \"{url}\"\n"));
            }
            _ => out.push_str(&format!("{line}\n")),
        }
    }
    out
}

/// The rules' runbook links are the setting's pattern (regenerated from it with
/// BBRTOP_WRITE_RULES=1), every alert has one, and each anchor (the alert's name in lowercase,
/// GitHub's slug of its heading) is a heading of docs/runbook.md, which /runbook serves.
#[test]
fn runbook_urls_follow_the_rules_setting() {
    let file = path(RULE_FILES[0]);
    let text = fs::read_to_string(&file).expect("rules");
    let want = with_runbook_urls(&text, &runbook_url_pattern("runbook_url_pattern"));
    if std::env::var_os("BBRTOP_WRITE_RULES").is_some() {
        fs::write(&file, &want).expect("write the rules");
    }
    assert!(
        fs::read_to_string(&file).expect("rules") == want,
        "{} is out of date with settings.yml: BBRTOP_WRITE_RULES=1 cargo test --test dashboards runbook",
        file.display()
    );
    let runbook = fs::read_to_string(path("docs/runbook.md")).expect("docs/runbook.md");
    for rule in rules(RULE_FILES[0]) {
        let name = str_of(&rule, "alert").expect("alert");
        let url = rule.get("annotations").and_then(|a| str_of(a, "runbook_url"));
        assert!(url.is_some(), "{name}: no runbook_url");
        assert!(runbook.contains(&format!("\n## {name}\n")), "{name}: no runbook section");
    }
}

#[test]
fn alerting_rules_carry_severity_and_runbook() {
    let alerting = rules(RULE_FILES[0]);
    assert!(!alerting.is_empty());
    for rule in &alerting {
        let name = str_of(rule, "alert").expect("alert");
        let severity = rule.get("labels").and_then(|l| str_of(l, "severity"));
        assert!(matches!(severity, Some("info" | "warning" | "critical")), "{name}: severity {severity:?}");
        for key in ["summary", "description"] {
            let text = rule.get("annotations").and_then(|a| str_of(a, key)).unwrap_or("");
            assert!(!text.trim().is_empty(), "{name}: annotation {key} missing");
        }
        let annotation = |key| rule.get("annotations").and_then(|a| str_of(a, key));
        assert!(
            annotation("runbook_url").is_some(),
            "{name}: no runbook_url (runbook_urls_follow_the_rules_setting)"
        );
        assert!(str_of(rule, "for").is_some(), "{name}: no `for`, a single bad scrape would page");
        assert_known_metrics(name, str_of(rule, "expr").expect("expr"));
    }
    let inflation = alerting
        .iter()
        .find(|r| str_of(r, "alert") == Some("BbrtopTcpRttInflation"))
        .expect("the RTT inflation alert");
    assert!(str_of(inflation, "keep_firing_for").is_some(), "RTT inflation must use keep_firing_for");
}

#[test]
fn grafana_dashboard_has_variables_and_panels() {
    let dash = dashboard();
    let vars: BTreeMap<&str, &Json> = dash["templating"]["list"]
        .as_array()
        .expect("templating")
        .iter()
        .map(|v| (v["name"].as_str().expect("variable name"), v))
        .collect();
    let ds = vars.get("datasource").expect("datasource variable");
    assert_eq!((ds["type"].as_str(), ds["query"].as_str()), (Some("datasource"), Some("prometheus")));
    for name in ["job", "cluster", "instance", "cc"] {
        let v = vars.get(name).unwrap_or_else(|| panic!("{name} variable"));
        assert_eq!(v["type"], "query", "{name}");
        assert_eq!(v["datasource"]["uid"], "${datasource}", "{name}");
        let def = v["definition"].as_str().expect("definition");
        assert!(def.starts_with("label_values(") && def.contains(name), "{name}: {def}");
        assert_eq!(v["query"]["query"].as_str(), Some(def), "{name}: query and definition differ");
        assert_known_metrics(name, def);
    }

    let mut ids = BTreeSet::new();
    for p in panels(&dash) {
        assert!(ids.insert(p["id"].as_i64().expect("panel id")), "duplicate panel id {}", p["id"]);
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}", "panel {}", p["title"]);
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {} has no query", p["title"]);
        for t in targets {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "panel {}", p["title"]);
        }
    }

    // The panels the dashboard is for, found by what they query.
    let all = exprs(&dash);
    let has = |pred: &dyn Fn(&str) -> bool| all.iter().any(|(_, e)| pred(e));
    assert!(
        has(&|e| e.contains("bbrtop_sockets{") && e.contains("by (cc, phase)")),
        "sockets by cc and phase"
    );
    for q in ["0.5", "0.95", "0.99"] {
        let native = format!("histogram_quantile({q}, sum by (cc) (bbrtop_srtt_seconds{{");
        let classic = format!(" or histogram_quantile({q}, sum by (le, cc) (bbrtop_srtt_seconds_bucket{{");
        assert!(has(&|e| e.starts_with(&native) && e.contains(&classic)), "srtt p{q} by cc");
    }
    assert!(
        has(&|e| e.contains("bbrtop_sockets_by_role{") && e.contains("by (cc, role)")),
        "sockets by role"
    );
    assert!(has(&|e| e.contains("bbrtop_inflated_goodput_bytes_per_second{")), "inflated goodput");
    assert!(has(&|e| e.contains("bbrtop_sockets_inflated")), "inflation");
    assert!(has(&|e| e.contains("bbrtop_bbr_bandwidth_bytes_per_second_bucket")), "BBR bandwidth");
    assert!(has(&|e| e.contains("bbrtop_alerts_firing")), "alerts firing");
    assert!(has(&|e| e.contains("bbrtop_collector_up")), "collector health");
    assert!(
        has(&|e| e.starts_with("histogram_quantile(0.95, sum by (instance) (bbrtop_srtt_seconds{")),
        "fleet A/B: p95 srtt per host"
    );
    for (title, e) in &all {
        assert_known_metrics(title, e);
    }
}

/// The open sockets' distributions go out as native histograms to a Prometheus that takes them,
/// and it then stores no classic buckets: every quantile over a live family's `_bucket` series,
/// in the rules and the dashboard, reads the native histogram first and the classic buckets only
/// where there is none (`native or classic`).
#[test]
fn quantiles_read_native_histograms_first() {
    const LIVE: [&str; 5] = [
        "bbrtop_srtt_seconds",
        "bbrtop_min_rtt_seconds",
        "bbrtop_rtt_inflation_ratio",
        "bbrtop_bbr_bandwidth_bytes_per_second",
        "bbrtop_delivery_rate_bytes_per_second",
    ];
    let mut exprs: Vec<(String, String)> = exprs(&dashboard());
    for rel in RULE_FILES {
        for rule in rules(rel) {
            let name = str_of(&rule, "record").or(str_of(&rule, "alert")).expect("a name").to_owned();
            exprs.push((name, str_of(&rule, "expr").expect("expr").to_owned()));
        }
    }
    let mut checked = 0;
    for (what, e) in &exprs {
        let e = e.split_whitespace().collect::<Vec<_>>().join(" ");
        for fam in LIVE {
            let classic = e.matches(&format!("{fam}_bucket")).count();
            if classic == 0 {
                continue;
            }
            // Each classic quantile follows its native one: `native or classic`.
            let pairs = e.matches(&format!("{fam}{{")).count() + e.matches(&format!("{fam})")).count();
            assert_eq!(pairs, classic, "{what}: a quantile of {fam} without its native histogram: {e}");
            let native_first = e.find(&format!("({fam}")).zip(e.find(&format!("{fam}_bucket")));
            assert!(native_first.is_some_and(|(n, c)| n < c), "{what}: native after classic: {e}");
            assert_eq!(e.matches(" or histogram_quantile(").count(), classic, "{what}: {e}");
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} quantiles found");
}

/// Grafana's variables replaced by values Prometheus accepts, as Grafana would send them.
#[test]
fn grafana_exprs_parse_with_promtool() {
    let Some(promtool) = tool("promtool") else { return };
    let dash = dashboard();
    let mut all = exprs(&dash);
    for v in dash["templating"]["list"].as_array().expect("templating") {
        if let Some(def) = v["definition"].as_str() {
            // label_values() is Grafana's, not PromQL: check its series selector.
            let selector = def.trim_start_matches("label_values(").rsplit_once(',').expect("label_values").0;
            all.push((format!("variable {}", v["name"]), selector.to_owned()));
        }
    }
    // One recording rule per expression: promtool parses each and names the bad one.
    let rules: Vec<Json> = all
        .iter()
        .enumerate()
        .map(|(i, (_, e))| serde_json::json!({"record": format!("grafana:expr:{i}"), "expr": substitute(e)}))
        .collect();
    let file = serde_json::json!({"groups": [{"name": "grafana", "rules": rules}]});
    let dir = tempfile::tempdir().expect("tempdir");
    let rules_path = dir.path().join("grafana.rules.yml");
    fs::write(&rules_path, serde_json::to_string_pretty(&file).expect("json")).expect("write");
    let out = run(Command::new(&promtool).args(["check", "rules"]).arg(&rules_path));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("SUCCESS: {} rules found", all.len())), "{stdout}");

    // The check catches a broken expression: a bad one must fail.
    let bad = serde_json::json!({"groups": [{"name": "g", "rules": [{"record": "a:b:c", "expr": "sum by (cc ("}]}]});
    fs::write(&rules_path, bad.to_string()).expect("write");
    let out = Command::new(&promtool).args(["check", "rules"]).arg(&rules_path).output().expect("promtool");
    assert!(!out.status.success(), "promtool accepted a broken expression");
}

#[test]
fn alertmanager_example_is_valid_and_routes() {
    let Some(amtool) = tool("amtool") else { return };
    let rel = "dashboards/alertmanager/alertmanager.yml";
    let config = path(rel);
    let out = run(Command::new(&amtool).arg("check-config").arg(&config));
    assert!(String::from_utf8_lossy(&out.stdout).contains("SUCCESS"));

    let doc = yaml(rel);
    let route = doc.get("route").expect("route");
    assert_eq!(str_of(route, "group_wait"), Some("5s"));
    let group_by: Vec<&str> = seq(route, "group_by").iter().filter_map(Yaml::as_str).collect();
    assert_eq!(group_by, ["alertname", "instance", "cc"]);

    // Where alerts land: the exporter's own alert and the rules' alerts by severity.
    for (labels, receiver) in [
        (&["alertname=TcpRttInflation", "instance=edge-02:10027", "cc=cubic"][..], "team-network"),
        (&["alertname=BbrtopExporterDown", "severity=critical"][..], "team-network-pager"),
        (&["alertname=BbrtopCollectorDown", "severity=warning"][..], "team-network"),
        (&["alertname=BbrtopManySocketsInflated", "severity=warning"][..], "team-network"),
        (&["alertname=BbrtopInflatedTrafficHigh", "severity=critical"][..], "team-network-pager"),
        (&["alertname=BbrtopPeerGroupInflated", "severity=warning"][..], "team-network"),
    ] {
        let out = run(Command::new(&amtool)
            .args(["config", "routes", "test", "--config.file"])
            .arg(&config)
            .arg(format!("--verify.receivers={receiver}"))
            .args(labels));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), receiver, "{labels:?}");
    }
}
