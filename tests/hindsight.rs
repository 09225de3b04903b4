//! Hindsight in a real `bbrtop export`: the minutes it holds are written as a recording on an
//! authenticated `POST /api/hindsight` and on SIGUSR1, and read back; nobody else can ask.

mod support;

use bbrtop::record::Recording;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The exporter, ended with SIGTERM (then SIGKILL) when dropped.
struct Exporter(Child);

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) && self.0.try_wait().ok().flatten().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `curl -X METHOD`, with `user:password` if given: the status and the body.
fn curl(method: &str, port: u16, path: &str, auth: Option<&str>) -> (u16, String) {
    let mut c = Command::new("curl");
    c.args([
        "-s",
        "-m",
        "20",
        "-X",
        method,
        "-w",
        "\n%{http_code}",
        &format!("http://127.0.0.1:{port}{path}"),
    ]);
    if let Some(a) = auth {
        c.args(["-u", a]);
    }
    let out = String::from_utf8(c.output().expect("curl").stdout).expect("utf-8");
    let (body, code) = out.rsplit_once('\n').expect("a status line");
    (code.parse().unwrap_or(0), body.to_string())
}

/// The netlink collector's polls so far, read from /metrics.
fn polls_done(port: u16) -> u64 {
    let (_, body) = curl("GET", port, "/metrics", Some("ops:s3cret"));
    body.lines()
        .find_map(|l| l.strip_prefix("bbrtop_collector_polls_total{collector=\"netlink\"} "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

fn dirs(parent: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> =
        std::fs::read_dir(parent).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    v.sort();
    v
}

#[test]
fn hindsight_is_written_on_request_and_on_sigusr1_and_reads_back() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hash = bcrypt::hash("s3cret", 4).expect("bcrypt");
    let web = tmp.path().join("web.yml");
    std::fs::write(&web, format!("basic_auth_users:\n  ops: '{hash}'\n")).expect("web config");
    let out = tmp.path().join("hindsight");
    let port = support::http::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["export", "--web.listen-address", &format!("127.0.0.1:{port}"), "--web.enable-api"])
        .args([
            "--web.config.file",
            &web.display().to_string(),
            "--hindsight.dir",
            &out.display().to_string(),
        ])
        .args(["--hindsight.window", "1m", "--interval", "200ms", "--no-collector.bpf"])
        .stderr(Stdio::null())
        .spawn()
        .expect("bbrtop export");
    let _exporter = Exporter(child);
    let t = Instant::now();
    while curl("GET", port, "/-/healthy", None).0 == 0 {
        assert!(t.elapsed() < Duration::from_secs(30), "the exporter did not answer in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(curl("POST", port, "/api/hindsight", None).0, 401, "nobody without the password");
    assert_eq!(curl("POST", port, "/api/hindsight", Some("ops:wrong")).0, 401);
    assert_eq!(curl("GET", port, "/api/hindsight", Some("ops:s3cret")).0, 405, "a write is a POST");
    // Asked once the poller has polled a few times (a busy host takes longer to poll), and
    // again while hindsight holds nothing yet (503, which does not count as a dump).
    let t = Instant::now();
    while polls_done(port) < 3 {
        assert!(t.elapsed() < Duration::from_secs(30), "no three polls in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let doc = loop {
        let (code, body) = curl("POST", port, "/api/hindsight", Some("ops:s3cret"));
        if code == 200 {
            break serde_json::from_str::<serde_json::Value>(&body).expect("JSON");
        }
        assert_eq!(code, 503, "{body}");
        assert!(t.elapsed() < Duration::from_secs(30), "nothing held in 30 s: {code} {body}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let dir = doc["dir"].as_str().expect("dir");
    let polls = doc["polls"].as_u64().expect("polls");
    assert!(polls >= 1, "{doc}");
    let before = dirs(&out).len();
    // A second request within the minute writes nothing (each dump is the whole window).
    let (code, body) = curl("POST", port, "/api/hindsight", Some("ops:s3cret"));
    assert_eq!(code, 429, "{body}");
    assert!(body.contains("again in"), "{body}");
    assert_eq!(dirs(&out).len(), before, "the refused request wrote nothing");
    assert!(doc["memory_bytes"].as_u64() > Some(0), "{doc}");
    let rec = Recording::open(Path::new(dir)).expect("a recording");
    assert_eq!(rec.polls().len() as u64, polls);
    assert!(rec.polls().windows(2).all(|w| w[0].seq < w[1].seq));

    // SIGUSR1: a second recording, with the polls since the first among its own.
    let pid = _exporter.0.id().to_string();
    assert!(Command::new("kill").args(["-USR1", &pid]).status().expect("kill").success());
    let t = Instant::now();
    while dirs(&out).len() <= before {
        assert!(t.elapsed() < Duration::from_secs(10), "no dump after SIGUSR1: {:?}", dirs(&out));
        std::thread::sleep(Duration::from_millis(100));
    }
    let second = Recording::open(dirs(&out).last().expect("a dump")).expect("the second recording");
    assert!(second.polls().len() as u64 > polls, "it holds the first's polls and the newer ones");
    assert!(_exporter.0.id() > 0 && Path::new(&format!("/proc/{pid}")).exists(), "SIGUSR1 did not end it");
}

/// Without hindsight SIGUSR1 has nothing to write: the exporter says so in its log and goes on
/// serving (SIGUSR1's default action, which it used to get, kills).
#[test]
fn sigusr1_without_hindsight_is_logged_and_the_exporter_goes_on() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = tmp.path().join("stderr");
    let port = support::http::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["export", "--web.listen-address", &format!("127.0.0.1:{port}")])
        .args(["--hindsight.window", "0", "--interval", "200ms", "--no-collector.bpf"])
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("bbrtop export");
    let mut exporter = Exporter(child);
    let t = Instant::now();
    while curl("GET", port, "/-/healthy", None).0 == 0 {
        assert!(t.elapsed() < Duration::from_secs(30), "the exporter did not answer in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = exporter.0.id().to_string();
    assert!(Command::new("kill").args(["-USR1", &pid]).status().expect("kill").success());
    let t = Instant::now();
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("SIGUSR1") {
        assert!(exporter.0.try_wait().expect("wait").is_none(), "SIGUSR1 ended the exporter");
        assert!(t.elapsed() < Duration::from_secs(10), "nothing logged after SIGUSR1");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(std::fs::read_to_string(&log).expect("log").contains("hindsight is off"));
    assert_eq!(curl("GET", port, "/metrics", None).0, 200, "still serving");
    assert!(Command::new("kill").args(["-TERM", &pid]).status().expect("kill").success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = exporter.0.try_wait().expect("wait") {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "SIGTERM did not end it in 10 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "SIGTERM ends it cleanly: {status:?}");
}

/// An exporter killed with SIGKILL about 12 s in loses at most its spool's last segment (5 s by
/// default): the spool reads at once, in bbrtop and in DuckDB, up to at most 5 s before the kill
/// (and a poll of slack); the next exporter over the same directory goes on from it, and its dump
/// holds the killed one's polls before its own.
#[test]
fn a_killed_exporters_hindsight_loses_at_most_its_last_segment() {
    use support::duckdb::{duckdb, duckdb_or_said, readme_states_sql};
    let Some(python) = duckdb_or_said() else {
        return;
    };
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let conns: Vec<_> =
        (0..20).map(|_| std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap()).collect();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("hindsight");
    let spool = out.join(".spool");
    let interval = Duration::from_millis(500);
    let start = |port: u16| {
        let child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(["export", "--web.listen-address", &format!("127.0.0.1:{port}")])
            .args(["--hindsight.dir", &out.display().to_string(), "--hindsight.window", "5m"])
            .args(["--interval", "500ms", "--no-collector.bpf"])
            .stderr(Stdio::null())
            .spawn()
            .expect("bbrtop export");
        Exporter(child)
    };
    let parts = |d: &Path| {
        std::fs::read_dir(d).map_or(0, |r| {
            r.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".polls.parquet")).count()
        })
    };
    let mut killed = start(support::http::free_port());
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(12) || parts(&spool) < 2 {
        assert!(t.elapsed() < Duration::from_secs(60), "no two segments in 60 s");
        assert!(killed.0.try_wait().expect("wait").is_none(), "the exporter ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    let killed_at = std::time::SystemTime::now();
    killed.0.kill().expect("SIGKILL");
    killed.0.wait().expect("reaped");

    let mut spooled = Recording::open(&spool).expect("the spool reads at once");
    let polls = spooled.polls().to_vec();
    let last = polls.last().expect("polls").at;
    let lost = killed_at.duration_since(last).unwrap_or_default();
    assert!(lost <= Duration::from_secs(5) + interval, "the last poll read is {lost:?} before the kill");
    let snaps = spooled.read(0..polls.len()).expect("every poll reads");
    assert!(snaps.iter().all(|s| s.sockets.len() >= 40), "the test's 40 sockets in every poll");
    let ours: usize = snaps.iter().map(|s| s.sockets.len()).sum();
    std::os::unix::fs::symlink(&spool, tmp.path().join("rec")).expect("symlink");
    let sql = readme_states_sql() + "; select count(distinct seq), count(*), max(at_ms) from socket_states";
    let last_ms = last.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    let got = duckdb(&python, tmp.path(), &sql);
    assert_eq!(got, vec![format!("{}\t{ours}\t{last_ms}", polls.len())], "DuckDB reads what bbrtop reads");

    let port = support::http::free_port();
    let next = start(port);
    let t = Instant::now();
    while polls_done(port) < 2 {
        assert!(t.elapsed() < Duration::from_secs(30), "no two polls in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, metrics) = curl("GET", port, "/metrics", None);
    assert!(
        metrics.lines().any(|l| l.starts_with("bbrtop_hindsight_spool_bytes")),
        "the spool's size is served"
    );
    let before = dirs(&out).len();
    assert!(Command::new("kill").args(["-USR1", &next.0.id().to_string()]).status().expect("kill").success());
    let t = Instant::now();
    while dirs(&out).len() <= before {
        assert!(t.elapsed() < Duration::from_secs(10), "no dump after SIGUSR1: {:?}", dirs(&out));
        std::thread::sleep(Duration::from_millis(100));
    }
    let dump = Recording::open(dirs(&out).last().expect("a dump")).expect("the dump");
    let dumped = dump.polls();
    assert_eq!(&dumped[..polls.len()], &polls[..], "the killed exporter's polls, first");
    assert!(dumped.len() > polls.len(), "then the next one's");
    drop(conns);
}

/// A tmpfs mounted for a test, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Hindsight on a full disk (a 512 KiB tmpfs) does not freeze: from the poll the spool could not
/// take, polls are kept in memory, the spool's oldest chunk is removed to make room, the failure
/// is counted, and a dump holds the newest poll and says why the spool failed (on main: a
/// warning per chunk, nothing kept, every dump as stale as the failure).
#[test]
fn root_a_full_spool_keeps_the_polls_in_memory_and_trims_its_oldest_chunk() {
    use bbrtop::record::{Hindsight, HindsightOptions, writer};
    if !support::guard::root("a full spool (a tmpfs of its own)") {
        return;
    }
    let top = tempfile::tempdir().expect("tempdir");
    let small = top.path().join("small");
    std::fs::create_dir(&small).expect("mount point");
    let mounted =
        Command::new("mount").args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"]).arg(&small).status();
    assert!(mounted.is_ok_and(|s| s.success()), "mount -t tmpfs");
    let _unmount = Tmpfs(small.clone());
    let spool = small.join(".spool");
    let opts = HindsightOptions {
        window: Duration::from_secs(50),
        max_bytes: 1 << 30,
        segment: Duration::from_secs(1),
    };
    let mut h = Hindsight::spooled(opts, Default::default(), &spool).expect("a spool");
    let mut engine = bbrtop_engine::Engine::new(bbrtop_engine::EngineConfig::default());
    let t0 = bbrtop_core::seam::Now {
        mono: Instant::now(),
        wall: std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000),
    };
    let mut poll = |h: &mut Hindsight, i: u64| {
        let now = t0.after(Duration::from_secs(i));
        let socks = (1..=300).map(|c| {
            bbrtop_core::testing::record(c, "bbr").srtt_us(20_000 + i as u32).bytes_acked(i * c).build()
        });
        let dump = bbrtop_core::wire::Dump { sockets: socks.collect(), ..Default::default() };
        bbrtop_core::seam::feed_dump(&mut engine, dump, now);
        h.push(&engine.tick(now)).expect("a push never fails for the spool");
    };
    // Polls a second apart until the disk is full (well within the window: age removes nothing).
    let (mut i, mut oldest) = (0, None);
    while h.spool_failures() == Some(0) {
        assert!(i < 120, "512 KiB not full after {i} polls: {:?} bytes", h.spool_bytes());
        oldest = writer::chunks(&spool).expect("the spool").first().map(|c| c.stem.clone()).or(oldest);
        poll(&mut h, i);
        i += 1;
    }
    let oldest = oldest.expect("a chunk written before the disk was full");
    let left: Vec<String> = writer::chunks(&spool).expect("the spool").into_iter().map(|c| c.stem).collect();
    assert!(!left.contains(&oldest), "the oldest chunk {oldest} was removed to make room: {left:?}");
    for k in i..i + 5 {
        poll(&mut h, k);
    }
    let dumps = top.path().join("dumps");
    std::fs::create_dir(&dumps).expect("dumps");
    let d = h.dump(&dumps, std::time::SystemTime::now()).expect("a dump, the disk full or not");
    let newest = t0.wall + Duration::from_secs(i + 4);
    assert_eq!(d.to, Some(newest), "the newest poll, kept in memory: {d:?}");
    assert!(d.spool_failures.is_some_and(|n| n > 0), "{d:?}");
    assert!(d.spool_error.as_deref().is_some_and(|e| e.contains("No space left")), "{d:?}");
    assert!(d.memory_bytes > 0, "{d:?}");
    let rec = Recording::open(&d.dir).expect("the dump reads");
    assert_eq!(rec.polls().last().map(|p| p.at), Some(newest));
}
