//! The kernel matrix: what touches the kernel, on every kernel a fleet runs. The tests named
//! `root_matrix_*` run here, natively, on this host's kernel; `root_kernel_debian_*` boot
//! Debian's own kernel packages (5.10 of bullseye, 6.1 of bookworm, 6.12 of bookworm-security,
//! picked newest by pattern and fetched by scripts/kernels.sh) under QEMU's software emulation
//! with virtme-ng, the host's filesystem shared read-only, and run the same `root_matrix_*`
//! tests of this very binary inside each (scripts/guest.sh), one after another.
//!
//! Each test expects of a kernel what the feature catalog (`bbrtop_core::seam::Feature`, the
//! kernel table of docs/kernels.md) says it carries, from its release: on, and agreeing with `ss` and the
//! clients' own clocks; or off, with the reason that the kernel lacks it. Emulation runs several
//! times slower than the host, so the tests assert what loads, what agrees, and directions, never
//! timings. One guest at a time (one vCPU, 1 GiB), and nothing else of this file beside it.
#![cfg(feature = "bpf")]

mod support;

use bbrtop::lab::exchange::ExchangeConfig;
use bbrtop::lab::{Lab, LabConfig};
use bbrtop_collect::bpf::event::Event;
use bbrtop_collect::bpf::loader::{self, LoadConfig, Loaded};
use bbrtop_core::seam::Feature;
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::events::{closes, collect_until, netns_inode};
use support::{Proc, guard, poll_until};

const BBRTOP: &str = env!("CARGO_BIN_EXE_bbrtop");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The tests a guest runs, in this order: the first needs tcp_bbr not loaded yet.
const GUEST_TESTS: [&str; 10] = [
    "root_matrix_bbr_state_read_once_tcp_bbr_loads",
    "root_matrix_check_says_what_this_kernel_carries",
    "root_matrix_bbr_and_cubic_agree_with_ss",
    "root_matrix_walk_sees_another_namespace",
    "root_matrix_walk_brings_a_quiet_socket_up_to_date",
    "root_matrix_closed_flows_are_recorded",
    "root_matrix_response_times_agree_with_the_clients",
    "root_matrix_kernel_judges_prompt_samples",
    "root_matrix_experiment_gives_each_connection_its_arm",
    "root_matrix_experiment_asks_ecn_for_an_ecn_cc",
];

/// One test of this file at a time: a guest takes a core of two, and the native tests time
/// responses against the clients' clocks.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// This kernel's release as (major, minor).
fn kernel() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit()).map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Whether this kernel carries `f`, as the catalog says.
fn carries(f: Feature) -> bool {
    kernel() >= f.since()
}

/// tcp_bbr loaded (or BBR built in): `modprobe` where it is a module.
fn ensure_bbr() {
    if !bbr_available() {
        let ok = Command::new("modprobe").arg("tcp_bbr").status().is_ok_and(|s| s.success());
        assert!(ok && bbr_available(), "modprobe tcp_bbr");
    }
}

fn bbr_available() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .is_ok_and(|a| a.split_whitespace().any(|c| c == "bbr"))
}

fn load() -> Loaded {
    let l =
        loader::load(&LoadConfig { walk: true, ..LoadConfig::from_rule(&Default::default()) }).expect("load");
    assert!(l.failed.is_empty(), "attach failures: {:?}", l.failed);
    l
}

/// `bbrtop check --json`, which must exit 0: everything this kernel can carry ran.
fn check() -> Value {
    let out = Command::new(BBRTOP).args(["check", "--json"]).output().expect("bbrtop check");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert!(out.status.success(), "bbrtop check failed: {doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
    doc
}

fn feature(doc: &Value, f: Feature) -> &Value {
    doc["features"]
        .as_array()
        .and_then(|fs| fs.iter().find(|x| x["feature"] == f.label()))
        .expect("the feature")
}

/// A feature this kernel cannot carry is off, for that reason: `check` says so.
fn off_for_the_kernel(f: Feature) {
    let doc = check();
    let state = feature(&doc, f);
    assert_eq!(state["enabled"], false, "{state}");
    assert_eq!(state["cause"], "kernel_lacks", "{state}");
    eprintln!("{} off on Linux {:?}: {}", f.label(), kernel(), state["reason"]);
}

// ---- The tests each kernel runs ----------------------------------------------------------

/// `bbrtop watch` with only CAP_BPF and CAP_PERFMON, started before tcp_bbr is loaded (where BBR
/// is a module), shows a BBR socket's phase read from the kernel once it loads and a flow uses
/// it: the programs are loaded again against the module's BTF. Where BBR is built in (this
/// host), the same from the start.
#[test]
fn root_matrix_bbr_state_read_once_tcp_bbr_loads() {
    let _one = serial();
    if !guard::root("dropping to CAP_BPF and CAP_PERFMON") || !guard::bpf("the eBPF collector") {
        return;
    }
    let module_later = !bbr_available();
    // An idle connection, which every poll lists: watch's first line says its programs loaded.
    let idle = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let _idle = (std::net::TcpStream::connect(idle.local_addr().unwrap()).unwrap(), idle.accept().unwrap());
    let mut watch = Proc(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(["--inh-caps=-all,+bpf,+perfmon", "--ambient-caps=-all,+bpf,+perfmon"])
            .args(["--bounding-set=-all,+bpf,+perfmon", BBRTOP, "watch", "--interval", "500ms"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bbrtop watch"),
    );
    let lines = std::io::BufReader::new(watch.0.stdout.take().unwrap()).lines();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| drop(tx.send(l))));
    // Its first poll came: the programs are loaded, without struct bbr where tcp_bbr is not.
    assert!(rx.recv_timeout(Duration::from_secs(60)).is_ok(), "bbrtop watch printed nothing");
    ensure_bbr();
    let (port, _flow) = bbr_loopback_flow(Duration::from_secs(20));
    let want = if carries(Feature::BbrState) { "kernel" } else { "inferred" };
    let end = Instant::now() + Duration::from_secs(60);
    let mut sources = std::collections::BTreeMap::new();
    while Instant::now() < end && !sources.contains_key(want) {
        let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) else { continue };
        let s: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if s["cc"] == "bbr"
            && s["local"].as_str().is_some_and(|l| {
                l.ends_with(&format!(":{port}"))
                    || s["peer"].as_str().is_some_and(|p| p.ends_with(&format!(":{port}")))
            })
        {
            *sources
                .entry(s["derived"]["phase_source"].as_str().unwrap_or("none").to_string())
                .or_insert(0) += 1;
        }
    }
    eprintln!("tcp_bbr loaded after bbrtop: {module_later}; the BBR flow's phase sources: {sources:?}");
    assert!(sources.contains_key(want), "no BBR socket with phase_source {want}: {sources:?}");
}

/// A BBR flow over loopback for `secs` (a thread that writes, one that reads); its listening port.
fn bbr_loopback_flow(secs: Duration) -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let flow = std::thread::spawn(move || {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.set_tcp_congestion(b"bbr").expect("TCP_CONGESTION bbr");
        sock.connect(&std::net::SocketAddr::from(([127, 0, 0, 1], port)).into()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while server.read(&mut buf).is_ok_and(|n| n > 0) {}
        });
        let mut client: std::net::TcpStream = sock.into();
        let (buf, end) = (vec![7u8; 1 << 16], Instant::now() + secs);
        while Instant::now() < end && client.write_all(&buf).is_ok() {}
    });
    (port, flow)
}

/// `bbrtop check` exits 0, and names off only what this kernel cannot carry: each feature as the
/// catalog's floors say, responses through the tracepoint from 6.16 and the function's entry
/// before.
#[test]
fn root_matrix_check_says_what_this_kernel_carries() {
    let _one = serial();
    if !guard::root("bbrtop check") {
        return;
    }
    ensure_bbr();
    let doc = check();
    eprintln!("{}", serde_json::to_string_pretty(&doc["features"]).unwrap());
    for f in Feature::ALL {
        let state = feature(&doc, f);
        match carries(f) {
            true => assert_eq!(state["enabled"], true, "Linux {:?} carries {}: {state}", kernel(), f.label()),
            false => {
                assert_eq!(state["enabled"], false, "{state}");
                assert_eq!(state["cause"], "kernel_lacks", "only for what the kernel lacks: {state}");
            }
        }
    }
    let program = |name: &str| {
        doc["programs"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    if carries(Feature::Responses) {
        let (tp, fentry) = (program("tcp_sendmsg_locked"), program("tcp_sendmsg_fentry"));
        let (want_tp, want_fentry) =
            if kernel() >= (6, 16) { ("attached", "not_needed") } else { ("left_out", "attached") };
        assert_eq!(
            (tp["state"].as_str(), fentry["state"].as_str()),
            (Some(want_tp), Some(want_fentry)),
            "{doc}"
        );
    }
    assert!(
        doc["programs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["state"] != "refused" && p["state"] != "not_attached"),
        "{doc}"
    );
}

/// A BBR and a CUBIC flow between two namespaces behind tbf: bbrtop's values against `ss -tin`
/// (tests/support/reference.rs). Netlink alone on a kernel without the eBPF half.
#[test]
fn root_matrix_bbr_and_cubic_agree_with_ss() {
    let _one = serial();
    if !guard::lab("the reference flows") {
        return;
    }
    ensure_bbr();
    support::reference::bbr_and_cubic_agree_with_ss(Duration::from_secs(120));
}

/// The socket walk reports a socket of another namespace, as `ss` there shows it.
#[test]
fn root_matrix_walk_sees_another_namespace() {
    let _one = serial();
    if !guard::lab("a lab flow") || !guard::bpf("the socket walk") {
        return;
    }
    if !carries(Feature::Walk) {
        return off_for_the_kernel(Feature::Walk);
    }
    let mut lab = Lab::new(LabConfig::default()).expect("lab");
    let ns = netns_inode(lab.sender_netns());
    let l = load();
    let resolver = bbrtop_collect::attrib::Resolver::new(None);
    let mut walker = l.walker(bbrtop_core::model::StateSet::default_filter(), resolver).expect("the walk");
    let flow = lab.start_flow("cubic").expect("cubic flow");
    let seen = poll_until(Duration::from_secs(30), || {
        let read = walker.walk().expect("a walk");
        read.sockets.into_iter().find(|r| r.local == flow.local && r.netns == Some(u64::from(ns)))
    });
    let ss = support::lab::ss_established(&lab);
    lab.stop_flow(&flow);
    let r = seen.expect("the walk reports the flow's socket in the lab's namespace");
    let s = ss.iter().find(|s| s.local == Some(flow.local)).expect("the flow in ss");
    assert_eq!((r.cc.as_deref(), r.peer), (s.cc.as_deref(), s.peer.unwrap()), "{r:?}");
    assert!(r.tcp_info.snd_cwnd_segs().is_some_and(|c| c > 0), "{r:?}");
}

/// The walk's refill pass loads and brings a socket that stopped moving up to date, as `ss`
/// shows it (tests/support/refill.rs).
#[test]
fn root_matrix_walk_brings_a_quiet_socket_up_to_date() {
    let _one = serial();
    if !guard::bpf("the socket walk") {
        return;
    }
    if !carries(Feature::Walk) {
        return off_for_the_kernel(Feature::Walk);
    }
    support::refill::a_quiet_senders_record_agrees_with_ss();
}

/// Short connections in another namespace each leave a close record with their bytes.
#[test]
fn root_matrix_closed_flows_are_recorded() {
    let _one = serial();
    if !guard::lab("short lab flows") || !guard::bpf("close records") {
        return;
    }
    if !carries(Feature::ClosedFlows) {
        return off_for_the_kernel(Feature::ClosedFlows);
    }
    const N: usize = 20;
    let lab = Lab::new(LabConfig::default()).expect("lab");
    let ns = netns_inode(lab.sender_netns());
    let l = load();
    assert_eq!(lab.short_flows("cubic", N).expect("short flows"), N);
    let mine = |ev: &[Event]| closes(ev).filter(|c| c.h.netns == ns && c.cc == "cubic").count();
    let ev = collect_until(&l, Duration::from_secs(60), |ev| mine(ev) >= N);
    assert_eq!(mine(&ev) as u64 + l.lost_total(), N as u64, "one close record per connection");
    for c in closes(&ev).filter(|c| c.h.netns == ns) {
        assert!(c.counts[bbrtop_core::model::Count::BytesAcked] >= 4096, "{c:?}");
        assert!(c.lifetime_ns > 0, "{c:?}");
    }
}

/// Responses timed in the kernel against the client's own clock, across a 40 ms path: p50 and
/// p95 within 10% or 5 ms, as tests/response_times.rs holds them on this host.
#[test]
fn root_matrix_response_times_agree_with_the_clients() {
    let _one = serial();
    if !guard::lab("a request/response exchange") || !guard::bpf("response times") {
        return;
    }
    if !carries(Feature::Responses) {
        return off_for_the_kernel(Feature::Responses);
    }
    ensure_bbr();
    let lab =
        Lab::new(LabConfig { delay: Some(Duration::from_millis(20)), ..LabConfig::default() }).expect("lab");
    let ns = netns_inode(lab.sender_netns());
    let l = load();
    let cfg = ExchangeConfig {
        response_bytes: 15_000,
        interval: Duration::from_millis(250),
        think: Duration::ZERO,
        ..ExchangeConfig::default()
    };
    let ex = lab.start_exchange("bbr", cfg).expect("the exchange");
    let took = |ev: &[Event]| -> Vec<Duration> {
        ev.iter()
            .filter_map(|e| match e {
                Event::Responses(rs) => Some(rs),
                _ => None,
            })
            .flatten()
            .filter(|r| r.h.netns == ns)
            .map(|r| Duration::from_nanos(r.h.ts_ns - r.start_ns))
            .collect()
    };
    let mut ev = collect_until(&l, Duration::from_secs(25), |_| false);
    let mut client = ex.times();
    // The responses the server's socket still holds are sent by the refill pass, as bbrtop runs
    // it before a read: the connection is still open, so its close sends none.
    let pass = l.refill_pass().expect("the refill pass's maps");
    pass.expect("the refill pass loads wherever responses are timed").run().expect("a refill pass");
    ev.extend(collect_until(&l, Duration::from_millis(500), |_| false));
    drop(ex);
    let mut kernel = took(&ev);
    assert!(client.len() >= 20, "the client timed {} responses", client.len());
    assert!(
        kernel.len().abs_diff(client.len()) <= 2,
        "kernel {} responses, client {}",
        kernel.len(),
        client.len()
    );
    client.sort();
    kernel.sort();
    for q in [0.5, 0.95] {
        let (k, c) = (support::quantile(&kernel, q), support::quantile(&client, q));
        eprintln!(
            "p{}: kernel {:.2} ms, client {:.2} ms ({} responses)",
            q * 100.0,
            k * 1e3,
            c * 1e3,
            kernel.len()
        );
        assert!((k - c).abs() <= (0.1 * c).max(0.005), "p{}: kernel {k} s, client {c} s", q * 100.0);
    }
}

/// A CUBIC flow into a deep buffer: the kernel times an inflation onset from prompt samples.
#[test]
fn root_matrix_kernel_judges_prompt_samples() {
    let _one = serial();
    if !guard::lab("a CUBIC lab flow") || !guard::bpf("kernel inflation") {
        return;
    }
    if !carries(Feature::Alert) {
        return off_for_the_kernel(Feature::Alert);
    }
    let mut lab = Lab::new(LabConfig::default()).expect("lab");
    let ns = netns_inode(lab.sender_netns());
    let l = load();
    let flow = lab.start_flow("cubic").expect("cubic flow");
    let started = |e: &Event| matches!(e, Event::InflationStarted(i) if i.h.netns == ns);
    let ev = collect_until(&l, Duration::from_secs(60), |ev| ev.iter().any(started));
    lab.stop_flow(&flow);
    let Some(Event::InflationStarted(i)) = ev.iter().find(|e| started(e)) else {
        panic!("no kernel inflation onset for the CUBIC flow");
    };
    eprintln!("onset: prompt sample {} us against a {} us baseline", i.srtt_us, i.baseline_us);
    assert!(i.srtt_us as f64 >= 1.5 * i.baseline_us as f64 && i.srtt_us - i.baseline_us >= 1000, "{i:?}");
}

/// `bbrtop experiment` gives each new connection the cc its arm says (tests/experiment.rs's
/// check, with fewer connections).
#[test]
fn root_matrix_experiment_gives_each_connection_its_arm() {
    let _one = serial();
    if !guard::root("an experiment") {
        return;
    }
    if !carries(Feature::Experiment) {
        return off_for_the_kernel(Feature::Experiment);
    }
    ensure_bbr();
    support::experiment::run_arms(false, 40);
}

/// An arm whose cc needs ECN (dctcp) gets ECN negotiated on the connections the cgroup opens,
/// so the cc is not its Reno fallback; the other arm's connections ask for nothing. Inside the
/// guests only (scripts/guest.sh runs the ignored tests it names): Debian's kernels build
/// tcp_dctcp as a module, this host's kernel has no dctcp.
#[test]
#[ignore = "runs inside the kernel matrix's guests: this host's kernel has no tcp_dctcp"]
fn root_matrix_experiment_asks_ecn_for_an_ecn_cc() {
    let _one = serial();
    if !guard::root("an experiment") {
        return;
    }
    if !carries(Feature::Experiment) {
        return off_for_the_kernel(Feature::Experiment);
    }
    let modprobe = Command::new("modprobe").arg("tcp_dctcp").status();
    assert!(
        modprobe.is_ok_and(|s| s.success()),
        "modprobe tcp_dctcp: the matrix's kernels build it as a module"
    );
    support::experiment::run_ecn_arm(40);
}

// ---- Booting each kernel -------------------------------------------------------------------

#[test]
fn root_kernel_debian_5_10() {
    boot("5.10");
}

#[test]
fn root_kernel_debian_6_1() {
    boot("6.1");
}

#[test]
fn root_kernel_debian_6_12() {
    boot("6.12");
}

/// Fetches kernel `name` (scripts/kernels.sh, cached under target/kernels), boots it and runs
/// [`GUEST_TESTS`] inside; every one must pass. The guest's whole output is printed.
fn boot(name: &str) {
    let _one = serial();
    if !guard::root("booting a kernel under QEMU") {
        return;
    }
    let fetched = Command::new(Path::new(ROOT).join("scripts/kernels.sh")).args(["fetch", name]).output();
    let fetched = fetched.expect("scripts/kernels.sh");
    let stdout = String::from_utf8_lossy(&fetched.stdout);
    assert!(
        fetched.status.success(),
        "scripts/kernels.sh fetch {name}: {}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    let tree = PathBuf::from(stdout.split_whitespace().nth(1).expect("the kernel's tree"));
    let release = tree.file_name().unwrap().to_string_lossy().to_string();
    // A guest that vanished mid-test without a kernel's word of why (once in a CI run, 6.12
    // during a lab flow, under emulation) is booted once more; a kernel that crashed is a finding,
    // and its console is printed, never retried.
    let mut run = guest(&tree, &release);
    if run.exit.is_empty() && !run.crashed() {
        eprintln!(
            "the guest of Linux {release} vanished without finishing; its console ended:\n{}",
            run.tail()
        );
        eprintln!("booting it once more");
        run = guest(&tree, &release);
    }
    let Guest { output, exit, .. } = &run;
    if exit.is_empty() {
        panic!("the guest never finished its tests; its console ended:\n{}", run.tail());
    }
    assert_eq!(exit.trim(), "0", "a test failed inside Linux {release}");
    for t in GUEST_TESTS {
        assert!(output.contains(&format!("guest: {t} exited 0")), "{t} did not pass inside Linux {release}");
    }
    // Each ran (an --exact name that matched nothing would pass with 0 tests).
    let ran = output.matches("test result: ok. 1 passed").count();
    assert_eq!(ran, GUEST_TESTS.len(), "tests that ran and passed inside Linux {release}");
}

/// One boot of a kernel: what its tests printed, their exit status (empty: they never
/// finished) and the guest's console (the kernel's messages and virtme-ng's).
struct Guest {
    output: String,
    exit: String,
    console: String,
}

impl Guest {
    /// Whether the kernel said it crashed.
    fn crashed(&self) -> bool {
        ["Kernel panic", "BUG:", "Oops", "general protection fault"].iter().any(|m| self.console.contains(m))
    }

    /// The console's last lines.
    fn tail(&self) -> String {
        let lines: Vec<&str> = self.console.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

/// Boots `tree`'s kernel and runs [`GUEST_TESTS`] inside (scripts/guest.sh).
fn guest(tree: &Path, release: &str) -> Guest {
    let out = tempfile::Builder::new().prefix("bbrtop-guest-").tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut exec =
        vec![Path::new(ROOT).join("scripts/guest.sh"), tree.to_path_buf(), out.path().to_path_buf(), exe];
    exec.extend(GUEST_TESTS.iter().map(PathBuf::from));
    let exec: Vec<String> = exec.iter().map(|p| format!("'{}'", p.display())).collect();
    let console = tempfile::NamedTempFile::new().unwrap();
    let began = Instant::now();
    let mut vm = Proc(
        Command::new(Path::new(ROOT).join("target/vng-venv/bin/vng"))
            .arg("--run")
            .arg(tree.join(format!("boot/vmlinuz-{release}")))
            .args(["--disable-kvm", "--force-9p", "--verbose", "--cpus", "1", "--memory", "1G", "--rwdir"])
            .arg(out.path())
            .args(["--exec", &exec.join(" ")])
            .env("PATH", format!("{ROOT}/target/vng-venv/bin:{}", std::env::var("PATH").unwrap_or_default()))
            .stdin(Stdio::null())
            .stdout(console.reopen().unwrap())
            .stderr(console.reopen().unwrap())
            .spawn()
            .expect("vng"),
    );
    // Booting takes 10-20 s, each test tens of seconds under emulation.
    let done = support::wait_exit(&mut vm.0, Duration::from_secs(900));
    let output = std::fs::read_to_string(out.path().join("output")).unwrap_or_default();
    eprintln!("==== Linux {release} ({:.0} s) ====\n{output}", began.elapsed().as_secs_f64());
    assert!(done.is_some(), "the guest ran out of time (900 s)");
    Guest {
        output,
        exit: std::fs::read_to_string(out.path().join("exit")).unwrap_or_default(),
        console: String::from_utf8_lossy(&std::fs::read(console.path()).unwrap_or_default()).into_owned(),
    }
}
