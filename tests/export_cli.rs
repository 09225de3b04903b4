//! `bbrtop export` as a process: bad input at start, and a live scrape of a loopback flow checked
//! by the real `promtool`.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::exporter::promtool_check;
use support::http::{free_port, get};
use support::tools::{have, tool};
use support::{Proc, poll_until};

const BIN: &str = env!("CARGO_BIN_EXE_bbrtop");

/// Runs `bbrtop export ARGS` expecting it to fail at start: (exit code, stderr).
fn fails(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .arg("export")
        .args(args)
        .env_remove("LISTEN_FDS")
        .env_remove("LISTEN_PID")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// One line of error (clap adds its usual "For more information, try '--help'." hint).
fn assert_one_line(stderr: &str) {
    let lines = stderr.lines().filter(|l| !l.is_empty() && !l.starts_with("For more information"));
    assert_eq!(lines.count(), 1, "not one line: {stderr:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_input_is_a_one_line_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups.yml");
    std::fs::write(&groups, "groups: {edge: [10.0.0.0/33]}\n").unwrap();
    let web = dir.path().join("web.yml");
    std::fs::write(&web, "tls_server_config: {cert_file: c.pem, key_file: k.pem, cipher_suites: [x]}\n")
        .unwrap();
    let g = groups.to_str().unwrap();
    let w = web.to_str().unwrap();
    let country_db = dir.path().join("country.mmdb");
    std::fs::write(&country_db, bbrtop_core::testing::MAXMIND_COUNTRY_TEST).unwrap();
    let c = country_db.to_str().unwrap();
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    let free = format!("127.0.0.1:{}", free_port());
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--web.listen-address", &free, "--peer-groups.file", g], 2, "peer groups"),
        (
            &["--web.listen-address", &free, "--peer-groups", "/nonexistent/groups.yml"],
            2,
            "--peer-groups.file",
        ),
        (&["--web.listen-address", &free, "--web.config.file", w], 2, "cipher_suites"),
        (&["--web.listen-address", &busy_addr], 1, "already in use"),
        (&["--web.listen-address", ":99999"], 2, "listen address"),
        (&["--web.listen-address", "localhost"], 2, "listen address"),
        (&["--web.listen-address", &free, "--metrics.per-socket.top-k", "1001"], 2, "top-k"),
        (&["--web.listen-address", &free, "--peer-groups.asn.file", c], 2, "not an ASN (or ISP) database"),
        (&["--web.listen-address", &free, "--peer-groups.country.file", g], 2, "--peer-groups.country.file"),
        (&["--web.listen-address", &free, "--peer-groups.top", "0"], 2, "peer-groups.top"),
        (&["--web.listen-address", &free, "--alertmanager.url", "ftp://x"], 2, "Alertmanager URL"),
        (&["--web.listen-address", &free, "--alertmanager.url", "http://a b:9093"], 2, "Alertmanager URL"),
        (&["--web.telemetry-path", "metrics"], 2, "telemetry path"),
        (&["--web.telemetry-path", "/-/ready"], 2, "serves that path itself"),
        (&["--web.systemd-socket"], 2, "systemd passed no socket"),
        (&["--log.level", "loud"], 2, "log level"),
        (&["--log.format", "xml"], 2, "log format"),
    ];
    for (args, code, needle) in cases {
        let (got, stderr) = fails(args);
        assert_eq!(got, *code, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_one_line(&stderr);
    }
}

/// `--log.format json`: each log line is one JSON object with its level and fields, the
/// exporter's "listening" line among them; logfmt, the default, has `level=` and `key=value`.
/// `bbrtop export ARGS` that must fail at start within 20 s (a FIFO used to block it forever):
/// (exit code, stderr); a run still going then is killed and fails the test.
fn fails_at_once(args: &[&str]) -> (i32, String) {
    let mut child = Proc(
        Command::new(BIN)
            .arg("export")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let status = poll_until(Duration::from_secs(20), || child.0.try_wait().unwrap());
    let Some(status) = status else { panic!("{args:?}: still running after 20 s") };
    let mut stderr = String::new();
    child.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (status.code().unwrap_or(-1), stderr)
}

/// A FIFO, a device or a directory where a flag names a file is refused at once with one line
/// that names the flag, never opened for a blocking read or read until memory runs out.
#[test]
fn flag_named_special_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("web.yml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let fifo = fifo.to_str().unwrap();
    let zero_cert = dir.path().join("zero-cert.yml");
    std::fs::write(&zero_cert, "tls_server_config: {cert_file: /dev/zero, key_file: /dev/zero}\n").unwrap();
    let zero_cert = zero_cert.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    let free = format!("127.0.0.1:{}", free_port());
    let cases: &[(&[&str], &str)] = &[
        (&["--web.config.file", fifo], "--web.config.file"),
        (&["--peer-groups.file", fifo], "--peer-groups.file"),
        (&["--web.config.file", "/dev/zero"], "--web.config.file"),
        (&["--peer-groups.file", "/dev/zero"], "--peer-groups.file"),
        (&["--web.config.file", d], "--web.config.file"),
        (&["--web.config.file", zero_cert], "cert_file /dev/zero: not a regular file"),
    ];
    for (args, needle) in cases {
        let args = [&["--web.listen-address", free.as_str()], *args].concat();
        let (code, stderr) = fails_at_once(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(needle) && stderr.contains("not a regular file"), "{args:?}: {stderr}");
        assert_one_line(&stderr);
    }
}

/// An expired server certificate is refused at start, in one line that says when it expired
/// (main served it: every client that verifies it refused every scrape); a fresh one loads.
#[test]
fn an_expired_certificate_is_refused_at_start() {
    if !have("openssl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ssl = |args: &[&str]| {
        let o = Command::new("openssl").args(args).current_dir(d).output().unwrap();
        assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let ec =
        ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost"];
    ssl(&[&["req", "-new", "-keyout", "key.pem", "-out", "req.csr"][..], &ec].concat());
    std::fs::write(d.join("index.txt"), "").unwrap();
    std::fs::write(d.join("serial"), "01\n").unwrap();
    std::fs::write(
        d.join("ca.cnf"),
        "[ca]\ndefault_ca = d\n[d]\ndatabase = index.txt\nnew_certs_dir = .\ndefault_md = sha256\npolicy = p\n\
         serial = serial\n[p]\ncommonName = supplied\n",
    )
    .unwrap();
    // An extension makes it a version 3 certificate, as servers' are (rustls refuses version 1).
    std::fs::write(d.join("ext.cnf"), "basicConstraints=critical,CA:FALSE\n").unwrap();
    ssl(&[
        "ca",
        "-config",
        "ca.cnf",
        "-extfile",
        "ext.cnf",
        "-selfsign",
        "-keyfile",
        "key.pem",
        "-in",
        "req.csr",
        "-out",
        "old.pem",
        "-startdate",
        "20200101000000Z",
        "-enddate",
        "20200102000000Z",
        "-batch",
        "-notext",
    ]);
    ssl(&[&["req", "-x509", "-days", "2", "-keyout", "key2.pem", "-out", "new.pem"][..], &ec].concat());
    let web = |cert: &str, key: &str| {
        let p = d.join(format!("web-{cert}.yml"));
        std::fs::write(&p, format!("tls_server_config: {{cert_file: {cert}, key_file: {key}}}\n")).unwrap();
        p.display().to_string()
    };
    let (code, stderr) = fails_at_once(&[
        "--web.listen-address",
        "127.0.0.1:0",
        "--web.config.file",
        &web("old.pem", "key.pem"),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("old.pem: expired at 2020-01-02T00:00:00Z"), "{stderr}");
    assert_one_line(&stderr);
    // A fresh certificate (version 3, with its version field) is taken.
    let fresh =
        bbrtop::export::web_config::WebConfig::load(std::path::Path::new(&web("new.pem", "key2.pem")));
    assert!(fresh.is_ok(), "{:?}", fresh.err());
}

#[test]
fn logs_are_structured_lines_in_either_format() {
    use std::io::BufRead;
    for format in ["json", "logfmt"] {
        let listen = format!("127.0.0.1:{}", free_port());
        let (_hindsight, hindsight_flag) = support::hindsight_dir();
        let child = Command::new(BIN)
            .args(["export", "--no-collector.bpf", "--web.listen-address", &listen, "--log.format", format])
            .arg(&hindsight_flag)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut export = Proc(child);
        let stderr = export.0.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let line = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(20)).ok())
            .find(|l| l.contains("listening"))
            .unwrap_or_else(|| panic!("{format}: no listening line"));
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(
                (v["level"].as_str(), v["message"].as_str()),
                (Some("INFO"), Some("listening")),
                "{line}"
            );
            assert_eq!(v["address"].as_str(), Some(listen.as_str()), "{line}");
        } else {
            for part in ["level=info", "message=listening", &format!("address={listen}")] {
                assert!(line.contains(part), "{part} in {line}");
            }
        }
    }
}

/// A loopback TCP flow that keeps sending until dropped.
struct Flow {
    port: u16,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Flow {
    fn start() -> Flow {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s1 = Arc::clone(&stop);
        let reader = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            c.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
            let mut buf = vec![0u8; 65536];
            while !s1.load(Ordering::Relaxed) {
                match c.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break,
                }
            }
        });
        let s2 = Arc::clone(&stop);
        let writer = std::thread::spawn(move || {
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let buf = vec![7u8; 16384];
            while !s2.load(Ordering::Relaxed) {
                if c.write_all(&buf).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Flow { port, stop, threads: vec![reader, writer] }
    }
}

impl Drop for Flow {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[test]
fn live_scrape_passes_promtool_and_closed_sockets_leave_no_series() {
    if !have("promtool") {
        return;
    }
    let flow = Flow::start();
    let port = free_port();
    let (_hindsight, hindsight_flag) = support::hindsight_dir();
    let child = Command::new(BIN)
        .args(["export", "--web.listen-address", &format!("127.0.0.1:{port}"), "--interval", "200ms"])
        .arg(&hindsight_flag)
        .arg("--web.enable-api")
        .args(["--port", &flow.port.to_string(), "--metrics.per-socket.top-k", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let _exporter = Proc(child);
    let ready =
        poll_until(Duration::from_secs(10), || get(port, "/-/ready", None).ok().filter(|r| r.0 == 200));
    assert!(ready.is_some(), "bbrtop export never became ready");
    // Both ends of the flow are listed (the filter is on either port).
    let sockets = poll_until(Duration::from_secs(10), || {
        let (_, body) = get(port, "/api/sockets", None).ok()?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        let n = v["sockets"].as_array()?.len();
        (n == 2).then_some(n)
    });
    assert!(sockets.is_some(), "the flow's two sockets never appeared in /api/sockets");
    let (status, text) = get(port, "/metrics", None).unwrap();
    assert_eq!(status, 200);
    assert_eq!(established(&text), 2.0, "{text}");
    assert!(text.contains("bbrtop_socket_srtt_seconds{cookie="), "top-K series missing: {text}");
    let (ok, printed) = promtool_check(&text);
    assert!(ok && printed.trim().is_empty(), "promtool check metrics: {printed}\n{text}");

    drop(flow);
    let gone = poll_until(Duration::from_secs(10), || {
        let (_, text) = get(port, "/metrics", None).ok()?;
        (!text.contains("bbrtop_sockets{") && !text.contains("bbrtop_socket_srtt_seconds{")).then_some(())
    });
    assert!(gone.is_some(), "series of closed sockets stayed: {}", get(port, "/metrics", None).unwrap().1);

    // With eBPF on, the closed flows are counted, and the output still passes promtool.
    let (_, text) = get(port, "/metrics", None).unwrap();
    let attached = text
        .lines()
        .find(|l| l.starts_with("bbrtop_bpf_programs_attached") && !l.starts_with("# "))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    let caps = bbrtop_collect::caps::CapSet::effective()
        .missing(&[bbrtop_collect::caps::Cap::Bpf, bbrtop_collect::caps::Cap::Perfmon]);
    if caps.is_empty() {
        assert!(attached > 0.0, "eBPF should be on as root: {text}");
    }
    if attached > 0.0 {
        let closed = poll_until(Duration::from_secs(10), || {
            let (_, text) = get(port, "/metrics", None).ok()?;
            text.contains("bbrtop_closed_flows_total{cc=").then_some(text)
        })
        .expect("closed flows counted with eBPF on");
        assert!(closed.contains("bbrtop_closed_flow_srtt_seconds_bucket{"), "{closed}");
        let (ok, printed) = promtool_check(&closed);
        assert!(ok && printed.trim().is_empty(), "promtool check metrics: {printed}\n{closed}");
    }
}

/// The established sockets `bbrtop_sockets` counts, over its series.
fn established(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("bbrtop_sockets{") && l.contains("state=\"established\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// `--filter` decides which sockets are tracked, so the metrics and the per-cc aggregates follow
/// it: `dport = P` is the flow's client end alone (its peer's port is P, as `ss` has it), where
/// `--port P` lists both ends. A filter that cannot decide tracking is a one-line usage error.
#[test]
fn export_follows_filter() {
    let flow = Flow::start();
    let port = free_port();
    let (_hindsight, hindsight_flag) = support::hindsight_dir();
    let child = Command::new(BIN)
        .args(["export", "--web.listen-address", &format!("127.0.0.1:{port}"), "--interval", "200ms"])
        .arg(&hindsight_flag)
        .arg("--web.enable-api")
        .args(["--filter", &format!("dport = {} and not cc no-such-cc", flow.port)])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let _exporter = Proc(child);
    // Both ends exist before the first poll: a filter that let the server's end in would list
    // it in the same poll as the client's.
    let sockets = poll_until(Duration::from_secs(10), || {
        let (_, body) = get(port, "/api/sockets", None).ok()?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        let s = v["sockets"].as_array()?.clone();
        (!s.is_empty()).then_some(s)
    })
    .expect("the flow's client never appeared in /api/sockets");
    let peers: Vec<&str> = sockets.iter().filter_map(|s| s["peer"].as_str()).collect();
    assert_eq!(peers, [format!("127.0.0.1:{}", flow.port)], "{sockets:?}");
    let (_, text) = get(port, "/metrics", None).unwrap();
    assert_eq!(established(&text), 1.0, "{text}");

    let free = format!("127.0.0.1:{}", free_port());
    for (bad, says) in [
        ("srtt > 100ms", "changes from poll to poll"),
        ("sending", "changes from poll to poll"),
        ("dport = 443 and", "\"and\" needs a word on each side"),
        ("bbr", "unknown word \"bbr\""),
    ] {
        let (code, err) = fails(&["--web.listen-address", &free, "--filter", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert_one_line(&err);
        assert!(err.contains("--filter") && err.contains(says), "{bad}: {err}");
    }
}

/// Socket activation as systemd does it: systemd-socket-activate (systemd's own tool) binds the
/// port, and on the first connection starts bbrtop with the socket in LISTEN_FDS, as a .socket
/// unit would. The metrics are served at a path of their own.
#[test]
fn systemd_socket_activation_with_a_telemetry_path() {
    let Some(activate) = tool("systemd-socket-activate") else { return };
    let port = free_port();
    let (_hindsight, hindsight_flag) = support::hindsight_dir();
    let _activated = Proc(
        Command::new(activate)
            .args(["--listen", &format!("127.0.0.1:{port}"), BIN, "export", "--web.systemd-socket"])
            .arg(&hindsight_flag)
            .args(["--web.telemetry-path", "/node/bbrtop", "--interval", "200ms", "--no-collector.bpf"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("systemd-socket-activate"),
    );
    let metrics = poll_until(Duration::from_secs(20), || {
        get(port, "/node/bbrtop", None)
            .ok()
            .filter(|(code, body)| *code == 200 && body.contains("bbrtop_collector_degraded{"))
    });
    let (_, body) = metrics.expect("no metrics at /node/bbrtop on the passed socket");
    assert!(body.contains("bbrtop_build_info"), "{body}");
    // --no-collector.bpf: eBPF is off, and the exporter says it was asked to be.
    assert!(body.contains(r#"bbrtop_collector_degraded{collector="bpf",reason="disabled"} 1"#), "{body}");
    assert_eq!(get(port, "/metrics", None).unwrap().0, 404, "/metrics is not the telemetry path any more");
    let (code, landing) = get(port, "/", None).unwrap();
    assert_eq!(code, 200);
    assert!(landing.contains("href=\"node/bbrtop\""), "the landing page links the metrics: {landing}");
}
