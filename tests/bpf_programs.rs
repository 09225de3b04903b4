//! Privileged eBPF tests: real programs on the real kernel, with loopback and lab flows.
#![cfg(feature = "bpf")]

mod support;

use bbrtop::lab::{Lab, LabConfig};
use bbrtop_collect::InetDiag;
use bbrtop_collect::bpf::event::{Close, Event};
use bbrtop_collect::bpf::loader::{self, LoadConfig, Loaded};
use bbrtop_collect::caps::{Cap, CapSet};
use bbrtop_core::model::{Count, StateSet};
use bbrtop_core::seam;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};
use support::events::{closes, collect_until, netns_inode};
use support::guard;

// The object the verifier rejects (tests/bpf/reject.bpf.c).
bbrtop_collect::bpf_skeleton!(reject, "reject.skel.rs");

fn load_with(btf: Option<std::path::PathBuf>) -> Loaded {
    let l = loader::load(&LoadConfig { btf, walk: true, ..LoadConfig::from_rule(&Default::default()) })
        .expect("load");
    assert!(l.failed.is_empty(), "attach failures: {:?}", l.failed);
    assert_eq!(l.links.len(), loader::planned_here().unwrap());
    l
}

fn load() -> Loaded {
    let l = load_with(None);
    assert!(l.bbr_state(), "BBR is built into this kernel: {:?}", l.status());
    l
}

#[test]
fn root_loads_attaches_and_reports_loopback_closes() {
    if !guard::bpf("loading BPF programs") {
        return;
    }
    let l = load();
    for ip in ["127.0.0.1", "::1"] {
        closes_of_one_connection(&l, ip);
    }
}

/// One connection over `ip`: both ends' close records, with the right addresses and counters.
fn closes_of_one_connection(l: &Loaded, ip: &str) {
    let began = Instant::now();
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).unwrap();
        buf.len()
    });
    let mut c = TcpStream::connect((ip, port)).unwrap();
    c.write_all(&vec![7u8; 256 * 1024]).unwrap();
    drop(c);
    assert_eq!(server.join().unwrap(), 256 * 1024);

    let ev = collect_until(l, Duration::from_secs(10), |ev| {
        closes(ev).filter(|c| c.local.port() == port || c.peer.port() == port).count() >= 2
    });
    let mine: Vec<&Close> = closes(&ev).filter(|c| c.local.port() == port || c.peer.port() == port).collect();
    assert!(mine.len() >= 2, "close records for port {port}: {mine:?}");
    let client = mine.iter().find(|c| c.peer.port() == port).expect("the client's close");
    assert_eq!((client.local.ip().to_string(), client.peer.ip().to_string()), (ip.into(), ip.into()));
    // The counters the per-cc totals take from a close: the client sent it all, once.
    let n = |c: &Close, k: Count| c.counts[k];
    assert!(n(client, Count::BytesAcked) >= 256 * 1024, "{client:?}");
    // (bytes_acked counts the FIN's sequence number too, bytes_sent only data.)
    assert!(n(client, Count::BytesSent) >= 256 * 1024, "{client:?}");
    assert!(n(client, Count::SegsOut) > 0 && n(client, Count::DeliveredSegs) > 0, "{client:?}");
    assert_eq!((n(client, Count::BytesRetrans), n(client, Count::Rto)), (0, 0), "loopback: {client:?}");
    assert!(!client.cc.is_empty() && client.rtt_samples > 0, "{client:?}");
    if client.cc == "bbr" {
        let (mode, min_rtt_us, bw) = client.bbr.expect("a BBR socket's close carries struct bbr");
        assert!(mode <= 3 && min_rtt_us > 0 && bw > 0, "{client:?}");
    } else {
        assert_eq!(client.bbr, None, "{client:?}");
    }
    let server = mine.iter().find(|c| c.local.port() == port).expect("the server's close");
    assert!(n(server, Count::BytesReceived) >= 256 * 1024, "{server:?}");
    assert_eq!(server.peer.port(), client.local.port(), "{server:?}");
    // A pure receiver never has data in flight, so tcp_probe skips it: its lifetime is dated
    // from the connection's establishment. Both lie within the time this function took.
    let bound = began.elapsed().as_nanos() as u64;
    for c in [client, server] {
        assert!(c.lifetime_ns > 0 && c.lifetime_ns < bound, "lifetime within {bound} ns: {c:?}");
    }
    assert_eq!(client.h.netns, server.h.netns);
}

#[test]
fn root_bbr_lab_flow_goes_startup_then_probe_bw_from_the_kernel() {
    if !guard::lab("a BBR lab flow") || !guard::bpf("kernel BBR state") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).expect("lab");
    let ns = netns_inode(lab.sender_netns());
    let l = load();
    let spec = bbrtop_collect::netns::NetnsSpec(lab.sender_netns().to_path_buf());
    let mut diag = InetDiag::open(Some(&spec), StateSet::default_filter()).expect("netlink");
    diag.read_windows(l.window_storage().expect("window storage"));
    let flow = lab.start_flow("bbr").expect("bbr flow");

    // Mode changes are events: STARTUP first, then (through DRAIN) PROBE_BW.
    let modes = |ev: &[Event]| -> Vec<(u64, u8)> {
        ev.iter()
            .filter_map(|e| match e {
                Event::Phase(p) if p.h.netns == ns => Some((p.h.cookie, p.bbr.mode)),
                _ => None,
            })
            .collect()
    };
    let ev = collect_until(&l, Duration::from_secs(30), |ev| modes(ev).iter().any(|m| m.1 == 2));
    let m = modes(&ev);
    assert!(!m.is_empty(), "no phase events from the sender namespace");
    let mine: Vec<u8> = m.iter().filter(|x| x.0 == m[0].0).map(|x| x.1).collect();
    // DRAIN is read at each ACK, as STARTUP is: it can last fewer than the eight between reads
    // past them (at 300 Mbit/s and a 400 kB queue, reads at every 8th missed it in 8 of 10 runs).
    let at = |mode: u8| mine.iter().position(|&x| x == mode);
    assert_eq!(mine[0], 0, "the first kernel phase is STARTUP: {mine:?}");
    assert!(at(1).is_some() && at(1) < at(2), "then DRAIN, then PROBE_BW: {mine:?}");

    // PROBE_BW's steps ride in the RTT window read with each dump: cycle_idx moves.
    let start = Instant::now();
    let mut cycles = std::collections::BTreeSet::new();
    while cycles.len() < 2 && start.elapsed() < Duration::from_secs(30) {
        let d = diag.dump().expect("dump");
        let r = d.sockets.iter().find(|r| r.local == flow.local).expect("the flow's socket");
        if let Some(b) = r.kernel_rtt.and_then(|w| w.bbr).filter(|b| b.mode == 2) {
            cycles.insert(b.cycle_idx);
        }
        std::thread::sleep(Duration::from_millis(37));
    }
    lab.stop_flow(&flow);
    assert!(cycles.len() >= 2, "PROBE_BW with cycle_idx moving, read from the kernel: {cycles:?}");
}

/// A kernel without `struct bbr` in its BTF (BBR a module not loaded at start, or not built):
/// everything else loads and works, BBR sockets get RTT windows without BBR state, no phase
/// events come, and the status says why.
#[test]
fn root_without_struct_bbr_the_rest_loads_and_bbr_state_is_reported_off() {
    if !guard::lab("a BBR lab flow") || !guard::bpf("loading BPF programs") {
        return;
    }
    let btf = support::btf::kernel_without_struct("bbr");
    let l = load_with(Some(btf.path().to_path_buf()));
    assert!(!l.bbr_state());
    let limits: Vec<String> = l.status().limits.iter().map(|r| r.detail.clone()).collect();
    assert_eq!(limits, [loader::BBR_STATE_OFF]);
    let note = bbrtop::cli::startup::bpf_note(&l.status()).expect("a note for stderr");
    assert!(note.starts_with("bbrtop: eBPF BBR state off") && note.lines().count() == 1, "{note}");

    let mut lab = Lab::new(LabConfig::default()).expect("lab");
    let ns = netns_inode(lab.sender_netns());
    let spec = bbrtop_collect::netns::NetnsSpec(lab.sender_netns().to_path_buf());
    let mut diag = InetDiag::open(Some(&spec), StateSet::default_filter()).expect("netlink");
    diag.read_windows(l.window_storage().expect("window storage"));
    let flow = lab.start_flow("bbr").expect("bbr flow");
    let start = Instant::now();
    let mut window = None;
    while window.is_none() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
        let d = diag.dump().expect("dump");
        let r = d.sockets.into_iter().find(|r| r.local == flow.local).expect("the flow's socket");
        assert_eq!(r.cc.as_deref(), Some("bbr"));
        window = r.kernel_rtt.filter(|w| w.samples > 0);
    }
    lab.stop_flow(&flow);
    let w = window.expect("RTT windows without struct bbr");
    assert_eq!(w.bbr, None, "no BBR state without the type: {w:?}");
    let ev = collect_until(&l, Duration::from_millis(300), |_| false);
    let phases = ev.iter().filter(|e| matches!(e, Event::Phase(p) if p.h.netns == ns)).count();
    assert_eq!(phases, 0, "no phase events without struct bbr");
}

#[test]
fn root_two_thousand_short_connections_give_two_thousand_closes_or_counted_losses() {
    if !guard::lab("short lab flows") || !guard::bpf("close records") {
        return;
    }
    const N: usize = 2000;
    let lab = Lab::new(LabConfig::default()).expect("lab");
    let ns = netns_inode(lab.sender_netns());
    let l = load();
    let lost_before = l.lost_total();
    let made = lab.short_flows("cubic", N).expect("short flows");
    assert_eq!(made, N, "the lab completed every connection");
    let sender_closes = |ev: &[Event]| closes(ev).filter(|c| c.h.netns == ns && c.cc == "cubic").count();
    let ev = collect_until(&l, Duration::from_secs(30), |ev| {
        sender_closes(ev) as u64 + l.lost_total() - lost_before >= N as u64
    });
    let (seen, lost) = (sender_closes(&ev) as u64, l.lost_total() - lost_before);
    assert!(seen + lost >= N as u64, "{seen} closes + {lost} lost < {N}");
    assert!(seen <= N as u64 + 1, "no duplicates: {seen}");
    eprintln!("short flows: {made} made, {seen} closes, {lost} lost");
}

fn prog_alive(id: u32) -> bool {
    Command::new("bpftool").args(["prog", "show", "id", &id.to_string()]).output().unwrap().status.success()
}

/// Of `ids`, the programs still loaded after a bounded wait (they are freed after an RCU grace
/// period).
fn still_loaded(ids: &[u32]) -> Vec<u32> {
    let start = Instant::now();
    while ids.iter().any(|&id| prog_alive(id)) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    ids.iter().copied().filter(|&id| prog_alive(id)).collect()
}

/// The programs a process holds through BPF links, from its fdinfo.
fn linked_prog_ids(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return Vec::new() };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .filter(|info| info.contains("link_type:"))
        .filter_map(|info| info.lines().find_map(|l| l.strip_prefix("prog_id:"))?.trim().parse().ok())
        .collect()
}

#[test]
fn root_no_program_of_ours_survives_the_process() {
    if !guard::bpf("bbrtop check") {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_bbrtop")).arg("check").output().expect("run bbrtop check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "bbrtop check failed: {text}");
    // check reads the socket walk too, which the long-running commands use by default (main's
    // said nothing of it).
    assert!(text.lines().any(|l| l.starts_with("walk: ok, ")), "{text}");
    let ids: Vec<u32> = text
        .lines()
        .filter_map(|l| l.split("(prog id ").nth(1)?.trim_end_matches(')').parse().ok())
        .collect();
    assert_eq!(ids.len(), loader::planned_here().unwrap(), "{text}");
    let left = still_loaded(&ids);
    assert!(left.is_empty(), "programs still loaded after exit: {left:?}");
}

#[test]
fn root_sigint_sigterm_and_a_panic_detach_every_program() {
    if !guard::bpf("bbrtop watch with eBPF") {
        return;
    }
    for sig in ["INT", "TERM"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(["watch", "--ndjson", "--port", "1", "--interval", "100ms"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("run bbrtop watch");
        let start = Instant::now();
        let mut ids = Vec::new();
        while ids.len() < loader::planned_here().unwrap() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
            ids = linked_prog_ids(child.id());
        }
        let killed = Command::new("kill").args(["-s", sig, &child.id().to_string()]).status().unwrap();
        let start = Instant::now();
        let status = loop {
            match child.try_wait().unwrap() {
                Some(s) => break Some(s),
                None if start.elapsed() > Duration::from_secs(10) => break None,
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert_eq!(
            ids.len(),
            loader::planned_here().unwrap(),
            "SIG{sig}: links held before the signal: {ids:?}"
        );
        assert!(killed.success() && status.is_some(), "SIG{sig}: bbrtop watch did not exit within 10 s");
        let left = still_loaded(&ids);
        assert!(left.is_empty(), "SIG{sig}: programs still loaded after exit: {left:?}");
    }
    // A panic unwinds through the links' drops.
    let l = load();
    let ids: Vec<u32> = l.prog_ids.iter().map(|(_, id)| *id).collect();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _held = l;
        panic!("a collector failing half way");
    }));
    assert!(r.is_err());
    let left = still_loaded(&ids);
    assert!(left.is_empty(), "programs still loaded after a panic: {left:?}");
}

/// Once attached, `watch` drops what it no longer needs: CAP_PERFMON always; CAP_BPF too with the
/// socket walk, but not with netlink, since the kernel checks it whenever inet_diag hands over
/// the RTT windows.
#[test]
fn root_watch_drops_the_capabilities_it_no_longer_needs() {
    if !guard::bpf("bbrtop watch with eBPF") {
        return;
    }
    for (collector, keeps_bpf) in [("--no-collector.walk", true), ("--collector.walk", false)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(["watch", "--ndjson", "--port", "1", "--interval", "100ms", collector])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("run bbrtop watch");
        let status = format!("/proc/{}/status", child.id());
        let dropped = |s: &str| {
            CapSet::parse_status(s).is_some_and(|c| c.has(Cap::Bpf) == keeps_bpf && !c.has(Cap::Perfmon))
        };
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < Duration::from_secs(10) {
            last = std::fs::read_to_string(&status).unwrap_or_default();
            if dropped(&last) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(dropped(&last), "{collector}: CAP_BPF kept: {keeps_bpf}, CAP_PERFMON dropped: {last}");
    }
}

/// The RTT window comes with each netlink dump and starts afresh after it: each read holds the
/// ACKs since the previous one, not the flow's life.
#[test]
fn root_rtt_windows_cover_the_time_since_the_last_read() {
    if !guard::lab("a BBR lab flow") || !guard::bpf("RTT windows") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).expect("lab");
    let l = load();
    let flow = lab.start_flow("bbr").expect("bbr flow");
    let ns = bbrtop_collect::netns::NetnsSpec(lab.sender_netns().to_path_buf());
    let mut diag = InetDiag::open(Some(&ns), StateSet::default_filter()).expect("netlink");
    diag.read_windows(l.window_storage().expect("window storage"));
    let mut reads = Vec::new();
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(700));
        let d = diag.dump().expect("dump");
        let r = d.sockets.into_iter().find(|r| r.local == flow.local).expect("the flow's socket");
        reads.push(r);
    }
    lab.stop_flow(&flow);
    for pair in reads.windows(2) {
        let (prev, r) = (&pair[0], &pair[1]);
        let w = r.kernel_rtt.expect("a window with every dump");
        let (min, max) = (w.min_srtt_us.expect("min"), w.max_srtt_us.expect("max"));
        assert!(w.samples > 0, "a busy flow had ACKs since the last read: {w:?}");
        assert!(min <= w.last_srtt_us && w.last_srtt_us <= max, "{w:?}");
        // The window's ACKs are among the segments that came in since the previous read, not
        // since the start. Its epoch began at the bump just before the previous dump, tcp_info's
        // count at that dump's copy of the socket: the ACKs in between (the dump's own
        // microseconds, a run saw one) are the window's and before `since`.
        let segs = |r: &bbrtop_core::model::SocketRecord| u64::from(r.tcp_info.segs_in().expect("segs_in"));
        let (since, total) = (segs(r) - segs(prev), segs(r));
        assert!(
            u64::from(w.samples) <= since + 8 && since < total,
            "since the last read, not since start: {w:?}, {since} of {total} segments in since the last read"
        );
    }
}

/// A BPF object that fails to load: the verifier's own words go to the log file, the user gets
/// one line that names it, and that line is the reason bbrtop reports as it goes on netlink-only.
#[test]
fn root_a_rejected_object_leaves_the_verifier_log_in_a_file_and_one_line_for_the_user() {
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};
    if !guard::bpf("loading a BPF object") {
        return;
    }
    let mut storage = std::mem::MaybeUninit::uninit();
    let open = reject::RejectSkelBuilder::default().open(&mut storage).expect("open the object");
    let err = match loader::logged_load(|| open.load()) {
        Ok(_) => panic!("the verifier accepted a program that dereferences a number"),
        Err(e) => e,
    };
    let loader::LoadError::Load { log, .. } = &err else { panic!("not a load error: {err}") };
    let reason = format!("eBPF off: {err}");
    assert_eq!(reason.lines().count(), 1, "{reason}");
    assert!(reason.contains(&log.display().to_string()), "the line names the log: {reason}");
    let text = std::fs::read_to_string(log).expect("the verifier log file");
    assert!(text.contains("invalid mem access"), "the verifier's message is in the log: {text}");
    let _ = std::fs::remove_file(log);
}

/// The per-program fallbacks, driven on this kernel: with its tcp_sendmsg_locked tracepoint
/// planned as absent (as on 6.1 and 6.12), responses start at the function's entry instead. This
/// machine's kernel refuses fentry programs (EPERM, no trampolines for us), so that program is
/// left out with the kernel's word and its log file, and every other program loads and attaches:
/// one refusal costs one feature, not the eBPF half.
#[test]
fn root_a_program_the_kernel_refuses_is_left_out_and_the_rest_run() {
    use bbrtop_collect::bpf::plan::Fate;
    use seam::{Cause, Feature};
    if !guard::bpf("loading BPF programs") {
        return;
    }
    let cfg = LoadConfig {
        walk: true,
        hide_tracepoints: vec!["tcp_sendmsg_locked"],
        ..LoadConfig::from_rule(&Default::default())
    };
    let l = loader::load(&cfg).expect("the rest loads");
    let fate = |name: &str| l.fates.iter().find(|(n, _)| *n == name).map(|(_, f)| f.clone()).unwrap();
    assert!(matches!(fate("tcp_sendmsg_locked"), Fate::Lacks(_)), "{:?}", l.fates);
    let attached: Vec<&str> = l.links.iter().map(|(n, _)| *n).collect();
    assert!(l.failed.is_empty(), "{:?}", l.failed);
    for p in ["tcp_probe", "tcp_established", "tcp_rcv_space_adjust", "tcp_destroy_sock"] {
        assert!(attached.contains(&p), "{p} attached: {attached:?}");
    }
    let features = l.status().features;
    let responses = features.iter().find(|f| f.feature == Feature::Responses).unwrap();
    match fate("tcp_sendmsg_fentry") {
        // This kernel refused it: the reason names the program and keeps the log.
        Fate::Rejected(why) => {
            let log = why.rsplit("(log: ").next().unwrap().trim_end_matches(')');
            assert!(std::path::Path::new(log).is_file(), "the refusal's log at {log}: {why}");
            let off = responses.off.as_ref().expect("responses off");
            assert_eq!(off.cause, Cause::Rejected, "{off:?}");
            assert!(off.detail.contains("tcp_sendmsg_fentry refused"), "{off:?}");
            let _ = std::fs::remove_file(log);
        }
        // A kernel with trampolines runs it: responses on, through fentry.
        Fate::Load => {
            assert!(attached.contains(&"tcp_sendmsg_fentry"), "{attached:?}");
            assert_eq!(responses.off, None);
        }
        other => panic!("tcp_sendmsg_fentry: {other:?}"),
    }
    let others_on = features.iter().filter(|f| f.feature != Feature::Responses).all(|f| f.off.is_none());
    assert!(others_on, "{features:?}");
}
/// A receiver whose ACKs are thinned to one in eight (Wi-Fi aggregation, GRO, an ACK-thinning
/// middlebox), of a sender that writes a segment every 2.3 ms (5 Mbit/s) through a 10 Mbit/s
/// bottleneck 10 ms away, so no queue can stand: the receiver acks each segment here, so each ACK
/// left covers eight sent 16 ms apart. Timed from the oldest (srtt's sample) its RTT gains that
/// send span: 27 to 28 ms against the 10 ms baseline, one spell of inflation through the whole
/// run. Timed from the newest, as the baseline is (RACK's), it is the path's. The router's queue,
/// the reference, stays under 2 ms in 9 readings of 10; no spell lasts the alert's hold (5 s).
#[test]
fn root_stretch_acks_without_a_queue_fire_no_alert() {
    if !guard::lab("a lab flow") || !guard::bpf("kernel inflation") {
        return;
    }
    let rate = 10_000_000;
    let cfg = LabConfig {
        rate_bit_per_sec: rate,
        burst_bytes: bbrtop::lab::burst_for(rate),
        delay: Some(Duration::from_millis(5)),
        ack_every: 8,
        ..LabConfig::default()
    };
    let lab = Lab::new(cfg).expect("lab");
    let ns = netns_inode(lab.sender_netns());
    let l = load();
    let sink = lab.sink_addr().expect("the lab's sink");
    let mut out = lab
        .run_in_sender(move || {
            let s = TcpStream::connect(sink).expect("connect to the sink");
            s.set_nodelay(true).unwrap();
            s
        })
        .expect("the sender namespace");
    let began = Instant::now();
    let writer = std::thread::spawn(move || {
        let segment = [7u8; 1448];
        while began.elapsed() < Duration::from_secs(12) && out.write_all(&segment).is_ok() {
            std::thread::sleep(Duration::from_micros(2300));
        }
    });
    let (mut queue, mut ev) = (Vec::new(), Vec::new());
    while began.elapsed() < Duration::from_secs(12) {
        ev.extend(collect_until(&l, Duration::from_millis(250), |_| false));
        queue.push(support::lab::tbf_backlog(&lab));
    }
    writer.join().unwrap();
    let (mut open, mut longest, mut spells, mut last) = (None::<u64>, 0u64, 0, 0);
    for e in &ev {
        match e {
            Event::InflationStarted(i) if i.h.netns == ns => {
                if spells < 8 {
                    eprintln!("onset: sample {} us, baseline {} us", i.srtt_us, i.baseline_us);
                }
                (open, spells) = (Some(i.onset_ns), spells + 1)
            }
            Event::InflationEnded(i) if i.h.netns == ns => {
                longest = longest.max(i.h.ts_ns - open.take().unwrap_or(i.onset_ns));
            }
            _ => {}
        }
        last = last.max(e.header().ts_ns);
    }
    if let Some(o) = open {
        longest = longest.max(last.saturating_sub(o));
    }
    // The first ACKs release bursts (each covers more than the initial cwnd): a queue that
    // passes. One that stood would be in most readings.
    queue.sort_unstable();
    let ms = |bytes: u64| bytes as f64 * 8.0 / rate as f64 * 1e3;
    let (p90, max) = (ms(queue[queue.len() * 9 / 10]), ms(*queue.last().unwrap()));
    eprintln!(
        "{spells} spells of inflation, the longest {:.1} s; the router's queue: p90 {p90:.1} ms, max {max:.1} ms",
        longest as f64 / 1e9
    );
    assert!(p90 < 2.0, "no queue stood (the reference): p90 {p90:.1} ms");
    assert!(longest < 5_000_000_000, "a spell of {:.1} s would fire the alert", longest as f64 / 1e9);
}

/// What a poll of the eBPF collector fed: our connections' close records, and the ring's losses.
#[derive(Default)]
struct Closes {
    port: u16,
    seen: usize,
    lost: u64,
}

impl seam::DumpSink for Closes {
    fn begin(&mut self, _: seam::Now) {}
    fn record(&mut self, _: u32, _: &bbrtop_core::model::SocketRecord) {}
    fn end(&mut self, _: bbrtop_core::wire::Dump) {}
    fn abort(&mut self, _: seam::Aborted) {}
    fn walk_part(&mut self, _: seam::Now, _: Vec<bbrtop_core::model::SocketRecord>, _: Vec<u64>) {}
    fn walked(&mut self, _: Result<seam::Walk, seam::WalkFailed>) {}
}

impl seam::Feed for Closes {
    fn apply(&mut self, update: seam::Update) {
        match update {
            seam::Update::Closed(c) if c.local.port() == self.port || c.peer.port() == self.port => {
                self.seen += 1
            }
            seam::Update::BpfStatus(s) => self.lost = s.ringbuf_lost_total,
            _ => {}
        }
    }
}

/// Between two polls the collector's thread drains the ring: 2,000 closes paced over 2.5 s,
/// 400 kB of records, all reach one poll through a 64 KiB ring, which without the drain would
/// hold about 330 of them. (The ring takes every socket's events on the host; a test beside
/// this one adds a few kB per 50 ms.)
#[test]
fn root_the_ring_is_drained_between_polls() {
    if !guard::bpf("the ring's drain") {
        return;
    }
    const PAIRS: usize = 1000;
    let loading = bbrtop_collect::bpf::load_sized(&Default::default(), None, 64 << 10);
    assert!(loading.status.reason.is_none(), "eBPF: {:?}", loading.status.reason);
    let mut sources = loading.sources;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut feed = Closes { port: listener.local_addr().unwrap().port(), ..Closes::default() };
    let mut conns = Vec::with_capacity(2 * PAIRS);
    for _ in 0..PAIRS {
        conns.push(TcpStream::connect(listener.local_addr().unwrap()).unwrap());
        conns.push(listener.accept().unwrap().0);
    }
    let poll = |feed: &mut Closes, sources: &mut Vec<Box<dyn seam::Source>>| {
        sources.iter_mut().for_each(|s| s.poll(feed))
    };
    poll(&mut feed, &mut sources);
    let lost_before = feed.lost;
    // 40 connections (80 closes, 16 kB) every 100 ms, both ends closed (FIN).
    while !conns.is_empty() {
        drop(conns.drain(..80.min(conns.len())));
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(200));
    poll(&mut feed, &mut sources);
    eprintln!("{} closes of {}; {} lost", feed.seen, 2 * PAIRS, feed.lost - lost_before);
    assert_eq!(feed.seen, 2 * PAIRS, "every close reached the poll");
    assert_eq!(feed.lost, lost_before, "the ring lost nothing");
}
