//! What a replay's seek and step cost on a recording of 1,000 sockets a poll (400 polls): a seek
//! reads its 300 polls of history, a step or a skip of up to a minute back reads one poll.
//!
//!     cargo bench --bench replay_seek
//!
//! It prints milliseconds per control and asserts nothing about time.

use bbrtop::record::{RecordOptions, Recorder, Recording};
use bbrtop::replay::{Control, Player, PlayerOptions};
use bbrtop_core::seam::{Now, feed_dump};
use bbrtop_core::system::SystemInfo;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use std::time::{Duration, Instant, SystemTime};

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut e = Engine::new(EngineConfig::default());
    let (mono, wall) = (Instant::now(), SystemTime::now());
    let mut r =
        Recorder::create(dir.path(), RecordOptions::default(), &SystemInfo::example()).expect("a recorder");
    for i in 0..400u64 {
        let now = Now { mono: mono + Duration::from_secs(i), wall: wall + Duration::from_secs(i) };
        let sockets = (0..1000u64)
            .map(|c| {
                record(c + 1, if c % 2 == 0 { "bbr" } else { "cubic" })
                    .local(format!("10.77.1.1:{}", 40000 + c).as_str())
                    .srtt_us(20_000 + (i as u32 % 9) * 500)
                    .min_rtt_us(20_000)
                    .last_ack_recv_ms(0)
                    .bytes_acked(i * 1000)
                    .bbr(2_400_000, 20_000, 1.25, 2.0)
                    .build()
            })
            .collect();
        feed_dump(&mut e, Dump { sockets, ..Dump::default() }, now);
        r.write(&e.tick(now)).expect("a poll written");
    }
    r.finish().expect("the recording finished");
    let t = Instant::now();
    let recording = Recording::open(dir.path()).expect("the recording");
    let mut p = Player::new(recording, PlayerOptions::default(), t).expect("a player");
    let mut timed = |what: &str, c: Control| {
        let start = Instant::now();
        p.control(c, t).expect("the control");
        println!("{what}: {:.1} ms (poll {})", start.elapsed().as_secs_f64() * 1e3, p.status().index + 1);
    };
    timed("seek to the last poll (its 300 polls of history read)", Control::Skip(3600));
    timed("one poll back (one poll read)", Control::Step(-1));
    timed("one poll forward (one poll read)", Control::Step(1));
    timed("1 min back (one poll read)", Control::Skip(-60));
    timed("2 min further back (the window read again)", Control::Skip(-120));
}
