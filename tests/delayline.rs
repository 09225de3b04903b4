//! The netem-free delay line and loss filter, on real namespaces. Privileged.

use bbrtop::lab::delayline::DelayLine;
use bbrtop::netns::{NetnsSpec, run_in};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Two namespaces, removed on drop (even when the test fails).
struct Pair {
    a: String,
    b: String,
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let p = Pair {
            a: format!("bbrtop-dl{tag}-{}-a", std::process::id()),
            b: format!("bbrtop-dl{tag}-{}-b", std::process::id()),
        };
        for n in [&p.a, &p.b] {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        p
    }
    fn path(n: &str) -> PathBuf {
        PathBuf::from("/run/netns").join(n)
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for n in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("ip");
    assert!(o.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn privileged() -> bool {
    let caps = bbrtop::caps::CapSet::effective();
    let missing = caps.missing(&[bbrtop::caps::Cap::NetAdmin, bbrtop::caps::Cap::SysAdmin]);
    if missing.is_empty() {
        return true;
    }
    let msg = format!("delay line test needs {}", bbrtop::caps::names(&missing));
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}");
    }
    eprintln!("SKIP: {msg}");
    false
}

/// Addresses and routes over the two TUN devices.
fn wire(p: &Pair, tag: &str) {
    ip(&["-n", &p.a, "addr", "add", "10.250.0.1", "peer", "10.250.0.2", "dev", &format!("dl{tag}a")]);
    ip(&["-n", &p.b, "addr", "add", "10.250.0.2", "peer", "10.250.0.1", "dev", &format!("dl{tag}b")]);
    ip(&["-n", &p.a, "link", "set", &format!("dl{tag}a"), "up"]);
    ip(&["-n", &p.b, "link", "set", &format!("dl{tag}b"), "up"]);
}

/// Median TCP handshake time from a to b over `n` connections: one round trip each.
fn handshake_ms(p: &Pair, n: usize) -> f64 {
    let lspec = NetnsSpec(Pair::path(&p.b));
    let listener = run_in(&lspec, || TcpListener::bind("10.250.0.2:0")).expect("enter b").expect("bind");
    let addr = listener.local_addr().unwrap();
    let acceptor = std::thread::spawn(move || {
        for _ in 0..n {
            if listener.accept().is_err() {
                break;
            }
        }
    });
    let cspec = NetnsSpec(Pair::path(&p.a));
    let mut times: Vec<f64> = run_in(&cspec, move || {
        (0..n)
            .map(|_| {
                let t = Instant::now();
                let s =
                    TcpStream::connect_timeout(&addr, Duration::from_secs(2)).expect("connect over the line");
                let ms = t.elapsed().as_secs_f64() * 1e3;
                drop(s);
                ms
            })
            .collect()
    })
    .expect("enter a");
    acceptor.join().unwrap();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

#[test]
fn delay_line_adds_the_round_trip_it_is_given() {
    if !privileged() {
        return;
    }
    let p = Pair::new("d");
    let line =
        DelayLine::start(&Pair::path(&p.a), "dlda", &Pair::path(&p.b), "dldb", Duration::from_millis(20))
            .expect("delay line");
    wire(&p, "d");
    let rtt = handshake_ms(&p, 9);
    // 20 ms each way: a 40 ms round trip, plus scheduling.
    assert!((39.0..60.0).contains(&rtt), "handshake {rtt} ms");
    assert_eq!(line.dropped(), 0);
}
