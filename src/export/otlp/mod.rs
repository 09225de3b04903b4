//! Closed flows as OpenTelemetry log records, pushed over OTLP/HTTP (protobuf) to a collector
//! (`--otlp.endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT`).
//!
//! Two threads: the tap reads each snapshot's closed flows newer than the last it took (a gap in
//! their sequence numbers, flows that closed and left the snapshot's window between two reads,
//! is counted as missed), makes each a record (`record.rs`) and queues it without waiting
//! (`queue.rs`: bounded in count and bytes, a full queue drops and counts); the sender takes
//! batches and posts them (`send.rs`), retrying with backoff. So the poller never waits for a
//! collector, memory stays within the queue's bounds, and every flow is either sent or counted as
//! dropped, by reason. A stop waits the grace for what is queued and then leaves the sender
//! behind, whatever request it waits on: the process ends, the rest counted as dropped.
//! The wire types are the OpenTelemetry project's own (`opentelemetry-proto`).

pub mod queue;
pub mod record;
pub mod send;

use crate::runtime::Published;
use crate::worker;
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
/// At a stop, how long what is queued (or in flight) may take to go, whatever `--otlp.timeout`:
/// within Kubernetes' default 10 s grace, with time left for the rest of the stop.
const GRACE: Duration = Duration::from_secs(5);
/// The queue's bound in bytes, per record of `--otlp.queue-size`: about twice a typical queued
/// flow's, so only outsized values (a database's huge AS name, a long cgroup path) reach it.
pub const QUEUE_BYTES_PER_RECORD: usize = 1024;
/// The longest AS name or country taken from a database into a record, in bytes: a hostile or
/// broken database cannot make a record, a request or the queue huge.
pub const MAX_GEO_VALUE: usize = 256;

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
    fn new(records: usize) -> Handle {
        let queue = Queue::new(records, records.saturating_mul(QUEUE_BYTES_PER_RECORD), weigh);
        Handle { stats: Stats::default(), queue }
    }

    /// Records not yet sent or dropped: queued, or in a request under way.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }
}

/// What a queued flow holds in memory, about: its origin counted whole though the snapshots may
/// share it (the queue may be its last holder).
fn weigh(p: &Pending) -> usize {
    let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let geo = p.geo.as_ref().map_or(0, |g| len(&g.as_org) + len(&g.country));
    let origin = p.origin.as_deref().map_or(0, |o| {
        let pod = o.pod.as_ref().map_or(0, |p| {
            p.uid.len() + len(&p.container_id) + len(&p.namespace) + len(&p.name) + len(&p.container)
        });
        std::mem::size_of::<Origin>() + len(&o.netns_name) + len(&o.cgroup) + pod
    });
    std::mem::size_of::<Pending>() + p.flow.cc.len() + geo + origin
}

/// A database's value cut to [`MAX_GEO_VALUE`] bytes, at a character's edge.
fn bounded(mut s: String) -> String {
    if s.len() > MAX_GEO_VALUE {
        let end = (0..=MAX_GEO_VALUE).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
        s.truncate(end);
    }
    s
}

/// The running shipper; dropping it stops it, within the grace for what is queued.
pub struct Shipper {
    stop: Arc<AtomicBool>,
    tap: Option<JoinHandle<()>>,
    sender: Option<Sender>,
    handle: Arc<Handle>,
}

/// The sender's thread, and word of its end (a channel: a thread cannot be joined with a
/// timeout).
struct Sender {
    thread: JoinHandle<()>,
    ended: std::sync::mpsc::Receiver<()>,
}

/// Where a flow's peer group, AS and country come from.
pub struct Peers {
    pub groups: Arc<PeerGroups>,
    pub geo: Arc<GeoCell>,
}

impl Shipper {
    pub fn start(cfg: OtlpConfig, peers: Peers, published: Arc<Published>) -> Result<Shipper, String> {
        let client = Client::new(cfg.endpoint.clone())?;
        let handle = Arc::new(Handle::new(cfg.queue));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (Arc::clone(&handle), Arc::clone(&stop));
        let (loopback, groups) = (cfg.loopback, Arc::clone(&peers.groups));
        let tap = spawn("tap", move || tap(&published, &peers, loopback, &h, &s))?;
        let sender = Sender::start(client, (cfg.source, groups), cfg.batch, &handle, &stop)?;
        Ok(Shipper { stop, tap: Some(tap), sender: Some(sender), handle })
    }

    pub fn handle(&self) -> Arc<Handle> {
        Arc::clone(&self.handle)
    }
}

impl Drop for Shipper {
    fn drop(&mut self) {
        if let Some(sender) = self.sender.take() {
            wind_down(&self.stop, self.tap.take(), sender, &self.handle, GRACE);
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name(format!("bbrtop-otlp-{name}"))
        .spawn(f)
        .map_err(|e| format!("starting the OTLP {name}: {e}"))
}

impl Sender {
    fn start(
        client: Client,
        (source, groups): (Source, Arc<PeerGroups>),
        batch: usize,
        h: &Arc<Handle>,
        stop: &Arc<AtomicBool>,
    ) -> Result<Sender, String> {
        let (h, stop) = (Arc::clone(h), Arc::clone(stop));
        let (tx, ended) = std::sync::mpsc::channel();
        let thread = spawn("sender", move || {
            send_loop(&client, (&source, &groups), batch, &h, &stop);
            let _ = tx.send(());
        })?;
        Ok(Sender { thread, ended })
    }
}

/// The stop: the tap ends (it never blocks for long), the sender has until `grace` after the
/// stop to send what is queued, and then whatever is still held, queued or in a request the
/// collector has not answered, is counted as dropped at the stop and the sender left behind
/// (a detached thread does not hold the process's exit).
fn wind_down(stop: &AtomicBool, tap: Option<JoinHandle<()>>, sender: Sender, h: &Handle, grace: Duration) {
    let until = Instant::now() + grace;
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = tap {
        let _ = t.join();
    }
    let ended = sender.ended.recv_timeout(until.saturating_duration_since(Instant::now()));
    let left = h.queue.abandon();
    if left > 0 {
        h.stats.add_dropped(Dropped::Shutdown, left);
        tracing::warn!(records = left, "OTLP: records still queued or in flight at the stop were not sent");
    }
    if ended != Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
        let _ = sender.thread.join();
    }
}

/// A flow to send, with what the snapshot before its close knew of its socket.
fn pending(flow: &ClosedFlow, before: Option<&Snapshot>, peers: &Peers) -> Pending {
    Pending {
        flow: flow.clone(),
        group: peers.groups.index(flow.peer.ip()),
        geo: peers.geo.is_on().then(|| {
            let g = peers.geo.get().lookup(flow.peer.ip());
            PeerGeo { as_org: g.as_org.map(bounded), country: g.country.map(bounded), ..g }
        }),
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
    // After a stop, what is queued goes a batch an attempt each, until the stop's grace
    // abandons the queue.
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        if h.queue.is_abandoned() || (stopping && h.queue.is_empty()) {
            break;
        }
        let taken = h.queue.batch(batch, if stopping { Duration::ZERO } else { LINGER });
        if taken.items.is_empty() {
            continue;
        }
        let n = taken.items.len() as u64;
        let now = SystemTime::now();
        let req = record::request(source, taken.items.iter().map(|p| to_record(p, groups, now)).collect());
        let result = send_with_retries(client, &req, h, stop, &mut warned);
        // Not ours to count if the stop counted it while it was in flight.
        if !h.queue.settle(taken) {
            continue;
        }
        match result {
            Ok((rejected, bytes)) => {
                h.stats.add_sent(n - rejected.min(n), bytes);
                h.stats.add_dropped(Dropped::Rejected, rejected.min(n));
            }
            Err(why) => h.stats.add_dropped(why, n),
        }
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
        // A stop cuts the backoff short.
        if attempt == ATTEMPTS
            || !worker::wait_until(Instant::now() + backoff, || stop.load(Ordering::Relaxed))
        {
            break;
        }
        backoff *= 2;
    }
    Err(Dropped::ExportFailed)
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

    fn pending(flow: &ClosedFlow) -> Pending {
        Pending { flow: flow.clone(), group: 0, geo: None, origin: None }
    }

    fn queued(n: usize) -> Arc<Handle> {
        let h = Handle::new(n);
        let flow = ClosedFlow::example("bbr", 1, None);
        for _ in 0..n {
            assert!(h.queue.push(pending(&flow)));
        }
        Arc::new(h)
    }

    fn client(url: String, timeout: Duration) -> Client {
        Client::new(Endpoint { url, headers: vec![], gzip: false, timeout, ca_file: None }).unwrap()
    }

    fn source() -> Source {
        Source { host: "h".into(), bbr: "v1".into() }
    }

    fn by_reason(h: &Handle) -> BTreeMap<&'static str, u64> {
        h.stats.dropped().filter(|(_, n)| *n > 0).map(|(d, n)| (d.label(), n)).collect()
    }

    #[test]
    fn at_a_stop_with_the_collector_gone_every_queued_flow_is_counted_and_the_sender_ends() {
        // Refused at once: each batch gets its one attempt.
        let h = queued(30);
        let refused = client("http://127.0.0.1:1/v1/logs".into(), Duration::from_secs(2));
        send_loop(&refused, (&source(), &PeerGroups::default()), 8, &h, &AtomicBool::new(true));
        assert_eq!((h.stats.sent(), by_reason(&h)), (0, BTreeMap::from([("export_failed", 30)])));
        assert_eq!(h.queued(), 0);
    }

    #[test]
    fn a_stop_leaves_a_hung_request_behind_and_counts_its_flows_once() {
        // A collector that takes the connection and never answers, and a request timeout far
        // past the grace: the stop ends at the grace, everything held counted as dropped there.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/logs", silent.local_addr().unwrap());
        let (h, stop) = (queued(100), Arc::new(AtomicBool::new(false)));
        let groups = Arc::new(PeerGroups::default());
        let sender =
            Sender::start(client(url, Duration::from_secs(600)), (source(), groups), 8, &h, &stop).unwrap();
        // The first batch is in flight once the collector has its connection.
        let (_conn, _) = silent.accept().unwrap();
        wind_down(&stop, None, sender, &h, Duration::from_millis(300));
        assert_eq!(h.stats.sent(), 0);
        assert_eq!(by_reason(&h), BTreeMap::from([("shutdown", 100)]), "the batch in flight too, once");
        assert_eq!(h.queued(), 0);
    }

    #[test]
    fn a_database_cannot_make_the_queue_huge() {
        // An AS database with a 2 MB organisation name: the value is cut, and the queue is
        // bounded in bytes besides its count.
        let cut = bounded("é".repeat(1 << 20));
        assert!(cut.len() <= MAX_GEO_VALUE && cut.len() > MAX_GEO_VALUE - 2, "{}", cut.len());
        let h = Handle::new(8192);
        let huge = PeerGeo { as_org: Some("x".repeat(2 << 20)), ..PeerGeo::default() };
        let flow = ClosedFlow::example("bbr", 1, None);
        let item = || Pending { geo: Some(huge.clone()), ..pending(&flow) };
        let took = (0..100).take_while(|_| h.queue.push(item())).count();
        assert_eq!(
            took,
            8192 * QUEUE_BYTES_PER_RECORD / weigh(&item()),
            "bounded by bytes, not by the 8192 records"
        );
        assert_eq!(h.queued(), took);
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
