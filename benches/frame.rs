//! What a remote frame (`/api/v1/frame`, `bbrtop --connect`) costs at 10k sockets: bytes per
//! socket on the wire, the exporter's encode and the remote TUI's decode per poll.
//!
//!     cargo bench --bench frame
//!
//! It prints figures and asserts nothing about time.

use bbrtop::record::frame::{decode, encode};
use bbrtop_core::seam::{Now, feed_dump};
use bbrtop_core::system::SystemInfo;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use std::time::Instant;

fn main() {
    let n = 10_000u64;
    let recs = (1..=n)
        .map(|c| {
            let peer = format!("10.{}.{}.{}:{}", c / 65536, (c / 256) % 256, c % 256, 40_000 + c % 1000);
            record(c, if c % 3 == 0 { "cubic" } else { "bbr" })
                .peer(peer.as_str())
                .srtt_us(20_000 + (c % 977) as u32 * 13)
                .min_rtt_us(10_000)
                .last_ack_recv_ms(0)
                .bbr(1_250_000 + c * 7, 10_000, 1.25, 2.0)
                .build()
        })
        .collect();
    let mut e = Engine::new(EngineConfig::default());
    let now = Now::system();
    feed_dump(&mut e, Dump { sockets: recs, ..Default::default() }, now);
    let snap = e.tick(now);
    let sys = SystemInfo::default();
    let rounds = 5;
    let t = Instant::now();
    let mut frame = Vec::new();
    for _ in 0..rounds {
        frame = encode(&snap, &sys).expect("encode");
    }
    let encoded = t.elapsed() / rounds;
    let t = Instant::now();
    for _ in 0..rounds {
        assert_eq!(decode(&frame).expect("decode").0.sockets.len(), n as usize);
    }
    let decoded = t.elapsed() / rounds;
    println!(
        "frame of {n} sockets: {} bytes ({:.1} per socket); encode {encoded:?}, decode {decoded:?} per poll",
        frame.len(),
        frame.len() as f64 / n as f64
    );
}
