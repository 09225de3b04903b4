//! A snapshot through a frame and through a recording comes back as the JSON document it was.

use super::*;
use bbrtop_core::model::SocketRecord;
use bbrtop_core::seam::Now;
use bbrtop_core::seam::feed_dump;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use parquet::basic::Compression;
use std::time::{Duration, Instant, SystemTime};

fn sock(cookie: u64, cc: &str, srtt: u32, acked: u64) -> SocketRecord {
    record(cookie, cc)
        .local(format!("10.0.0.1:{}", 40000 + cookie))
        .srtt_us(srtt)
        .min_rtt_us(20_000)
        .last_ack_recv_ms(0)
        .sending()
        .bytes_acked(acked)
        .bytes_sent(acked + 1000)
        .bytes_retrans(1000)
        .total_retrans_segs(1)
        .delivery_rate_bytes_per_sec(1_000_000)
        .bbr(2_500_000, 20_000, 1.25, 2.0)
        .build()
}

/// Polls of a BBR socket whose RTT inflates (its alert fires) beside an idle CUBIC one.
fn polls(n: u64) -> Vec<Snapshot> {
    polls_from(t0(), n)
}

/// [`polls`], a second apart from `wall`.
fn polls_from(wall: SystemTime, n: u64) -> Vec<Snapshot> {
    polls_at(wall, n, |i| {
        let srtt = if i >= 2 { 60_000 } else { 21_000 };
        vec![sock(1, "bbr", srtt, i * 1_000_000), sock(2, "cubic", 25_000, 5)]
    })
}

/// `n` polls a second apart from `wall` by one engine, of the sockets `socks(i)` at poll `i`.
fn polls_at(wall: SystemTime, n: u64, socks: impl Fn(u64) -> Vec<SocketRecord>) -> Vec<Snapshot> {
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now { mono: Instant::now(), wall };
    (0..n)
        .map(|i| {
            let now = t0.after(Duration::from_secs(i));
            feed_dump(&mut e, Dump { sockets: socks(i), ..Dump::default() }, now);
            (*e.tick(now)).clone()
        })
        .collect()
}

/// 2026-11-18T11:06:40Z: the tests' first poll.
fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000)
}

fn doc(s: &Snapshot) -> serde_json::Value {
    serde_json::to_value(s).unwrap()
}

fn system() -> SystemInfo {
    SystemInfo { host: "edge-1".into(), kernel: "6.18.0".into(), ..SystemInfo::default() }
}

#[test]
fn a_frame_is_the_snapshot_it_was() {
    let snaps = polls(9);
    let last = snaps.last().unwrap();
    assert!(
        last.firing().count() == 1,
        "the test needs a firing alert: {:?}",
        last.sockets.iter().map(|s| s.derived).collect::<Vec<_>>()
    );
    let bytes = frame::encode(last, &system(), None).unwrap();
    let (back, sys) = frame::decode(&bytes, None).unwrap();
    assert_eq!(sys, system());
    assert_eq!(doc(&back), doc(last));
    assert!(frame::decode(&bytes[..bytes.len() - 1], None).is_err());
    assert!(frame::decode(b"GET / HTTP/1.1\r\n", None).is_err());
}

/// A reader that decoded one poll and then takes each next one as the changes since it holds
/// every poll as it was, as a reader of keyframes does; the changes apply only to the poll they
/// were taken since.
#[test]
fn frames_of_changes_rebuild_every_poll() {
    let snaps = polls(9);
    let (mut held, _) = frame::decode(&frame::encode(&snaps[0], &system(), None).unwrap(), None).unwrap();
    for pair in snaps.windows(2) {
        let (before, now) = (&pair[0], &pair[1]);
        let changes = frame::encode(now, &system(), Some(before)).unwrap();
        let key = frame::encode(now, &system(), None).unwrap();
        let (back, sys) = frame::decode(&changes, Some(&held)).unwrap();
        assert_eq!((doc(&back), sys), (doc(&frame::decode(&key, None).unwrap().0), system()));
        assert_eq!(doc(&back), doc(now), "poll {}", now.seq);
        assert!(frame::decode(&changes, None).is_err(), "changes without the poll they follow");
        let e = frame::decode(&changes, Some(now)).map(|_| ()).unwrap_err();
        assert!(format!("{e:#}").contains("does not hold"), "changes applied to another poll: {e:#}");
        held = back;
    }
}

/// A frame of changes costs what moved, not what exists: beside 2,000 or 20,000 idle sockets
/// (one moving) it is the same size (the moved socket's row, and the two tables' footers, some
/// 40 KB of a few hundred columns' metadata, which a frame pays whatever it holds), where a
/// keyframe grows with the sockets. And it rebuilds the poll.
#[test]
fn a_frame_of_changes_costs_what_moved() {
    let sizes = |n: u64| {
        let snaps = polls_at(t0(), 2, |i| {
            let socks = (1..=n)
                .map(|c| sock(c, "bbr", 20_000 + (c * 37 % 9_000) as u32, c * 1_234 + u64::from(c == 1) * i));
            socks.collect()
        });
        let key = frame::encode(&snaps[1], &system(), None).unwrap();
        let changes = frame::encode(&snaps[1], &system(), Some(&snaps[0])).unwrap();
        let (held, _) = frame::decode(&frame::encode(&snaps[0], &system(), None).unwrap(), None).unwrap();
        assert_eq!(doc(&frame::decode(&changes, Some(&held)).unwrap().0), doc(&snaps[1]));
        (key.len(), changes.len())
    };
    let ((key_2k, changes_2k), (key_20k, changes_20k)) = (sizes(2_000), sizes(20_000));
    assert!(key_20k > key_2k * 5, "keyframes: {key_2k} and {key_20k} bytes");
    assert!(changes_20k.abs_diff(changes_2k) < 2_000, "changes: {changes_2k} and {changes_20k} bytes");
}

#[test]
fn a_recording_reads_back_every_poll() {
    let snaps = polls(12);
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions { chunk: Duration::from_secs(5), ..RecordOptions::default() };
    let mut r = Recorder::create(dir.path(), opts.clone(), &system()).unwrap();
    assert!(Recorder::create(dir.path(), opts, &system()).is_err(), "one recorder per directory");
    for s in &snaps {
        r.write(s).unwrap();
    }
    assert!(r.finish().unwrap() > 0);
    assert_eq!(writer::chunks(dir.path()).unwrap().len(), 3, "12 polls in chunks of 5 s");
    let mut rec = Recording::open(dir.path()).unwrap();
    assert_eq!(rec.polls().len(), 12);
    assert_eq!(rec.system(), &system());
    let back = rec.read(0..12).unwrap();
    for (a, b) in back.iter().zip(&snaps) {
        assert_eq!(doc(a), doc(b), "poll {}", b.seq);
    }
    assert_eq!(rec.read(4..7).unwrap().iter().map(|s| s.seq).collect::<Vec<_>>(), vec![5, 6, 7]);
    let fired = snaps.iter().position(|s| s.firing().count() > 0).unwrap();
    assert_eq!(rec.alert_onsets(), &[fired]);
}

#[test]
fn what_is_not_a_recording_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = |p: &std::path::Path| Recording::open(p).err().map(|e| format!("{e:#}")).unwrap_or_default();
    assert!(err(dir.path()).contains("empty recording"), "{}", err(dir.path()));
    let junk = dir.path().join("x.polls.parquet");
    std::fs::write(&junk, b"not parquet").unwrap();
    assert!(err(&junk).contains("not a readable Parquet file"), "{}", err(&junk));
    assert!(err(&dir.path().join("nothing")).contains("no such file"));
}

/// 12 polls in three chunks of 4 (5 s each, a poll a second): the directory and each chunk's
/// stem, oldest first.
pub(crate) fn three_chunks() -> (tempfile::TempDir, Vec<std::path::PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions { chunk: Duration::from_secs(5), ..RecordOptions::default() };
    let mut r = Recorder::create(dir.path(), opts, &system()).unwrap();
    for s in &polls(12) {
        r.write(s).unwrap();
    }
    r.finish().unwrap();
    let stems = writer::chunks(dir.path()).unwrap().into_iter().map(|c| dir.path().join(c.stem)).collect();
    (dir, stems)
}

pub(crate) fn file(stem: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("{}{suffix}", stem.display()))
}

/// A damaged chunk is left out with a line naming it, and the rest plays: a polls or sockets
/// file overwritten, sockets files swapped between chunks or copied from another, and a chunk
/// copied whole under a later name (its polls repeat). On main the first damaged chunk ended
/// the recording (replay exited there), and swapped or copied sockets files were read as theirs.
#[test]
fn damaged_chunks_are_left_out_and_said() {
    use writer::{POLLS_SUFFIX as P, SOCKETS_SUFFIX as S};
    type Damage = fn(&[std::path::PathBuf]);
    // (what, the damage, the chunks it leaves out).
    let cases: &[(&str, Damage, &[usize])] = &[
        ("polls file overwritten", |c| std::fs::write(file(&c[1], P), b"PAR1 not really").unwrap(), &[1]),
        (
            "sockets file cut short",
            |c| {
                let b = std::fs::read(file(&c[1], S)).unwrap();
                std::fs::write(file(&c[1], S), &b[..b.len() / 2]).unwrap();
            },
            &[1],
        ),
        (
            "sockets files swapped",
            |c| {
                let (a, b) = (file(&c[0], S), file(&c[2], S));
                let tmp = a.with_extension("swap");
                std::fs::rename(&a, &tmp).unwrap();
                std::fs::rename(&b, &a).unwrap();
                std::fs::rename(&tmp, &b).unwrap();
            },
            &[0, 2],
        ),
        (
            "a sockets file copied from another chunk",
            |c| {
                std::fs::copy(file(&c[0], S), file(&c[1], S)).unwrap();
            },
            &[1],
        ),
        (
            "a chunk copied under a later name",
            |c| {
                let later = c[2].with_file_name("29991231T235959Z-99");
                std::fs::copy(file(&c[0], S), file(&later, S)).unwrap();
                std::fs::copy(file(&c[0], P), file(&later, P)).unwrap();
            },
            &[],
        ),
    ];
    for (what, damage, out) in cases {
        let (dir, stems) = three_chunks();
        let per_chunk: Vec<usize> =
            stems.iter().map(|s| Recording::open(&file(s, P)).unwrap().polls().len()).collect();
        let left = &(12 - out.iter().map(|&i| per_chunk[i]).sum::<usize>());
        damage(&stems);
        let mut rec = Recording::open(dir.path()).unwrap_or_else(|e| panic!("{what}: {e:#}"));
        assert_eq!(rec.polls().len(), *left, "{what}: {:?}", rec.skipped());
        assert!(
            !rec.skipped().is_empty()
                && rec.skipped().iter().all(|s| s.starts_with("skipped a damaged chunk")),
            "{what}: {:?}",
            rec.skipped()
        );
        let seqs: Vec<u64> = rec.polls().iter().map(|p| p.seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{what}: {seqs:?}");
        let back = rec.read(0..*left).unwrap();
        assert!(back.iter().all(|s| s.sockets.len() == 2), "{what}: every poll kept has its own two sockets");
    }
    // Every chunk damaged: not a recording.
    let (dir, stems) = three_chunks();
    for s in &stems {
        std::fs::write(file(s, P), b"junk").unwrap();
    }
    let e = Recording::open(dir.path()).err().map(|e| format!("{e:#}")).unwrap_or_default();
    assert!(e.contains("not a recording: every chunk is damaged"), "{e}");
}

/// A recording of format 1 (every socket's row at every poll), written by bbrtop before format 2:
/// six polls in two chunks, a socket closing after the third. It reads back as the snapshots it
/// read back as then (`testdata/format1.json`, written by that reader).
#[test]
fn a_format_1_recording_still_reads() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/record/testdata");
    let mut rec = Recording::open(&data.join("format1")).unwrap();
    assert_eq!(rec.polls().len(), 6);
    // Compared as text: serde_json parses a float to within an ulp, and prints it exactly.
    let back: Vec<serde_json::Value> = rec.read(0..6).unwrap().iter().map(doc).collect();
    let want = std::fs::read_to_string(data.join("format1.json")).unwrap();
    assert_eq!(serde_json::to_string_pretty(&back).unwrap() + "\n", want);
    assert_eq!(rec.read(2..5).unwrap().iter().map(|s| s.sockets.len()).collect::<Vec<_>>(), vec![3, 2, 2]);
}

/// Polls a second apart: socket 1 moves every poll, 2 never does, 3 goes after poll 3 (inside
/// the first chunk), 4 after poll 5 (where the second chunk starts), 5 comes at poll 8.
fn churn(n: u64) -> Vec<Snapshot> {
    polls_at(t0(), n, |i| {
        let mut socks = vec![sock(1, "bbr", 21_000, i * 1_000_000), sock(2, "cubic", 25_000, 5)];
        socks.extend((i < 3).then(|| sock(3, "cubic", 22_000, 7)));
        socks.extend((i < 5).then(|| sock(4, "bbr", 22_000, 9)));
        socks.extend((i >= 8).then(|| sock(5, "bbr", 22_000, 3)));
        socks
    })
}

/// Format 2 writes a socket's row when it changed: an idle socket once per chunk (its keyframe
/// row), a socket that went a `gone` row, and reading rebuilds every poll as it was, an idle
/// socket's entry shared from one poll to the next rather than copied.
#[test]
fn history_is_written_as_changes_and_read_back_whole() {
    let snaps = churn(12);
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions { chunk: Duration::from_secs(5), ..RecordOptions::default() };
    let mut r = Recorder::create(dir.path(), opts, &system()).unwrap();
    snaps.iter().for_each(|s| r.write(s).unwrap());
    r.finish().unwrap();
    let stems = writer::chunks(dir.path()).unwrap();
    assert_eq!(stems.len(), 3, "12 polls in chunks of 5 s");
    let mut rows: Vec<sockets::Decoded> = Vec::new();
    for c in &stems {
        let f =
            std::fs::File::open(dir.path().join(format!("{}{}", c.stem, writer::SOCKETS_SUFFIX))).unwrap();
        let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
        for batch in b.build().unwrap() {
            rows.extend(sockets::decode(&batch.unwrap()).unwrap());
        }
    }
    let of = |cookie: u64| -> Vec<(u64, &'static str)> {
        rows.iter().filter(|r| r.record.cookie == cookie).map(|r| (r.seq, r.kind.label())).collect()
    };
    assert_eq!(of(2), vec![(1, "key"), (6, "key"), (11, "key")], "the idle socket: its keyframe rows only");
    assert_eq!(of(3), vec![(1, "key"), (4, "gone")], "gone inside a chunk: a tombstone");
    assert_eq!(of(4), vec![(1, "key")], "gone as a chunk starts: that keyframe leaves it out");
    assert_eq!(of(5), vec![(9, "change"), (11, "key")]);
    assert_eq!(of(1).len(), 12, "the moving socket, every poll");

    let mut rec = Recording::open(dir.path()).unwrap();
    let back = rec.read(0..12).unwrap();
    // The sockets (the polls' JSON columns parse a float to within an ulp: not at stake here).
    let socks = |s: &Snapshot| doc(s)["sockets"].clone();
    for (a, b) in back.iter().zip(&snaps) {
        assert_eq!((a.seq, socks(a)), (b.seq, socks(b)));
    }
    let shared =
        |a: &Snapshot, b: &Snapshot| std::ptr::eq(a.sockets.entry(2).unwrap(), b.sockets.entry(2).unwrap());
    assert!(shared(&back[1], &back[2]), "an idle socket's entry is shared between polls");
    assert!(!shared(&back[4], &back[5]), "a new chunk's keyframe makes it anew");
    // A poll at a time, forwards, then backwards and across chunks: the same polls.
    let one: Vec<serde_json::Value> = (0..12).map(|i| doc(&rec.read(i..i + 1).unwrap()[0])).collect();
    let back_docs: Vec<serde_json::Value> = back.iter().map(doc).collect();
    assert_eq!(one, back_docs);
    assert_eq!(doc(&rec.read(3..4).unwrap()[0]), back_docs[3]);
    assert_eq!(rec.read(6..9).unwrap().iter().map(doc).collect::<Vec<_>>(), back_docs[6..9]);
    assert_eq!(rec.read(2..3).unwrap().iter().map(doc).collect::<Vec<_>>(), back_docs[2..3]);
}

/// A chunk under way is written as segments, each readable once whole: a recorder that stops
/// without closing its chunk (as SIGKILL stops it; here it is forgotten) leaves every poll but
/// those of the segment under way, read back as they were; the next recorder makes the segments
/// the chunk, and they read the same.
#[test]
fn a_chunks_segments_read_before_it_closes_and_become_the_chunk() {
    let snaps = churn(12);
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions {
        chunk: Duration::from_secs(60),
        segment: Duration::from_secs(3),
        ..RecordOptions::default()
    };
    let mut r = Recorder::create(dir.path(), opts, &system()).unwrap();
    snaps[..11].iter().for_each(|s| r.write(s).unwrap());
    // Polls 1-3, 4-6 and 7-9 in segments; 10 and 11 in the one under way.
    std::mem::forget(r);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    assert_eq!(names.len(), 6, "three segments of two files: {names:?}");
    let socks = |s: &Snapshot| (s.seq, doc(s)["sockets"].clone());
    let mut rec = Recording::open(dir.path()).unwrap();
    assert_eq!(rec.polls().len(), 9);
    let back = rec.read(0..9).unwrap();
    assert_eq!(back.iter().map(socks).collect::<Vec<_>>(), snaps[..9].iter().map(socks).collect::<Vec<_>>());
    assert_eq!(socks(&rec.read(7..8).unwrap()[0]), socks(&snaps[7]), "a poll of a later segment alone");

    // A damaged segment: the one after it (changes against the sockets it held) is left out too.
    let parts: Vec<std::path::PathBuf> =
        writer::chunks(dir.path()).unwrap().iter().map(|c| dir.path().join(&c.stem)).collect();
    let keep = std::fs::read(file(&parts[1], writer::POLLS_SUFFIX)).unwrap();
    std::fs::write(file(&parts[1], writer::POLLS_SUFFIX), b"junk").unwrap();
    let damaged = Recording::open(dir.path()).unwrap();
    assert_eq!(damaged.polls().len(), 3, "{:?}", damaged.skipped());
    assert!(damaged.skipped().iter().any(|s| s.starts_with("skipped a segment")), "{:?}", damaged.skipped());
    assert!(Recording::open(&file(&parts[2], writer::POLLS_SUFFIX)).is_err(), "a later segment alone");
    std::fs::write(file(&parts[1], writer::POLLS_SUFFIX), keep).unwrap();

    // A missing segment: the one after it (changes against the sockets the missing one left) is
    // left out too, by reader and by the next recorder alike.
    let aside = tempfile::tempdir().unwrap();
    let moved = [writer::SOCKETS_SUFFIX, writer::POLLS_SUFFIX].map(|suffix| {
        let (from, to) = (file(&parts[1], suffix), aside.path().join(suffix));
        std::fs::rename(&from, &to).unwrap();
        (from, to)
    });
    let missing = Recording::open(dir.path()).unwrap();
    assert_eq!(missing.polls().len(), 3, "{:?}", missing.skipped());
    assert!(missing.skipped().iter().any(|s| s.starts_with("skipped a segment")), "{:?}", missing.skipped());
    moved.iter().for_each(|(from, to)| std::fs::rename(to, from).unwrap());

    // What the next recorder does first: the segments become the chunk.
    let groups = |f: &std::path::Path| {
        let m = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&std::fs::File::open(f).unwrap())
            .unwrap();
        let kv = m.file_metadata().key_value_metadata().cloned().unwrap_or_default();
        let packed = m
            .row_groups()
            .iter()
            .flat_map(|g| g.columns())
            .all(|c| c.compression() != Compression::UNCOMPRESSED);
        (m.row_groups().iter().map(|g| g.num_rows()).collect::<Vec<_>>(), kv, packed)
    };
    let before: Vec<_> = parts.iter().map(|p| groups(&file(p, writer::SOCKETS_SUFFIX))).collect();
    let each: Vec<i64> = before.iter().flat_map(|(r, ..)| r.clone()).collect();
    let packed: Vec<bool> = before.iter().map(|g| g.2).collect();
    assert_eq!(packed, [true, false, false], "a chunk's later segments are not compressed");
    // Compressed row groups as big as a keyframe's are copied as they are (here: the first
    // segment's); the later segments' are encoded again (here: each on its own), compressed.
    let copied = tempfile::tempdir().unwrap();
    let stem = parts[0].file_name().unwrap().to_string_lossy().replace(".part0000", "");
    for (suffix, schema) in
        [(writer::SOCKETS_SUFFIX, sockets::schema()), (writer::POLLS_SUFFIX, polls::schema())]
    {
        let paths: Vec<_> = parts.iter().map(|p| file(p, suffix)).collect();
        let meta = segments::read_meta(&paths[0]).unwrap();
        let out = std::fs::File::create(copied.path().join(format!("{stem}{suffix}"))).unwrap();
        segments::splice(&paths, out, schema, &meta, 1).unwrap();
    }
    let (rows, kv, packed) = groups(&copied.path().join(format!("{stem}{}", writer::SOCKETS_SUFFIX)));
    assert_eq!((rows, packed), (each.clone(), true), "every row group kept, compressed");
    assert_eq!(kv, before[0].1, "the first segment's metadata");
    let mut rec = Recording::open(copied.path()).unwrap();
    assert_eq!(
        rec.read(0..9).unwrap().iter().map(socks).collect::<Vec<_>>(),
        back.iter().map(socks).collect::<Vec<_>>()
    );
    std::fs::remove_file(dir.path().join(".bbrtop-record.lock")).unwrap();
    segments::recover(dir.path()).unwrap();
    let chunks = writer::chunks(dir.path()).unwrap();
    assert_eq!(chunks.len(), 1, "one chunk");
    let (rows, _, packed) = groups(&file(&dir.path().join(&chunks[0].stem), writer::SOCKETS_SUFFIX));
    assert_eq!((rows, packed), (vec![each.iter().sum::<i64>()], true), "small row groups merged into one");
    let mut rec = Recording::open(dir.path()).unwrap();
    let again = rec.read(0..9).unwrap();
    assert_eq!(again.iter().map(socks).collect::<Vec<_>>(), back.iter().map(socks).collect::<Vec<_>>());
}

/// A recorder that closes its chunks leaves two files per chunk, however many segments each had,
/// and one whose last segment was renamed just before the chunk closed as well.
#[test]
fn closed_chunks_are_two_files_each() {
    let snaps = churn(12);
    for chunk_s in [5, 4] {
        let dir = tempfile::tempdir().unwrap();
        let opts = RecordOptions {
            chunk: Duration::from_secs(chunk_s),
            segment: Duration::from_secs(2),
            ..RecordOptions::default()
        };
        let mut r = Recorder::create(dir.path(), opts, &system()).unwrap();
        snaps.iter().for_each(|s| r.write(s).unwrap());
        r.finish().unwrap();
        let files: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with(".bbrtop"))
            .collect();
        assert_eq!(
            (writer::chunks(dir.path()).unwrap().len(), files.len()),
            (3, 6),
            "{chunk_s} s: {files:?}"
        );
        let mut rec = Recording::open(dir.path()).unwrap();
        let socks = |s: &Snapshot| (s.seq, doc(s)["sockets"].clone());
        assert_eq!(
            rec.read(0..12).unwrap().iter().map(socks).collect::<Vec<_>>(),
            snaps.iter().map(socks).collect::<Vec<_>>()
        );
    }
}

/// A chunk kept in memory (hindsight's) writes its keyframe apart: the keyframe of 2,000 idle
/// sockets held encoded takes far less than in the encoder's buffers, and reads the same.
#[test]
fn a_keyframe_apart_takes_less_memory_and_reads_the_same() {
    let snaps = polls_at(t0(), 5, |_| (1..=2000).map(|c| sock(c, "cubic", 25_000, 5)).collect());
    let meta = format::Meta { system: system(), rule: snaps[0].rule };
    let mut whole = chunk::Pair::new(Vec::new(), Vec::new(), meta.clone(), snaps[0].taken_at).unwrap();
    let mut apart =
        chunk::Pair::new(Vec::new(), Vec::new(), meta, snaps[0].taken_at).unwrap().keyframe_apart();
    for s in &snaps {
        whole.write(s, &[]).unwrap();
        apart.write(s, &[]).unwrap();
    }
    // Apart: the keyframe's 2000 rows written out (compressed) and the footer's share; whole:
    // their values held by the encoders (up to 8 bytes each of 190 columns), uncompressed.
    assert!(
        apart.in_memory() * 2 < whole.in_memory(),
        "{} bytes apart, {} whole",
        apart.in_memory(),
        whole.in_memory()
    );
    let dir = tempfile::tempdir().unwrap();
    for (name, pair) in [("whole", whole), ("apart", apart)] {
        let (socks, polls) = pair.finish().unwrap();
        std::fs::write(dir.path().join(format!("{name}{}", writer::SOCKETS_SUFFIX)), socks).unwrap();
        std::fs::write(dir.path().join(format!("{name}{}", writer::POLLS_SUFFIX)), polls).unwrap();
    }
    let read = |name: &str| -> Vec<serde_json::Value> {
        let mut r = Recording::open(&dir.path().join(format!("{name}{}", writer::POLLS_SUFFIX))).unwrap();
        r.read(0..5).unwrap().iter().map(doc).collect()
    };
    assert_eq!(read("apart"), read("whole"));
    assert_eq!(read("apart")[4]["sockets"].as_array().map(Vec::len), Some(2000));
    // No dictionaries: each would hold its column's hash table while the keyframe encodes.
    let socks = std::fs::File::open(dir.path().join(format!("whole{}", writer::SOCKETS_SUFFIX))).unwrap();
    let meta = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(socks).unwrap();
    let columns = meta.metadata().row_groups().iter().flat_map(|g| g.columns().iter());
    assert!(columns.clone().count() > 100 && columns.clone().all(|c| c.dictionary_page_offset().is_none()));
}

/// 2026-11-23T23:59:57Z: three seconds before midnight.
fn before_midnight() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_478_397)
}

fn hive(host: &str, chunk_s: u64) -> RecordOptions {
    RecordOptions {
        chunk: Duration::from_secs(chunk_s),
        layout: layout::Layout::Hive { host: host.into() },
        ..RecordOptions::default()
    }
}

/// The chunk files under `dir`, as paths within it, sorted.
fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else if e.file_name().to_string_lossy().ends_with(writer::POLLS_SUFFIX) {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The hive layout: a host's chunks in `host=NAME/date=YYYY-MM-DD/`, a chunk in the date of its
/// first poll though it runs past midnight; read back whole from the directory and from the
/// host's tree; continued by the next recorder; one recorder per host, hosts side by side; a
/// flat recording and host trees never mixed.
#[test]
fn the_hive_layout_partitions_by_host_and_date_and_reads_back() {
    let snaps = polls_from(before_midnight(), 12);
    let dir = tempfile::tempdir().unwrap();
    let mut r = Recorder::create(dir.path(), hive("edge-1", 5), &system()).unwrap();
    assert_eq!(r.dir(), dir.path().join("host=edge-1"));
    assert!(Recorder::create(dir.path(), hive("edge-1", 5), &system()).is_err(), "one recorder per host");
    let other = Recorder::create(dir.path(), hive("edge-2", 5), &system()).expect("another host beside it");
    drop(other);
    std::fs::remove_dir_all(dir.path().join("host=edge-2")).unwrap();
    snaps[..8].iter().for_each(|s| r.write(s).unwrap());
    r.finish().unwrap();
    // Polls at :57, :58, :59, :00, :01 (the first chunk, begun on the 23rd), then :02 to :04.
    assert_eq!(
        tree(dir.path()),
        [
            "host=edge-1/date=2026-11-23/20261123T235957Z-1.polls.parquet",
            "host=edge-1/date=2026-11-24/20261124T000002Z-6.polls.parquet"
        ]
    );

    let socks = |s: &Snapshot| (s.seq, doc(s)["sockets"].clone());
    for path in [dir.path().to_path_buf(), dir.path().join("host=edge-1")] {
        let mut rec = Recording::open(&path).unwrap();
        assert_eq!(rec.partition_host(), Some("edge-1"), "{}", path.display());
        assert_eq!(
            rec.read(0..8).unwrap().iter().map(doc).collect::<Vec<_>>(),
            snaps[..8].iter().map(doc).collect::<Vec<_>>()
        );
    }
    let day = Recording::open(&dir.path().join("host=edge-1/date=2026-11-24")).unwrap();
    assert_eq!((day.polls().len(), day.partition_host()), (3, Some("edge-1")), "one day's partition");

    // The next recorder goes on in the same tree.
    let mut r = Recorder::create(dir.path(), hive("edge-1", 5), &system()).unwrap();
    snaps[8..].iter().for_each(|s| r.write(s).unwrap());
    r.finish().unwrap();
    let mut rec = Recording::open(dir.path()).unwrap();
    assert_eq!(
        rec.read(0..12).unwrap().iter().map(socks).collect::<Vec<_>>(),
        snaps.iter().map(socks).collect::<Vec<_>>()
    );

    // Two hosts' trees are two recordings; flat and hive are not mixed in one directory.
    let mut r = Recorder::create(dir.path(), hive("edge-2", 5), &system()).unwrap();
    r.write(&snaps[0]).unwrap();
    r.finish().unwrap();
    let e = Recording::open(dir.path()).err().map(|e| format!("{e:#}")).unwrap();
    assert!(e.contains("2 hosts' recordings (host=edge-1, host=edge-2)") && !e.contains('\n'), "{e}");
    let e = Recorder::create(dir.path(), RecordOptions::default(), &system()).err().unwrap().to_string();
    assert!(e.contains("--record.layout hive"), "{e}");
    let flat = tempfile::tempdir().unwrap();
    let mut r = Recorder::create(flat.path(), RecordOptions::default(), &system()).unwrap();
    r.write(&snaps[0]).unwrap();
    r.finish().unwrap();
    let e = Recorder::create(flat.path(), hive("edge-1", 5), &system()).err().unwrap().to_string();
    assert!(e.contains("--record.layout flat"), "{e}");
    let e = Recorder::create(flat.path(), hive("../x", 5), &system()).err().unwrap().to_string();
    assert!(e.contains("host name \"../x\""), "{e}");
}

/// Retention sees every partition's chunks: by size, all but the newest go, and the day they
/// emptied with them.
#[test]
fn retention_runs_across_date_partitions() {
    let snaps = polls_from(before_midnight(), 12);
    let dir = tempfile::tempdir().unwrap();
    let mut r = Recorder::create(dir.path(), hive("edge-1", 2), &system()).unwrap();
    snaps[..6].iter().for_each(|s| r.write(s).unwrap());
    r.finish().unwrap();
    assert_eq!(writer::chunks(&dir.path().join("host=edge-1")).unwrap().len(), 3, "{:?}", tree(dir.path()));
    let opts = RecordOptions { max_bytes: Some(1), ..hive("edge-1", 2) };
    let mut r = Recorder::create(dir.path(), opts, &system()).unwrap();
    snaps[6..8].iter().for_each(|s| r.write(s).unwrap());
    r.finish().unwrap();
    assert_eq!(tree(dir.path()), ["host=edge-1/date=2026-11-24/20261124T000003Z-7.polls.parquet"]);
    assert!(!dir.path().join("host=edge-1/date=2026-11-23").exists(), "the emptied day is gone");
}

/// A recorder of the hive layout that is killed leaves its segments in the chunk's partition;
/// the next recorder makes them the chunk there.
#[test]
fn a_killed_hive_recorders_segments_become_its_chunk_in_its_partition() {
    let snaps = polls_from(before_midnight(), 12);
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions { segment: Duration::from_secs(2), ..hive("edge-1", 60) };
    let mut r = Recorder::create(dir.path(), opts.clone(), &system()).unwrap();
    snaps[..9].iter().for_each(|s| r.write(s).unwrap());
    std::mem::forget(r);
    let parts = tree(dir.path());
    assert!(
        parts.len() >= 3 && parts.iter().all(|p| p.contains("date=2026-11-23/") && p.contains(".part")),
        "{parts:?}"
    );
    let read = Recording::open(dir.path()).unwrap().polls().len();
    assert!(read >= 6, "the whole segments read at once: {read}");
    // As after SIGKILL: the lock's holder is gone.
    std::fs::remove_file(dir.path().join("host=edge-1/.bbrtop-record.lock")).unwrap();
    drop(Recorder::create(dir.path(), opts, &system()).unwrap());
    assert_eq!(tree(dir.path()), ["host=edge-1/date=2026-11-23/20261123T235957Z-1.polls.parquet"]);
    assert_eq!(Recording::open(dir.path()).unwrap().polls().len(), read);
}

/// DuckDB's `hive_partitioning` adds `host` and `date` from the path: no table has such a column
/// of its own to clash with them.
#[test]
fn no_table_has_a_host_or_date_column() {
    for schema in [sockets::schema(), polls::schema()] {
        for name in ["host", "date"] {
            assert!(schema.field_with_name(name).is_err(), "a {name} column");
        }
    }
}

/// A recorder touches only the files it names (issue 42): another tool's `.tmp`, and a pair of
/// Parquet files named as a chunk's are not, stay however tight retention is; the partial files
/// a killed recorder left go.
#[test]
fn a_recorder_touches_only_its_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let theirs =
        ["editor.tmp", "notes.polls.parquet", "notes.sockets.parquet", "20261123T171000Z.polls.parquet.tmp"];
    for f in theirs {
        std::fs::write(dir.path().join(f), b"not bbrtop's").unwrap();
    }
    let ours = dir.path().join("20261123T171000Z-42.part0003.polls.parquet.tmp");
    std::fs::write(&ours, b"half a segment").unwrap();
    let opts =
        RecordOptions { chunk: Duration::from_secs(5), max_bytes: Some(1), ..RecordOptions::default() };
    let mut r = Recorder::create(dir.path(), opts, &system()).unwrap();
    assert!(!ours.exists(), "a killed recorder's partial segment is removed");
    churn(12).iter().for_each(|s| r.write(s).unwrap());
    r.finish().unwrap();
    for f in theirs {
        assert!(dir.path().join(f).exists(), "{f} was removed");
    }
    let left = writer::chunks(dir.path()).unwrap();
    assert_eq!(left.len(), 1, "retention kept its newest chunk only, and saw no other: {left:?}");
}

/// The filesystem's root, and a path that is no directory, are no place for a recording.
#[test]
fn a_recorder_refuses_the_root_and_a_file() {
    for dir in ["/", "//", "/proc"] {
        let e = Recorder::create(std::path::Path::new(dir), RecordOptions::default(), &system()).err();
        assert!(e.is_some_and(|e| e.to_string().starts_with(dir)), "{dir}");
    }
    let f = tempfile::NamedTempFile::new().unwrap();
    let e = Recorder::create(f.path(), RecordOptions::default(), &system()).err().map(|e| e.to_string());
    assert_eq!(e, Some(format!("{}: not a directory", f.path().display())));
}

/// Bytes `[offset, offset + len)` of column chunk `c`.
fn column_bytes(file: &[u8], c: &parquet::file::metadata::ColumnChunkMetaData) -> Vec<u8> {
    let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset()) as usize;
    file[start..start + c.compressed_size() as usize].to_vec()
}

/// A closed chunk's sockets file, and its row groups' cookie spans where they hold keyframe rows.
fn key_spans(path: &std::path::Path) -> (Vec<u8>, parquet::file::metadata::ParquetMetaData) {
    let bytes = std::fs::read(path).unwrap();
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
        .unwrap();
    (bytes, meta)
}

/// Beside 9,300 idle sockets, a chunk's keyframe copies the row groups of the chunk before's in
/// which no socket moved, as their bytes are but for the poll's columns, and encodes the sockets
/// of the one in which a socket moved, those that did not move apart from it; every poll reads
/// back as it was.
#[test]
fn a_keyframe_copies_the_row_groups_in_which_no_socket_moved() {
    let snaps = polls_at(t0(), 12, |i| {
        // Socket 5 moves at poll 4 (the second chunk), socket 9301 comes at poll 5.
        let acked = |c| if c == 5 && i >= 4 { 6 } else { 5 };
        let last = if i >= 5 { 9301 } else { 9300 };
        (1..=last).map(|c| sock(c, "cubic", 25_000, acked(c))).collect()
    });
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions {
        chunk: Duration::from_secs(3),
        segment: Duration::from_secs(1),
        ..RecordOptions::default()
    };
    let mut r = Recorder::create(dir.path(), opts, &system()).unwrap();
    let mut copied = Vec::new();
    for s in &snaps {
        r.write(s).unwrap();
        copied.push(r.rows_copied());
    }
    r.finish().unwrap();
    // Each chunk's keyframe: all 9,300 rows copied in the second; in the third the 1,108 of the
    // row group in which no socket moved; in the fourth all 9,301, the third having written the
    // 8,191 that did not move of the other apart from socket 5 and 9301, which came.
    let chunk = |n| [n; 3];
    let want = [chunk(0), chunk(9300), chunk(9300 + 1108), chunk(9300 + 1108 + 9301)].concat();
    assert_eq!(copied, want);
    let mut rec = Recording::open(dir.path()).unwrap();
    let back = rec.read(0..12).unwrap();
    for (a, b) in back.iter().zip(&snaps) {
        assert_eq!(doc(a), doc(b), "poll {}", b.seq);
    }

    let chunks = writer::chunks(dir.path()).unwrap();
    assert_eq!(chunks.len(), 4, "12 polls in chunks of 3 s");
    let files: Vec<_> = chunks
        .iter()
        .map(|c| key_spans(&dir.path().join(format!("{}{}", c.stem, writer::SOCKETS_SUFFIX))))
        .collect();
    let spans = |k: usize| -> Vec<(u64, u64, i64)> {
        let groups = files[k].1.row_groups().iter();
        groups.filter_map(|g| keyframe::keyframe_span(g).map(|(a, b)| (a, b, g.num_rows()))).collect()
    };
    let (low, high) = ((1, 8192, 8192), (8193, 9300, 1108));
    assert_eq!(spans(0), [low, high]);
    assert_eq!(spans(1), [low, high], "copied");
    // Copied first; then those that did not move; then those that moved or came.
    assert_eq!(spans(2), [high, (1, 8192, 8191), (5, 9301, 2)]);
    assert_eq!(spans(3), spans(2), "copied");
    // Whether row group `a` of chunk `ka` holds the bytes of row group `b` of chunk `kb`, but
    // for the poll's columns (`seq`, `at_ms`), which are each keyframe's own.
    let same = |(ka, a): (usize, usize), (kb, b): (usize, usize)| -> bool {
        let (ga, gb) = (files[ka].1.row_group(a), files[kb].1.row_group(b));
        let bytes = |k: usize, g: &parquet::file::metadata::RowGroupMetaData, c| {
            column_bytes(&files[k].0, g.column(c))
        };
        assert!((0..2).all(|c| bytes(ka, ga, c) != bytes(kb, gb, c)), "the poll's columns are each one's");
        (2..ga.num_columns()).all(|c| bytes(ka, ga, c) == bytes(kb, gb, c))
    };
    assert!(same((1, 0), (0, 0)) && same((1, 1), (0, 1)) && same((2, 0), (0, 1)) && same((3, 1), (2, 1)));
}
