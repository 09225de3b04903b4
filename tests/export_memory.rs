//! The exporter inside a 256 MiB memory cgroup, on a host with 20,000 sockets, while slow readers
//! ask for the socket table and never read it: it stays up, scrapes go on, and its memory holds.
//! Privileged: a memory cgroup (v1 here; systemd is not PID 1, so no scope to borrow).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HOLD_ENV: &str = "BBRTOP_TEST_HOLD";
const LIMIT: u64 = 256 << 20;

/// Run as a child (see `hold`): opens this many loopback connections and keeps them until its
/// stdin closes.
#[test]
#[ignore = "a helper process of root_exporter_holds_in_256_mib_with_slow_readers"]
fn holder() {
    let Some(n) = std::env::var(HOLD_ENV).ok().and_then(|v| v.parse::<usize>().ok()) else { return };
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut keep = Vec::with_capacity(2 * n);
    for _ in 0..n {
        let c = TcpStream::connect(addr).unwrap();
        keep.push(l.accept().unwrap().0);
        keep.push(c);
    }
    println!("ready");
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

/// A child holding `n` connections (2n sockets), killed on drop.
struct Holder(Child);

impl Holder {
    fn start(n: usize) -> Holder {
        let mut c = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "holder", "--ignored", "--nocapture"])
            .env(HOLD_ENV, n.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = c.stdout.take().unwrap();
        let ready = BufReader::new(out).lines().map_while(Result::ok).any(|l| l.contains("ready"));
        assert!(ready, "the holder did not open its connections");
        Holder(c)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A memory cgroup of its own, removed on drop (its processes killed first).
struct Cgroup(PathBuf);

impl Cgroup {
    fn new(limit: u64) -> Cgroup {
        let dir = PathBuf::from(format!("/sys/fs/cgroup/memory/bbrtop-test-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("a memory cgroup (cgroup v1 memory controller)");
        std::fs::write(dir.join("memory.limit_in_bytes"), limit.to_string()).unwrap();
        Cgroup(dir)
    }
    fn adopt(&self, pid: u32) {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).unwrap();
    }
    fn read(&self, file: &str) -> u64 {
        std::fs::read_to_string(self.0.join(file)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn get(port: u16, path: &str) -> Option<(u16, usize)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").ok()?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).ok()?;
    let status = std::str::from_utf8(body.get(9..12)?).ok()?.parse().ok()?;
    Some((status, body.len()))
}

#[test]
fn root_exporter_holds_in_256_mib_with_slow_readers() {
    if !support::guard::root("a memory cgroup") {
        return;
    }
    let _holders: Vec<Holder> = (0..2).map(|_| Holder::start(5_000)).collect();
    let cgroup = Cgroup::new(LIMIT);
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let exporter = support::Proc(
        Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(["export", "--web.enable-api", "--web.listen-address", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bbrtop export"),
    );
    let pid = exporter.0.id();
    cgroup.adopt(pid);
    let start = Instant::now();
    while get(port, "/-/ready").is_none_or(|(s, _)| s != 200) && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, whole) = get(port, "/api/sockets").expect("the socket table");
    assert_eq!(status, 200);
    assert!(whole > 20_000 * 1000, "20,000 sockets make a large table: {whole} bytes");

    // Eight readers ask for the table and read nothing.
    let slow: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            write!(s, "GET /api/sockets HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
            s
        })
        .collect();
    let mut scrapes = 0;
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        assert_eq!(get(port, "/metrics").map(|r| r.0), Some(200), "a scrape failed with slow readers on");
        scrapes += 1;
        std::thread::sleep(Duration::from_millis(500));
    }
    let (rss, peak) = (support::rss_kib(pid), cgroup.read("memory.max_usage_in_bytes"));
    eprintln!(
        "memory: {whole} bytes of table; with 8 slow readers, RSS {rss} KiB, the cgroup's peak {} KiB of {} KiB; {scrapes} scrapes ok",
        peak >> 10,
        LIMIT >> 10
    );
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "the exporter died");
    assert_eq!(cgroup.read("memory.failcnt"), 0, "the exporter hit its memory limit");
    drop(slow);
    drop(exporter);
}
