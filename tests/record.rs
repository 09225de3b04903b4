//! Recordings of a real lab: `bbrtop record --lab`, killed with SIGKILL in the middle of a chunk,
//! leaves every chunk it finished readable, by bbrtop and by DuckDB (which knows nothing of
//! bbrtop); the next recorder in the directory drops the partial chunk and goes on. Privileged
//! (the lab), and DuckDB comes from scripts/setup.sh.

mod support;

use bbrtop::record::{RecordOptions, Recorder, Recording};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};
use support::duckdb::{duckdb, duckdb_or_said, readme_states_sql};
use support::guard;
use support::holder::Holder;

const BIN: &str = env!("CARGO_BIN_EXE_bbrtop");

fn files(dir: &Path, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Ends the recorder with SIGKILL, if it still runs, and removes the lab it could not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = Command::new(BIN).args(["lab", "--cleanup"]).stderr(Stdio::null()).status();
    }
}

#[test]
fn root_a_killed_recorder_leaves_its_chunks_readable_by_bbrtop_and_duckdb() {
    if !guard::lab("the recording test") {
        return;
    }
    let Some(python) = duckdb_or_said() else {
        return;
    };
    let top = tempfile::tempdir().expect("tempdir");
    // DuckDB runs in `top`, the SQL of docs/recordings.md reading `rec/`.
    let dir = &top.path().join("rec");
    std::fs::create_dir(dir).expect("rec/");
    let rec = Command::new(BIN)
        .args(["record", &dir.display().to_string(), "--lab", "--interval", "250ms", "--record.chunk", "1s"])
        // Chunks of several segments, each chunk's spliced into its files when it closes.
        .args(["--record.segment", "300ms"])
        .stderr(Stdio::null())
        .spawn()
        .expect("bbrtop record");
    let mut rec = Killed(rec);
    // Three whole chunks, and the fourth under way (its files still named .tmp).
    let t = Instant::now();
    let chunks = || files(dir, ".polls.parquet").into_iter().filter(|f| !f.contains(".part")).count();
    while chunks() < 3 || files(dir, ".tmp").is_empty() {
        assert!(t.elapsed() < Duration::from_secs(60), "no three chunks in 60 s: {:?}", files(dir, ""));
        assert!(rec.0.try_wait().expect("wait").is_none(), "the recorder ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    rec.0.kill().expect("SIGKILL");
    rec.0.wait().expect("reaped");
    let partial = files(dir, ".tmp");
    assert!(!partial.is_empty(), "killed in the middle of a chunk");

    // bbrtop: every finished chunk reads, every poll in order, the lab's flows in them.
    let mut recording = Recording::open(dir).expect("the finished chunks read");
    let polls = recording.polls().to_vec();
    assert!(polls.len() >= 6, "three chunks of 1 s at 250 ms polls: {}", polls.len());
    assert!(polls.windows(2).all(|w| w[0].seq < w[1].seq && w[0].at <= w[1].at), "{polls:?}");
    let snaps = recording.read(0..polls.len()).expect("every poll reads");
    let flows = |cc: &str| {
        snaps
            .iter()
            .flat_map(|s| &s.sockets)
            .filter(|s| s.record.cc_name() == cc && s.record.tcp_info.srtt_us() > Some(0))
            .count()
    };
    assert!(flows("bbr") > 0 && flows("cubic") > 0, "the lab's BBR and CUBIC flows are recorded");
    let rows: usize = snaps.iter().map(|s| s.sockets.len()).sum();

    // DuckDB, on the same files, without bbrtop: the same rows, the same flows.
    let states = |q: &str| duckdb(&python, top.path(), &(readme_states_sql() + "; " + q));
    let got = states("select count(*), count(distinct seq) from socket_states");
    assert_eq!(got, vec![format!("{rows}\t{}", polls.len())], "DuckDB counts what bbrtop reads");
    let srtt = |cc: &str| {
        duckdb(
            &python,
            top.path(),
            &format!("select max(tcpi_srtt_us) from 'rec/*.sockets.parquet' where cc = '{cc}'"),
        )
    };
    let max_bbr: u32 = snaps
        .iter()
        .flat_map(|s| &s.sockets)
        .filter(|s| s.record.cc_name() == "bbr")
        .filter_map(|s| s.record.tcp_info.srtt_us())
        .max()
        .expect("a BBR srtt");
    assert_eq!(srtt("bbr"), vec![max_bbr.to_string()]);
    let polls_seen = duckdb(&python, top.path(), "select count(*), sum(sockets) from 'rec/*.polls.parquet'");
    assert_eq!(polls_seen, vec![format!("{}\t{rows}", polls.len())]);
    let collectors =
        duckdb(&python, top.path(), "select distinct collectors->>'$[0].name' from 'rec/*.polls.parquet'");
    assert_eq!(collectors, vec!["netlink".to_string()], "the JSON columns read as JSON");

    // The next recorder drops the partial chunk and goes on beside the finished ones.
    let r = Recorder::create(dir, RecordOptions::default(), recording.system()).expect("a new recorder");
    assert!(files(dir, ".tmp").is_empty(), "the partial chunk {partial:?} is gone");
    drop(r);
    assert_eq!(Recording::open(dir).expect("still reads").polls(), &polls[..]);
}

/// `bbrtop record --record.layout hive` writes its chunks in `host=NAME/date=YYYY-MM-DD/` (today,
/// UTC), read back by bbrtop from the directory; a host name that is no safe path segment, and
/// `--record.host` without the hive layout, are one-line errors.
#[test]
fn record_with_the_hive_layout_writes_the_host_and_date_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rec");
    let before = SystemTime::now();
    let o = Command::new(BIN)
        .args(["record", &rec.display().to_string(), "--record.layout", "hive", "--record.host", "edge-9"])
        .args(["--interval", "100ms", "--count", "3", "--no-collector.bpf"])
        .stdin(Stdio::null())
        .output()
        .expect("bbrtop record");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let days: Vec<String> = [before, SystemTime::now()]
        .iter()
        .map(|t| format!("date={}", &humantime::format_rfc3339_seconds(*t).to_string()[..10]))
        .collect();
    let host = rec.join("host=edge-9");
    let day = days.iter().map(|d| host.join(d)).find(|d| d.is_dir()).expect("today's partition");
    assert_eq!(files(&day, ".polls.parquet").len(), 1, "{:?}", files(&day, ""));
    assert!(files(&rec, ".parquet").is_empty(), "nothing flat");
    let read = Recording::open(&rec).expect("the tree reads");
    assert_eq!((read.polls().len(), read.partition_host()), (3, Some("edge-9")));
    for (flags, says) in [
        (["--record.layout", "hive", "--record.host", "../x"], "host name \"../x\""),
        (["--record.layout", "hive", "--record.host", "a=b"], "host name \"a=b\""),
        (["--record.layout", "flat", "--record.host", "edge-9"], "--record.host names the host= partition"),
    ] {
        let err = support::usage_error(
            &[&["record", &rec.display().to_string(), "--count", "1"][..], &flags].concat(),
        );
        assert!(err.contains(says), "{err}");
    }
}

/// `--log.file` is every command's: `record`, a daemon, logs there and not on stderr.
#[test]
fn record_logs_to_the_log_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (rec, log) = (dir.path().join("rec"), dir.path().join("record.log"));
    let o = Command::new(BIN)
        .args(["record", &rec.display().to_string(), "--log.file", &log.display().to_string()])
        .args(["--interval", "100ms", "--count", "2", "--no-collector.bpf"])
        .stdin(Stdio::null())
        .output()
        .expect("bbrtop record");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let log = std::fs::read_to_string(&log).expect("the log file");
    assert!(log.contains("message=recording") && log.contains(&rec.display().to_string()), "{log}");
    assert!(!err.contains("message="), "logs on stderr too: {err}");
}

#[test]
fn record_into_a_file_is_a_one_line_error() {
    let f = tempfile::NamedTempFile::new().expect("file");
    let err = support::usage_error(&["record", &f.path().display().to_string(), "--count", "1"]);
    assert!(err.contains(&f.path().display().to_string()), "{err}");
}

/// The filesystem's root is no place for a recording (issue 42: it recorded there without a
/// word, and removed every `*.tmp` it found).
#[test]
fn record_into_the_root_is_a_one_line_error() {
    let err = support::usage_error(&["record", "/", "--count", "1"]);
    assert!(err.contains("the filesystem's root"), "{err}");
    assert!(!Path::new("/.bbrtop-record.lock").exists(), "nothing written in /");
}

/// SIGUSR1 (the exporter's dump signal) and SIGHUP (a hang-up, or systemd's reload) do not end a
/// recorder: it goes on polling, and SIGINT then finishes the chunk under way, no `.tmp` left
/// (on main SIGUSR1 killed it and lost that chunk, and SIGHUP stopped it).
#[test]
fn a_recorder_goes_on_after_sigusr1_and_sighup_and_keeps_its_chunk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rec");
    let log = dir.path().join("stderr");
    let child = Command::new(BIN)
        .args(["record", &rec.display().to_string(), "--interval", "100ms", "--record.chunk", "1s"])
        .arg("--no-collector.bpf")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("bbrtop record");
    let mut child = Killed(child);
    let started = support::poll_until(Duration::from_secs(30), || {
        Some(()).filter(|_| std::fs::read_to_string(&log).unwrap_or_default().contains("recording"))
    });
    assert!(
        started.is_some(),
        "the recorder never started: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    support::signal(child.0.id(), "USR1");
    support::signal(child.0.id(), "HUP");
    // It goes on after the signals: a chunk is finished after them (they are a second long).
    let chunk = support::poll_until(Duration::from_secs(20), || {
        assert!(child.0.try_wait().expect("wait").is_none(), "SIGUSR1 or SIGHUP ended the recorder");
        files(&rec, ".polls.parquet").first().cloned()
    });
    assert!(chunk.is_some(), "no chunk finished after SIGUSR1 and SIGHUP");
    support::signal(child.0.id(), "INT");
    let status = support::wait_exit(&mut child.0, Duration::from_secs(20)).expect("SIGINT ends it");
    assert!(status.success(), "{status:?}: {}", std::fs::read_to_string(&log).unwrap_or_default());
    let polls = Recording::open(&rec).expect("a recording").polls().len();
    assert!(polls >= 2, "the chunk under way was kept: {polls} polls");
    assert_eq!(files(&rec, ".tmp"), Vec::<String>::new(), "its segment finished cleanly");
}

/// A child process killed (SIGKILL) and reaped on drop, whatever the test did.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Loopback connections to `l`: client and server ends.
fn connect(l: &std::net::TcpListener) -> (std::net::TcpStream, std::net::TcpStream) {
    let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    (c, l.accept().unwrap().0)
}

/// Asserts that DuckDB's states by the SQL of docs/recordings.md, for recording `rec` in `dir`,
/// are bbrtop's at every poll: the same sockets, counters and ages. bbrtop's polls.
fn states_agree(python: &Path, dir: &Path, rec: &Path) -> Vec<bbrtop_core::snapshot::Snapshot> {
    let mut recording = Recording::open(rec).expect("a recording");
    let n = recording.polls().len();
    let snaps = recording.read(0..n).expect("every poll reads");
    let ours: Vec<String> = snaps
        .iter()
        .flat_map(|s| {
            s.sockets.iter().map(move |v| {
                let i = &v.record.tcp_info;
                let opt = |v: Option<u64>| v.map_or("None".to_string(), |v| v.to_string());
                format!(
                    "{}\t{}\t{}\t{}\t{}",
                    s.seq,
                    v.record.cookie,
                    opt(i.bytes_acked()),
                    opt(i.bytes_received()),
                    opt(i.last_ack_recv_ms().map(u64::from))
                )
            })
        })
        .collect();
    let sql = readme_states_sql()
        + "; select seq, cookie, tcpi_bytes_acked, tcpi_bytes_received, at_ms - tcpi_last_ack_recv_at_ms \
           from socket_states order by at_ms, cookie";
    let theirs = duckdb(python, dir, &sql);
    assert_eq!(theirs, ours, "DuckDB's states against bbrtop's");
    snaps
}

/// The SQL of docs/recordings.md, run by DuckDB on a recording of real loopback sockets (idle ones, two that
/// move, some that close mid-recording and some that open), gives each socket's state at each
/// poll exactly as bbrtop's reader rebuilds it: the same sockets, counters and ages.
#[test]
fn the_readmes_sql_gives_each_sockets_state_at_each_poll_as_bbrtop_reads_it() {
    use std::io::Write;
    let Some(python) = duckdb_or_said() else {
        return;
    };
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let mut conns: Vec<_> = (0..8).map(|_| connect(&l)).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rec");
    let child = Command::new(BIN)
        .args(["record", &rec.display().to_string(), "--port", &port.to_string()])
        .args(["--interval", "200ms", "--record.chunk", "1s", "--count", "20", "--no-collector.bpf"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bbrtop record");
    let mut child = Reaped(child);
    // Two connections move throughout; two close after a while, and two more open.
    let t = Instant::now();
    let mut step = 0;
    while child.0.try_wait().expect("wait").is_none() {
        assert!(t.elapsed() < Duration::from_secs(120), "the recorder did not finish 20 polls");
        for (c, _) in &mut conns[..2] {
            c.write_all(b"x").unwrap();
        }
        step += 1;
        if step == 15 {
            conns.drain(2..4);
        }
        if step == 25 {
            conns.extend((0..2).map(|_| connect(&l)));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(child.0.wait().expect("reaped").success(), "the recorder failed");

    let snaps = states_agree(&python, dir.path(), &rec);
    // What makes the comparison worth making: chunks, idle sockets left out of later polls,
    // tombstones, and sockets that came.
    let count = |q: &str| duckdb(&python, dir.path(), q).join(",");
    assert!(count("select count(distinct key_at_ms) > 1 from 'rec/*.polls.parquet'") == "True", "chunks");
    let rows: usize = count("select count(*) from 'rec/*.sockets.parquet'").parse().unwrap();
    let socket_polls: usize = snaps.iter().map(|s| s.sockets.len()).sum();
    assert!(rows < socket_polls, "{rows} rows hold {socket_polls} socket-polls");
    assert_eq!(count("select count(*) > 0 from 'rec/*.sockets.parquet' where row = 'change'"), "True");
    let live: Vec<usize> = snaps.iter().map(|s| s.sockets.len()).collect();
    assert!(live.iter().max() > live.iter().min(), "sockets came and went: {live:?}");
}

/// `bbrtop record` with its default segments (5 s) beside real loopback sockets, killed with
/// SIGKILL about 12 s in, mid-chunk (chunks are a minute): bbrtop and DuckDB read every poll but
/// those of the segment under way, which holds at most 5 s of polls (a segment is renamed as its
/// poll that covers 5 s is in): the last poll read is at most 5 s before the kill, and a poll of
/// slack for the time a poll takes to be read and written.
#[test]
fn a_killed_recorder_loses_at_most_its_last_segment() {
    let Some(python) = duckdb_or_said() else {
        return;
    };
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let _conns: Vec<_> = (0..20).map(|_| connect(&l)).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("rec");
    let interval = Duration::from_millis(500);
    let child = Command::new(BIN)
        .args(["record", &rec.display().to_string(), "--port", &port.to_string()])
        .args(["--interval", "500ms", "--no-collector.bpf"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bbrtop record");
    let mut child = Reaped(child);
    let t = Instant::now();
    let segments = |rec: &Path| files(rec, ".polls.parquet").iter().filter(|f| f.contains(".part")).count();
    while t.elapsed() < Duration::from_secs(12) || !rec.exists() || segments(&rec) < 2 {
        assert!(t.elapsed() < Duration::from_secs(60), "no two segments in 60 s: {:?}", files(&rec, ""));
        assert!(child.0.try_wait().expect("wait").is_none(), "the recorder ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    let killed_at = std::time::SystemTime::now();
    child.0.kill().expect("SIGKILL");
    child.0.wait().expect("reaped");
    assert!(files(&rec, ".polls.parquet").len() >= 2, "{:?}", files(&rec, ""));

    let mut recording = Recording::open(&rec).expect("the whole segments read");
    let polls = recording.polls().to_vec();
    let seqs: Vec<u64> = polls.iter().map(|p| p.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]) && seqs[0] <= 2, "polls in order, from the first: {seqs:?}");
    let last = polls.last().expect("polls").at;
    let lost = killed_at.duration_since(last).unwrap_or_default();
    assert!(lost <= Duration::from_secs(5) + interval, "the last poll read is {lost:?} before the kill");
    let snaps = recording.read(0..polls.len()).expect("every poll reads");
    let ours: usize = snaps.iter().map(|s| s.sockets.len()).sum();
    assert!(snaps.iter().all(|s| s.sockets.len() >= 40), "the test's 40 sockets in every poll");

    let got = duckdb(
        &python,
        dir.path(),
        &(readme_states_sql() + "; select count(distinct seq), count(*), max(at_ms) from socket_states"),
    );
    let last_ms = last.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    assert_eq!(got, vec![format!("{}\t{ours}\t{last_ms}", polls.len())], "DuckDB reads what bbrtop reads");
}

/// The SQL of docs/recordings.md where real sockets leave it to chance: a socket that goes just as a chunk
/// begins (no tombstone: the keyframe leaves it out), one that goes inside a chunk, one that
/// comes, an idle one and a moving one, over three chunks of segments; DuckDB's states are
/// bbrtop's reader's, poll by poll.
#[test]
fn the_readmes_sql_keeps_a_socket_gone_at_a_chunks_start_out() {
    use bbrtop_core::seam::{Now, feed_dump};
    use bbrtop_core::testing::record;
    use bbrtop_core::wire::Dump;
    use bbrtop_engine::{Engine, EngineConfig};
    let Some(python) = duckdb_or_said() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = RecordOptions {
        chunk: Duration::from_secs(5),
        segment: Duration::from_secs(2),
        ..RecordOptions::default()
    };
    let mut rec = Recorder::create(&dir.path().join("rec"), opts, &Default::default()).expect("recorder");
    let mut e = Engine::new(EngineConfig::default());
    let t0 = Now { mono: Instant::now(), wall: std::time::UNIX_EPOCH + Duration::from_secs(1_795_000_000) };
    let sock = |c: u64, acked: u64| record(c, "bbr").bytes_acked(acked).last_ack_recv_ms(0).build();
    for i in 0..12u64 {
        let now = t0.after(Duration::from_secs(i));
        let mut socks = vec![sock(1, i * 1000), sock(2, 5)];
        socks.extend((i < 3).then(|| sock(3, 7)));
        socks.extend((i < 5).then(|| sock(4, 9)));
        socks.extend((i >= 8).then(|| sock(5, 11)));
        feed_dump(&mut e, Dump { sockets: socks, ..Dump::default() }, now);
        rec.write(&e.tick(now)).expect("a poll written");
    }
    rec.finish().expect("finished");
    let mut recording = Recording::open(&dir.path().join("rec")).expect("a recording");
    let snaps = recording.read(0..12).expect("every poll");
    let ours: Vec<String> = snaps
        .iter()
        .flat_map(|s| s.sockets.iter().map(move |v| format!("{}\t{}", s.seq, v.record.cookie)))
        .collect();
    assert!(ours.contains(&"5\t4".to_string()) && !ours.contains(&"6\t4".to_string()), "{ours:?}");
    let sql = readme_states_sql() + "; select seq, cookie from socket_states order by at_ms, cookie";
    assert_eq!(duckdb(&python, dir.path(), &sql), ours);
    let gone = duckdb(&python, dir.path(), "select cookie from 'rec/*.sockets.parquet' where row = 'gone'");
    assert_eq!(gone, vec!["3".to_string()], "a tombstone inside a chunk, none at its start");
}

/// A chunk's keyframe copies the row groups of the chunk before's in which no socket moved
/// (src/record/keyframe.rs), their poll's columns encoded anew. Beside 1,100 idle loopback
/// connections (held by a child) and two that move, `bbrtop record` in chunks of 1 s copies
/// keyframe rows, and DuckDB's states by the SQL of docs/recordings.md are bbrtop's at every poll.
#[test]
fn keyframes_copied_from_the_chunk_before_read_the_same_in_duckdb() {
    use std::io::Write;
    let Some(python) = duckdb_or_said() else {
        return;
    };
    let holder = Holder::start(1_100);
    // Two more connections to the holder's listener, left in its accept queue: they move, and
    // come after the idle ones in cookie order.
    let mut moving: Vec<_> =
        (0..2).map(|_| std::net::TcpStream::connect(("127.0.0.1", holder.1)).unwrap()).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let (rec, log) = (dir.path().join("rec"), dir.path().join("log"));
    let child = Command::new(BIN)
        .args(["record", &rec.display().to_string(), "--port", &holder.1.to_string()])
        .args(["--interval", "200ms", "--record.chunk", "1s", "--record.segment", "400ms"])
        .args(["--count", "16", "--no-collector.bpf"])
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("bbrtop record");
    let mut child = Reaped(child);
    let t = Instant::now();
    while child.0.try_wait().expect("wait").is_none() {
        assert!(t.elapsed() < Duration::from_secs(120), "the recorder did not finish 16 polls");
        for c in &mut moving {
            c.write_all(b"x").unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(child.0.wait().expect("reaped").success(), "the recorder failed");
    let log = std::fs::read_to_string(&log).unwrap();
    let copied: u64 = log
        .split_once("keyframe_rows_copied=")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .unwrap_or_else(|| panic!("no keyframe_rows_copied in the log: {log}"));
    let snaps = states_agree(&python, dir.path(), &rec);
    let idle = 2 * 1_100;
    let live: Vec<usize> = snaps.iter().map(|s| s.sockets.len()).collect();
    assert!(live.iter().all(|n| *n == idle + 4), "the holder's and 4 moving: {live:?}");
    assert!(copied >= idle as u64, "a keyframe copied its idle sockets' rows: {copied}");
}

#[test]
#[ignore = "a child of the test above: holds loopback connections"]
fn holder() {
    support::holder::hold_if_asked();
}
