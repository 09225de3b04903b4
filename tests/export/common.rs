//! Helpers for the exporter tests: an in-process server on a free loopback port, a tiny HTTP
//! client, synthetic snapshots, and child processes killed by PID on drop.

#![allow(dead_code)]

use bbrtop::engine::sink::feed_dump;
use bbrtop::engine::snapshot::Snapshot;
use bbrtop::engine::{Engine, EngineConfig, Now};
use bbrtop::export::peer_groups::PeerGroups;
use bbrtop::export::server::{self, App, Limits, Options};
use bbrtop::export::web_config::Security;
use bbrtop::model::{BbrInfo, SocketRecord, TcpState};
use bbrtop::runtime::Published;
use bbrtop::wire::Dump;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[path = "../support/tools.rs"]
mod tools;

pub fn record(cookie: u64, cc: &str, peer: &str, srtt_us: u32) -> SocketRecord {
    let mut r = SocketRecord::new(
        cookie,
        "10.0.0.1:5201".parse().unwrap(),
        peer.parse().unwrap(),
        TcpState::Established,
    );
    r.cc = Some(cc.into());
    r.tcp_info.set_srtt_us(srtt_us);
    r.tcp_info.set_min_rtt_us(10_000);
    r.tcp_info.set_delivery_rate_bytes_per_sec(1_250_000);
    r.tcp_info.set_last_ack_recv_ms(0);
    if cc == "bbr" {
        r.bbr = Some(BbrInfo {
            bw_bytes_per_sec: 1_250_000,
            min_rtt_us: 10_000,
            pacing_gain: 1.0,
            cwnd_gain: 2.0,
        });
    }
    r
}

/// A snapshot of a few BBR and CUBIC sockets, some inflated.
pub fn snapshot() -> Arc<Snapshot> {
    snapshot_of(vec![
        record(1, "bbr", "10.1.0.2:40000", 12_000),
        record(2, "bbr", "192.0.2.7:40001", 35_000),
        record(3, "cubic", "10.1.0.3:40002", 90_000),
        record(4, "cubic", "[2001:db8::9]:40003", 11_000),
    ])
}

/// A snapshot of 20,000 sockets: a socket table worth tens of megabytes of JSON.
pub fn many_sockets() -> Arc<Snapshot> {
    snapshot_of(
        (1..=20_000)
            .map(|c| record(c, "cubic", &format!("10.1.{}.{}:40000", c / 250, c % 250), 20_000))
            .collect(),
    )
}

fn snapshot_of(recs: Vec<SocketRecord>) -> Arc<Snapshot> {
    let mut e = Engine::new(EngineConfig::default());
    let now = Now::system();
    feed_dump(&mut e, Dump { sockets: recs, ..Dump::default() }, now);
    e.tick(now)
}

pub struct Server {
    pub port: u16,
    pub app: Arc<App>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    polling: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
}

/// How often the test server's stand-in poller republishes its snapshot.
pub const TEST_POLL: Duration = Duration::from_millis(100);

impl Server {
    /// The exporter's server on the fixed snapshot, with the JSON API on.
    pub fn start(security: Security, limits: Limits, top_k: usize) -> Server {
        Server::start_with(security, limits, Options { top_k, api: true, ..Options::default() }, snapshot)
    }

    /// The server on the snapshots `take` makes, taken afresh at every stand-in poll.
    pub fn start_with(
        security: Security,
        limits: Limits,
        options: Options,
        take: fn() -> Arc<Snapshot>,
    ) -> Server {
        let l = server::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let published = Published::new(take());
        let groups = Arc::new(PeerGroups::parse("groups: {lab: [10.1.0.0/16]}").unwrap());
        let options = Options { poll_interval: TEST_POLL, ..options };
        let app = Arc::new(App::new(Arc::clone(&published), groups, security, options));
        // A poller's stand-in: the snapshot is taken afresh, so the probes see polls advance.
        let polling = Arc::new(AtomicBool::new(true));
        let still = Arc::clone(&polling);
        let poller = std::thread::spawn(move || {
            while still.load(Ordering::Relaxed) {
                std::thread::sleep(TEST_POLL);
                published.publish(take());
            }
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        let served = Arc::clone(&app);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(server::serve(vec![l], served, limits, async move {
                let _ = rx.await;
            }))
            .unwrap();
        });
        Server { port, app, stop: Some(tx), thread: Some(thread), polling, poller: Some(poller) }
    }

    /// Stops the stand-in poller, as a stuck or dead poller would stop.
    pub fn stop_polling(&mut self) {
        self.polling.store(false, Ordering::Relaxed);
        if let Some(t) = self.poller.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_polling();
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A plain HTTP/1.1 GET: (status, body).
pub fn get(port: u16, path: &str, accept: Option<&str>) -> std::io::Result<(u16, String)> {
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    get_with(port, path, &accept)
}

/// A GET as `user:password` with basic auth.
pub fn get_as(port: u16, path: &str, user: &str, password: &str) -> std::io::Result<(u16, String)> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    get_with(port, path, &format!("Authorization: Basic {b64}\r\n"))
}

/// A GET with these extra header lines (each ending in CRLF): (status, body).
pub fn get_with(port: u16, path: &str, headers: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n")?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let status = resp.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let chunked = head.lines().any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    Ok((status, if chunked { dechunk(body) } else { body.to_string() }))
}

/// Decodes a chunked HTTP/1.1 body (the servers under test send large answers that way).
fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// Polls `f` every 100 ms until it returns Some, at most `limit`.
pub fn poll_until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process killed (by its PID) and reaped on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free loopback port (bound then released; the caller binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Whether a tool is installed. Under CI=true a missing tool fails the test.
pub fn have(tool: &str) -> bool {
    tools::tool(tool).is_some()
}

/// Runs `promtool check metrics` on `text`: (success, everything it printed).
pub fn promtool_check(text: &str) -> (bool, String) {
    let mut c = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), printed)
}

/// A real Alertmanager on a free loopback port, with its own temp dir; killed on drop.
pub struct Alertmanager {
    pub port: u16,
    _proc: Proc,
    _dir: tempfile::TempDir,
}

impl Alertmanager {
    pub fn start() -> Alertmanager {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("am.yml");
        std::fs::write(
            &cfg,
            "route: {receiver: blackhole, group_wait: 1s}\nreceivers: [{name: blackhole}]\n",
        )
        .unwrap();
        let port = free_port();
        let child = std::process::Command::new("prometheus-alertmanager")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let am = Alertmanager { port, _proc: Proc(child), _dir: dir };
        let ready =
            poll_until(Duration::from_secs(20), || get(port, "/-/ready", None).ok().filter(|r| r.0 == 200));
        assert!(ready.is_some(), "alertmanager did not become ready on port {port}");
        am
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The alerts Alertmanager lists now (active, silenced, inhibited, unprocessed).
    pub fn alerts(&self) -> Vec<serde_json::Value> {
        get(self.port, "/api/v2/alerts", None)
            .ok()
            .and_then(|(_, b)| serde_json::from_str::<Vec<serde_json::Value>>(&b).ok())
            .unwrap_or_default()
    }

    /// The TcpRttInflation alerts whose endsAt is still ahead.
    pub fn active_rtt_alerts(&self) -> Vec<serde_json::Value> {
        let now = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        self.alerts()
            .into_iter()
            .filter(|a| a["labels"]["alertname"] == "TcpRttInflation")
            .filter(|a| a["endsAt"].as_str().is_some_and(|e| e > now.as_str()))
            .collect()
    }
}

/// A real Prometheus scraping `target` every second, on a free loopback port; killed on drop.
pub struct Prometheus {
    pub port: u16,
    _proc: Proc,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    pub fn start(target: &str) -> Prometheus {
        Prometheus::start_config(&format!(
            "global: {{scrape_interval: 1s, scrape_timeout: 1s}}\nscrape_configs:\n  - job_name: bbrtop\n    static_configs: [{{targets: ['{target}']}}]\n"
        ))
    }

    /// A Prometheus with this whole configuration file (scrape configs, rule files).
    pub fn start_config(config: &str) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("prometheus.yml");
        std::fs::write(&cfg, config).unwrap();
        let port = free_port();
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let p = Prometheus { port, _proc: Proc(child), _dir: dir };
        let ready =
            poll_until(Duration::from_secs(30), || get(port, "/-/ready", None).ok().filter(|r| r.0 == 200));
        assert!(ready.is_some(), "prometheus did not become ready on port {port}");
        p
    }

    /// An instant query: the result vector.
    pub fn query(&self, expr: &str) -> Vec<serde_json::Value> {
        let escaped: String = expr
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        get(self.port, &format!("/api/v1/query?query={escaped}"), None)
            .ok()
            .and_then(|(_, b)| serde_json::from_str::<serde_json::Value>(&b).ok())
            .and_then(|v| v["data"]["result"].as_array().cloned())
            .unwrap_or_default()
    }

    /// The scrape targets' health and last error.
    pub fn targets(&self) -> Vec<(String, String)> {
        get(self.port, "/api/v1/targets", None)
            .ok()
            .and_then(|(_, b)| serde_json::from_str::<serde_json::Value>(&b).ok())
            .and_then(|v| v["data"]["activeTargets"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|t| {
                (t["health"].as_str().unwrap_or("").into(), t["lastError"].as_str().unwrap_or("").into())
            })
            .collect()
    }
}
