//! The binary's contract: exit codes, one-line errors, doctor's verdicts. No privilege needed.

use std::process::{Command, Output};

fn bbrtop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbrtop")).args(args).output().expect("run bbrtop")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_usage_is_one_line_and_exit_2() {
    let cases: &[&[&str]] = &[
        &["snapshot", "--bogus"],
        &["snapshot", "--peer", "10.0.0.0/33"],
        &["snapshot", "--port", "0"],
        &["snapshot", "--port", "65536"],
        &["snapshot", "--state", "sleepy"],
        &["watch", "--interval", "0s"],
        &["watch", "--interval", "soon"],
        &["snapshot", "--netns", "bbrtop-no-such-ns"],
        &["snapshot", "--alert.ratio", "0.5"],
        &["doctor", "--bdp", "fast", "100ms"],
        &["doctor", "--bdp", "1gbit", "-5ms"],
        &["nosuchcommand"],
    ];
    for args in cases {
        let o = bbrtop(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}");
        let first = stderr(&o).lines().next().unwrap_or_default().to_string();
        assert!(first.contains("error"), "{args:?}: {first}");
    }
}

#[test]
fn help_and_version_exit_0() {
    assert_eq!(bbrtop(&["--help"]).status.code(), Some(0));
    assert_eq!(bbrtop(&["--version"]).status.code(), Some(0));
    assert_eq!(bbrtop(&["snapshot", "--help"]).status.code(), Some(0));
}

#[test]
fn doctor_json_agrees_with_its_exit_code() {
    let o = bbrtop(&["doctor", "--json"]);
    let checks: serde_json::Value = serde_json::from_slice(&o.stdout).expect("doctor --json is JSON");
    let statuses: Vec<&str> =
        checks.as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    let want = if statuses.contains(&"fail") {
        2
    } else if statuses.contains(&"warn") {
        1
    } else {
        0
    };
    assert_eq!(o.status.code(), Some(want), "{statuses:?}");
    for name in [
        "kernel",
        "tcp_congestion_control",
        "default_qdisc",
        "btf",
        "net.core.rmem_max",
        "net.ipv4.tcp_window_scaling",
    ] {
        assert!(checks.as_array().unwrap().iter().any(|c| c["name"] == name), "no {name} check");
    }
    // The host's own congestion control, as the kernel reports it.
    let cc = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
    let c = checks.as_array().unwrap().iter().find(|c| c["name"] == "tcp_congestion_control").unwrap();
    assert_eq!(c["value"], cc.trim());
}

#[test]
fn doctor_fix_prints_commands_and_changes_nothing() {
    let before = std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap();
    // A huge path makes every buffer check fail to size.
    let o = bbrtop(&["doctor", "--fix", "--bdp", "100gbit", "1s"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("sysctl -w net.core.rmem_max=\"25000000000\""), "{out}");
    assert_eq!(std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap(), before);
    assert!(o.status.code() >= Some(1));
}
