//! Alertmanager push: the engine's alerts, as `POST /api/v2/alerts`, to every `--alertmanager.url`.
//!
//! - A firing alert is sent at once, then every resend interval, with
//!   endsAt = now + 4 x resend, so Alertmanager resolves it by itself if bbrtop dies.
//! - A resolved alert (or one whose socket closed) is sent with endsAt = the resolve time, and
//!   resent every resend interval for [`RESOLVED_RESEND_FOR`], in case a post was lost.
//! - Each Alertmanager has its own worker and a bounded queue; a full queue drops the batch
//!   (counted). Network errors and 5xx are retried with backoff; 400/422 are logged, not retried.
//!
//! [`Tracker`] decides what is due (pure, clock passed in); the workers do the I/O.

use crate::runtime::Published;
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::snapshot::{AlertView, Snapshot};
use bbrtop_core::units::micros;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

pub const ALERT_NAME: &str = "TcpRttInflation";
/// How long a resolved alert keeps being resent.
pub const RESOLVED_RESEND_FOR: Duration = Duration::from_secs(300);
/// Batches waiting per Alertmanager.
const QUEUE: usize = 16;
/// Attempts per batch (the first and its retries).
const ATTEMPTS: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

#[derive(Clone, Debug)]
pub struct PushConfig {
    /// Alertmanager base URLs, e.g. http://127.0.0.1:9093.
    pub urls: Vec<String>,
    pub resend: Duration,
    /// The `instance` label: what the scrape config calls this exporter, so that the shipped
    /// inhibit rule can match the per-host alerts Prometheus evaluates.
    pub instance: String,
    pub generator_url: String,
    /// Where the alert's runbook is (`runbook_url`).
    pub runbook_url: String,
    pub groups: Arc<PeerGroups>,
}

/// One alert as Alertmanager's v2 API takes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AmAlert {
    pub labels: BTreeMap<&'static str, String>,
    pub annotations: BTreeMap<&'static str, String>,
    #[serde(with = "bbrtop_core::units::serde_time")]
    pub starts_at: SystemTime,
    #[serde(with = "bbrtop_core::units::serde_time")]
    pub ends_at: SystemTime,
    #[serde(rename = "generatorURL")]
    pub generator_url: String,
}

struct Entry {
    view: AlertView,
    last_sent: Option<Instant>,
    /// (monotonic, wall) time of resolution.
    resolved: Option<(Instant, SystemTime)>,
}

/// Which alerts are due for sending. Keyed by (socket cookie, fired_at): a socket that fires
/// again is a new alert.
pub struct Tracker {
    cfg: PushConfig,
    entries: HashMap<(u64, SystemTime), Entry>,
}

impl Tracker {
    pub fn new(cfg: PushConfig) -> Tracker {
        Tracker { cfg, entries: HashMap::new() }
    }

    /// Takes in a snapshot and returns the alerts due now.
    pub fn due(&mut self, snap: &Snapshot, now: Instant, wall: SystemTime) -> Vec<AmAlert> {
        let mut seen = HashSet::new();
        for a in snap.firing() {
            let key = (a.cookie, a.fired_at);
            seen.insert(key);
            let e = self.entries.entry(key).or_insert_with(|| Entry {
                view: a.clone(),
                last_sent: None,
                resolved: None,
            });
            e.view = a.clone();
        }
        for (key, e) in self.entries.iter_mut() {
            if e.resolved.is_none() && !seen.contains(key) {
                // The engine's own resolve time if it still lists the alert, else now (closed).
                let at = snap
                    .alerts
                    .iter()
                    .find(|a| (a.cookie, a.fired_at) == *key)
                    .and_then(|a| a.resolved_at)
                    .unwrap_or(wall);
                e.resolved = Some((now, at));
                e.last_sent = None;
            }
        }
        self.entries
            .retain(|_, e| e.resolved.is_none_or(|(t, _)| now.duration_since(t) < RESOLVED_RESEND_FOR));
        let cfg = &self.cfg;
        let mut out = Vec::new();
        for e in self.entries.values_mut() {
            if e.last_sent.is_some_and(|t| now.duration_since(t) < cfg.resend) {
                continue;
            }
            e.last_sent = Some(now);
            let ends_at = e.resolved.map_or(wall + 4 * cfg.resend, |(_, at)| at);
            out.push(am_alert(cfg, &e.view, ends_at));
        }
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        out
    }
}

/// The alert's severity: a queue on one socket's path is worth a look, not a page.
pub const SEVERITY: &str = "warning";

fn am_alert(cfg: &PushConfig, a: &AlertView, ends_at: SystemTime) -> AmAlert {
    let labels = BTreeMap::from([
        ("alertname", ALERT_NAME.to_string()),
        ("severity", SEVERITY.to_string()),
        ("instance", cfg.instance.clone()),
        ("cc", a.cc.clone()),
        ("local", a.local.to_string()),
        ("peer", a.peer.to_string()),
        ("peer_group", cfg.groups.group(a.peer.ip()).to_string()),
    ]);
    let (srtt, baseline) = (micros(a.srtt_us), micros(a.baseline_rtt_us));
    let since = humantime::format_rfc3339_millis(a.since).to_string();
    let summary = format!("TCP RTT inflation on {}: {} socket {} -> {}", cfg.instance, a.cc, a.local, a.peer);
    let description = format!(
        "srtt {srtt} is {:.2}x its baseline {baseline} (min RTT) since {since}: a queue is building on \
         the path to {}.",
        a.ratio, a.peer
    );
    let annotations = BTreeMap::from([
        ("summary", summary),
        ("description", description),
        ("runbook_url", cfg.runbook_url.clone()),
        ("srtt", srtt),
        ("baseline", baseline),
        ("ratio", format!("{:.2}", a.ratio)),
        ("since", since),
    ]);
    AmAlert { labels, annotations, starts_at: a.fired_at, ends_at, generator_url: cfg.generator_url.clone() }
}

/// Posts by (alertmanager, result), for `bbrtop_alertmanager_posts_total`.
#[derive(Debug, Default)]
pub struct PushStats {
    counts: Mutex<BTreeMap<(String, &'static str), u64>>,
}

impl PushStats {
    fn add(&self, am: &str, result: &'static str) {
        *self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((am.to_string(), result))
            .or_default() += 1;
    }

    pub fn snapshot(&self) -> Vec<((String, &'static str), u64)> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

/// The running pusher: one thread reading snapshots, one worker per Alertmanager. Dropping it
/// stops them.
pub struct Pusher {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    stats: Arc<PushStats>,
}

impl Pusher {
    pub fn start(cfg: PushConfig, published: Arc<Published>) -> std::io::Result<Pusher> {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(PushStats::default());
        let mut threads = Vec::new();
        let mut queues = Vec::new();
        for url in &cfg.urls {
            // Seed every result at zero so the series exist before the first post.
            for r in ["success", "client_error", "server_error", "network_error", "dropped"] {
                stats.counts.lock().unwrap_or_else(|e| e.into_inner()).insert((url.clone(), r), 0);
            }
            let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<String>>(QUEUE);
            let (u, st, s) = (url.clone(), Arc::clone(&stats), Arc::clone(&stop));
            threads.push(
                std::thread::Builder::new()
                    .name("bbrtop-am".into())
                    .spawn(move || worker(&u, &rx, &st, &s))?,
            );
            queues.push((url.clone(), tx));
        }
        let (st, s) = (Arc::clone(&stats), Arc::clone(&stop));
        threads.push(std::thread::Builder::new().name("bbrtop-push".into()).spawn(move || {
            let mut tracker = Tracker::new(cfg);
            let mut seq = 0;
            while !s.load(Ordering::Relaxed) {
                // Wake at least once a second so resends are on time between snapshots.
                let snap =
                    published.wait_newer(seq, Duration::from_secs(1)).unwrap_or_else(|| published.latest());
                seq = snap.seq;
                let due = tracker.due(&snap, Instant::now(), SystemTime::now());
                if due.is_empty() {
                    continue;
                }
                let body = Arc::new(serde_json::to_string(&due).unwrap_or_default());
                for (url, tx) in &queues {
                    if let Err(TrySendError::Full(_)) = tx.try_send(Arc::clone(&body)) {
                        st.add(url, "dropped");
                        tracing::warn!(alertmanager = %url, dropped = due.len(), "alertmanager queue full, alerts dropped");
                    }
                }
            }
        })?);
        Ok(Pusher { stop, threads, stats })
    }

    pub fn stats(&self) -> Arc<PushStats> {
        Arc::clone(&self.stats)
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn worker(url: &str, rx: &Receiver<Arc<String>>, stats: &PushStats, stop: &AtomicBool) {
    let endpoint = format!("{}/api/v2/alerts", url.trim_end_matches('/'));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    while !stop.load(Ordering::Relaxed) {
        let Ok(body) = rx.recv_timeout(Duration::from_millis(200)) else { continue };
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let res = agent.post(&endpoint).header("Content-Type", "application/json").send(body.as_str());
            let retry = match res {
                Ok(r) if r.status().is_success() => {
                    stats.add(url, "success");
                    false
                }
                Ok(mut r) if r.status().is_client_error() => {
                    stats.add(url, "client_error");
                    let text = r.body_mut().read_to_string().unwrap_or_default();
                    let body = text.trim().replace('\n', " ");
                    tracing::warn!(endpoint, status = %r.status(), body, "alertmanager rejected the alerts");
                    false
                }
                Ok(r) => {
                    stats.add(url, "server_error");
                    tracing::warn!(endpoint, status = %r.status(), attempt, of = ATTEMPTS, "alertmanager post failed");
                    true
                }
                Err(e) => {
                    stats.add(url, "network_error");
                    tracing::warn!(endpoint, error = %e, attempt, of = ATTEMPTS, "alertmanager post failed");
                    true
                }
            };
            if !retry || attempt == ATTEMPTS || stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(backoff);
            backoff *= 2;
        }
    }
}

#[cfg(test)]
mod tests;
