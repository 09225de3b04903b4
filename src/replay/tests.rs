//! The player over snapshots a real engine published from synthetic dumps, one per second, with
//! a hand-held clock.

use super::*;
use bbrtop_core::model::SocketRecord;
use bbrtop_core::seam::Now;
use bbrtop_core::seam::feed_dump;
use bbrtop_core::snapshot::history::Sample;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use std::time::{Duration, Instant, SystemTime};

const T0: u64 = 1_790_000_000;

/// `secs` after (or before) the first poll.
fn wall(secs: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs_f64(T0 as f64 + secs)
}

fn sock(cookie: u64, cc: &str, srtt: u32) -> SocketRecord {
    record(cookie, cc)
        .local(format!("10.0.0.1:{}", 40000 + cookie))
        .srtt_us(srtt)
        .min_rtt_us(20_000)
        .last_ack_recv_ms(0)
        .sending()
        .snd_cwnd_segs(10)
        .delivery_rate_bytes_per_sec(1_000_000)
        .bbr(2_500_000, 20_000, 1.0, 2.0)
        .build()
}

/// `n` polls a second apart (plus `gap` seconds before poll `gap_at`), as the engine published
/// them: BBR socket 1 all along, its srtt one ms up per poll; CUBIC socket 2 from poll 5, inflated
/// (so firing 5 s later) in polls 10..30 and 50..70.
fn published(n: usize, gap: Option<(usize, u64)>, cfg: EngineConfig) -> Vec<Snapshot> {
    let mut e = Engine::new(cfg);
    let (mono, mut off) = (Instant::now(), 0.0);
    (0..n)
        .map(|i| {
            if gap.is_some_and(|(at, _)| at == i) {
                off += gap.unwrap().1 as f64;
            }
            let t = off + i as f64;
            let now = Now { mono: mono + Duration::from_secs_f64(t), wall: wall(t) };
            let mut sockets = vec![sock(1, "bbr", 20_000 + i as u32 * 1000)];
            if i >= 5 {
                let inflated = (10..30).contains(&i) || (50..70).contains(&i);
                sockets.push(sock(2, "cubic", if inflated { 80_000 } else { 21_000 }));
            }
            feed_dump(&mut e, Dump { sockets, ..Dump::default() }, now);
            (*e.tick(now)).clone()
        })
        .collect()
}

fn run(n: usize) -> Vec<Snapshot> {
    published(n, None, EngineConfig::default())
}

fn player(snaps: Vec<Snapshot>, history: usize, t: Instant) -> Player<InMemory> {
    Player::new(InMemory::new(snaps), PlayerOptions { history, speed: 1.0 }, t).unwrap()
}

fn srtts(p: &Player<impl Polls>, cookie: u64) -> Vec<u32> {
    p.shown().socket(cookie).unwrap().history.iter().map(|s| s.srtt_us).collect()
}

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

#[test]
fn plays_at_the_recorded_pace_and_pauses_at_the_end() {
    let t = Instant::now();
    let mut p = player(run(20), 300, t);
    assert_eq!((p.status().index, p.status().playing), (0, true));
    assert_eq!(p.wait(t), Some(ms(1000)));
    assert!(!p.advance(t + ms(999)).unwrap());
    assert!(p.advance(t + ms(1000)).unwrap());
    assert_eq!(p.status().index, 1);
    // A late wake catches up poll by poll and keeps the schedule: poll 4 was due at 4 s.
    assert!(p.advance(t + ms(4300)).unwrap());
    assert_eq!(p.status().index, 4);
    assert_eq!(p.wait(t + ms(4300)), Some(ms(700)));
    assert_eq!(p.shown().seq, 5, "the recorded snapshot of poll 4");
    assert_eq!(p.status().at, wall(4.0));
    // Twice as fast: the next poll half a second on.
    p.control(Control::Faster, t + ms(4300)).unwrap();
    assert_eq!((p.status().speed, p.wait(t + ms(4300))), (2.0, Some(ms(500))));
    assert!(p.advance(t + ms(4800)).unwrap());
    assert_eq!(p.status().index, 5);
    // The end: paused at the last poll, and play does not start again there.
    assert!(p.advance(t + ms(60_000)).unwrap());
    let s = p.status();
    assert_eq!((s.index, s.len, s.playing), (19, 20, false));
    assert!(s.at_end());
    assert_eq!(p.wait(t + ms(60_000)), None);
    assert!(!p.advance(t + ms(90_000)).unwrap());
    p.control(Control::TogglePause, t + ms(90_000)).unwrap();
    assert!(!p.status().playing && p.status().note.unwrap().contains("end of the recording"));
    // Back from the end, it plays again.
    p.control(Control::Skip(-10), t + ms(90_000)).unwrap();
    p.control(Control::TogglePause, t + ms(90_000)).unwrap();
    assert_eq!((p.status().index, p.status().playing, p.status().note), (9, true, None));
}

/// Polls at 0, 1, 3 and 3.5 s: each waits its own distance from the one before.
#[test]
fn each_poll_waits_its_recorded_distance() {
    let snaps: Vec<Snapshot> = run(4)
        .into_iter()
        .zip([0.0, 1.0, 3.0, 3.5])
        .map(|(mut s, at)| {
            s.taken_at = wall(at);
            s
        })
        .collect();
    let t = Instant::now();
    let mut p = player(snaps, 300, t);
    assert_eq!(p.wait(t), Some(ms(1000)));
    assert!(p.advance(t + ms(1000)).unwrap());
    assert_eq!((p.status().index, p.wait(t + ms(1000))), (1, Some(ms(2000))));
    assert!(!p.advance(t + ms(2999)).unwrap());
    // Late by a second: poll 2 and then 3 (due at 3.5 s) in one go, and the end.
    assert!(p.advance(t + ms(4000)).unwrap());
    assert_eq!((p.status().index, p.status().playing), (3, false));
}

#[test]
fn pause_and_step() {
    let t = Instant::now();
    let mut p = player(run(10), 300, t);
    p.control(Control::TogglePause, t).unwrap();
    assert!(!p.status().playing);
    assert!(!p.advance(t + ms(5000)).unwrap(), "paused: time does not move the poll");
    p.control(Control::Step(1), t).unwrap();
    p.control(Control::Step(1), t).unwrap();
    assert_eq!(p.status().index, 2);
    p.control(Control::Step(-1), t).unwrap();
    assert_eq!(p.status().index, 1);
    for _ in 0..3 {
        p.control(Control::Step(-1), t).unwrap();
    }
    assert_eq!(p.status().index, 0, "no poll before the first");
    // Stepping while playing pauses first.
    p.control(Control::TogglePause, t).unwrap();
    p.control(Control::Step(1), t).unwrap();
    assert_eq!((p.status().index, p.status().playing), (1, false));
    // Resumed, the next poll is due its recorded distance from now.
    p.control(Control::TogglePause, t + ms(100)).unwrap();
    assert_eq!(p.wait(t + ms(100)), Some(ms(1000)));
}

#[test]
fn seeks_by_ten_seconds_a_minute_and_to_a_time() {
    let t = Instant::now();
    let mut p = player(run(200), 300, t);
    let mut go = |c| {
        p.control(c, t).unwrap();
        (p.status().index, p.status().note)
    };
    assert_eq!(go(Control::Skip(10)), (10, None));
    assert_eq!(go(Control::Skip(60)), (70, None));
    assert_eq!(go(Control::Skip(-10)), (60, None));
    assert_eq!(go(Control::Skip(-60)), (0, None));
    assert_eq!(go(Control::Skip(-10)), (0, None), "not before the first poll");
    assert_eq!(go(Control::Goto(wall(42.5))), (42, None), "the poll at or before the time");
    assert_eq!(go(Control::Goto(wall(42.0))), (42, None));
    let (i, note) = go(Control::Goto(wall(-3600.0)));
    assert_eq!(i, 0);
    assert!(note.unwrap().contains("before the recording"));
    let (i, note) = go(Control::Goto(wall(1e6)));
    assert_eq!(i, 199);
    assert!(note.unwrap().contains("after the recording"));
    assert_eq!(go(Control::Skip(60)), (199, None), "not past the last poll");
    assert!(p.status().at_end());
}

/// Polls further apart than ten seconds: a skip still moves at least one poll.
#[test]
fn a_skip_moves_at_least_one_poll() {
    let snaps: Vec<Snapshot> = run(5)
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            s.taken_at = wall(i as f64 * 30.0);
            s
        })
        .collect();
    let t = Instant::now();
    let mut p = player(snaps, 300, t);
    p.control(Control::Skip(10), t).unwrap();
    assert_eq!(p.status().index, 1);
    p.control(Control::Skip(60), t).unwrap();
    assert_eq!(p.status().index, 3);
    p.control(Control::Skip(-10), t).unwrap();
    assert_eq!(p.status().index, 2);
}

#[test]
fn jumps_to_alert_onsets() {
    let snaps = run(100);
    // Socket 2 is inflated from poll 10 and from poll 50; its alert fires after the 5 s hold.
    let onsets = alert_onsets(&snaps);
    assert_eq!(onsets, vec![15, 55]);
    assert!(snaps[15].firing().any(|a| a.cookie == 2) && !snaps[14].firing().any(|a| a.cookie == 2));
    let t = Instant::now();
    let mut p = player(snaps, 300, t);
    let mut go = |forward| {
        p.control(Control::Onset { forward }, t).unwrap();
        (p.status().index, p.status().note)
    };
    assert_eq!(go(true), (15, None));
    assert_eq!(go(true), (55, None));
    let (i, note) = go(true);
    assert_eq!((i, note.unwrap()), (55, "no alert onset after this poll".to_string()));
    assert_eq!(go(false), (15, None));
    let (i, note) = go(false);
    assert_eq!((i, note.unwrap()), (15, "no alert onset before this poll".to_string()));
    assert!(p.shown().firing().any(|a| a.cookie == 2), "the onset's poll shows the alert");
}

#[test]
fn history_reaches_back_the_window_from_consecutive_polls() {
    let t = Instant::now();
    let mut p = player(run(400), 300, t);
    let want = |from: u32, to: u32| (from..=to).map(|i| 20_000 + i * 1000).collect::<Vec<_>>();
    p.control(Control::Goto(wall(100.0)), t).unwrap();
    assert_eq!(srtts(&p, 1), want(0, 100), "the whole recording so far");
    assert_eq!(srtts(&p, 2).len(), 96, "socket 2 since it appeared at poll 5");
    p.control(Control::Goto(wall(399.0)), t).unwrap();
    assert_eq!(srtts(&p, 1), want(100, 399), "the last 300 polls");
    // Back within the rings' slack, and forward again; then further back than it (a re-read).
    p.control(Control::Step(-1), t).unwrap();
    assert_eq!(srtts(&p, 1), want(99, 398));
    p.control(Control::Skip(-60), t).unwrap();
    assert_eq!(srtts(&p, 1), want(39, 338));
    p.control(Control::Step(1), t).unwrap();
    assert_eq!(srtts(&p, 1), want(40, 339));
    p.control(Control::Goto(wall(399.0)), t).unwrap();
    assert_eq!(srtts(&p, 1), want(100, 399));
    p.control(Control::Skip(-120), t).unwrap();
    assert_eq!(srtts(&p, 1), want(0, 279));
    assert_eq!(srtts(&p, 2).len(), 275, "socket 2 since poll 5");
}

/// With the live window (60 polls), the replayed history is the one the engine published.
#[test]
fn history_at_the_live_window_is_the_live_history() {
    let snaps = run(150);
    let live = snaps.clone();
    let t = Instant::now();
    let mut p = player(snaps, bbrtop_core::snapshot::history::DEFAULT_HISTORY, t);
    p.control(Control::TogglePause, t).unwrap();
    for (i, snap) in live.iter().enumerate() {
        if i > 0 {
            p.control(Control::Step(1), t).unwrap();
        }
        for s in snap.sockets.iter() {
            let got: Vec<Sample> =
                p.shown().socket(s.record.cookie).unwrap().history.iter().copied().collect();
            let want: Vec<Sample> = s.history.iter().copied().collect();
            assert_eq!(got, want, "poll {i}, socket {}", s.record.cookie);
        }
    }
}

/// A recorder that stopped for an hour: the gap plays as one second.
#[test]
fn a_gap_in_the_recording_plays_as_a_second() {
    let t = Instant::now();
    let mut p = player(published(10, Some((5, 3600)), EngineConfig::default()), 300, t);
    p.control(Control::Skip(4), t).unwrap();
    assert_eq!(p.status().index, 4);
    assert_eq!(p.wait(t), Some(ms(1000)));
    p.control(Control::Skip(10), t).unwrap();
    assert_eq!(p.status().index, 5, "the skip crosses the gap");
    assert_eq!(p.status().at, wall(3605.0));
}

/// Polls as the reader hands them, counted: a seek reads in bounded batches, and playing on
/// reads only the new poll.
#[test]
fn reads_are_batched_and_playing_reads_one_poll() {
    struct Counted(InMemory, Vec<std::ops::Range<usize>>);
    impl Polls for Counted {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn at(&self, i: usize) -> SystemTime {
            self.0.at(i)
        }
        fn read(&mut self, r: std::ops::Range<usize>) -> anyhow::Result<Vec<Snapshot>> {
            self.1.push(r.clone());
            self.0.read(r)
        }
        fn alert_onsets(&self) -> &[usize] {
            self.0.alert_onsets()
        }
    }
    let t = Instant::now();
    let polls = Counted(InMemory::new(run(400)), Vec::new());
    let mut p = Player::new(polls, PlayerOptions::default(), t).unwrap();
    p.control(Control::Goto(wall(350.0)), t).unwrap();
    p.advance(t + ms(1000)).unwrap();
    let reads = &p.polls().1;
    assert_eq!(reads[0], 0..1);
    let seek: Vec<_> = reads[1..reads.len() - 1].to_vec();
    assert_eq!(seek.first().unwrap().start, 51, "the window of 300 polls ending at 350");
    assert_eq!(seek.last().unwrap().end, 351);
    assert!(seek.iter().all(|r| r.len() <= 32), "{seek:?}");
    assert_eq!(reads.last().unwrap(), &(351..352), "playing on reads the next poll only");
    // Back by a step or 10 s: the window is still in the rings, only the poll shown is read.
    p.control(Control::Step(-1), t).unwrap();
    p.control(Control::Skip(-10), t).unwrap();
    p.control(Control::Step(1), t).unwrap();
    let reads = &p.polls().1;
    assert_eq!(reads[reads.len() - 3..], [350..351, 340..341, 341..342]);
}

#[test]
fn an_empty_recording_is_an_error() {
    let e = Player::new(InMemory::new(Vec::new()), PlayerOptions::default(), Instant::now()).err().unwrap();
    assert!(e.to_string().contains("no complete poll"), "{e}");
}

#[test]
fn a_recording_of_one_poll_is_at_its_end() {
    let p = player(run(1), 300, Instant::now());
    assert!(p.status().at_end());
}
