//! Scrape-time benchmark: `/metrics` rendered from a snapshot of N synthetic sockets, built in
//! process. The JSON of `/api/sockets` for the same snapshot is timed alongside as a reference,
//! and so is the engine's publication of a snapshot when nothing moved (`tick`), which an idle
//! exporter pays every poll.
//!
//!     cargo run --release --example scrape_bench [N...]     (default: 10000 100000)

use bbrtop::export::metrics::{Scrape, render_openmetrics, render_protobuf, to_text_004};
use bbrtop::output::json::SnapshotDoc;
use bbrtop_core::model::SocketRecord;
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::seam::Now;
use bbrtop_core::seam::feed_dump;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn sockets(n: usize) -> Vec<SocketRecord> {
    (0..n)
        .map(|i| {
            let peer =
                SocketAddr::from((Ipv4Addr::from(0x0a00_0000u32 + i as u32), 40_000 + (i % 20_000) as u16));
            let min = 1_000 + (i % 50) as u32 * 400;
            let gains = [(2.885, 2.885), (1.25, 2.0), (1.0, 2.0), (0.75, 2.0), (1.0, 1.0)][i % 5];
            record(i as u64 + 1, if i % 2 == 0 { "bbr" } else { "cubic" })
                .local("10.255.0.1:443")
                .peer(peer)
                .min_rtt_us(min)
                .srtt_us(min + (i % 7) as u32 * min / 2)
                .delivery_rate_bytes_per_sec(10_000 * (1 + i as u64 % 1000))
                .last_ack_recv_ms((i % 3) as u32 * 600)
                // Senders, which the live histograms count: the most a scrape does per socket.
                .sending()
                .bbr(12_500 * (1 + i as u64 % 1000), min, gains.0, gains.1)
                .build()
        })
        .collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut bytes = 0;
    let t: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            bytes = f();
            t.elapsed()
        })
        .collect();
    (median(t), bytes)
}

fn main() {
    let ns: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let ns = if ns.is_empty() { vec![10_000, 100_000] } else { ns };
    let groups = Arc::new(
        PeerGroups::parse(
            "groups: {a: [10.0.0.0/16], b: [10.1.0.0/16], c: [10.0.0.0/12], d: [192.0.2.0/24]}",
        )
        .unwrap(),
    );
    println!(
        "{:>8} {:>6} {:>12} {:>10} {:>10} {:>10} {:>14} {:>10}",
        "sockets", "top_k", "metrics_ms", "bytes", "proto_ms", "bytes", "api_json_ms", "bytes"
    );
    for n in ns {
        let mut e = Engine::new(EngineConfig::default());
        let now = Now::system();
        feed_dump(&mut e, Dump { sockets: sockets(n), ..Dump::default() }, now);
        let snap = e.tick(now);
        let runs = if n >= 100_000 { 11 } else { 31 };
        let (tick_t, _) = time(runs, || e.tick(now).sockets.len());
        println!("{n:>8} tick (nothing moved): {:.2} ms", tick_t.as_secs_f64() * 1e3);
        let (json_t, json_b) = time(runs, || {
            let views = snap.sockets.to_vec();
            serde_json::to_vec(&SnapshotDoc::new(&snap, views.iter().collect(), &[])).unwrap().len()
        });
        for top_k in [0, 100, 1000] {
            let scrape = || Scrape {
                snap: Arc::clone(&snap),
                groups: Arc::clone(&groups),
                top_k,
                by_pod_namespace: false,
                posts: vec![],
                // As the server does: /proc is read at every scrape.
                process: bbrtop::export::process::read(),
                hindsight_memory_bytes: None,
                hindsight_spool_bytes: None,
                otlp: None,
                experiment: None,
                response_classic: false,
            };
            let (t, b) = time(runs, || to_text_004(&render_openmetrics(scrape())).len());
            // What a Prometheus with native histograms is served.
            let (pt, pb) = time(runs, || render_protobuf(scrape()).len());
            println!(
                "{n:>8} {top_k:>6} {:>12.2} {b:>10} {:>10.2} {pb:>10} {:>14.2} {json_b:>10}",
                t.as_secs_f64() * 1e3,
                pt.as_secs_f64() * 1e3,
                json_t.as_secs_f64() * 1e3
            );
        }
    }
}
