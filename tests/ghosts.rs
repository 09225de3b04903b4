//! No ghosts: sockets of a lab whose namespaces are deleted under them, established ones with
//! data in flight through a deep queue and one already closing (FIN-WAIT), leave the view of
//! the socket walk, which sees every namespace, within the engine's bound for a closing socket
//! that no longer moves (30 s) and a few polls. Privileged.

mod support;

use bbrtop::lab::{Lab, LabConfig};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::guard;
use support::watch::Watch;

/// `(local, state)` of each socket of namespace `netns` in `line`, if it is one.
fn of_netns(line: &Value, netns: u64) -> Option<(String, String)> {
    (line["netns"].as_u64() == Some(netns)).then(|| {
        (line["local"].as_str().unwrap_or("").to_string(), line["state"].as_str().unwrap_or("").to_string())
    })
}

#[test]
fn root_sockets_of_a_deleted_namespace_leave_the_view() {
    if !guard::lab("the ghost test") {
        return;
    }
    // Polls every 250 ms: the closing socket's FIN-WAIT lasts about as long as the deep queue
    // takes to drain, near a second, which polls a second apart can miss (one CI run did).
    let watch = Watch::start(&["--collector.walk", "--interval", "250ms"]);
    let mut lab = Lab::new(LabConfig::default()).expect("a lab");
    let netns = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(lab.sender_netns()).expect("netns"));
    let (a, b) = (lab.start_flow("cubic").expect("a flow"), lab.start_flow("cubic").expect("a flow"));
    // Both established, with the deep queue filling.
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    watch.until(Instant::now() + Duration::from_secs(8), |l| {
        seen.extend(of_netns(l, netns));
        false
    });
    for f in [&a, &b] {
        assert!(seen.contains(&(f.local.to_string(), "ESTAB".into())), "{f:?} not seen: {seen:?}");
    }
    // One closes while its data still queues: FIN-WAIT, then its namespace goes with the other.
    lab.stop_flow(&a);
    watch.until(Instant::now() + Duration::from_secs(3), |l| {
        seen.extend(of_netns(l, netns));
        false
    });
    assert!(seen.iter().any(|(l, s)| *l == a.local.to_string() && s.starts_with("FIN-WAIT")), "{seen:?}");
    drop(lab);
    let gone = Instant::now();
    let mut last: Option<Instant> = None;
    watch.until(gone + Duration::from_secs(45), |l| {
        if of_netns(l, netns).is_some() {
            last = Some(Instant::now());
        }
        false
    });
    // A poll's lines come 250 ms apart: quiet for the last four seconds means none is listed.
    let left = last.map_or(Duration::ZERO, |t| t.duration_since(gone));
    assert!(left <= Duration::from_secs(40), "sockets of the deleted namespace still listed {left:?} after");
    assert!(last.is_none_or(|t| t.elapsed() >= Duration::from_secs(4)), "still listed at the end");
}

/// Idle keep-alive connections that predate bbrtop, aborted all at once (RST: no ACK moves
/// them, so the walk never sees them again): their closes are the only word of their end, and
/// a ring buffer too small for them (4 KiB, some 20 closes) loses most. The loss makes netlink
/// reconcile at the next poll, so none stays listed more than a few polls; before, they stayed
/// until the scheduled reconcile, 60 polls (15 s here) later.
#[test]
fn root_a_mass_close_that_loses_events_leaves_no_phantom() {
    if !guard::root("the mass-close test") {
        return;
    }
    const N: usize = 600;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let mut conns = Vec::with_capacity(2 * N);
    for _ in 0..N {
        conns.push(std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"));
        conns.push(listener.accept().expect("accept").0);
    }
    let ring = ["--bpf.ring-buffer-size", "4KiB"];
    let watch = Watch::start(&[&["--collector.walk", "--interval", "250ms"][..], &ring].concat());
    let ours = |l: &Value| {
        let port_of = |k: &str| l[k].as_str().and_then(|a| a.rsplit(':').next()).and_then(|p| p.parse().ok());
        l["state"] == "ESTAB" && (port_of("local") == Some(port) || port_of("peer") == Some(port))
    };
    let mut seen = BTreeSet::new();
    watch.until(Instant::now() + Duration::from_secs(20), |l| {
        if ours(l) {
            seen.insert(l["cookie"].as_u64());
        }
        seen.len() == 2 * N
    });
    assert_eq!(seen.len(), 2 * N, "the connections, seeded by netlink");
    // RST on close: SO_LINGER on, zero seconds.
    for c in &conns {
        socket2::SockRef::from(c).set_linger(Some(Duration::ZERO)).expect("SO_LINGER");
    }
    let closed = Instant::now();
    drop(conns);
    let mut last = None;
    watch.until(closed + Duration::from_secs(5), |l| {
        if ours(l) {
            last = Some(closed.elapsed());
        }
        false
    });
    // Lost closes show as the loss they are, and the reconcile ends the rest: within 6 polls.
    assert!(last.is_none_or(|t| t <= Duration::from_millis(1500)), "listed {last:?} after the close");
}
