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
/// until the scheduled reconcile, then 60 polls (15 s here) later, now 600.
#[test]
fn root_a_mass_close_that_loses_events_leaves_no_phantom() {
    if !guard::root("the mass-close test") {
        return;
    }
    let (conns, port) = pairs(N).expect("connections");
    let watch = Watch::start(&[&["--collector.walk", "--interval", "250ms"][..], &SMALL_RING].concat());
    let last = seen_then_closed(&watch, conns, |l| of_port(l, port));
    // Lost closes show as the loss they are, and the reconcile ends the rest: within 6 polls.
    assert!(last.is_none_or(|t| t <= Duration::from_millis(1500)), "listed {last:?} after the close");
}

/// The same in another namespace, which netlink does not reconcile: there a socket is listed
/// only once it moved while bbrtop ran, so the hooks keep its storage, and its change of state
/// (to CLOSE, on the RST) is written to the walk's map, not the ring: the ring's losses do not
/// touch it.
#[test]
fn root_a_mass_close_in_another_namespace_leaves_no_phantom() {
    if !guard::root("the mass-close test") {
        return;
    }
    let watch = Watch::start(&[&["--collector.walk", "--interval", "250ms"][..], &SMALL_RING].concat());
    let ns = support::lab::Netns::new(format!("bbrtop-mc-{}", std::process::id()));
    let netns = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(ns.path()).expect("netns"));
    let spec = bbrtop_collect::netns::NetnsSpec(ns.path());
    let in_ns =
        |n| bbrtop_collect::netns::run_in(&spec, move || pairs(n)).expect("setns").expect("connections");
    // The connections must open after the programs are in: one that moves until it is listed.
    let (mut probe, probe_port) = in_ns(1);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut listed = false;
    while !listed && Instant::now() < deadline {
        use std::io::{Read, Write};
        probe[0].write_all(b"x").expect("write");
        probe[1].read_exact(&mut [0u8]).expect("read");
        watch.until(Instant::now() + Duration::from_millis(300), |l| {
            listed |= l["netns"].as_u64() == Some(netns) && of_port(l, probe_port);
            listed
        });
    }
    assert!(listed, "bbrtop watch never listed the probe connection");
    let (conns, port) = in_ns(N);
    let last = seen_then_closed(&watch, conns, |l| l["netns"].as_u64() == Some(netns) && of_port(l, port));
    assert!(last.is_none_or(|t| t <= Duration::from_millis(1500)), "listed {last:?} after the close");
}

/// Connections per mass-close test, both ends of each listed.
const N: usize = 600;
/// A ring with room for some 20 closes.
const SMALL_RING: [&str; 2] = ["--bpf.ring-buffer-size", "4KiB"];

/// `n` loopback connections, both ends, and their listener's port.
fn pairs(n: usize) -> std::io::Result<(Vec<std::net::TcpStream>, u16)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let mut conns = Vec::with_capacity(2 * n);
    for _ in 0..n {
        conns.push(std::net::TcpStream::connect(("127.0.0.1", port))?);
        conns.push(listener.accept()?.0);
    }
    Ok((conns, port))
}

/// Whether `l` is an established socket of a connection to `port`.
fn of_port(l: &Value, port: u16) -> bool {
    let port_of = |k: &str| l[k].as_str().and_then(|a| a.rsplit(':').next()).and_then(|p| p.parse().ok());
    l["state"] == "ESTAB" && (port_of("local") == Some(port) || port_of("peer") == Some(port))
}

/// Waits until `watch` lists every end of `conns`, aborts them all at once (RST: SO_LINGER on,
/// zero seconds), and says how long after that one was still listed, if any was, over 5 s.
fn seen_then_closed(
    watch: &Watch,
    conns: Vec<std::net::TcpStream>,
    ours: impl Fn(&Value) -> bool,
) -> Option<Duration> {
    let mut seen = BTreeSet::new();
    watch.until(Instant::now() + Duration::from_secs(20), |l| {
        if ours(l) {
            seen.insert(l["cookie"].as_u64());
        }
        seen.len() == conns.len()
    });
    assert_eq!(seen.len(), conns.len(), "the connections listed before the close");
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
    last
}
