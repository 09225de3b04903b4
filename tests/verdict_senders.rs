//! The BBR-vs-CUBIC figures are over the sockets that send: in a lab's sender namespace, its BBR
//! and CUBIC senders, the receiving end of a flow the other way and a loopback flow give per-cc
//! figures equal to the senders' alone, read from one `/api/sockets` document of `bbrtop
//! export` there. Privileged.

mod support;

use bbrtop::lab::{Lab, LabConfig};
use bbrtop_collect::netns::{NetnsSpec, run_in};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::http::{free_port, get};
use support::{Proc, guard, poll_until};

/// A bulk flow until `stop`: a listener in `listen_ns` on `addr` (port 0: any), a sender from
/// `send_ns`; returns the listener's address.
fn flow(listen_ns: &Path, addr: &str, send_ns: &Path, stop: &Arc<AtomicBool>) -> SocketAddr {
    let bind: SocketAddr = addr.parse().unwrap();
    let l =
        run_in(&NetnsSpec(listen_ns.into()), move || TcpListener::bind(bind)).unwrap().expect("a listener");
    let to = l.local_addr().unwrap();
    let c =
        run_in(&NetnsSpec(send_ns.into()), move || TcpStream::connect(to)).unwrap().expect("a connection");
    let (mut r, _) = l.accept().expect("accepted");
    let (s1, s2) = (Arc::clone(stop), Arc::clone(stop));
    std::thread::spawn(move || {
        let _ = r.set_read_timeout(Some(Duration::from_millis(100)));
        let mut buf = vec![0u8; 1 << 16];
        while !s1.load(Ordering::Relaxed) && !matches!(r.read(&mut buf), Ok(0)) {}
    });
    std::thread::spawn(move || {
        let mut c = c;
        let _ = c.set_write_timeout(Some(Duration::from_millis(100)));
        let buf = vec![0u8; 1 << 16];
        while !s2.load(Ordering::Relaxed) {
            let _ = c.write(&buf);
        }
    });
    to
}

fn by_cc<'a>(doc: &'a Value, cc: &str) -> &'a Value {
    doc["by_cc"].as_array().and_then(|a| a.iter().find(|x| x["cc"] == cc)).unwrap_or(&Value::Null)
}

#[test]
fn root_per_cc_figures_are_the_senders_alone() {
    if !guard::lab("the senders-only figures test") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).expect("a lab");
    let (bbr, cubic) = (lab.start_flow("bbr").expect("a flow"), lab.start_flow("cubic").expect("a flow"));
    let stop = Arc::new(AtomicBool::new(false));
    let (s, r) = (lab.sender_netns(), lab.receiver_netns());
    // The receiving end of a flow the other way, and a loopback flow, in the sender's namespace.
    let back = flow(s, &format!("{}:0", lab.sender_addr()), r, &stop);
    let lo = flow(s, "127.0.0.1:0", s, &stop);
    let port = free_port();
    let (_hindsight, hindsight_flag) = support::hindsight_dir();
    let child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["export", "--web.listen-address", &format!("127.0.0.1:{port}"), "--web.enable-api"])
        .arg(&hindsight_flag)
        .arg(format!("--netns={}", s.display()))
        .args(["--interval", "1s", "--no-collector.bpf"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bbrtop export");
    let _exporter = Proc(child);
    // Both senders sent in the last interval, both receivers received, the loopback flow moved.
    let doc = poll_until(Duration::from_secs(30), || {
        let doc: Value = serde_json::from_str(&get(port, "/api/sockets", None).ok()?.1).ok()?;
        let (b, c) = (by_cc(&doc, "bbr"), by_cc(&doc, "cubic"));
        // Past the first polls: each socket judged by what it did over an interval.
        let polls =
            doc["collectors"].as_array()?.iter().find(|c| c["name"] == "netlink")?["polls_total"].as_u64()?;
        let ready =
            polls >= 3 && b["senders"] == 1 && c["senders"] == 1 && doc["sockets"].as_array()?.len() == 5;
        ready.then_some(doc)
    })
    .expect("the two senders, the flow back's receiver and the loopback flow's two ends");
    stop.store(true, Ordering::Relaxed);
    let sockets = doc["sockets"].as_array().unwrap();
    let sender = |local: String| sockets.iter().find(|s| s["local"] == local.as_str()).expect("the sender");
    for (cc, flow) in [("bbr", &bbr), ("cubic", &cubic)] {
        let (agg, s) = (by_cc(&doc, cc), sender(flow.local.to_string()));
        let srtt = &s["tcp_info"]["srtt_us"];
        for p in ["srtt_p50_us", "srtt_p95_us", "srtt_p99_us"] {
            assert_eq!(&agg[p], srtt, "{cc} {p}: the sender's srtt alone, in {agg}");
        }
        assert_eq!(agg["inflation_p50"], s["derived"]["inflation_ratio"], "{cc}");
        let delivery = s["tcp_info"]["delivery_rate_bytes_per_sec"].as_f64();
        assert_eq!(agg["delivery_rate_bytes_per_sec"].as_f64(), delivery, "{cc}: the sender's delivery rate");
    }
    let total = |field: &str| {
        ["bbr", "cubic"].iter().map(|cc| by_cc(&doc, cc)[field].as_u64().unwrap_or(0)).sum::<u64>()
    };
    assert_eq!(total("receivers"), 1, "the flow back's receiver, counted apart: {}", doc["by_cc"]);
    assert_eq!(total("loopback"), 2, "the loopback flow's two ends, counted apart: {}", doc["by_cc"]);
    assert!(sockets.iter().any(|s| s["local"] == back.to_string().as_str()), "the receiver is listed");
    assert!(sockets.iter().any(|s| s["local"] == lo.to_string().as_str()), "the loopback flow is listed");
    drop(lab);
}
