//! The binary's contract: exit codes, one-line errors, doctor's verdicts. No privilege needed.

mod support;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn bbrtop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbrtop")).args(args).output().expect("run bbrtop")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_usage_is_one_line_and_exit_2() {
    // 308 nines: on main an infinite rate, and rmem_max=18446744073709551615 recommended.
    let nines = format!("{}gbit", "9".repeat(308));
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
        &["doctor", "--bdp", &nines, "100ms"],
        &["doctor", "--bdp", "1gbit", "1000h"],
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
        "net.ipv4.tcp_slow_start_after_idle",
        "net.ipv4.tcp_notsent_lowat",
        "initcwnd",
    ] {
        assert!(checks.as_array().unwrap().iter().any(|c| c["name"] == name), "no {name} check");
    }
    // Without --bdp the buffers are judged against no path: information, whatever their size.
    for name in ["net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
        let c = checks.as_array().unwrap().iter().find(|c| c["name"] == name).unwrap();
        assert_eq!(c["status"], "info", "{c}");
    }
    // The host's own congestion control, as the kernel reports it.
    let cc = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
    let c = checks.as_array().unwrap().iter().find(|c| c["name"] == "tcp_congestion_control").unwrap();
    assert_eq!(c["value"], cc.trim());
}

#[test]
fn doctor_fix_prints_commands_and_changes_nothing() {
    let before = std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap();
    // A huge path makes every buffer check fail to size; 2x its BDP (25 GB) is past what the
    // sysctl holds (an int), so the line is capped there (main printed 25000000000, which the
    // kernel refuses).
    let o = bbrtop(&["doctor", "--fix", "--bdp", "100gbit", "1s"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("sysctl -w net.core.rmem_max=\"2147483647\""), "{out}");
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

/// `snapshot --filter`: the TUI's language decides which sockets are listed, with `ss`'s
/// meanings of `sport` and `dport`; `state` lifts the default state mask; a bad expression is a
/// one-line usage error.
#[test]
fn snapshot_follows_filter() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let conns: Vec<_> = (0..3)
        .map(|_| {
            let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            (c, l.accept().unwrap().0)
        })
        .collect();
    // (filter, how many of the sockets on `port` it lists, which end's port is `port`)
    let listed = |filter: &str| {
        let o = bbrtop(&["snapshot", "--json", "--filter", filter]);
        assert_eq!(o.status.code(), Some(0), "{filter}: {}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
        let ends = |s: &serde_json::Value, end: &str| {
            s[end].as_str().is_some_and(|a| a.ends_with(&format!(":{port}")))
        };
        let socks = doc["sockets"].as_array().unwrap().clone();
        let on: Vec<_> = socks.iter().filter(|s| ends(s, "local") || ends(s, "peer")).collect();
        (on.len(), on.iter().filter(|s| ends(s, "local")).count(), socks.len())
    };
    let n = conns.len();
    assert_eq!(listed(&format!("port {port}")), (2 * n, n, 2 * n));
    assert_eq!(listed(&format!("sport = {port}")), (n, n, n), "sport: the local end");
    assert_eq!(listed(&format!("dport = :{port}")), (n, 0, n), "dport: the peer's end");
    assert_eq!(listed(&format!("port {port} and not dport == {port}")), (n, n, n));
    assert_eq!(listed(&format!("dport {port} or (sport {port} and src 127.0.0.0/8)")), (2 * n, n, 2 * n));
    // The listener is LISTEN, which only a state word (or --state) brings in.
    assert_eq!(listed(&format!("sport {port} and state listen")), (1, 1, 1));
    for bad in ["bogus", "srtt > 100ms", "(port 1", "port", "cc bbr or"] {
        let o = bbrtop(&["snapshot", "--filter", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        let lines: Vec<String> = stderr(&o).lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
        assert_eq!(lines.len(), 1, "{bad}: {lines:?}");
        assert!(lines[0].starts_with("bbrtop: error:") && lines[0].contains("--filter"), "{lines:?}");
    }
}

/// The commands `bbrtop --help` lists (help itself aside).
fn commands() -> Vec<String> {
    let help = String::from_utf8(bbrtop(&["--help"]).stdout).expect("utf-8");
    let list = help.split("Commands:").nth(1).expect("a Commands: section");
    let list = list.split("\n\n").next().unwrap_or_default();
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

/// Every long flag a help text shows, with its value name if it takes one.
fn shown_flags(help: &str) -> Vec<(String, Option<String>)> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| {
            let l = l.strip_prefix("-h, ").or_else(|| l.strip_prefix("-V, ")).unwrap_or(l);
            let mut words = l.split_whitespace();
            let flag = words.next()?.strip_prefix("--")?.to_string();
            let value =
                words.next().filter(|w| w.starts_with('<')).map(|w| w.trim_matches(['<', '>']).to_string());
            Some((flag, value))
        })
        .collect()
}

/// The naming rule (docs/reference/exit-codes-and-files.md, "Flag names"): its list of parts,
/// and the hidden spellings it promises still work.
fn readme_rule() -> (Vec<String>, String) {
    let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference/exit-codes-and-files.md");
    let readme = std::fs::read_to_string(doc).expect(doc);
    let rule =
        readme.split("## Flag names").nth(1).expect("docs: ## Flag names").split("\n#").next().unwrap();
    let parts_line =
        rule.split("The parts:").nth(1).expect("the rule names the parts").split('.').next().unwrap();
    let parts = parts_line.split('`').skip(1).step_by(2).map(String::from).collect();
    (parts, rule.to_string())
}

/// One word of the rule: lowercase letters and digits, hyphen-joined.
fn is_words(s: &str) -> bool {
    !s.is_empty()
        && s.split('-').all(|w| {
            w.starts_with(|c: char| c.is_ascii_lowercase())
                && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

#[test]
fn flag_names_follow_the_readmes_rule() {
    let (parts, rule) = readme_rule();
    assert!(parts.len() >= 5, "parts read from the docs: {parts:?}");
    let mut pages = vec![(String::from("bbrtop"), bbrtop(&["--help"]))];
    let cmds = commands();
    assert!(cmds.len() >= 8, "{cmds:?}");
    pages.extend(cmds.iter().map(|c| (format!("bbrtop {c}"), bbrtop(&[c, "--help"]))));
    let mut seen = 0;
    for (page, out) in &pages {
        assert_eq!(out.status.code(), Some(0), "{page} --help");
        let flags = shown_flags(&String::from_utf8_lossy(&out.stdout));
        let names: Vec<&str> = flags.iter().map(|(f, _)| f.as_str()).collect();
        for (flag, value) in &flags {
            seen += 1;
            let bare = flag.strip_prefix("no-").unwrap_or(flag);
            // 1, 3: lowercase words joined by hyphens, between dots.
            assert!(bare.split('.').all(is_words), "{page}: --{flag} breaks rules 1 and 3");
            // 2: a dotted flag starts with a part the docs list.
            if let Some((part, _)) = bare.split_once('.') {
                assert!(parts.iter().any(|p| p == part), "{page}: --{flag}: {part} is not a part (rule 2)");
            }
            // 4: files, and only files, end in .file.
            let is_file = value.as_deref() == Some("FILE") || bare.ends_with(".file");
            assert!(!is_file || (bare.ends_with(".file") && value.is_some()), "{page}: --{flag} (rule 4)");
            // 5: no- only turns a collector off, and each toggle has its pair.
            if flag.starts_with("no-") || bare.starts_with("collector.") {
                assert!(bare.starts_with("collector.") && value.is_none(), "{page}: --{flag} (rule 5)");
                let pair = if flag.starts_with("no-") { bare.to_string() } else { format!("no-{flag}") };
                assert!(names.contains(&pair.as_str()), "{page}: --{flag} without --{pair} (rule 5)");
            }
        }
    }
    assert!(seen > 60, "only {seen} flags found: the help format changed?");

    // 7: the old spellings still parse, and are hidden.
    for (old, args) in [
        ("--collector", &["snapshot", "--collector", "netlink", "--port", "1"][..]),
        ("--peer-groups", &["export", "--peer-groups", "/nonexistent/groups.yml"]),
        ("--log-file", &["--log-file", "/nonexistent/log"]),
    ] {
        assert!(rule.contains(&format!("`{old}")), "the docs' rule 7 does not name {old}");
        let o = bbrtop(args);
        assert!(!stderr(&o).contains("unexpected argument"), "{args:?}: {}", stderr(&o));
        for (page, out) in &pages {
            let help = String::from_utf8_lossy(&out.stdout);
            assert!(shown_flags(&help).iter().all(|(f, _)| format!("--{f}") != old), "{page} shows {old}");
        }
    }
}

#[test]
fn completions_and_man_pages_are_generated_from_the_flags() {
    for shell in ["bash", "zsh", "fish"] {
        let o = bbrtop(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        let script = String::from_utf8_lossy(&o.stdout);
        for flag in ["web.telemetry-path", "no-collector.bpf", "alert.ratio"] {
            assert!(script.contains(flag), "{shell} completion lacks {flag}");
        }
    }
    let bad = bbrtop(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));

    let page = String::from_utf8(bbrtop(&["man"]).stdout).expect("utf-8");
    assert!(page.starts_with(".ie") && page.contains(".TH bbrtop 1"), "{}", &page[..page.len().min(200)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let o = bbrtop(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for c in commands() {
        let page =
            std::fs::read_to_string(dir.path().join(format!("bbrtop-{c}.1"))).expect("a page per command");
        assert!(page.contains(&format!(".TH bbrtop-{c} 1")), "bbrtop-{c}.1: {}", &page[..200]);
    }
    let export = std::fs::read_to_string(dir.path().join("bbrtop-export.1")).unwrap();
    assert!(export.contains("web.telemetry\\-path"), "bbrtop-export.1 lacks --web.telemetry-path");
}

/// Signals bbrtop does not stop on do not end `watch`: SIGUSR1 (the exporter's dump signal), and
/// SIGUSR2, SIGALRM, SIGVTALRM and SIGPROF, which bbrtop does not use and whose default action
/// terminates. It prints polls after each, and SIGTERM still ends it cleanly (on main each of them
/// killed it).
#[test]
fn watch_goes_on_after_signals_it_does_not_stop_on() {
    use std::io::BufRead;
    // A loopback connection of the test's own, so that every poll prints lines.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let _client = std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
    let _server = listener.accept().expect("accept");
    let mut child = support::Proc(
        Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(["watch", "--interval", "100ms", "--ndjson", "--no-collector.bpf"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bbrtop watch"),
    );
    // Lines are read on a thread of their own, so a silent child fails the test, not hangs it.
    let stdout = std::io::BufReader::new(child.0.stdout.take().expect("stdout"));
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || stdout.lines().map_while(Result::ok).try_for_each(|l| tx.send(l)));
    let seq = |line: String| -> u64 {
        let doc: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        doc["seq"].as_u64().expect("seq")
    };
    let mut last = lines.recv_timeout(Duration::from_secs(20)).map(seq).expect("a first poll's line");
    // Lines of polls after each signal: their seq grows past the last's.
    for sig in ["USR1", "USR2", "ALRM", "VTALRM", "PROF"] {
        support::signal(child.0.id(), sig);
        let later = std::iter::from_fn(|| lines.recv_timeout(Duration::from_secs(20)).ok().map(seq))
            .find(|&s| s >= last + 2);
        last = later.unwrap_or_else(|| panic!("watch stopped printing after SIG{sig}"));
    }
    support::signal(child.0.id(), "TERM");
    let status = support::wait_exit(&mut child.0, Duration::from_secs(20)).expect("SIGTERM ends it");
    assert!(status.success(), "{status:?}");
}

/// `snapshot --netns` naming a FIFO (or any file that is no network namespace) is refused at once
/// with one line and exit 2 (on main opening the FIFO blocked forever).
#[test]
fn snapshot_refuses_a_netns_that_is_no_namespace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let mut child = support::Proc(
        Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(["snapshot", "--no-collector.bpf", "--netns"])
            .arg(&fifo)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bbrtop snapshot"),
    );
    let status = support::wait_exit(&mut child.0, Duration::from_secs(20)).expect("it returns, not blocks");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().expect("stderr"), &mut err).expect("stderr");
    assert_eq!(status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("not a network namespace (a FIFO"), "{err}");
}
