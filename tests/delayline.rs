//! The netem-free delay line and loss filter, on real namespaces. Privileged.

mod support;

use bbrtop::lab::delayline::DelayLine;
use bbrtop_collect::netns::{NetnsSpec, run_in};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use support::guard;
use support::lab::{Netns, ip};

/// Two namespaces, removed on drop (even when the test fails).
struct Pair {
    a: Netns,
    b: Netns,
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let name = |end: &str| format!("bbrtop-dl{tag}-{}-{end}", std::process::id());
        Pair { a: Netns::new(name("a")), b: Netns::new(name("b")) }
    }
}

/// Addresses and routes over the two TUN devices.
fn wire(p: &Pair, tag: &str) {
    ip(&["-n", &p.a.0, "addr", "add", "10.250.0.1", "peer", "10.250.0.2", "dev", &format!("dl{tag}a")]);
    ip(&["-n", &p.b.0, "addr", "add", "10.250.0.2", "peer", "10.250.0.1", "dev", &format!("dl{tag}b")]);
    ip(&["-n", &p.a.0, "link", "set", &format!("dl{tag}a"), "up"]);
    ip(&["-n", &p.b.0, "link", "set", &format!("dl{tag}b"), "up"]);
}

/// Median TCP handshake time from a to b over `n` connections: one round trip each.
fn handshake_ms(p: &Pair, n: usize) -> f64 {
    let lspec = NetnsSpec(p.b.path());
    let listener = run_in(&lspec, || TcpListener::bind("10.250.0.2:0")).expect("enter b").expect("bind");
    let addr = listener.local_addr().unwrap();
    let acceptor = std::thread::spawn(move || {
        for _ in 0..n {
            if listener.accept().is_err() {
                break;
            }
        }
    });
    let cspec = NetnsSpec(p.a.path());
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
fn root_delay_line_adds_the_round_trip_it_is_given() {
    if !guard::lab("delay line test") {
        return;
    }
    let p = Pair::new("d");
    let line = DelayLine::start(&p.a.path(), "dlda", &p.b.path(), "dldb", Duration::from_millis(20))
        .expect("delay line");
    wire(&p, "d");
    let rtt = handshake_ms(&p, 9);
    // 20 ms each way: a 40 ms round trip, plus scheduling.
    assert!((39.0..60.0).contains(&rtt), "handshake {rtt} ms");
    assert_eq!(line.dropped(), 0);
}
