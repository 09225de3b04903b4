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
    for c in ["dq0", "dq1", "dq2"] {
        let why = check(&checks, &format!("netns:qdisc:{c}"))["why"].as_str().unwrap().to_string();
        assert!(why.contains("internal pacing"), "{c}: {why}");
    }
    // Only a qdisc this kernel has is recommended: every tc line doctor offers runs here, and
    // where it offers none it says why. Whether the kernel has fq is asked of tc itself, on the
    // veth with no queue (this project's machine has no fq and no fq_codel; main printed fq
    // lines there all the same).
    let has = |kind: &str| {
        let o = Command::new("tc").args(["-n", n, "qdisc", "replace", "dev", "dq3", "root", kind]).output();
        let ok = o.expect("tc").status.success();
        let _ = Command::new("tc").args(["-n", n, "qdisc", "del", "dev", "dq3", "root"]).output();
        ok
    };
    let (fq, fq_codel) = (has("fq"), has("fq_codel"));
    for c in ["dq0", "dq1", "dq2"] {
        let c = check(&checks, &format!("netns:qdisc:{c}"));
        let fixes: Vec<&str> =
            c["fix"].as_array().map(|f| f.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        if !fq && !fq_codel {
            assert!(fixes.is_empty(), "no qdisc to offer, yet: {fixes:?}");
            assert!(c["why"].as_str().unwrap().contains("neither fq nor fq_codel"), "{c}");
        }
        for line in
            fixes.iter().map(|l| l.split("  #").next().unwrap_or(l)).filter(|l| !l.contains("CLASSID"))
        {
            let kind = line.rsplit(' ').next().unwrap_or_default();
            assert!(
                kind == "fq" && fq || kind == "fq_codel" && fq_codel && !fq,
                "{line}: fq {fq}, fq_codel {fq_codel}"
            );
            let words: Vec<&str> = line.split_whitespace().skip(1).collect();
            let o = Command::new("tc").args(["-n", n]).args(&words).output().expect("tc");
            assert!(
                o.status.success(),
                "doctor's line does not run: {line}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    // The namespace's interfaces are not the host's.
    assert!(!checks.iter().any(|c| c["name"] == "qdisc:dq0"), "dq0 is only in the namespace");
    // A down interface is not judged.
    ip(&["-n", n, "link", "set", "dq2", "down"]);
    let o = Command::new(env!("CARGO_BIN_EXE_bbrtop")).args(["doctor", "--netns", n]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("qdisc:dq2") && text.contains("netns:qdisc:dq1"), "{text}");
}
