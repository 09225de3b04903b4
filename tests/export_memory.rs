//! The exporter inside a 256 MiB memory cgroup, on a host with 20,000 sockets, while slow readers
//! ask for the socket table and never read it: it stays up, scrapes go on, and its memory holds.
//! Privileged: a memory cgroup (v1 here; systemd is not PID 1, so no scope to borrow).

mod support;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::cgroup::Cgroup;
use support::holder::Holder;

const LIMIT: u64 = 256 << 20;

/// Run as a child by `Holder::start`: opens loopback connections and keeps them.
#[test]
#[ignore = "a helper process of root_exporter_holds_in_256_mib_with_slow_readers"]
fn holder() {
    support::holder::hold_if_asked();
}

fn get(port: u16, path: &str) -> Option<(u16, usize)> {
    support::http::get(port, path, None).ok().map(|(status, body)| (status, body.len()))
}

#[test]
fn root_exporter_holds_in_256_mib_with_slow_readers() {
    if !support::guard::root("a memory cgroup") {
        return;
    }
    let _holders: Vec<Holder> = (0..2).map(|_| Holder::start(5_000)).collect();
    let cgroup = Cgroup::new("test", LIMIT);
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (_hindsight, hindsight_flag) = support::hindsight_dir();
    let exporter = support::Proc(
        Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(["export", "--web.enable-api", "--web.listen-address", &format!("127.0.0.1:{port}")])
            .arg(&hindsight_flag)
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
