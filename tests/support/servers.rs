//! Real Prometheus and Alertmanager servers on loopback, each with a temp dir of its own.

use super::http::{free_port, get};
use super::{Proc, poll_until};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// A server process on a free loopback port, ready; killed (and its temp dir removed) on drop.
struct Running {
    port: u16,
    _proc: Proc,
    _dir: tempfile::TempDir,
}

/// Starts `bin` with `config` as its config file and its data under `storage_flag`, and waits
/// (bounded) for /-/ready.
fn start(bin: &str, config: &str, storage_flag: &str, extra: &[&str], ready_within: Duration) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yml");
    std::fs::write(&cfg, config).unwrap();
    let port = free_port();
    let child = Command::new(bin)
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!("{storage_flag}={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running { port, _proc: Proc(child), _dir: dir };
    let ready = poll_until(ready_within, || get(port, "/-/ready", None).ok().filter(|r| r.0 == 200));
    assert!(ready.is_some(), "{bin} did not become ready on port {port}");
    running
}

/// GET `path` as JSON, or Null.
fn json(port: u16, path: &str) -> serde_json::Value {
    get(port, path, None).ok().and_then(|(_, b)| serde_json::from_str(&b).ok()).unwrap_or_default()
}

pub struct Alertmanager(Running);

impl Alertmanager {
    pub fn start() -> Alertmanager {
        Alertmanager::start_config(
            "route: {receiver: blackhole, group_wait: 1s}\nreceivers: [{name: blackhole}]\n",
        )
    }

    /// An Alertmanager with this whole configuration file (routes, inhibit rules, receivers).
    pub fn start_config(config: &str) -> Alertmanager {
        Alertmanager(start(
            "prometheus-alertmanager",
            config,
            "--storage.path",
            &["--cluster.listen-address="],
            Duration::from_secs(20),
        ))
    }

    /// POSTs alerts (Alertmanager's v2 JSON) as Prometheus would; the HTTP status.
    pub fn post(&self, alerts: &serde_json::Value) -> u16 {
        use std::io::{Read, Write};
        let body = alerts.to_string();
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.0.port)).unwrap();
        write!(
            s,
            "POST /api/v2/alerts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut resp = String::new();
        let _ = s.read_to_string(&mut resp);
        resp.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.0.port)
    }

    /// The alerts Alertmanager lists now (active, silenced, inhibited, unprocessed).
    pub fn alerts(&self) -> Vec<serde_json::Value> {
        json(self.0.port, "/api/v2/alerts").as_array().cloned().unwrap_or_default()
    }

    /// The TcpRttInflation alerts whose endsAt is still ahead.
    pub fn active_rtt_alerts(&self) -> Vec<serde_json::Value> {
        let now = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        self.alerts()
            .into_iter()
            .filter(|a| a["labels"]["alertname"] == "TcpRttInflation")
            .filter(|a| a["endsAt"].as_str().is_some_and(|e| e > now.as_str()))
            .collect()
    }
}

pub struct Prometheus(Running);

impl Prometheus {
    /// A Prometheus scraping `target` every second.
    pub fn start(target: &str) -> Prometheus {
        Prometheus::start_config(&Prometheus::scraping(target))
    }

    /// A Prometheus with this whole configuration file (scrape configs, rule files).
    pub fn start_config(config: &str) -> Prometheus {
        Prometheus::start_with(config, &[])
    }

    /// [`Prometheus::start_config`] with native histograms on, so that it asks exporters for
    /// protobuf first.
    pub fn start_native(config: &str) -> Prometheus {
        Prometheus::start_with(config, &["--enable-feature=native-histograms"])
    }

    fn start_with(config: &str, flags: &[&str]) -> Prometheus {
        Prometheus(start("prometheus", config, "--storage.tsdb.path", flags, Duration::from_secs(30)))
    }

    /// The configuration [`Prometheus::start`] uses: `target` scraped every second.
    pub fn scraping(target: &str) -> String {
        format!(
            "global: {{scrape_interval: 1s, scrape_timeout: 1s}}\nscrape_configs:\n  - job_name: bbrtop\n    static_configs: [{{targets: ['{target}']}}]\n"
        )
    }

    /// An instant query: the result vector.
    pub fn query(&self, expr: &str) -> Vec<serde_json::Value> {
        self.query_params(expr, "")
    }

    /// An instant query evaluated at `time` (Unix seconds): the result vector.
    pub fn query_at(&self, expr: &str, time: f64) -> Vec<serde_json::Value> {
        self.query_params(expr, &format!("&time={time:.3}"))
    }

    fn query_params(&self, expr: &str, params: &str) -> Vec<serde_json::Value> {
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
        json(self.0.port, &format!("/api/v1/query?query={escaped}{params}"))["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The scrape targets' health and last error.
    pub fn targets(&self) -> Vec<(String, String)> {
        json(self.0.port, "/api/v1/targets")["data"]["activeTargets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                (t["health"].as_str().unwrap_or("").into(), t["lastError"].as_str().unwrap_or("").into())
            })
            .collect()
    }
}
