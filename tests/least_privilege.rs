//! Least privilege, proven: an unprivileged uid with only CAP_BPF and CAP_PERFMON can load and
//! attach everything; with no capability at all, snapshot still works and check names what is
//! missing. Uses util-linux `setpriv` to drop to uid 65534 with exactly the capabilities given.

mod support;

use bbrtop_collect::caps::{Cap, CapSet};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use support::guard;

/// Runs bbrtop as uid/gid 65534 with `caps` (setpriv names, e.g. "bpf,perfmon") as its only
/// effective capabilities (ambient), or none.
fn as_nobody(caps: &str, args: &[&str]) -> Output {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    if caps.is_empty() {
        c.args(["--inh-caps=-all", "--bounding-set=-all"]);
    } else {
        let plus: Vec<String> = caps.split(',').map(|c| format!("+{c}")).collect();
        c.arg(format!("--inh-caps=-all,{}", plus.join(",")));
        c.arg(format!("--ambient-caps=-all,{}", plus.join(",")));
    }
    c.arg(env!("CARGO_BIN_EXE_bbrtop")).args(args).output().expect("setpriv (util-linux)")
}

#[test]
fn root_check_succeeds_with_only_bpf_and_perfmon() {
    if !guard::root("the least-privilege test") {
        return;
    }
    let o = as_nobody("bpf,perfmon", &["check"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("attached tcp_probe"), "{out}");
    assert!(out.contains("attached tcp_destroy_sock"), "{out}");
    assert!(out.contains("attached tcp_established"), "{out}");
    // The child really ran without root and without anything else.
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all,+bpf,+perfmon",
            "--ambient-caps=-all,+bpf,+perfmon",
            "grep",
            "CapEff",
            "/proc/self/status",
        ])
        .output()
        .unwrap();
    let eff = CapSet::parse_status(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(eff, CapSet((1 << Cap::Bpf as u64) | (1 << Cap::Perfmon as u64)));
}

#[test]
fn root_without_capabilities_snapshot_works_and_check_names_what_is_missing() {
    if !guard::root("the least-privilege test") {
        return;
    }
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let _s = l.accept().unwrap();
    let port = c.local_addr().unwrap().port().to_string();
    let o = as_nobody("", &["snapshot", "--json", "--port", &port]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let socks = doc["sockets"].as_array().unwrap();
    assert!(socks.iter().any(|s| s["local"] == c.local_addr().unwrap().to_string()), "{doc}");
    assert!(socks.iter().all(|s| s["tcp_info"]["srtt_us"].is_u64()), "tcp_info needs no capability");

    let o = as_nobody("", &["check"]);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("CAP_BPF") && out.contains("CAP_PERFMON"), "{out}");
}
