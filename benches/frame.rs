//! What a remote frame (`/api/v1/frame`, `bbrtop --connect`) costs at 10k sockets: bytes per
//! socket on the wire, the exporter's encode and the remote TUI's decode per poll, for a keyframe
//! (a reader's first poll) and for the changes since the poll before with 1% of the sockets
//! moving (every poll after).
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

/// 10k sockets' records at poll `i`: 1% of them (every hundredth) with a new RTT each poll.
fn records(n: u64, i: u32) -> Vec<bbrtop_core::model::SocketRecord> {
    (1..=n)
        .map(|c| {
            let peer = format!("10.{}.{}.{}:{}", c / 65536, (c / 256) % 256, c % 256, 40_000 + c % 1000);
            let moving = if c % 100 == 0 { i * 100 } else { 0 };
            record(c, if c % 3 == 0 { "cubic" } else { "bbr" })
                .peer(peer.as_str())
                .srtt_us(20_000 + (c % 977) as u32 * 13 + moving)
                .min_rtt_us(10_000)
                .last_ack_recv_ms(0)
                .bbr(1_250_000 + c * 7, 10_000, 1.25, 2.0)
                .build()
        })
        .collect()
}

fn main() {
    let n = 10_000u64;
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now::system();
    let polls: Vec<_> = (0..2)
        .map(|i| {
            let now = t0.after(std::time::Duration::from_secs(u64::from(i)));
            feed_dump(&mut e, Dump { sockets: records(n, i), ..Default::default() }, now);
            e.tick(now)
        })
        .collect();
    let sys = SystemInfo::default();
    let (held, _) = decode(&encode(&polls[0], &sys, None).expect("encode"), None).expect("decode");
    for (what, since, base) in
        [("keyframe", None, None), ("changes, 1% moving", Some(&*polls[0]), Some(&held))]
    {
        let rounds = 5;
        let t = Instant::now();
        let mut frame = Vec::new();
        for _ in 0..rounds {
            frame = encode(&polls[1], &sys, since).expect("encode");
        }
        let encoded = t.elapsed() / rounds;
        let t = Instant::now();
        for _ in 0..rounds {
            assert_eq!(decode(&frame, base).expect("decode").0.sockets.len(), n as usize);
        }
        let decoded = t.elapsed() / rounds;
        println!(
            "frame of {n} sockets, {what}: {} bytes ({:.1} per socket); encode {encoded:?}, decode {decoded:?} per poll",
            frame.len(),
            frame.len() as f64 / n as f64
        );
    }
}
