//! The exporter's HTTP side, in process on loopback: formats checked by the real `promtool`,
//! TLS and basic auth with a real certificate, and slow clients.

mod support;

use bbrtop::export::server::Limits;
use bbrtop::export::web_config::{Security, WebConfig};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};
use support::exporter::{Server, promtool_check};
use support::http::get;
use support::poll_until;
use support::servers::Prometheus;
use support::tools::have;

#[test]
fn metrics_pass_promtool_in_both_formats_and_endpoints_answer() {
    if !have("promtool") {
        return;
    }
    let srv = Server::start(Security::default(), Limits::default(), 10);
    let (status, text) = get(srv.port, "/metrics", None).unwrap();
    assert_eq!(status, 200);
    assert!(text.contains(r#"bbrtop_srtt_seconds_count{cc="cubic",peer_group="lab"} 1"#), "{text}");
    assert!(text.contains("bbrtop_socket_rtt_inflation_ratio{cookie=\"3\""));
    assert!(text.contains("# TYPE bbrtop_inflation_onsets_total counter"));
    assert!(!text.contains("# EOF"));
    let (ok, printed) = promtool_check(&text);
    assert!(ok && printed.trim().is_empty(), "promtool check metrics: {printed}\n{text}");

    let (status, om) =
        get(srv.port, "/metrics", Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"))
            .unwrap();
    assert_eq!(status, 200);
    assert!(om.ends_with("# EOF\n"));
    assert!(om.contains("# TYPE bbrtop_inflation_onsets counter"));

    let (status, body) = get(srv.port, "/api/sockets", None).unwrap();
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["sockets"].as_array().map(Vec::len), Some(4));
    let (status, body) = get(srv.port, "/api/alerts", None).unwrap();
    assert_eq!(status, 200);
    assert!(serde_json::from_str::<serde_json::Value>(&body).unwrap()["alerts"].is_array());
    assert_eq!(get(srv.port, "/-/healthy", None).unwrap().0, 200);
    assert_eq!(get(srv.port, "/-/ready", None).unwrap().0, 200);
    assert!(get(srv.port, "/", None).unwrap().1.contains("/metrics"));
    assert_eq!(get(srv.port, "/nope", None).unwrap().0, 404);
}

fn curl(args: &[&str]) -> u16 {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

#[test]
fn tls_and_basic_auth() {
    if !have("openssl") || !have("curl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"])
        .args(["-keyout", "key.pem", "-out", "cert.pem", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    std::fs::write(
        d.join("web.yml"),
        format!("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  min_version: TLS12\nbasic_auth_users:\n  prom: '{hash}'\n"),
    )
    .unwrap();
    let security = WebConfig::load(&d.join("web.yml")).unwrap();
    let srv = Server::start(security, Limits::default(), 0);
    let url = format!("https://localhost:{}/metrics", srv.port);
    let ca = d.join("cert.pem");
    let ca = ca.to_str().unwrap();
    let resolve = format!("localhost:{}:127.0.0.1", srv.port);
    let base = ["--cacert", ca, "--resolve", resolve.as_str()];
    assert_eq!(curl(&[&base[..], &["-u", "prom:s3cret", url.as_str()]].concat()), 200);
    assert_eq!(curl(&[&base[..], &["-u", "prom:wrong", url.as_str()]].concat()), 401);
    assert_eq!(curl(&[&base[..], &["-u", "nobody:s3cret", url.as_str()]].concat()), 401);
    assert_eq!(curl(&[&base[..], &[url.as_str()]].concat()), 401);
    // Plain HTTP to the TLS port gets no answer.
    assert!(get(srv.port, "/metrics", None).map_or(true, |(s, _)| s != 200));
    // TLS 1.3 only: a TLS 1.2 client is refused.
    std::fs::write(
        d.join("web13.yml"),
        "tls_server_config: {cert_file: cert.pem, key_file: key.pem, min_version: TLS13}\n",
    )
    .unwrap();
    let srv13 = Server::start(WebConfig::load(&d.join("web13.yml")).unwrap(), Limits::default(), 0);
    let url13 = format!("https://localhost:{}/-/healthy", srv13.port);
    let resolve13 = format!("localhost:{}:127.0.0.1", srv13.port);
    let base13 = ["--cacert", ca, "--resolve", resolve13.as_str()];
    assert_eq!(curl(&[&base13[..], &[url13.as_str()]].concat()), 200);
    assert_eq!(curl(&[&base13[..], &["--tls-max", "1.2", url13.as_str()]].concat()), 0);
}

/// Opens `n` connections that send half a request and stall.
fn slow_clients(port: u16, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: slow\r\n").unwrap();
            s
        })
        .collect()
}

/// True if the server has closed (or answered and closed) the connection.
fn closed(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf = [0u8; 256];
    match s.read(&mut buf) {
        // EOF, or an answer such as 408 before the close.
        Ok(n) => n == 0 || buf[..n].starts_with(b"HTTP/"),
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

#[test]
fn a_scrape_answers_within_a_second_with_200_slow_clients() {
    let srv = Server::start(Security::default(), Limits::default(), 0);
    let mut slow = slow_clients(srv.port, 200);
    let t = Instant::now();
    let (status, body) = get(srv.port, "/metrics", None).unwrap();
    let took = t.elapsed();
    assert_eq!(status, 200);
    assert!(body.contains("bbrtop_sockets{"));
    assert!(took < Duration::from_secs(1), "scrape took {took:?} with 200 slow clients");
    // The slow clients were held open (not refused), so the scrape really competed with them.
    assert!(!closed(&mut slow[0]) && !closed(&mut slow[199]));
}

#[test]
fn slow_headers_time_out_and_excess_connections_are_closed() {
    let limits = Limits { max_connections: 3, header_read: Duration::from_millis(300), ..Limits::default() };
    let srv = Server::start(Security::default(), limits, 0);
    let mut slow = slow_clients(srv.port, 3);
    // A fourth connection is over the cap: closed at once.
    let mut extra = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    assert!(poll_until(Duration::from_secs(5), || closed(&mut extra).then_some(())).is_some());
    // The stalled ones are cut off after the header timeout, and the slots come back.
    for s in &mut slow {
        assert!(poll_until(Duration::from_secs(10), || closed(s).then_some(())).is_some());
    }
    let ok =
        poll_until(Duration::from_secs(5), || get(srv.port, "/-/healthy", None).ok().filter(|r| r.0 == 200));
    assert!(ok.is_some());
}

/// The test server's snapshot with response times towards two ASs of one (cc, peer group).
fn responses_per_as() -> std::sync::Arc<bbrtop_core::snapshot::Snapshot> {
    use bbrtop_core::snapshot::CcTotals;
    let mut snap = (*support::exporter::snapshot()).clone();
    snap.totals = ["AS64500", "AS64501"]
        .into_iter()
        .map(|asn| {
            let mut t = CcTotals {
                cc: "bbr".into(),
                peer_group: "lab".into(),
                asn: Some(asn.into()),
                country: Some("DE".into()),
                arm: None,
                counts: Default::default(),
                responses: Default::default(),
            };
            t.responses.observe(10_000, 0.05);
            t
        })
        .collect();
    std::sync::Arc::new(snap)
}

/// The series budget over HTTP: a text scrape carries the response times summed over AS (one
/// classic histogram, 132 series), and per AS (132 series each) only with
/// `--metrics.response-histograms.classic`.
#[test]
fn response_times_per_as_cost_classic_series_only_when_asked() {
    use bbrtop::export::server::Options;
    for (classic, series, per_as) in [(false, 132, 0), (true, 2 * 132, 2 * 132)] {
        let options = Options { response_classic: classic, ..Options::default() };
        let srv = Server::start_with(Security::default(), Limits::default(), options, responses_per_as);
        let (status, text) = get(srv.port, "/metrics", None).unwrap();
        assert_eq!(status, 200);
        let lines: Vec<&str> =
            text.lines().filter(|l| l.starts_with("bbrtop_response_delivery_seconds")).collect();
        assert_eq!(lines.len(), series, "classic {classic}: {lines:?}");
        assert_eq!(lines.iter().filter(|l| l.contains("asn=")).count(), per_as, "classic {classic}");
    }
}

/// Prometheus negotiates OpenMetrics, so this checks that format with a real parser.
#[test]
fn root_a_real_prometheus_scrapes_it() {
    if !have("prometheus") {
        return;
    }
    let srv = Server::start(Security::default(), Limits::default(), 3);
    let prom = Prometheus::start(&format!("127.0.0.1:{}", srv.port));
    let healthy = poll_until(Duration::from_secs(20), || {
        prom.targets().into_iter().find(|(h, _)| h == "up").map(|_| ())
    });
    assert!(healthy.is_some(), "target never up: {:?}", prom.targets());
    for expr in [
        "bbrtop_srtt_seconds_bucket",
        "bbrtop_inflation_onsets_total",
        "bbrtop_socket_srtt_seconds",
        "bbrtop_build_info",
    ] {
        let got = poll_until(Duration::from_secs(10), || Some(prom.query(expr)).filter(|r| !r.is_empty()));
        assert!(got.is_some(), "{expr}: no data in Prometheus");
    }
    let groups: std::collections::BTreeSet<String> = prom
        .query(r#"bbrtop_srtt_seconds_bucket{le="+Inf"}"#)
        .iter()
        .filter_map(|s| s["metric"]["peer_group"].as_str().map(String::from))
        .collect();
    assert_eq!(groups.into_iter().collect::<Vec<_>>(), ["lab", "other"]);
    assert!(prom.targets().iter().all(|(_, e)| e.is_empty()), "{:?}", prom.targets());
}

/// With native histograms on, Prometheus asks for protobuf first: the live distributions arrive
/// as native histograms (and no classic `_bucket` series), every other family as before, and a
/// quantile over them reads the one sender's srtt to within the native buckets' 4.4%.
#[test]
fn root_a_native_histograms_prometheus_scrapes_protobuf() {
    if !have("prometheus") {
        return;
    }
    let srv = Server::start(Security::default(), Limits::default(), 3);
    let prom = Prometheus::start_native(&Prometheus::scraping(&format!("127.0.0.1:{}", srv.port)));
    let srtt = r#"bbrtop_srtt_seconds{cc="cubic",peer_group="lab"}"#;
    let native = poll_until(Duration::from_secs(20), || {
        prom.query(srtt).into_iter().next().filter(|s| s.get("histogram").is_some())
    });
    assert!(native.is_some(), "no native histogram: {:?} {:?}", prom.query(srtt), prom.targets());
    assert!(prom.query("bbrtop_srtt_seconds_bucket").is_empty(), "classic buckets beside the native ones");
    for expr in [
        "bbrtop_inflation_onsets_total",
        "bbrtop_socket_srtt_seconds",
        "bbrtop_sockets_by_role",
        "bbrtop_build_info",
        r#"bbrtop_sockets{state="established"}"#,
    ] {
        assert!(!prom.query(expr).is_empty(), "{expr}: no data in Prometheus");
    }
    // Socket 3, the lab group's one CUBIC sender, has srtt 90 ms.
    let p95 = prom.query(&format!("histogram_quantile(0.95, sum by (cc) ({srtt}))"));
    let got: f64 = p95[0]["value"][1].as_str().and_then(|v| v.parse().ok()).expect("a p95");
    assert!((got / 0.09 - 1.0).abs() < 0.044, "p95 {got} s for one socket at 90 ms");
    assert!(prom.targets().iter().all(|(h, e)| h == "up" && e.is_empty()), "{:?}", prom.targets());
}
