use super::memory::Memory;
use super::*;
use crate::record::Recording;
use bbrtop_core::seam::Now;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use std::time::Instant;

const T0: u64 = 1_795_000_000;

/// `n` polls a second apart of `sockets` sockets, each acking more every poll, from `T0 + from`
/// seconds (and poll `from + 1`), into `push`.
fn run(mut push: impl FnMut(&Snapshot), from: u64, n: u64, sockets: u64) {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now { mono: Instant::now(), wall: SystemTime::UNIX_EPOCH + Duration::from_secs(T0 + from) };
    for i in 0..n {
        let now = t0.after(Duration::from_secs(i));
        let socks =
            (0..sockets).map(|c| record(c + 1, "bbr").srtt_us(20_000 + i as u32).bytes_acked(i * c).build());
        bbrtop_core::seam::feed_dump(&mut e, Dump { sockets: socks.collect(), ..Dump::default() }, now);
        let snap = e.tick(now);
        push(&Snapshot { seq: from + i + 1, ..(*snap).clone() });
    }
}

fn opts(window_s: u64, max_bytes: u64) -> HindsightOptions {
    HindsightOptions { window: Duration::from_secs(window_s), max_bytes, segment: Duration::from_secs(5) }
}

fn at(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(T0 + s)
}

#[test]
fn in_memory_it_keeps_the_window_and_dumps_it_as_a_recording() {
    let mut h = Hindsight::in_memory(opts(60, 64 << 20), SystemInfo::default());
    run(|s| h.push(s).unwrap(), 0, 150, 20);
    let parent = tempfile::tempdir().unwrap();
    let d = h.dump(parent.path(), at(200)).unwrap();
    // The window, and at most one chunk (12 s here) beyond it.
    assert!((61..=72).contains(&d.polls), "{} polls held", d.polls);
    assert_eq!(d.to.unwrap().duration_since(d.from.unwrap()).unwrap().as_secs(), d.polls - 1);
    assert_eq!(d.spool_bytes, None);
    let mut rec = Recording::open(&d.dir).unwrap();
    assert_eq!(rec.polls().len() as u64, d.polls);
    let last = rec.read(d.polls as usize - 1..d.polls as usize).unwrap();
    assert_eq!((last[0].seq, last[0].sockets.len()), (150, 20), "the newest poll is in the dump");
    // A second dump does not overwrite the first.
    let again = h.dump(parent.path(), at(200)).unwrap();
    assert_ne!(again.dir, d.dir);
}

#[test]
fn in_memory_it_stays_within_its_memory_bound() {
    let o = opts(150, u64::MAX);
    let mut free = Memory::new(o, SystemInfo::default());
    run(|s| free.push(s).unwrap(), 0, 60, 500);
    // The encoder's buffers are the floor (the same at the end of the same polls); half of what
    // the finished chunks took above it.
    let bound = free.encoder_bytes() + free.held_bytes() / 2;
    let mut h = Memory::new(HindsightOptions { max_bytes: bound, ..o }, SystemInfo::default());
    run(|s| h.push(s).unwrap(), 0, 60, 500);
    assert!(h.bytes() <= bound, "{} bytes held, bound {bound}", h.bytes());
    assert!(h.dropped_for_memory() > 0, "the bound made it drop polls");
    assert_eq!(h.span().2, free.span().2, "the newest polls are kept");
    let empty =
        Hindsight::in_memory(o, SystemInfo::default()).dump(Path::new("/nonexistent"), SystemTime::now());
    assert!(empty.is_err());
}

/// A spooled hindsight holds its polls on disk, not in memory, and dumps them as a recording
/// whose files are the spool's (linked, not copied).
#[test]
fn spooled_it_holds_the_polls_on_disk_and_dumps_them() {
    let parent = tempfile::tempdir().unwrap();
    let spool = parent.path().join(SPOOL);
    let mut h = Hindsight::spooled(opts(900, 64 << 20), SystemInfo::default(), &spool).unwrap();
    assert!(h.spool_bytes().is_some(), "spooled");
    assert!(h.dump(parent.path(), at(0)).is_err(), "nothing held yet");
    run(|s| h.push(s).unwrap(), 0, 150, 200);
    let spooled = h.spool_bytes().unwrap();
    assert!(spooled > 0);
    let mut memory = Hindsight::in_memory(opts(900, 64 << 20), SystemInfo::default());
    run(|s| memory.push(s).unwrap(), 0, 150, 200);
    assert!(
        h.memory_bytes() * 2 < memory.memory_bytes(),
        "the spool's memory ({}) is its encoders' only, not the polls' ({})",
        h.memory_bytes(),
        memory.memory_bytes()
    );
    let d = h.dump(parent.path(), at(200)).unwrap();
    assert_eq!((d.polls, d.from, d.to), (150, Some(at(0)), Some(at(149))));
    assert_eq!(d.spool_bytes, Some(spooled), "{d:?}");
    assert_eq!(Some(d.bytes), h.spool_bytes(), "every chunk of the spool, its segments compacted");
    let mut rec = Recording::open(&d.dir).unwrap();
    let last = rec.read(149..150).unwrap();
    assert_eq!((last[0].seq, last[0].sockets.len()), (150, 200), "the newest poll is in the dump");
    use std::os::unix::fs::MetadataExt;
    let first = std::fs::read_dir(&d.dir).unwrap().flatten().next().unwrap().path();
    assert_eq!(std::fs::metadata(&first).unwrap().nlink(), 2, "{} is the spool's file", first.display());
    // The spool is not among the dumps' names, and a dump is not in the spool.
    assert!(d.dir.file_name().unwrap().to_string_lossy().starts_with("hindsight-"));
    assert!(std::fs::read_dir(&spool).unwrap().flatten().all(|e| e.path().is_file()));
}

/// A spool whose exporter was killed (its hindsight never dropped: the segment under way is left
/// half-written) is continued by the next one over the same directory: a dump holds the polls
/// before the kill, all but those of the last segment (5 s), and the ones after.
#[test]
fn a_spool_outlives_a_killed_exporter_but_its_last_segment() {
    let parent = tempfile::tempdir().unwrap();
    let spool = parent.path().join(SPOOL);
    let mut killed = Hindsight::spooled(opts(900, 64 << 20), SystemInfo::default(), &spool).unwrap();
    run(|s| killed.push(s).unwrap(), 0, 23, 50);
    // A kill: nothing of `killed` runs again, not even its drop.
    std::mem::forget(killed);
    assert!(
        Hindsight::spooled(opts(900, 64 << 20), SystemInfo::default(), &spool).is_err(),
        "the killed one's lock is held while its process lives (an exporter beside it)"
    );
    // Its process gone, its lock goes with it: here, another directory holding a copy.
    let copy = parent.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(&spool).unwrap().flatten() {
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let mut next = Hindsight::spooled(opts(900, 64 << 20), SystemInfo::default(), &copy).unwrap();
    run(|s| next.push(s).unwrap(), 100, 10, 50);
    let d = next.dump(parent.path(), at(200)).unwrap();
    let rec = Recording::open(&d.dir).unwrap();
    let seqs: Vec<u64> = rec.polls().iter().map(|p| p.seq).collect();
    let before: Vec<u64> = seqs.iter().copied().filter(|&s| s <= 23).collect();
    assert_eq!(before, (1..=before.len() as u64).collect::<Vec<_>>(), "{seqs:?}");
    // Segments are renamed as their polls cover 5 s: 23 polls a second apart leave the ones
    // after 20 (or 15) in the segment under way.
    assert!(before.len() >= 23 - 5, "the killed exporter's polls but its last segment's: {seqs:?}");
    assert_eq!(&seqs[before.len()..], (101..=110).collect::<Vec<_>>(), "then the next one's");
}

#[test]
fn without_a_place_for_it_a_spool_is_an_error() {
    let f = tempfile::NamedTempFile::new().unwrap();
    let e = Hindsight::spooled(opts(900, 1 << 20), SystemInfo::default(), &f.path().join(SPOOL));
    assert!(e.is_err());
}

/// A spool that cannot be written (here its directory replaced by a file) does not freeze
/// hindsight: the polls after the failure are kept in memory, a dump holds the newest and says
/// the spool failed, and the spool is written again once it can be (issue 42: a full disk left
/// every dump as stale as the failure).
#[test]
fn a_spool_that_cannot_be_written_keeps_the_polls_in_memory_until_it_can() {
    let parent = tempfile::tempdir().unwrap();
    let (spool, away) = (parent.path().join(SPOOL), parent.path().join("away"));
    let dumps = |n: &str| {
        let d = parent.path().join(n);
        std::fs::create_dir(&d).unwrap();
        d
    };
    let mut h = Hindsight::spooled(opts(50, 64 << 20), SystemInfo::default(), &spool).unwrap();
    run(|s| h.push(s).unwrap(), 0, 30, 20);
    std::fs::rename(&spool, &away).unwrap();
    std::fs::write(&spool, b"not a directory").unwrap();
    run(|s| h.push(s).unwrap(), 30, 30, 20);
    let d = h.dump(&dumps("broken"), at(100)).unwrap();
    assert_eq!(d.to, Some(at(59)), "the newest poll, held in memory: {d:?}");
    assert!(d.spool_failures.is_some_and(|n| n > 0) && d.spool_error.is_some(), "{d:?}");
    assert!(d.memory_bytes > 0, "{d:?}");
    let seqs = seqs_in(&d.dir);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(seqs.ends_with(&(36..=60).collect::<Vec<_>>()), "kept in memory since the failure: {seqs:?}");

    // The spool back: a chunk's length (10 s) after the last failure it takes the polls again.
    std::fs::remove_file(&spool).unwrap();
    std::fs::rename(&away, &spool).unwrap();
    let failed = d.spool_failures.unwrap();
    run(|s| h.push(s).unwrap(), 60, 40, 20);
    let d = h.dump(&dumps("mended"), at(200)).unwrap();
    assert_eq!(d.spool_failures, Some(failed), "no failure since: {d:?}");
    assert_eq!(d.to, Some(at(99)));
    let spooled = seqs_in(&spool);
    assert!(spooled.contains(&100) && !spooled.contains(&50), "written to the spool again: {spooled:?}");
}

/// The polls of the recording in `dir`, by number.
fn seqs_in(dir: &Path) -> Vec<u64> {
    Recording::open(dir).unwrap().polls().iter().map(|p| p.seq).collect()
}

/// A spool chunk that is no longer a file (replaced by a directory) is left out of a dump and
/// named in its errors; the rest is written (on main the whole dump failed: 503).
#[test]
fn a_dump_leaves_out_a_spool_chunk_it_cannot_read_and_says_so() {
    let parent = tempfile::tempdir().unwrap();
    let spool = parent.path().join(SPOOL);
    // Chunks of a minute.
    let mut h = Hindsight::spooled(opts(300, 64 << 20), SystemInfo::default(), &spool).unwrap();
    run(|s| h.push(s).unwrap(), 0, 150, 20);
    let first = crate::record::writer::chunks(&spool).unwrap()[0].stem.clone();
    let polls_file = spool.join(format!("{first}{}", crate::record::writer::POLLS_SUFFIX));
    std::fs::remove_file(&polls_file).unwrap();
    std::fs::create_dir(&polls_file).unwrap();
    let d = h.dump(parent.path(), at(200)).unwrap();
    assert!(d.errors.iter().any(|e| e.contains(&first)), "{d:?}");
    assert_eq!((d.polls, d.from, d.to), (90, Some(at(60)), Some(at(149))), "the other chunks: {d:?}");
}

/// Held in memory, a chunk's keyframe copies the row groups of the one before in which no socket
/// moved (`keyframe.rs`): beside 2,000 idle sockets and one that moves, the second chunk's
/// keyframe writes the idle ones apart from it, the third copies them; every poll dumps and reads
/// back as it was.
#[test]
fn in_memory_a_keyframe_copies_the_sockets_that_did_not_move() {
    let mut m = Memory::new(opts(25, u64::MAX), SystemInfo::default());
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now { mono: Instant::now(), wall: at(0) };
    let mut snaps = Vec::new();
    let mut copied = Vec::new();
    for i in 0..15u64 {
        let now = t0.after(Duration::from_secs(i));
        let acked = |c: u64| if c == 1 { i * 1000 } else { 5 };
        let socks = (1..=2000).map(|c| record(c, "cubic").srtt_us(25_000).bytes_acked(acked(c)).build());
        bbrtop_core::seam::feed_dump(&mut e, Dump { sockets: socks.collect(), ..Dump::default() }, now);
        let snap = (*e.tick(now)).clone();
        m.push(&snap).unwrap();
        copied.push(m.rows_copied());
        snaps.push(snap);
    }
    // Chunks of 5 s (a fifth of the window): the third's keyframe copies the 1,999 still sockets.
    assert_eq!(copied, [&[0u64; 10][..], &[1999; 5]].concat());
    m.finish_open().unwrap();
    let dir = tempfile::tempdir().unwrap();
    m.write_into(dir.path()).unwrap();
    let mut rec = Recording::open(dir.path()).unwrap();
    let back = rec.read(0..15).unwrap();
    let doc = |s: &Snapshot| serde_json::to_value(s).unwrap();
    assert_eq!(back.iter().map(doc).collect::<Vec<_>>(), snaps.iter().map(doc).collect::<Vec<_>>());
}
