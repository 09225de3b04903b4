//! The exporter under hostile load: the connection table only when asked for, behind auth,
//! streamed and bounded; one bcrypt check per credential, so a flood of wrong passwords leaves
//! real scrapes alone; probes that answer without auth and say whether the poller is alive; idle
//! keep-alives that give way to a scrape; socket activation that takes listeners only.

mod support;

use bbrtop::export::api::API_RESPONSES;
use bbrtop::export::server::{Limits, Options};
use bbrtop::export::web_config::{Security, WebConfig};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::exporter::{Server, many_sockets, snapshot};
use support::http::{get, get_as};
use support::poll_until;
use support::servers::Prometheus;
use support::tools::have;

/// A web config with one user, `prom`, whose password is `s3cret` (a low bcrypt cost: the test
/// binary is unoptimised, where cost 10 takes about a second a check).
fn with_auth(dir: &std::path::Path) -> Security {
    let hash = bcrypt::hash("s3cret", 6).unwrap();
    std::fs::write(dir.join("web.yml"), format!("basic_auth_users:\n  prom: '{hash}'\n")).unwrap();
    WebConfig::load(&dir.join("web.yml")).unwrap()
}

#[test]
fn the_api_is_off_unless_asked_for_and_behind_auth() {
    let off = Server::start_with(Security::default(), Limits::default(), Options::default(), snapshot);
    assert_eq!(get(off.port, "/api/sockets", None).unwrap().0, 404);
    assert_eq!(get(off.port, "/api/alerts", None).unwrap().0, 404);
    assert_eq!(get(off.port, "/metrics", None).unwrap().0, 200);

    let dir = tempfile::tempdir().unwrap();
    let on = Options { api: true, ..Options::default() };
    let srv = Server::start_with(with_auth(dir.path()), Limits::default(), on, snapshot);
    assert_eq!(get(srv.port, "/api/sockets", None).unwrap().0, 401);
    let (status, body) = get_as(srv.port, "/api/sockets", "prom", "s3cret").unwrap();
    assert_eq!(status, 200);
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["sockets"].as_array().map(Vec::len), Some(4), "{body}");
}

/// Slow readers hold at most API_RESPONSES responses, each a few chunks ahead of its reader,
/// not the whole table; past that an API request is refused, and served again once they go.
#[test]
fn api_responses_are_streamed_and_bounded() {
    let on = Options { api: true, ..Options::default() };
    let srv = Server::start_with(Security::default(), Limits::default(), on, many_sockets);
    let request = "GET /api/sockets HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let mut slow: Vec<TcpStream> = (0..API_RESPONSES)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
            s.write_all(request.as_bytes()).unwrap();
            s
        })
        .collect();
    // Each slow reader takes the head of its answer (chunked: streamed), then stops reading.
    for s in &mut slow {
        let mut head = [0u8; 4096];
        let n = s.read(&mut head).unwrap();
        let head = String::from_utf8_lossy(&head[..n]).to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 200") && head.contains("transfer-encoding: chunked"), "{head}");
    }
    let busy = poll_until(Duration::from_secs(10), || {
        get(srv.port, "/api/sockets", None).ok().filter(|(status, _)| *status == 503)
    });
    assert!(busy.is_some(), "a third concurrent API response was not refused");
    assert_eq!(get(srv.port, "/metrics", None).unwrap().0, 200, "scrapes go on meanwhile");
    drop(slow);
    let served = poll_until(Duration::from_secs(10), || {
        get(srv.port, "/api/sockets", None).ok().filter(|(status, _)| *status == 200)
    });
    let (_, body) = served.expect("served again once the slow readers left");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["sockets"].as_array().map(Vec::len), Some(20_000));
}

#[test]
fn probes_answer_without_auth_and_follow_the_poller() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start_with(with_auth(dir.path()), Limits::default(), Options::default(), snapshot);
    assert_eq!(get(srv.port, "/metrics", None).unwrap().0, 401);
    assert_eq!(get(srv.port, "/-/healthy", None).unwrap().0, 200, "a probe needs no password");
    assert_eq!(get(srv.port, "/-/ready", None).unwrap().0, 200);
    // The poller stops: once its last snapshot is stale, neither probe passes.
    srv.stop_polling();
    let unhealthy = poll_until(Duration::from_secs(20), || {
        get(srv.port, "/-/healthy", None).ok().filter(|(status, _)| *status == 503)
    });
    assert!(unhealthy.is_some(), "/-/healthy stayed 200 with the poller stopped");
    assert_eq!(get(srv.port, "/-/ready", None).unwrap().0, 503);
}

/// A flood of wrong passwords while a real Prometheus scrapes through auth: every scrape
/// succeeds, and bcrypt runs once per distinct credential, not once per request.
#[test]
fn root_a_wrong_password_flood_leaves_real_scrapes_alone() {
    if !have("prometheus") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_with(with_auth(dir.path()), Limits::default(), Options::default(), snapshot);
    let prom = Prometheus::start_config(&format!(
        "global: {{scrape_interval: 1s, scrape_timeout: 1s}}\nscrape_configs:\n  - job_name: bbrtop\n    \
         basic_auth: {{username: prom, password: s3cret}}\n    static_configs: [{{targets: ['127.0.0.1:{}']}}]\n",
        srv.port
    ));
    let up = poll_until(Duration::from_secs(20), || prom.targets().into_iter().find(|(h, _)| h == "up"));
    assert!(up.is_some(), "never scraped: {:?}", prom.targets());
    // Eight flooders, each trying the same 8 wrong passwords over and over, for 12 s.
    let end = Instant::now() + Duration::from_secs(12);
    let flooders: Vec<_> = (0..8)
        .map(|f| {
            let port = srv.port;
            std::thread::spawn(move || {
                let mut refused = 0u64;
                let mut i = 0;
                while Instant::now() < end {
                    if get_as(port, "/metrics", "prom", &format!("guess-{f}-{}", i % 8))
                        .is_ok_and(|r| r.0 == 401)
                    {
                        refused += 1;
                    }
                    i += 1;
                }
                refused
            })
        })
        .collect();
    let refused: u64 = flooders.into_iter().map(|t| t.join().unwrap()).sum();
    let targets = prom.targets();
    assert!(
        targets.iter().all(|(h, e)| h == "up" && e.is_empty()),
        "scrapes failed during the flood: {targets:?}"
    );
    let checks = srv.app.auth_checks();
    assert!(refused > 64, "the flood ran ({refused} requests refused)");
    assert!(checks <= 1 + 64, "{checks} bcrypt checks for 65 distinct credentials");
    let p99 = prom.query("quantile_over_time(0.99, scrape_duration_seconds[15s])");
    eprintln!(
        "flood: {refused} wrong-password requests refused, {checks} bcrypt checks; scrape duration p99 over the flood: {:?} s",
        p99.first().map(|s| s["value"][1].clone())
    );
}

/// A flood of unique wrong passwords, more than the wrong verdicts kept (1,024), beside a client
/// whose credential was already checked: every one of its scrapes is answered, and bcrypt never
/// runs for it again (on main the verdicts were cleared whole at 1,024, so the right credential
/// was checked again, behind the flood's queue).
#[test]
fn a_flood_of_unique_wrong_passwords_never_rechecks_a_known_credential() {
    let dir = tempfile::tempdir().unwrap();
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    std::fs::write(dir.path().join("web.yml"), format!("basic_auth_users:\n  prom: '{hash}'\n")).unwrap();
    let security = WebConfig::load(&dir.path().join("web.yml")).unwrap();
    let srv = Server::start_with(security, Limits::default(), Options::default(), snapshot);
    assert_eq!(get_as(srv.port, "/metrics", "prom", "s3cret").unwrap().0, 200);
    let (threads, each) = (8, 140);
    let flooders: Vec<_> = (0..threads)
        .map(|f| {
            let port = srv.port;
            std::thread::spawn(move || {
                (0..each)
                    .filter(|i| {
                        get_as(port, "/metrics", "prom", &format!("guess-{f}-{i}")).is_ok_and(|r| r.0 == 401)
                    })
                    .count()
            })
        })
        .collect();
    let mut scrapes = 0;
    while flooders.iter().any(|t| !t.is_finished()) && scrapes < 10_000 {
        let (status, body) = get_as(srv.port, "/metrics", "prom", "s3cret").expect("a scrape answered");
        assert_eq!(status, 200, "{body}");
        scrapes += 1;
    }
    let refused: usize = flooders.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(refused, threads * each, "every wrong password refused");
    assert!(scrapes > 0);
    assert_eq!(srv.app.auth_checks(), 1 + (threads * each) as u64, "the right credential was checked once");
}

/// Slowloris: more slow connections than slots, none of them ever finishing its headers. A
/// scrape still gets a slot (a slow one gives way) and is answered, every time; on main every
/// slot was taken before auth, and the scrapes were closed at once.
#[test]
fn slow_clients_never_starve_an_authenticated_scrape() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_connections: 8, ..Limits::default() };
    let srv = Server::start_with(with_auth(dir.path()), limits, Options::default(), snapshot);
    let slow: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n").unwrap();
            s
        })
        .collect();
    for i in 0..10 {
        let (status, _) =
            get_as(srv.port, "/metrics", "prom", "s3cret").unwrap_or_else(|e| panic!("scrape {i}: {e}"));
        assert_eq!(status, 200, "scrape {i}");
    }
    drop(slow);
}

/// One request on a keep-alive connection, its whole response read (a Content-Length body): the
/// status.
fn ask(s: &mut TcpStream, path: &str) -> std::io::Result<u16> {
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        let Some((head, body)) = text.split_once("\r\n\r\n") else { continue };
        let length = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string())
            })
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        if body.len() >= length {
            return Ok(head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0));
        }
    }
}

/// The starvation: without a web config, as many keep-alive connections as slots, each
/// having asked a probe or the landing page, then idle. Every scrape still gets a slot, the
/// longest idle connection giving way. On main any request without users kept its connection's
/// slot for good, and every scrape was closed at once.
#[test]
fn idle_keep_alive_connections_never_starve_a_scrape() {
    let n = 8;
    let limits = Limits { max_connections: n, ..Limits::default() };
    let srv = Server::start_with(Security::default(), limits, Options::default(), snapshot);
    let mut idle: Vec<TcpStream> = (0..n)
        .map(|i| {
            let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            assert_eq!(ask(&mut s, if i % 2 == 0 { "/-/healthy" } else { "/" }).unwrap(), 200);
            s
        })
        .collect();
    for i in 0..10 {
        let (status, body) = get(srv.port, "/metrics", None).unwrap_or_else(|e| panic!("scrape {i}: {e}"));
        assert_eq!(status, 200, "scrape {i}");
        assert!(body.contains("bbrtop_sockets"), "scrape {i}: {body}");
    }
    // The first connection waited longest: it gave way (closed, not left hanging).
    let closed = match idle[0].read(&mut [0u8; 64]) {
        Ok(n) => n == 0,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(closed, "the longest idle connection was not closed");
}

/// A keep-alive connection that asks nothing more is closed after the header timeout, as Go's
/// http.Server closes one after its IdleTimeout.
#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_header_timeout() {
    let limits = Limits { header_read: Duration::from_secs(1), ..Limits::default() };
    let srv = Server::start_with(Security::default(), limits, Options::default(), snapshot);
    let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(ask(&mut s, "/metrics").unwrap(), 200);
    let mut rest = [0u8; 64];
    assert_eq!(s.read(&mut rest).unwrap(), 0, "the idle connection was not closed");
}

/// `--web.systemd-socket` takes what sd_listen_fds(3) hands over and only listeners: a wild
/// LISTEN_FDS (main grew without bound, 10 GB in 16 s: here under a 4 GB address-space limit) and
/// a connected TCP socket (main accepted on it and failed ten times a second forever) are each a
/// one-line usage error at start. LISTEN_PID is the pid bash execs bbrtop in.
#[test]
fn socket_activation_refuses_a_wild_listen_fds_and_a_socket_that_does_not_listen() {
    let peer = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = peer.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port};");
    for (setup, fds, why) in [
        ("", "2147483647", "LISTEN_FDS=\"2147483647\": expected 1 to 64 sockets"),
        (connect.as_str(), "1", "fd 3 is a TCP socket that is not listening"),
        ("exec 3</proc/self/status;", "1", "fd 3 is not a socket"),
    ] {
        let script = format!(
            "ulimit -v 4000000; {setup} export LISTEN_PID=$$ LISTEN_FDS={fds}; exec \"$0\" export --web.systemd-socket"
        );
        let mut child = Command::new("bash")
            .args(["-c", &script, env!("CARGO_BIN_EXE_bbrtop")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = poll_until(Duration::from_secs(30), || child.try_wait().unwrap());
        if status.is_none() {
            let _ = child.kill();
        }
        let mut stderr = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
        let status = status.unwrap_or_else(|| panic!("{fds}: still running: {stderr}"));
        assert_eq!(status.code(), Some(2), "{fds}: {stderr}");
        assert!(stderr.contains(why) && stderr.trim().lines().count() == 1, "{fds}: {stderr:?}");
    }
}
