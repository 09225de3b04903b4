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

/// `snapshot --json` streams its document while the kernel dumps: it must still be one valid
/// document that lists the same sockets as the table, with aggregates over all of them.
#[test]
fn snapshot_json_streams_one_document_matching_the_table() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let conns: Vec<_> = (0..300)
        .map(|_| {
            let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            (c, l.accept().unwrap().0)
        })
        .collect();
    let o = bbrtop(&["snapshot", "--json", "--port", &port]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let socks = doc["sockets"].as_array().unwrap();
    // Both ends of each connection (the listener is LISTEN, which the default states leave out).
    assert_eq!(socks.len(), 2 * conns.len());
    for (c, _) in &conns {
        let local = c.local_addr().unwrap().to_string();
        assert!(socks.iter().any(|s| s["local"] == local.as_str()), "{local} missing");
    }
    let counted: u64 = doc["by_cc"].as_array().unwrap().iter().map(|a| a["sockets"].as_u64().unwrap()).sum();
    assert_eq!(counted, socks.len() as u64);
    assert_eq!(doc["collectors"][0]["name"], "netlink");
    assert_eq!(doc["collectors"][0]["polls_total"], 1);

    let table = bbrtop(&["snapshot", "--port", &port]);
    let rows = String::from_utf8_lossy(&table.stdout).lines().count();
    assert_eq!(rows, 1 + socks.len(), "the table has a header and a row per socket");

    // A reader that stops early is not an error.
    let mut child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["snapshot", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(first.starts_with(b"{\"taken_at\":"), "{}", String::from_utf8_lossy(&first));
}
