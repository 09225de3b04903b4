//! Alertmanager push: the engine's alerts, as `POST /api/v2/alerts`, to every `--alertmanager.url`.
//!
//! - One alert per (cc, peer group), not per socket (`group.rs`): the count of its sockets firing
//!   and the worst few in annotations, so labels stay bounded however many sockets a queue
//!   inflates.
//! - A group that starts firing is sent at once, then every resend interval, with
//!   endsAt = now + 4 x resend, so Alertmanager resolves it by itself if bbrtop dies.
//! - A group none of whose sockets fire any more (resolved, or closed) is sent with endsAt = the
//!   resolve time, and resent every resend interval for [`RESOLVED_RESEND_FOR`], in case a post
//!   was lost.
//! - Each Alertmanager has its own worker and a bounded queue; a full queue drops the batch
//!   (counted). Network errors and 5xx are retried with backoff; 4xx are logged, not retried, and
//!   so is a redirect, which is not followed (3xx: a failed post, `redirected`).
//! - The URL as labels and logs show it has its password masked (`url_redact`).
//!
//! [`Tracker`] decides what is due (pure, clock passed in); the workers do the I/O.

use super::url_redact;
use crate::runtime::Published;
use bbrtop_core::peer_groups::PeerGroups;
use serde::Serialize;
use std::collections::BTreeMap;
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

/// The alert's severity: a queue on some sockets' paths is worth a look, not a page (the
/// Prometheus rules page for a queue at the host's edge).
pub const SEVERITY: &str = "warning";

/// The `result`s of a post (or of a batch, `dropped`), each counted from zero.
pub const RESULTS: [&str; 6] =
    ["success", "redirected", "client_error", "server_error", "network_error", "dropped"];

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
            // The label and log field: a password in the URL is masked.
            let shown = url_redact::redacted(url);
            // Seed every result at zero so the series exist before the first post.
            for r in RESULTS {
                stats.counts.lock().unwrap_or_else(|e| e.into_inner()).insert((shown.clone(), r), 0);
            }
            let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<String>>(QUEUE);
            let (u, sh, st, s) = (url.clone(), shown.clone(), Arc::clone(&stats), Arc::clone(&stop));
            threads.push(
                std::thread::Builder::new()
                    .name("bbrtop-am".into())
                    .spawn(move || worker(&u, &sh, &rx, &st, &s))?,
            );
            queues.push((shown, tx));
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
                for (shown, tx) in &queues {
                    if let Err(TrySendError::Full(_)) = tx.try_send(Arc::clone(&body)) {
                        st.add(shown, "dropped");
                        tracing::warn!(alertmanager = %shown, dropped = due.len(), "alertmanager queue full, alerts dropped");
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

/// Posts each batch `rx` hands over to `url`'s alerts endpoint; `shown` is the URL as labels and
/// logs name it (its password masked).
fn worker(url: &str, shown: &str, rx: &Receiver<Arc<String>>, stats: &PushStats, stop: &AtomicBool) {
    let endpoint = format!("{}/api/v2/alerts", url.trim_end_matches('/'));
    let shown_endpoint = format!("{}/api/v2/alerts", shown.trim_end_matches('/'));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        // A redirect is an answer, not followed (`post` says why).
        .max_redirects(0)
        .build()
        .into();
    while !stop.load(Ordering::Relaxed) {
        let Ok(body) = rx.recv_timeout(Duration::from_millis(200)) else { continue };
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            let (result, retry) = post(&agent, &endpoint, &shown_endpoint, &body, attempt);
            stats.add(shown, result);
            if !retry || attempt == ATTEMPTS || stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(backoff);
            backoff *= 2;
            // A stop during the backoff sends nothing more: a stop waits for one request at most.
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
    }
}

/// One post: its result (the `result` label) and whether to try again, said in a log line unless
/// it succeeded. Only a server's error or no answer is retried: a refusal or a redirect is the
/// same the next time.
fn post(agent: &ureq::Agent, endpoint: &str, shown: &str, body: &str, attempt: u32) -> (&'static str, bool) {
    let sent = agent.post(endpoint).header("Content-Type", "application/json").send(body);
    // Logged as shown: a password in the URL stays out of the logs.
    let endpoint = shown;
    match sent {
        Ok(r) if r.status().is_success() => ("success", false),
        // Not followed: a POST redirected by 301/302/303 is sent again as a GET without the
        // alerts (and Alertmanager answers a GET of its alerts with 200). Like any answer but 2xx
        // to Prometheus' notifier, a failed post; the fix is the URL the Location names.
        Ok(r) if r.status().is_redirection() => {
            let location =
                r.headers().get("location").and_then(|v| v.to_str().ok()).map(url_redact::redacted);
            let location = location.as_deref().unwrap_or("none");
            tracing::warn!(endpoint, status = %r.status(), location,
                "alertmanager answered a redirect, which is not followed: give --alertmanager.url the URL it names");
            ("redirected", false)
        }
        Ok(mut r) if r.status().is_client_error() => {
            let text = r.body_mut().read_to_string().unwrap_or_default();
            let body = text.trim().replace('\n', " ");
            tracing::warn!(endpoint, status = %r.status(), body, "alertmanager rejected the alerts");
            ("client_error", false)
        }
        Ok(r) => {
            tracing::warn!(endpoint, status = %r.status(), attempt, of = ATTEMPTS, "alertmanager post failed");
            ("server_error", true)
        }
        Err(e) => {
            tracing::warn!(endpoint, error = %e, attempt, of = ATTEMPTS, "alertmanager post failed");
            ("network_error", true)
        }
    }
}

mod group;
mod tracker;

pub use tracker::Tracker;

#[cfg(test)]
mod tests;
