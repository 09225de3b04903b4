//! `bbrtop doctor --netns` on a namespace whose interfaces have tbf, htb (with a pfifo leaf) and
//! pfifo_fast roots, and a veth with no qdisc: doctor names each root and its children and says
//! that nothing there paces with fq. Privileged.

mod support;

use serde_json::Value;
use std::process::Command;
use support::guard;
use support::lab::{Netns, ip};

fn tc(ns: &str, args: &[&str]) {
    let o = Command::new("tc").args(["-n", ns]).args(args).output().expect("tc");
    assert!(o.status.success(), "tc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn check<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no {name} in {checks:#?}"))
}

#[test]
fn root_doctor_reads_each_interfaces_qdiscs_in_a_namespace() {
    if !guard::lab("doctor qdisc test") {
        return;
    }
    let ns = Netns::new(format!("bbrtop-dq-{}", std::process::id()));
    let n = ns.0.as_str();
    ip(&["-n", n, "link", "add", "dq0", "type", "veth", "peer", "name", "dq1"]);
    ip(&["-n", n, "link", "add", "dq2", "type", "veth", "peer", "name", "dq3"]);
    for d in ["dq0", "dq1", "dq2", "dq3"] {
        ip(&["-n", n, "link", "set", d, "up"]);
    }
    tc(n, &["qdisc", "add", "dev", "dq0", "root", "handle", "1:", "htb", "default", "10"]);
    tc(n, &["class", "add", "dev", "dq0", "parent", "1:", "classid", "1:10", "htb", "rate", "10mbit"]);
    tc(n, &["qdisc", "add", "dev", "dq0", "parent", "1:10", "handle", "10:", "pfifo", "limit", "100"]);
    tc(
        n,
        &[
            "qdisc", "add", "dev", "dq1", "root", "handle", "2:", "tbf", "rate", "10mbit", "burst", "10k",
            "limit", "100k",
        ],
    );
    tc(n, &["qdisc", "add", "dev", "dq2", "root", "pfifo_fast"]);
    // dq3 keeps a veth's default: no queue.

    let o = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["doctor", "--json", "--netns", n])
        .output()
        .expect("bbrtop doctor");
    let checks: Vec<Value> = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}: {}", String::from_utf8_lossy(&o.stderr)));
    let verdict = |name: &str| {
        let c = check(&checks, name);
        (c["status"].as_str().unwrap().to_string(), c["value"].as_str().unwrap().to_string())
    };
    assert_eq!(verdict("netns:qdisc:dq0"), ("info".into(), "htb: pfifo".into()));
    assert_eq!(verdict("netns:qdisc:dq1"), ("info".into(), "tbf".into()));
    assert_eq!(verdict("netns:qdisc:dq2"), ("info".into(), "pfifo_fast".into()));
    assert_eq!(verdict("netns:qdisc:dq3"), ("info".into(), "noqueue".into()));
    let fix = check(&checks, "netns:qdisc:dq0")["fix"][0].as_str().unwrap().to_string();
    assert_eq!(fix, "tc qdisc replace dev dq0 parent 1:10 fq");
    for c in ["dq0", "dq1", "dq2"] {
        let why = check(&checks, &format!("netns:qdisc:{c}"))["why"].as_str().unwrap().to_string();
        assert!(why.contains("internal pacing"), "{c}: {why}");
    }
    // The namespace's interfaces are not the host's.
    assert!(!checks.iter().any(|c| c["name"] == "qdisc:dq0"), "dq0 is only in the namespace");
    // A down interface is not judged.
    ip(&["-n", n, "link", "set", "dq2", "down"]);
    let o = Command::new(env!("CARGO_BIN_EXE_bbrtop")).args(["doctor", "--netns", n]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("qdisc:dq2") && text.contains("netns:qdisc:dq1"), "{text}");
}
