//! Closed flows as OpenTelemetry log records, pushed over OTLP/HTTP (protobuf) to a collector
//! (`--otlp.endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT`).
//!
//! Two threads: the tap reads each snapshot's closed flows newer than the last it took (a gap in
//! their sequence numbers, flows that closed and left the snapshot's window between two reads,
//! is counted as missed), makes each a record (`record.rs`) and queues it without waiting
//! (`queue.rs`: bounded, a full queue drops and counts); the sender takes batches and posts them
//! (`send.rs`), retrying with backoff. So the poller never waits for a collector, memory stays
//! within the queue's bound, and every flow is either sent or counted as dropped, by reason.
//! The wire types are the OpenTelemetry project's own (`opentelemetry-proto`).

pub mod queue;
pub mod record;
pub mod send;

use crate::runtime::Published;
use bbrtop_core::geo::{GeoCell, PeerGeo};
use bbrtop_core::model::{ClosedFlow, Origin};
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::snapshot::{Snapshot, closed_since};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use queue::{Dropped, Queue, Stats};
use record::{FlowContext, Source};
use send::{Client, Endpoint, Outcome};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// Attempts per batch (the first and its retries), backoff doubling from the first.
const ATTEMPTS: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// How long a batch waits to fill before it goes.
const LINGER: Duration = Duration::from_secs(1);
/// At a stop, how long what is queued may take to go (and one request's timeout past it).
const GRACE: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct OtlpConfig {
    pub endpoint: Endpoint,
    /// Records held while the collector is slow or down (`--otlp.queue-size`).
    pub queue: usize,
    /// Records per request (`--otlp.batch-size`).
    pub batch: usize,
    pub source: Source,
    /// Ship flows with a loopback peer too (`--loopback`).
    pub loopback: bool,
}

/// A closed flow waiting to be sent, with what was known of it when it closed; it becomes a log
/// record only as its batch goes, so the queue holds the compact close record.
#[derive(Debug)]
struct Pending {
    flow: ClosedFlow,
    /// Its peer group's index in the groups.
    group: usize,
    geo: Option<PeerGeo>,
    origin: Option<Arc<Origin>>,
}

/// What the metrics read of a running shipper.
#[derive(Debug)]
pub struct Handle {
    pub stats: Stats,
    queue: Queue<Pending>,
}

impl Handle {
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

/// The running shipper; dropping it stops both threads, after the grace for what is queued.
pub struct Shipper {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    handle: Arc<Handle>,
}

/// Where a flow's peer group, AS and country come from.
pub struct Peers {
    pub groups: Arc<PeerGroups>,
    pub geo: Arc<GeoCell>,
}

impl Shipper {
    pub fn start(cfg: OtlpConfig, peers: Peers, published: Arc<Published>) -> Result<Shipper, String> {
        let client = Client::new(cfg.endpoint.clone())?;
        let handle = Arc::new(Handle { stats: Stats::default(), queue: Queue::new(cfg.queue) });
        let stop = Arc::new(AtomicBool::new(false));
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map_err(|e| format!("starting the OTLP {name}: {e}"))
        };
        let (h, s) = (Arc::clone(&handle), Arc::clone(&stop));
        let (loopback, groups) = (cfg.loopback, Arc::clone(&peers.groups));
        let tap = spawn("bbrtop-otlp-tap", Box::new(move || tap(&published, &peers, loopback, &h, &s)))?;
        let (h, s) = (Arc::clone(&handle), Arc::clone(&stop));
        let (batch, source) = (cfg.batch, cfg.source);
        let sender =
            spawn("bbrtop-otlp", Box::new(move || send_loop(&client, (&source, &groups), batch, &h, &s)))?;
        Ok(Shipper { stop, threads: vec![tap, sender], handle })
    }

    pub fn handle(&self) -> Arc<Handle> {
        Arc::clone(&self.handle)
    }
}

impl Drop for Shipper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A flow to send, with what the snapshot before its close knew of its socket.
fn pending(flow: &ClosedFlow, before: Option<&Snapshot>, peers: &Peers) -> Pending {
    Pending {
        flow: flow.clone(),
        group: peers.groups.index(flow.peer.ip()),
        geo: peers.geo.is_on().then(|| peers.geo.get().lookup(flow.peer.ip())),
        origin: before.and_then(|s| s.sockets.entry(flow.cookie)).and_then(|e| e.record.get().origin.clone()),
    }
}

fn to_record(p: &Pending, groups: &PeerGroups, now: SystemTime) -> LogRecord {
    let ctx =
        FlowContext { peer_group: groups.name(p.group), geo: p.geo.as_ref(), origin: p.origin.as_deref() };
    record::log_record(&p.flow, &ctx, now)
}

/// Whether a closed socket is a flow to ship: it had a peer (a listener, or a socket that never
/// connected, has none), not a loopback one unless asked (a host's own health checks and
/// scrapes would drown its traffic).
pub fn ships(flow: &ClosedFlow, loopback: bool) -> bool {
    !flow.peer.ip().is_unspecified() && (loopback || !bbrtop_core::model::is_loopback_peer(flow.peer))
}

fn tap(published: &Published, peers: &Peers, loopback: bool, h: &Handle, stop: &AtomicBool) {
    let (mut seq, mut last, mut before) = (0, None, None::<Arc<Snapshot>>);
    while !stop.load(Ordering::Relaxed) {
        let Some(snap) = published.wait_newer(seq, Duration::from_millis(500)) else { continue };
        seq = snap.seq;
        let (new, missed) = closed_since(&snap.closed, last);
        if missed > 0 {
            h.stats.add_dropped(Dropped::Missed, missed);
            tracing::warn!(missed, "OTLP: flows closed faster than the shipper read them");
        }
        for flow in new.iter().filter(|f| ships(f, loopback)) {
            if !h.queue.push(pending(flow, before.as_deref(), peers)) {
                h.stats.add_dropped(Dropped::QueueFull, 1);
            }
        }
        last = new.last().map(|f| f.seq).or(last);
        before = Some(snap);
    }
}

fn send_loop(
    client: &Client,
    (source, groups): (&Source, &PeerGroups),
    batch: usize,
    h: &Handle,
    stop: &AtomicBool,
) {
    let mut warned = false;
    // Set at the stop: what is queued then has the grace to go, a batch an attempt each.
    let mut deadline = None;
    loop {
        if deadline.is_none() && stop.load(Ordering::Relaxed) {
            deadline = Some(Instant::now() + GRACE);
        }
        let stopping = deadline.is_some();
        if deadline.is_some_and(|d| Instant::now() >= d) || (stopping && h.queue.is_empty()) {
            break;
        }
        let flows = h.queue.batch(batch, if stopping { Duration::ZERO } else { LINGER });
        if flows.is_empty() {
            continue;
        }
        let n = flows.len() as u64;
        let now = SystemTime::now();
        let req = record::request(source, flows.iter().map(|p| to_record(p, groups, now)).collect());
        match send_with_retries(client, &req, h, stop, &mut warned) {
            Ok((rejected, bytes)) => {
                h.stats.add_sent(n - rejected.min(n), bytes);
                h.stats.add_dropped(Dropped::Rejected, rejected.min(n));
            }
            Err(why) => h.stats.add_dropped(why, n),
        }
    }
    let left = h.queue.drain().len() as u64;
    if left > 0 {
        h.stats.add_dropped(Dropped::Shutdown, left);
        tracing::warn!(records = left, "OTLP: records still queued at the stop were not sent");
    }
}

/// Sends one request, retrying what is worth it; the records rejected and the bytes sent, or why
/// all were dropped.
fn send_with_retries(
    client: &Client,
    req: &opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest,
    h: &Handle,
    stop: &AtomicBool,
    warned: &mut bool,
) -> Result<(u64, u64), Dropped> {
    let mut backoff = FIRST_BACKOFF;
    for attempt in 1..=ATTEMPTS {
        match client.post(req) {
            Outcome::Sent { rejected, bytes } => {
                if *warned {
                    tracing::info!(endpoint = client.url(), "OTLP: the collector takes records again");
                    *warned = false;
                }
                return Ok((rejected, bytes));
            }
            Outcome::Refused(why) => {
                tracing::warn!(endpoint = client.url(), why, "OTLP: the collector refused a batch");
                return Err(Dropped::Rejected);
            }
            Outcome::Retry(why) => {
                h.stats.add_failed_request();
                if !*warned {
                    tracing::warn!(
                        endpoint = client.url(),
                        why,
                        attempt,
                        of = ATTEMPTS,
                        "OTLP: export failed, retrying"
                    );
                    *warned = true;
                }
            }
        }
        if attempt == ATTEMPTS || !pause(backoff, stop) {
            break;
        }
        backoff *= 2;
    }
    Err(Dropped::ExportFailed)
}

/// Sleeps `d` unless a stop comes first (false then).
fn pause(d: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(until.saturating_duration_since(Instant::now())));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_queued_flow_is_its_close_record_and_little_more() {
        // The bound --otlp.queue-size's help states, besides the cc name's and the peer's AS
        // organisation's allocations.
        let size = std::mem::size_of::<Pending>();
        assert!(size < 512, "a queued flow takes {size} bytes");
    }

    fn queued(n: usize) -> Handle {
        let h = Handle { stats: Stats::default(), queue: Queue::new(n) };
        let flow = ClosedFlow::example("bbr", 1, None);
        for _ in 0..n {
            assert!(h.queue.push(Pending { flow: flow.clone(), group: 0, geo: None, origin: None }));
        }
        h
    }

    fn client(url: String, timeout: Duration) -> Client {
        Client::new(Endpoint { url, headers: vec![], gzip: false, timeout, ca_file: None }).unwrap()
    }

    #[test]
    fn at_a_stop_with_the_collector_gone_every_queued_flow_is_counted_and_the_sender_ends() {
        let source = Source { host: "h".into(), bbr: "v1".into() };
        let groups = PeerGroups::default();
        // Refused at once: each batch gets its one attempt.
        let h = queued(30);
        let refused = client("http://127.0.0.1:1/v1/logs".into(), Duration::from_secs(2));
        send_loop(&refused, (&source, &groups), 8, &h, &AtomicBool::new(true));
        let dropped: Vec<(Dropped, u64)> = h.stats.dropped().filter(|(_, n)| *n > 0).collect();
        assert_eq!((h.stats.sent(), dropped), (0, vec![(Dropped::ExportFailed, 30)]));
        // A collector that never answers, and a stop that comes while the sender waits: the
        // grace bounds the stop, and what it left is counted as such.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/logs", silent.local_addr().unwrap());
        let (h, stop) = (queued(100), AtomicBool::new(false));
        let started = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| send_loop(&client(url, Duration::from_millis(500)), (&source, &groups), 8, &h, &stop));
            std::thread::sleep(Duration::from_millis(100));
            stop.store(true, Ordering::Relaxed);
        });
        assert!(started.elapsed() < GRACE + Duration::from_secs(2), "{:?}", started.elapsed());
        let by: BTreeMap<&str, u64> = h.stats.dropped().map(|(d, n)| (d.label(), n)).collect();
        assert_eq!(by.values().sum::<u64>(), 100, "{by:?}");
        assert!(by["shutdown"] > 0 && by["export_failed"] > 0, "{by:?}");
    }

    #[test]
    fn a_flow_ships_if_it_had_a_peer_and_not_loopback_unless_asked() {
        let flow =
            |peer: &str| ClosedFlow { peer: peer.parse().unwrap(), ..ClosedFlow::example("bbr", 1, None) };
        assert!(ships(&flow("10.0.0.2:443"), false));
        assert!(!ships(&flow("0.0.0.0:0"), true), "a listener");
        assert!(!ships(&flow("[::]:0"), true));
        assert!(!ships(&flow("127.0.0.1:9100"), false));
        assert!(!ships(&flow("[::ffff:127.0.0.1]:9100"), false));
        assert!(ships(&flow("127.0.0.1:9100"), true), "--loopback");
    }
}
