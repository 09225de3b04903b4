//! The socket walk (`--collector.walk`) against the kernel: its records agree field by field with
//! netlink's and with `ss -tin` on real BBR and CUBIC flows, and, run as the DaemonSet runs it
//! (uid 65534, CAP_BPF and CAP_PERFMON only, no --netns), it sees flows in namespaces and cgroups
//! of their own, each with its namespace and cgroup. Privileged.

mod support;

use bbrtop::lab::ss::SsSocket;
use bbrtop::lab::{Flow, Lab, LabConfig};
use bbrtop_collect::InetDiag;
use bbrtop_collect::bpf::loader::{self, LoadConfig};
use bbrtop_collect::netns::NetnsSpec;
use bbrtop_core::model::{SocketRecord, StateSet};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::guard;
use support::lab::{Netns, ss_established};

fn find<'a>(recs: &'a [SocketRecord], f: &Flow) -> &'a SocketRecord {
    recs.iter().find(|r| r.local == f.local && r.peer == f.peer).expect("flow among the records")
}

fn of<'a>(socks: &'a [SsSocket], f: &Flow) -> &'a SsSocket {
    socks.iter().find(|s| s.local == Some(f.local) && s.peer == Some(f.peer)).expect("flow in ss")
}

/// Whether `ours` lies between the two ss readings, widened by `abs` and `rel` of the larger one.
fn between(ours: f64, a: Option<f64>, b: Option<f64>, abs: f64, rel: f64) -> Result<(), String> {
    let (a, b) = (a.ok_or("ss printed none")?, b.ok_or("ss printed none")?);
    let (lo, hi) = (a.min(b), a.max(b));
    let slack = abs + rel * hi.abs();
    let inside = ours >= lo - slack && ours <= hi + slack;
    if inside { Ok(()) } else { Err(format!("walk {ours} outside ss [{lo}, {hi}] ± {slack}")) }
}

/// How a tcp_info field of the walk may differ from netlink's, read just after it.
enum Tol {
    Exact,
    /// A counter: netlink's is at least the walk's (less the first slack), and at most the
    /// second slack more. The chronos (busy, rwnd- and sndbuf-limited time) count in jiffies in
    /// the kernel and are brought up to the read in microseconds by the walk: a jiffy or two of
    /// slack (4 ms each at HZ 250).
    Grows(f64, f64),
    /// Within this fraction of netlink's, plus an absolute slack.
    Near(f64, f64),
    /// A time since an event, which may read older than netlink's by up to this much: the record
    /// is taken as an ACK arrives, before the data that ACK lets out is sent, and this lab's
    /// deep queue spaces ACK bursts by up to a round trip (about 450 ms).
    Older(f64),
}

/// Every tcp_info field bbrtop shows, compared: the walk computes them as tcp_get_info does.
const FIELDS: &[(&str, Tol)] = &[
    ("state", Tol::Exact),
    ("snd_mss_bytes", Tol::Exact),
    ("reordering", Tol::Exact),
    ("snd_ssthresh_segs", Tol::Near(0.2, 2.0)),
    ("srtt_us", Tol::Near(0.05, 200.0)),
    ("rttvar_us", Tol::Near(0.5, 2000.0)),
    ("rto_us", Tol::Near(0.2, 4000.0)),
    ("min_rtt_us", Tol::Exact),
    ("snd_cwnd_segs", Tol::Near(0.1, 2.0)),
    ("unacked_segs", Tol::Near(0.2, 4.0)),
    ("pacing_rate_bytes_per_sec", Tol::Near(0.1, 1000.0)),
    ("delivery_rate_bytes_per_sec", Tol::Near(0.25, 1000.0)),
    ("bytes_acked", Tol::Grows(0.0, 512.0 * 1024.0)),
    ("bytes_sent", Tol::Grows(0.0, 512.0 * 1024.0)),
    ("bytes_received", Tol::Exact),
    ("segs_out", Tol::Grows(0.0, 400.0)),
    ("segs_in", Tol::Grows(0.0, 400.0)),
    ("delivered_segs", Tol::Grows(0.0, 400.0)),
    ("total_retrans_segs", Tol::Grows(0.0, 20.0)),
    ("busy_time_us", Tol::Grows(10_000.0, 300_000.0)),
    ("rwnd_limited_us", Tol::Grows(10_000.0, 300_000.0)),
    ("sndbuf_limited_us", Tol::Grows(10_000.0, 300_000.0)),
    ("last_data_sent_ms", Tol::Older(500.0)),
    ("last_ack_recv_ms", Tol::Near(0.0, 50.0)),
    ("snd_wnd_bytes", Tol::Near(0.5, 65536.0)),
    ("rcv_wnd_bytes", Tol::Near(0.5, 65536.0)),
];

/// The fields of `w` that do not agree with `n` (identity fields must, always).
fn disagreements(cc: &str, w: &SocketRecord, n: &SocketRecord) -> Vec<(&'static str, String)> {
    assert_eq!(
        (w.cookie, w.state, w.cc_name(), w.uid, w.inode),
        (n.cookie, n.state, n.cc_name(), n.uid, n.inode)
    );
    assert_eq!(w.netns, n.netns, "{cc}: the namespace's inode");
    assert!(w.cgroup_id.is_some(), "{cc}: the walk names the cgroup");
    let (wj, nj) = (serde_json::to_value(w.tcp_info).unwrap(), serde_json::to_value(n.tcp_info).unwrap());
    let mut off = Vec::new();
    for (field, tol) in FIELDS {
        let (a, b) = (wj[field].as_f64(), nj[field].as_f64());
        let (a, b) = (a.unwrap_or_else(|| panic!("{cc}: walk lacks {field}")), b.expect(field));
        let ok = match tol {
            Tol::Exact => a == b,
            Tol::Grows(below, above) => a <= b + below && b - a <= *above,
            Tol::Near(rel, abs) => (a - b).abs() <= rel * b.abs() + abs,
            Tol::Older(max) => a + 50.0 >= b && a - b <= *max,
        };
        if !ok {
            off.push((*field, format!("walk {a}, netlink {b}")));
        }
    }
    off
}

/// With the refresh at zero each ACK refills the record, so the walk's values are those of the
/// socket just before its latest ACK (tcp_probe fires before the ACK is processed): what is
/// compared is the computation, not the staleness bound (250 ms by default, in docs/fleet.md). A
/// flow through a deep queue gets its ACKs in bursts, and a burst may land between the walk and
/// the reads it is compared with; so each field must agree in most reads, not all. A wrong
/// offset or unit disagrees in every read.
#[test]
fn root_walk_agrees_with_netlink_and_ss_field_by_field() {
    if !guard::lab("the walk agreement test") || !guard::bpf("the socket walk") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).unwrap();
    let bbr = lab.start_flow("bbr").unwrap();
    let cubic = lab.start_flow("cubic").unwrap();
    let states = StateSet::default_filter();
    let cfg =
        LoadConfig { walk: true, walk_refresh: Duration::ZERO, ..LoadConfig::from_rule(&Default::default()) };
    let loaded = loader::load(&cfg).expect("load");
    let mut walker = loaded.walker(states, bbrtop_collect::attrib::Resolver::new(None)).expect("the walk");
    let mut diag = InetDiag::open(Some(&NetnsSpec(lab.sender_netns().to_path_buf())), states).unwrap();
    let ns_inode = std::fs::metadata(lab.sender_netns()).unwrap().ino();
    std::thread::sleep(Duration::from_secs(6));
    const READS: usize = 7;
    let mut misses: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for read in 0..READS {
        // A round trip through the lab's queue is up to half a second, and ACKs come in bursts:
        // a second holds some for each flow.
        walker.walk().unwrap();
        std::thread::sleep(Duration::from_secs(1));
        let before = ss_established(&lab);
        let bbrtop_collect::bpf::walk::Read { sockets: walked, stats, .. } = walker.walk().unwrap();
        let listed = diag.dump().unwrap().sockets;
        let after = ss_established(&lab);
        assert!(stats.hz > 0 && stats.skipped == 0, "read {read}: {stats:?}");
        for (f, cc) in [(&bbr, "bbr"), (&cubic, "cubic")] {
            let (w, n) = (find(&walked, f), find(&listed, f));
            assert_eq!(w.netns, Some(ns_inode), "{cc}: the sender namespace");
            let mut off = disagreements(cc, w, n);
            off.retain(|(field, _)| !(*field == "pacing_rate_bytes_per_sec" && paced_one_ack_before(w, n)));
            off.extend(against_ss(w, of(&before, f), of(&after, f)));
            for (field, why) in off {
                misses.entry((cc, field)).or_default().push(format!("read {read}: {why}"));
            }
        }
        let (w, n) =
            (find(&walked, &bbr).bbr.expect("walk bbr"), find(&listed, &bbr).bbr.expect("netlink bbr"));
        // BBR's own min RTT is re-measured (PROBE_RTT, or its 10 s window expiring) between reads
        // now and then; both are compared as the tcp_info fields are.
        if w.min_rtt_us != n.min_rtt_us {
            let why = format!("read {read}: walk {}, netlink {}", w.min_rtt_us, n.min_rtt_us);
            misses.entry(("bbr", "bbr min_rtt")).or_default().push(why);
        }
        let (wb, nb) = (w.bw_bytes_per_sec as f64, n.bw_bytes_per_sec as f64);
        if (wb - nb).abs() > 0.05 * nb + 1000.0 {
            misses
                .entry(("bbr", "bbr bw"))
                .or_default()
                .push(format!("read {read}: walk {wb}, netlink {nb}"));
        }
        assert_eq!(find(&walked, &cubic).bbr, None, "no BBR info for CUBIC");
    }
    let persistent: Vec<_> = misses.iter().filter(|(_, v)| v.len() > READS / 2).collect();
    assert!(persistent.is_empty(), "fields that disagree in most reads: {persistent:#?}");
}

/// Whether BBR's pacing rate in the walk is the one its own record implies, while netlink's
/// reflects a later model. The record is taken as an ACK arrives, before BBR processes it, and
/// that ACK may move the gain cycle (1.25 to 0.75, say) or the bandwidth estimate: the walk is then
/// one ACK behind, which a deep queue's bursty ACKs can leave in place for a whole second. The
/// kernel paces at gain x bw less a 1% margin (tcp_bbr.c), so a wrong offset or unit cannot pass.
fn paced_one_ack_before(w: &SocketRecord, n: &SocketRecord) -> bool {
    let (Some(wb), Some(nb)) = (w.bbr, n.bbr) else { return false };
    let moved = wb.pacing_gain != nb.pacing_gain || wb.bw_bytes_per_sec != nb.bw_bytes_per_sec;
    let implied = wb.pacing_gain * wb.bw_bytes_per_sec as f64 * 0.99;
    let paced = w.tcp_info.pacing_rate_bytes_per_sec().unwrap_or(0) as f64;
    moved && (paced - implied).abs() <= 0.01 * implied + 100.0
}

/// The fields `ss -tin` prints, against its readings just before and after the walk.
fn against_ss(w: &SocketRecord, b: &SsSocket, a: &SsSocket) -> Vec<(&'static str, String)> {
    let i = &w.tcp_info;
    let ms = |us: Option<u32>| f64::from(us.unwrap()) / 1000.0;
    let checks = [
        ("ss rtt", between(ms(i.srtt_us()), b.rtt_ms, a.rtt_ms, 0.5, 0.05)),
        ("ss minrtt", between(ms(i.min_rtt_us()), b.minrtt_ms, a.minrtt_ms, 0.001, 0.0)),
        (
            "ss cwnd",
            between(
                f64::from(i.snd_cwnd_segs().unwrap()),
                b.cwnd.map(f64::from),
                a.cwnd.map(f64::from),
                2.0,
                0.1,
            ),
        ),
        (
            "ss bytes_acked",
            between(
                i.bytes_acked().unwrap() as f64,
                b.bytes_acked.map(|v| v as f64),
                a.bytes_acked.map(|v| v as f64),
                131072.0,
                0.0,
            ),
        ),
    ];
    checks.into_iter().filter_map(|(what, r)| r.err().map(|e| (what, e))).collect()
}

/// A flow in a namespace and cgroup of its own, run by this test binary as a child process
/// (see `flow_child`), ended by PID when dropped.
struct PodFlow {
    child: Child,
    local: String,
    peer: String,
}

impl PodFlow {
    fn start(ns: &Netns, cgroup: &std::path::Path, cc: &str) -> PodFlow {
        // The shell joins the cgroup before exec, so every socket the flow makes belongs to it.
        let script = format!(
            "echo $$ > {}/cgroup.procs && exec ip netns exec {} {} --exact flow_child --ignored --nocapture",
            cgroup.display(),
            ns.0,
            std::env::current_exe().unwrap().display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .env("BBRTOP_TEST_FLOW_CC", cc)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready =
            lines.find_map(|l| l.ok()?.strip_prefix("ready ").map(str::to_string)).expect("flow ready");
        let (local, peer) = ready.split_once(' ').unwrap();
        PodFlow { local: local.into(), peer: peer.into(), child }
    }
}

impl Drop for PodFlow {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A cgroup (v2) of the test's own, removed on drop.
struct Cgroup(std::path::PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn root_as_the_daemonset_it_sees_flows_in_every_namespace_with_their_cgroup() {
    if !guard::root("the DaemonSet-like walk test") || !guard::bpf("the socket walk") {
        return;
    }
    let tag = std::process::id();
    let mut pods = Vec::new();
    for (i, cc) in ["bbr", "cubic"].into_iter().enumerate() {
        let ns = Netns::new(format!("bbrtop-walk-{tag}-{i}"));
        let cg = Cgroup(
            bbrtop_collect::attrib::cgroup2_root()
                .expect("a cgroup2 hierarchy")
                .join(format!("bbrtop-walk-{tag}-{i}")),
        );
        std::fs::create_dir(&cg.0).unwrap();
        let flow = PodFlow::start(&ns, &cg.0, cc);
        let (ns_ino, cg_ino) =
            (std::fs::metadata(ns.path()).unwrap().ino(), std::fs::metadata(&cg.0).unwrap().ino());
        pods.push((flow, ns_ino, cg_ino, ns, cg));
    }
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["--inh-caps=-all,+bpf,+perfmon", "--ambient-caps=-all,+bpf,+perfmon"])
        .arg(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["watch", "--collector.walk", "--count", "4", "--interval", "500ms"])
        .output()
        .expect("setpriv (util-linux)");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let lines: Vec<Value> =
        String::from_utf8_lossy(&o.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    for (flow, ns_ino, cg_ino, ns, cg) in &pods {
        let seen =
            lines.iter().find(|s| s["local"] == flow.local.as_str() && s["peer"] == flow.peer.as_str());
        let s =
            seen.unwrap_or_else(|| panic!("flow {} -> {} not seen; stderr: {err}", flow.local, flow.peer));
        assert_eq!(s["netns"], *ns_ino, "{s}");
        assert_eq!(s["cgroup_id"], *cg_ino, "{s}");
        // ... and their names, as uid 65534 can read them.
        assert_eq!(s["origin"]["netns_name"], ns.0.as_str(), "{s}");
        let cg_name = cg.0.file_name().unwrap().to_str().unwrap();
        assert_eq!(s["origin"]["cgroup"], format!("/{cg_name}").as_str(), "{s}");
        assert!(s["tcp_info"]["bytes_acked"].as_u64() > Some(0), "{s}");
    }
    drop(pods);
}

/// Not a test of its own: the flow process of the DaemonSet-like test. In the namespace it was
/// started in, it connects over loopback with the congestion control in BBRTOP_TEST_FLOW_CC,
/// says "ready LOCAL PEER", and sends until its stdin closes or 60 s pass.
#[test]
#[ignore = "a child process of root_as_the_daemonset_it_sees_flows_in_every_namespace_with_their_cgroup"]
fn flow_child() {
    use std::net::{TcpListener, TcpStream};
    let Ok(cc) = std::env::var("BBRTOP_TEST_FLOW_CC") else { return };
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let sink = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = std::io::copy(&mut s, &mut std::io::sink());
    });
    let mut c = TcpStream::connect(addr).unwrap();
    socket2::SockRef::from(&c).set_tcp_congestion(cc.as_bytes()).unwrap();
    println!("ready {} {}", c.local_addr().unwrap(), addr);
    std::io::stdout().flush().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watch = std::sync::Arc::clone(&stop);
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_line(&mut String::new());
        watch.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let (start, buf) = (Instant::now(), vec![7u8; 64 * 1024]);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60) {
        c.write_all(&buf).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(c);
    let _ = sink.join();
}

/// No loss of coverage: with the walk, every socket netlink reports in bbrtop's namespace is in
/// its view, the idle ones that predate it (which only netlink's seed can show) as well as those
/// that move.
#[test]
fn root_the_walk_loses_no_socket_netlink_sees() {
    if !guard::bpf("the socket walk") {
        return;
    }
    use std::net::{TcpListener, TcpStream};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let idle: Vec<(TcpStream, TcpStream)> = (0..20)
        .map(|_| (TcpStream::connect(l.local_addr().unwrap()).unwrap(), l.accept().unwrap().0))
        .collect();
    let child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["watch", "--collector.walk", "--count", "3", "--interval", "300ms"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // One connection that moves while bbrtop runs (a byte each way).
    let (mut c, mut s) = (TcpStream::connect(l.local_addr().unwrap()).unwrap(), l.accept().unwrap().0);
    for _ in 0..10 {
        c.write_all(b"x").unwrap();
        std::io::Read::read_exact(&mut s, &mut [0u8; 1]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let seen: std::collections::HashSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| Some(format!("{} {}", v["local"].as_str()?, v["peer"].as_str()?)))
        .collect();
    let netlink = InetDiag::open(None, StateSet::default_filter()).unwrap().dump().unwrap();
    let ours = |a: &std::net::SocketAddr| a.port() == l.local_addr().unwrap().port();
    let wanted: Vec<String> = netlink
        .sockets
        .iter()
        .filter(|r| ours(&r.local) || ours(&r.peer))
        .map(|r| format!("{} {}", r.local, r.peer))
        .collect();
    assert_eq!(wanted.len(), 42, "netlink sees the 21 connections' 42 sockets");
    let missing: Vec<&String> = wanted.iter().filter(|w| !seen.contains(*w)).collect();
    assert!(missing.is_empty(), "netlink's sockets the walk's view lacks: {missing:?}");
    drop(idle);
}

/// What a poll of the walk hands over, part by part.
#[derive(Default)]
struct Parts {
    parts: Vec<Vec<bbrtop_core::model::Cookie>>,
    walked: Option<Result<bbrtop_core::wire::walk::WalkStats, String>>,
}

impl bbrtop_core::seam::DumpSink for Parts {
    fn begin(&mut self, _: bbrtop_core::seam::Now) {}
    fn record(&mut self, _: u32, _: &SocketRecord) {}
    fn end(&mut self, _: bbrtop_core::wire::Dump) {}
    fn abort(&mut self, _: bbrtop_core::seam::Aborted) {}
    fn walk_part(&mut self, _: bbrtop_core::seam::Now, s: Vec<SocketRecord>, gone: Vec<u64>) {
        self.parts.push(s.iter().map(|r| r.cookie).chain(gone).collect());
    }
    fn walked(&mut self, w: Result<bbrtop_core::seam::Walk, bbrtop_core::seam::WalkFailed>) {
        self.walked = Some(w.map(|w| w.stats).map_err(|f| f.error));
    }
}

impl bbrtop_core::seam::Feed for Parts {
    fn apply(&mut self, _: bbrtop_core::seam::Update) {}
}

/// A poll that reads more than one batch hands the engine its sockets in parts while it reads
/// the rest: with 3,000 loopback sockets moving, every one of them comes in exactly one part,
/// as netlink lists them, and the read's counts add up.
#[test]
fn root_a_large_read_comes_in_parts_with_every_socket_once() {
    if !guard::bpf("the socket walk") {
        return;
    }
    use bbrtop_core::seam::Source;
    use std::net::{TcpListener, TcpStream};
    let cfg = LoadConfig { walk: true, ..LoadConfig::from_rule(&Default::default()) };
    let loaded = loader::load(&cfg).expect("load");
    let mut walker = loaded
        .walker(StateSet::default_filter(), bbrtop_collect::attrib::Resolver::new(None))
        .expect("the walk");
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut pairs: Vec<(TcpStream, TcpStream)> = (0..1_500)
        .map(|_| (TcpStream::connect(l.local_addr().unwrap()).unwrap(), l.accept().unwrap().0))
        .collect();
    walker.walk().unwrap();
    for (c, s) in &mut pairs {
        c.write_all(b"x").unwrap();
        std::io::Read::read_exact(s, &mut [0u8; 1]).unwrap();
        s.write_all(b"y").unwrap();
        std::io::Read::read_exact(c, &mut [0u8; 1]).unwrap();
    }
    // The delayed ACKs of the last bytes (up to 40 ms).
    std::thread::sleep(Duration::from_millis(100));
    let mut tape = Parts::default();
    walker.poll(&mut tape);
    let stats = tape.walked.expect("the read ended").expect("the read");
    let handed: Vec<u64> = tape.parts.iter().flatten().copied().collect();
    let unique: std::collections::HashSet<u64> = handed.iter().copied().collect();
    assert!(tape.parts.len() >= 3, "3,000 records come in parts of at most 1,024: {}", tape.parts.len());
    assert_eq!(unique.len(), handed.len(), "no socket comes twice");
    assert_eq!(stats.records as usize, handed.len() + stats.skipped as usize, "{stats:?}");
    let port = l.local_addr().unwrap().port();
    let netlink = InetDiag::open(None, StateSet::default_filter()).unwrap().dump().unwrap();
    let ours: Vec<u64> = netlink
        .sockets
        .iter()
        .filter(|r| r.local.port() == port || r.peer.port() == port)
        .map(|r| r.cookie)
        .collect();
    assert_eq!(ours.len(), 3_000, "netlink lists the 1,500 connections' sockets");
    let missing = ours.iter().filter(|c| !unique.contains(c)).count();
    assert_eq!(missing, 0, "of 3,000 sockets that moved, {missing} were not handed over");
}

/// Two sockets' records are never mixed: a program that interrupts another's fill on one CPU (a
/// softirq's tcp_probe over a process's tcp_rcv_space_adjust) fills a record of its own. With the
/// refresh at zero every move refills, on 48 loopback connections exchanging 16 kB both ways from
/// three threads; each record of theirs must carry the addresses netlink gives its cookie.
#[test]
fn root_records_of_two_sockets_are_never_mixed() {
    if !guard::bpf("the socket walk") {
        return;
    }
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    let cfg =
        LoadConfig { walk: true, walk_refresh: Duration::ZERO, ..LoadConfig::from_rule(&Default::default()) };
    let loaded = loader::load(&cfg).expect("load");
    let mut walker = loaded
        .walker(StateSet::default_filter(), bbrtop_collect::attrib::Resolver::new(None))
        .expect("the walk");
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let pairs: Vec<(TcpStream, TcpStream)> = (0..48)
        .map(|_| (TcpStream::connect(l.local_addr().unwrap()).unwrap(), l.accept().unwrap().0))
        .collect();
    let netlink = InetDiag::open(None, StateSet::default_filter()).unwrap().dump().unwrap();
    let who: BTreeMap<u64, (std::net::SocketAddr, std::net::SocketAddr)> = netlink
        .sockets
        .iter()
        .filter(|r| r.local.port() == port || r.peer.port() == port)
        .map(|r| (r.cookie, (r.local, r.peer)))
        .collect();
    assert_eq!(who.len(), 96, "netlink lists the 48 connections' sockets");
    let until = Instant::now() + Duration::from_secs(3);
    let mut chunks: Vec<Vec<(TcpStream, TcpStream)>> = vec![Vec::new(), Vec::new(), Vec::new()];
    for (i, p) in pairs.into_iter().enumerate() {
        chunks[i % 3].push(p);
    }
    let workers: Vec<_> = chunks
        .into_iter()
        .map(|mut mine| {
            std::thread::spawn(move || {
                let (out, mut back) = (vec![7u8; 16_384], vec![0u8; 16_384]);
                for _ in 0..100_000 {
                    if Instant::now() > until {
                        break;
                    }
                    for (c, s) in &mut mine {
                        c.write_all(&out).unwrap();
                        s.read_exact(&mut back).unwrap();
                        s.write_all(&out).unwrap();
                        c.read_exact(&mut back).unwrap();
                    }
                }
            })
        })
        .collect();
    let (mut checked, mut mixed) = (0, Vec::new());
    while Instant::now() < until {
        for r in walker.walk().expect("a walk").sockets {
            let Some(&(local, peer)) = who.get(&r.cookie) else { continue };
            checked += 1;
            if (r.local, r.peer) != (local, peer) {
                mixed.push(format!(
                    "cookie {} is {local}->{peer}, its record says {}->{}",
                    r.cookie, r.local, r.peer
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for w in workers {
        w.join().unwrap();
    }
    assert!(checked > 500, "the walk handed over {checked} records of the 96 sockets");
    assert!(
        mixed.is_empty(),
        "{} of {checked} records mixed: {:?}",
        mixed.len(),
        &mixed[..mixed.len().min(5)]
    );
}

/// A pure receiver moves the walk at its reads: tcp_probe skips the segments of a socket with
/// nothing in flight, and tcp_rcv_space_adjust leaves a read to tcp_probe only when the socket's
/// own data was acked lately, which a receiver's never is. So the lab flow's receiving end, with
/// the default refresh, is in every walk while it reads, its bytes received growing with the
/// flow's. Without the read hook, or with its gate taking receivers too, it is in none after its
/// establishment.
#[test]
fn root_a_pure_receivers_record_follows_its_reads() {
    if !guard::lab("the receiver walk test") || !guard::bpf("the socket walk") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).unwrap();
    let cfg = LoadConfig { walk: true, ..LoadConfig::from_rule(&Default::default()) };
    let loaded = loader::load(&cfg).expect("load");
    let mut walker = loaded
        .walker(StateSet::default_filter(), bbrtop_collect::attrib::Resolver::new(None))
        .expect("the walk");
    let flow = lab.start_flow("cubic").unwrap();
    std::thread::sleep(Duration::from_secs(2));
    walker.walk().unwrap();
    let mut received = Vec::new();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_secs(1));
        let walked = walker.walk().unwrap().sockets;
        let receiver = walked.iter().find(|r| r.local == flow.peer && r.peer == flow.local);
        let receiver = receiver.expect("the receiving end moved since the last walk");
        received.push(receiver.tcp_info.bytes_received().expect("bytes received"));
    }
    // The lab's bottleneck carries well over 100 kB a second.
    assert!(received.windows(2).all(|w| w[1] >= w[0] + 100_000), "bytes received at each walk: {received:?}");
}

/// A socket whose last moves fall within the refresh after its record was filled is brought up
/// to date at the next read (tests/support/refill.rs says how, and what fails without it).
#[test]
fn root_a_record_is_brought_up_to_date_when_its_socket_stops_moving() {
    if !guard::bpf("the socket walk") {
        return;
    }
    support::refill::a_quiet_senders_record_agrees_with_ss();
}
