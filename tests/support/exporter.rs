//! The exporter in process: a synthetic snapshot served on a free loopback port, and `promtool`
//! to check what it serves.

use bbrtop::engine::sink::feed_dump;
use bbrtop::engine::snapshot::Snapshot;
use bbrtop::engine::{Engine, EngineConfig, Now};
use bbrtop::export::peer_groups::PeerGroups;
use bbrtop::export::server::{self, App, Limits};
use bbrtop::export::web_config::Security;
use bbrtop::model::SocketRecord;
use bbrtop::runtime::Published;
use bbrtop::testing::record;
use bbrtop::wire::Dump;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;

fn socket(cookie: u64, cc: &str, peer: &str, srtt_us: u32) -> SocketRecord {
    record(cookie, cc)
        .peer(peer)
        .srtt_us(srtt_us)
        .min_rtt_us(10_000)
        .delivery_rate_bytes_per_sec(1_250_000)
        .last_ack_recv_ms(0)
        .bbr(1_250_000, 10_000, 1.0, 2.0)
        .build()
}

/// A snapshot of a few BBR and CUBIC sockets, some inflated.
pub fn snapshot() -> Arc<Snapshot> {
    let mut e = Engine::new(EngineConfig::default());
    let recs = vec![
        socket(1, "bbr", "10.1.0.2:40000", 12_000),
        socket(2, "bbr", "192.0.2.7:40001", 35_000),
        socket(3, "cubic", "10.1.0.3:40002", 90_000),
        socket(4, "cubic", "[2001:db8::9]:40003", 11_000),
    ];
    let now = Now::system();
    feed_dump(&mut e, Dump { sockets: recs, ..Dump::default() }, now);
    e.tick(now)
}

/// The exporter's HTTP server on its own thread, serving [`snapshot`]; stopped on drop.
pub struct Server {
    pub port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(security: Security, limits: Limits, top_k: usize) -> Server {
        let l = server::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let app = Arc::new(App {
            published: Published::new(snapshot()),
            groups: Arc::new(PeerGroups::parse("groups: {lab: [10.1.0.0/16]}").unwrap()),
            top_k,
            push_stats: None,
            security,
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(server::serve(vec![l], app, limits, async move {
                let _ = rx.await;
            }))
            .unwrap();
        });
        Server { port, stop: Some(tx), thread: Some(thread) }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
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
