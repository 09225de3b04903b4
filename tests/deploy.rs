//! deploy/: the systemd unit (checked with `systemd-analyze verify` and `security`) and the
//! Kubernetes manifests (parsed and checked field by field; there is no cluster here).
//!
//! deploy/kubernetes/prometheusrule.yaml is generated from the rules files:
//! `BBRTOP_WRITE_PROMETHEUSRULE=1 cargo test --test deploy prometheusrule` rewrites it.

mod support;

use serde::Deserialize;
use serde_norway::{Mapping, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::tools::tool;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const UNIT: &str = "deploy/systemd/bbrtop.service";
const SOCKET_UNIT: &str = "deploy/systemd/bbrtop.socket";
const ENV_FILE: &str = "deploy/systemd/bbrtop.default";
const K8S: &str = "deploy/kubernetes";
const INSTALLED_BINARY: &str = "/usr/local/bin/bbrtop";
const PORT: i64 = 10027;
const RULE_FILES: [&str; 2] =
    ["dashboards/prometheus/bbrtop-alerts.rules.yml", "dashboards/prometheus/bbrtop-recording.rules.yml"];

fn path(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

/// The unit with ExecStart pointing at the binary cargo built: `verify` checks that it exists.
fn unit_with_built_binary(dir: &Path) -> PathBuf {
    let text = fs::read_to_string(path(UNIT)).expect("unit");
    assert!(text.contains(INSTALLED_BINARY), "ExecStart does not use {INSTALLED_BINARY}");
    let unit = dir.join("bbrtop.service");
    fs::write(&unit, text.replace(INSTALLED_BINARY, env!("CARGO_BIN_EXE_bbrtop"))).expect("write unit");
    unit
}

#[test]
fn systemd_unit_verifies() {
    let Some(analyze) = tool("systemd-analyze") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let unit = unit_with_built_binary(dir.path());
    let out = Command::new(&analyze).arg("verify").arg(&unit).output().expect("systemd-analyze");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // verify exits 0 on unknown keys and bad values, and only warns: any output is a finding.
    assert!(out.status.success() && stderr.trim().is_empty(), "systemd-analyze verify:\n{stderr}");

    // The socket unit, beside the service it activates.
    fs::copy(path(SOCKET_UNIT), dir.path().join("bbrtop.socket")).expect("copy socket unit");
    let out =
        Command::new(&analyze).arg("verify").arg(dir.path().join("bbrtop.socket")).output().expect("verify");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify bbrtop.socket:\n{stderr}"
    );

    // And it does catch a broken directive.
    let text = fs::read_to_string(&unit).expect("unit");
    fs::write(&unit, text.replace("NoNewPrivileges=yes", "NoNewPrivileges=maybe")).expect("write");
    let out = Command::new(&analyze).arg("verify").arg(&unit).output().expect("systemd-analyze");
    assert!(!String::from_utf8_lossy(&out.stderr).trim().is_empty(), "a bad boolean went unnoticed");
}

/// systemd's own exposure score (0 best, 10 worst), offline from the file.
#[test]
fn systemd_unit_exposure_is_low() {
    let Some(analyze) = tool("systemd-analyze") else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let unit = unit_with_built_binary(dir.path());
    let out = Command::new(&analyze)
        .args(["security", "--offline=true", "--no-pager", "--threshold=25"])
        .arg(&unit)
        .output()
        .expect("systemd-analyze security");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout.lines().find(|l| l.contains("Overall exposure level")).unwrap_or("none");
    eprintln!("{summary}");
    assert!(out.status.success(), "exposure above 2.5:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
}

/// key -> values of the unit's [Service] section (a key may repeat).
fn service_section() -> BTreeMap<String, Vec<String>> {
    let text = fs::read_to_string(path(UNIT)).expect("unit");
    let mut section = "";
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[Service]"
            && !line.starts_with('#')
            && let Some((k, v)) = line.split_once('=')
        {
            out.entry(k.to_owned()).or_default().push(v.to_owned());
        }
    }
    out
}

#[test]
fn systemd_unit_holds_only_the_bpf_capabilities() {
    let s = service_section();
    let one = |k: &str| -> &str {
        match s.get(k).map(Vec::as_slice) {
            Some([v]) => v,
            other => panic!("{k}: expected one value, got {other:?}"),
        }
    };
    let words = |k: &str| -> BTreeSet<&str> { one(k).split_whitespace().collect() };
    let bpf: BTreeSet<&str> = ["CAP_BPF", "CAP_PERFMON"].into();
    assert_eq!(words("AmbientCapabilities"), bpf);
    assert_eq!(words("CapabilityBoundingSet"), bpf);
    assert_eq!(words("RestrictAddressFamilies"), ["AF_NETLINK", "AF_INET", "AF_INET6", "AF_UNIX"].into());
    for (k, v) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("LockPersonality", "yes"),
        ("MemoryDenyWriteExecute", "yes"),
        ("DynamicUser", "yes"),
    ] {
        assert_eq!(one(k), v, "{k}");
    }
    // Every flag comes from the environment file: one the unit set would add to (a second
    // listen address binds both) or fight with the file's.
    let exec: Vec<&str> = one("ExecStart").split_whitespace().collect();
    assert_eq!(exec, [INSTALLED_BINARY, "export", "$BBRTOP_ARGS"]);
    assert_eq!(one("EnvironmentFile"), "-/etc/default/bbrtop");
    assert!(!s.contains_key("Environment"), "no flag defaults in the unit");
    // Options that would break the exporter: it must see the host's sockets, and capabilities in a
    // user namespace do not reach bpf().
    for k in ["PrivateNetwork", "PrivateUsers", "User"] {
        assert!(!s.contains_key(k), "{k} must not be set");
    }
    let filter = one("SystemCallFilter");
    assert!(filter.split_whitespace().any(|w| w == "bpf"), "bpf() not allowed: {filter}");
}

/// The shipped /etc/default/bbrtop sets BBRTOP_ARGS to flags `bbrtop export` takes, and every
/// flag its comments offer is one too.
#[test]
fn environment_file_names_only_flags_export_takes() {
    let text = fs::read_to_string(path(ENV_FILE)).expect("environment file");
    let assignments: Vec<&str> =
        text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    assert_eq!(assignments.len(), 1, "one assignment: {assignments:?}");
    let args = assignments[0]
        .strip_prefix("BBRTOP_ARGS=\"")
        .and_then(|a| a.strip_suffix('"'))
        .expect("BBRTOP_ARGS=\"...\"");
    let out = Command::new(env!("CARGO_BIN_EXE_bbrtop")).arg("export").arg("--help").output().expect("help");
    let help = String::from_utf8_lossy(&out.stdout);
    let flags: BTreeSet<&str> = text
        .split_whitespace()
        .filter(|w| w.starts_with("--"))
        .map(|w| w.trim_matches(['"', '`']).split('=').next().unwrap())
        .collect();
    assert!(flags.len() >= 5, "{flags:?}");
    for f in flags {
        assert!(help.split_whitespace().any(|w| w == f), "{f} is not a flag of export");
    }
    // And the binary parses the assignment's flags: a bad value or unknown flag exits 2 at once.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .arg("export")
        .args(args.split_whitespace())
        .args(["--web.config.file", dir.path().join("missing.yml").to_str().unwrap()])
        .output()
        .expect("bbrtop export");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing.yml"), "the flags did not parse: {stderr}");
}

/// Every document of every manifest, with the file it came from.
fn manifests() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = fs::read_dir(path(K8S))
        .expect("deploy/kubernetes")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let name = file.file_name().expect("name").to_string_lossy().into_owned();
        let text = fs::read_to_string(&file).expect("read manifest");
        for doc in serde_norway::Deserializer::from_str(&text) {
            let v = Value::deserialize(doc).unwrap_or_else(|e| panic!("{name}: {e}"));
            if !v.is_null() {
                out.push((name.clone(), v));
            }
        }
    }
    assert!(!out.is_empty(), "no manifests");
    out
}

fn get<'a>(v: &'a Value, dotted: &str) -> &'a Value {
    dotted.split('.').fold(v, |v, k| v.get(k).unwrap_or(&Value::Null))
}

fn text<'a>(v: &'a Value, dotted: &str) -> &'a str {
    get(v, dotted).as_str().unwrap_or_else(|| panic!("{dotted}: not a string"))
}

fn list<'a>(v: &'a Value, dotted: &str) -> &'a [Value] {
    get(v, dotted).as_sequence().map(Vec::as_slice).unwrap_or_else(|| panic!("{dotted}: not a list"))
}

fn strings(v: &Value, dotted: &str) -> BTreeSet<String> {
    list(v, dotted).iter().map(|s| s.as_str().expect("string").to_owned()).collect()
}

fn one_of_kind<'a>(docs: &'a [(String, Value)], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs.iter().map(|(_, v)| v).filter(|v| text(v, "kind") == kind).collect();
    assert_eq!(found.len(), 1, "expected one {kind}");
    found[0]
}

/// A selector's labels are all carried by the pods.
fn selects(selector: &Value, labels: &Value) -> bool {
    let selector = selector.as_mapping().expect("selector map");
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

#[test]
fn manifests_have_known_kinds_and_one_namespace() {
    let docs = manifests();
    let known: BTreeMap<&str, &str> = [
        ("Namespace", "v1"),
        ("DaemonSet", "apps/v1"),
        ("Service", "v1"),
        ("PodMonitor", "monitoring.coreos.com/v1"),
        ("PrometheusRule", "monitoring.coreos.com/v1"),
        ("Kustomization", "kustomize.config.k8s.io/v1beta1"),
    ]
    .into();
    let ns = text(one_of_kind(&docs, "Namespace"), "metadata.name");
    let mut kinds = BTreeSet::new();
    for (file, doc) in &docs {
        let kind = text(doc, "kind");
        assert_eq!(known.get(kind), Some(&text(doc, "apiVersion")), "{file}: {kind} apiVersion");
        kinds.insert(kind);
        if !matches!(kind, "Namespace" | "Kustomization") {
            assert!(!text(doc, "metadata.name").is_empty(), "{file}: no name");
            assert_eq!(text(doc, "metadata.namespace"), ns, "{file}: namespace");
        }
    }
    assert_eq!(kinds, known.keys().copied().collect(), "every kind present");

    // kustomization.yaml lists every other manifest.
    let listed = strings(one_of_kind(&docs, "Kustomization"), "resources");
    let files: BTreeSet<String> =
        docs.iter().filter(|(_, d)| text(d, "kind") != "Kustomization").map(|(f, _)| f.clone()).collect();
    assert_eq!(listed, files);
}

#[test]
fn daemonset_is_least_privilege_with_probes_and_resources() {
    let docs = manifests();
    let ds = one_of_kind(&docs, "DaemonSet");
    let pod = get(ds, "spec.template.spec");
    let pod_labels = get(ds, "spec.template.metadata.labels");
    assert!(selects(get(ds, "spec.selector.matchLabels"), pod_labels), "selector does not match pods");
    assert_eq!(get(pod, "hostNetwork").as_bool(), Some(true), "hostNetwork: the node's sockets");
    assert_eq!(text(pod, "dnsPolicy"), "ClusterFirstWithHostNet");
    for k in ["hostPID", "hostIPC"] {
        assert_ne!(get(pod, k).as_bool(), Some(true), "{k}");
    }

    let containers = list(pod, "containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let args: Vec<&str> = list(c, "args").iter().filter_map(Value::as_str).collect();
    assert_eq!(args.first(), Some(&"export"));
    assert!(args.contains(&"--web.listen-address=:10027"), "{args:?}");

    let sc = get(c, "securityContext");
    assert_eq!(get(sc, "privileged").as_bool(), Some(false), "privileged");
    assert_eq!(get(sc, "allowPrivilegeEscalation").as_bool(), Some(false));
    assert_eq!(get(sc, "readOnlyRootFilesystem").as_bool(), Some(true));
    assert_eq!(strings(sc, "capabilities.drop"), ["ALL".to_owned()].into());
    assert_eq!(strings(sc, "capabilities.add"), ["BPF".to_owned(), "PERFMON".to_owned()].into());

    // Named ports resolve to the exporter's port.
    let ports: BTreeMap<&str, i64> = list(c, "ports")
        .iter()
        .map(|p| (text(p, "name"), get(p, "containerPort").as_i64().expect("containerPort")))
        .collect();
    let port_of = |v: &Value| v.as_i64().or_else(|| v.as_str().and_then(|n| ports.get(n).copied()));
    for (probe, path) in [("livenessProbe", "/-/healthy"), ("readinessProbe", "/-/ready")] {
        let http = get(c, &format!("{probe}.httpGet"));
        assert_eq!(text(http, "path"), path, "{probe}");
        assert_eq!(port_of(get(http, "port")), Some(PORT), "{probe} port");
    }

    for kind in ["requests", "limits"] {
        for res in ["cpu", "memory"] {
            let v = get(c, &format!("resources.{kind}.{res}"));
            assert!(v.as_str().is_some_and(|s| !s.is_empty()), "resources.{kind}.{res} unset");
        }
    }
    assert!(
        millicores(text(c, "resources.requests.cpu")) <= millicores(text(c, "resources.limits.cpu")),
        "cpu request above limit"
    );
    assert!(
        bytes(text(c, "resources.requests.memory")) <= bytes(text(c, "resources.limits.memory")),
        "memory request above limit"
    );

    only_read_only_host_mounts(pod, c);
    scratch_is_the_one_writable_place(pod, c);
}

/// Only what attribution reads (the cgroup tree and named namespaces) and the kernel's config (for
/// the walk's HZ) are mounted from the node, each read-only and at the node's own path. BTF is
/// not: a hostPath of /sys/kernel/btf would keep the pod from starting on a node without it,
/// and the container's own /sys shows the node kernel's BTF where there is one.
fn only_read_only_host_mounts(pod: &Value, c: &Value) {
    let volumes = list(pod, "volumes");
    let from_host = |m: &&Value| {
        let v = volumes.iter().find(|v| text(v, "name") == text(m, "name")).expect("its volume");
        !get(v, "hostPath").is_null()
    };
    let mounts: Vec<&Value> = list(c, "volumeMounts").iter().filter(from_host).collect();
    let paths: Vec<&str> = mounts.iter().map(|m| text(m, "mountPath")).collect();
    assert_eq!(paths, ["/sys/fs/cgroup", "/run/netns", "/boot"], "nothing else from the host");
    for m in mounts {
        assert_eq!(get(m, "readOnly").as_bool(), Some(true), "{} must be read-only", text(m, "mountPath"));
        let v = list(pod, "volumes").iter().find(|v| text(v, "name") == text(m, "name")).expect("its volume");
        assert_eq!(text(v, "hostPath.path"), text(m, "mountPath"), "the node's own path");
    }
}

/// The root filesystem is read-only; the writable places are emptyDirs of bounded size: a small
/// one is TMPDIR, where a verifier log goes, and hindsight's recordings go to the directory
/// `--hindsight.dir` names.
fn scratch_is_the_one_writable_place(pod: &Value, c: &Value) {
    let volumes = list(pod, "volumes");
    let writable: Vec<&Value> =
        list(c, "volumeMounts").iter().filter(|m| get(m, "readOnly").as_bool() != Some(true)).collect();
    let paths: Vec<&str> = writable.iter().map(|m| text(m, "mountPath")).collect();
    assert_eq!(paths, ["/tmp", "/var/lib/bbrtop/hindsight"], "the writable mounts");
    for (m, limit) in writable.iter().zip([64u64 << 20, 4 << 30]) {
        let v = volumes.iter().find(|v| text(v, "name") == text(m, "name")).expect("its volume");
        assert!(bytes(text(v, "emptyDir.sizeLimit")) <= limit, "an emptyDir of a bounded size: {v:?}");
    }
    let tmpdir = list(c, "env").iter().find(|e| text(e, "name") == "TMPDIR").expect("TMPDIR");
    assert_eq!(text(tmpdir, "value"), "/tmp", "TMPDIR is the scratch volume");
    let args: Vec<&str> = list(c, "args").iter().filter_map(|a| a.as_str()).collect();
    assert!(
        args.contains(&"--hindsight.dir=/var/lib/bbrtop/hindsight"),
        "hindsight writes to its volume: {args:?}"
    );
}

/// Kubernetes CPU quantity in millicores ("50m", "0.5", "2").
fn millicores(q: &str) -> u64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or_else(|_| panic!("cpu {q}")),
        None => (q.parse::<f64>().unwrap_or_else(|_| panic!("cpu {q}")) * 1000.0) as u64,
    }
}

/// Kubernetes memory quantity in bytes (binary suffixes, which the manifests use).
fn bytes(q: &str) -> u64 {
    let (num, mult) = [("Ki", 1u64 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30)]
        .iter()
        .find_map(|(s, m)| q.strip_suffix(s).map(|n| (n, *m)))
        .unwrap_or((q, 1));
    num.parse::<u64>().unwrap_or_else(|_| panic!("memory {q}")) * mult
}

#[test]
fn service_and_podmonitor_find_the_pods() {
    let docs = manifests();
    let ds = one_of_kind(&docs, "DaemonSet");
    let pod_labels = get(ds, "spec.template.metadata.labels");
    let container = &list(ds, "spec.template.spec.containers")[0];
    let port_names: BTreeSet<&str> = list(container, "ports").iter().map(|p| text(p, "name")).collect();
    let ns = text(ds, "metadata.namespace");

    let svc = one_of_kind(&docs, "Service");
    assert!(selects(get(svc, "spec.selector"), pod_labels), "Service selector");
    let svc_port = &list(svc, "spec.ports")[0];
    assert_eq!(get(svc_port, "port").as_i64(), Some(PORT));
    assert!(port_names.contains(text(svc_port, "targetPort")), "Service targetPort");

    let pm = one_of_kind(&docs, "PodMonitor");
    assert!(selects(get(pm, "spec.selector.matchLabels"), pod_labels), "PodMonitor selector");
    assert!(strings(pm, "spec.namespaceSelector.matchNames").contains(ns));
    let endpoint = &list(pm, "spec.podMetricsEndpoints")[0];
    assert!(port_names.contains(text(endpoint, "port")), "PodMonitor port");
    assert_eq!(text(endpoint, "path"), "/metrics");
    // The alert rules select job=~"bbrtop.*"; the fleet A/B compares hosts by instance.
    let relabel = list(endpoint, "relabelings");
    let sets = |target: &str| relabel.iter().find(|r| text(r, "targetLabel") == target);
    let job = sets("job").expect("job relabeling");
    assert!(text(job, "replacement").starts_with("bbrtop"));
    let instance = sets("instance").expect("instance relabeling");
    assert_eq!(strings(instance, "sourceLabels"), ["__meta_kubernetes_pod_node_name".to_owned()].into());
}

/// The groups of both rules files, in order, with every alert's runbook_url made from the rules'
/// Kubernetes setting (the PodMonitor's instance is the node's name, with no port).
fn rule_groups() -> Value {
    let settings: Value = serde_norway::from_str(
        &fs::read_to_string(path("dashboards/prometheus/settings.yml")).expect("settings.yml"),
    )
    .expect("yaml");
    let pattern = text(&settings, "kubernetes_runbook_url_pattern").to_string();
    let mut groups = Vec::new();
    for rel in RULE_FILES {
        let mut doc: Value =
            serde_norway::from_str(&fs::read_to_string(path(rel)).expect("rules")).expect("yaml");
        for group in doc["groups"].as_sequence_mut().expect("groups") {
            for rule in group["rules"].as_sequence_mut().expect("rules") {
                let Some(alert) = rule.get("alert").and_then(Value::as_str).map(str::to_lowercase) else {
                    continue;
                };
                let url = Value::from(pattern.replace("%s", &alert));
                rule["annotations"].as_mapping_mut().expect("annotations").insert("runbook_url".into(), url);
            }
        }
        groups.extend(list(&doc, "groups").iter().cloned());
    }
    Value::Sequence(groups)
}

fn prometheusrule_text(groups: Value) -> String {
    let mut labels = Mapping::new();
    labels.insert("app.kubernetes.io/name".into(), "bbrtop".into());
    let mut metadata = Mapping::new();
    metadata.insert("name".into(), "bbrtop".into());
    metadata.insert("namespace".into(), "bbrtop".into());
    metadata.insert("labels".into(), Value::Mapping(labels));
    let mut spec = Mapping::new();
    spec.insert("groups".into(), groups);
    let mut doc = Mapping::new();
    doc.insert("apiVersion".into(), "monitoring.coreos.com/v1".into());
    doc.insert("kind".into(), "PrometheusRule".into());
    doc.insert("metadata".into(), Value::Mapping(metadata));
    doc.insert("spec".into(), Value::Mapping(spec));
    format!(
        "# Generated from dashboards/prometheus/*.rules.yml; do not edit. Regenerate with\n\
         # BBRTOP_WRITE_PROMETHEUSRULE=1 cargo test --test deploy prometheusrule\n{}",
        serde_norway::to_string(&Value::Mapping(doc)).expect("yaml")
    )
}

/// On Kubernetes the runbook links carry the exporter's port: the PodMonitor's `instance` is the
/// node's name, so `http://{{ $labels.instance }}/runbook` went to port 80.
#[test]
fn prometheusrule_runbook_urls_reach_the_daemonsets_port() {
    let docs = manifests();
    let rule = one_of_kind(&docs, "PrometheusRule");
    let mut alerts = 0;
    for group in list(rule, "spec.groups") {
        for r in list(group, "rules").iter().filter(|r| r.get("alert").is_some()) {
            let url = text(r, "annotations.runbook_url");
            assert!(url.starts_with(&format!("http://{{{{ $labels.instance }}}}:{PORT}/runbook#")), "{url}");
            alerts += 1;
        }
    }
    assert!(alerts >= 11, "{alerts} alerts");
}

#[test]
fn prometheusrule_matches_the_rules_files() {
    let file = path(&format!("{K8S}/prometheusrule.yaml"));
    if std::env::var_os("BBRTOP_WRITE_PROMETHEUSRULE").is_some() {
        fs::write(&file, prometheusrule_text(rule_groups())).expect("write prometheusrule.yaml");
    }
    let docs = manifests();
    let rule = one_of_kind(&docs, "PrometheusRule");
    assert!(
        *get(rule, "spec.groups") == rule_groups(),
        "{} is out of date with dashboards/prometheus/*.rules.yml: regenerate it with \
         BBRTOP_WRITE_PROMETHEUSRULE=1 cargo test --test deploy prometheusrule",
        file.display()
    );
}
