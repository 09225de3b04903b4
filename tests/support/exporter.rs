//! The exporter in process: a synthetic snapshot served on a free loopback port, and `promtool`
//! to check what it serves.

use bbrtop::export::server::{self, App, Limits, Options};
use bbrtop::export::web_config::Security;
use bbrtop::runtime::Published;
use bbrtop_core::model::SocketRecord;
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::seam::Now;
use bbrtop_core::seam::feed_dump;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A sender (data in flight), which the live distributions count.
fn socket(cookie: u64, cc: &str, peer: &str, srtt_us: u32) -> SocketRecord {
    record(cookie, cc)
        .peer(peer)
        .srtt_us(srtt_us)
        .min_rtt_us(10_000)
        .delivery_rate_bytes_per_sec(1_250_000)
        .last_ack_recv_ms(0)
        .sending()
        .bbr(1_250_000, 10_000, 1.0, 2.0)
        .build()
}

/// A snapshot of a few BBR and CUBIC sockets, some inflated.
pub fn snapshot() -> Arc<Snapshot> {
    snapshot_of(vec![
        socket(1, "bbr", "10.1.0.2:40000", 12_000),
        socket(2, "bbr", "192.0.2.7:40001", 35_000),
        socket(3, "cubic", "10.1.0.3:40002", 90_000),
        socket(4, "cubic", "[2001:db8::9]:40003", 11_000),
    ])
}

/// A snapshot of 20,000 sockets: a socket table worth tens of megabytes of JSON.
pub fn many_sockets() -> Arc<Snapshot> {
    snapshot_of(
        (1..=20_000)
            .map(|c| socket(c, "cubic", &format!("10.1.{}.{}:40000", c / 250, c % 250), 20_000))
            .collect(),
    )
}

fn snapshot_of(recs: Vec<SocketRecord>) -> Arc<Snapshot> {
    let mut e = Engine::new(EngineConfig::default());
    let now = Now::system();
    feed_dump(&mut e, Dump { sockets: recs, ..Dump::default() }, now);
    e.tick(now)
}

/// How often the test server's stand-in poller republishes its snapshot.
pub const TEST_POLL: Duration = Duration::from_millis(100);

/// The exporter's HTTP server on its own thread, serving snapshots taken afresh by a stand-in
/// poller (so the probes see polls advance); stopped on drop.
pub struct Server {
    pub port: u16,
    pub app: Arc<App>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    polling: Arc<AtomicBool>,
    poller: Option<JoinHandle<()>>,
}

impl Server {
    /// The server on [`snapshot`], with the JSON API on.
    pub fn start(security: Security, limits: Limits, top_k: usize) -> Server {
        Server::start_with(security, limits, Options { top_k, api: true, ..Options::default() }, snapshot)
    }

    /// The server on the snapshots `take` makes.
    pub fn start_with(
        security: Security,
        limits: Limits,
        options: Options,
        take: fn() -> Arc<Snapshot>,
    ) -> Server {
        Server::start_at("127.0.0.1:0", security, limits, options, take)
    }

    /// [`Server::start_with`] on `addr`.
    pub fn start_at(
        addr: &str,
        security: Security,
        limits: Limits,
        options: Options,
        take: fn() -> Arc<Snapshot>,
    ) -> Server {
        let l = server::bind(addr).unwrap();
        let port = l.local_addr().unwrap().port();
        let published = Published::new(take());
        let groups = Arc::new(PeerGroups::parse("groups: {lab: [10.1.0.0/16]}").unwrap());
        let options = Options { poll_interval: TEST_POLL, ..options };
        let app = Arc::new(App::new(Arc::clone(&published), groups, security, options));
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

/// Runs `promtool check metrics` on `text`: (success, everything it printed).
pub fn promtool_check(text: &str) -> (bool, String) {
    let mut c = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), printed)
}
