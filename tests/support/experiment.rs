//! `bbrtop experiment` against the real kernel, as tests/experiment.rs and the kernel matrix
//! (tests/kernel_matrix.rs) drive it: a server in a cgroup v2 of the test's own, on loopback,
//! connections to it, and their ccs read back with `ss -tin`.

use super::cgroup::{Cg2, v2};
use super::{Proc, guard, poll_until, wait_exit};
use bbrtop::experiment::{Unit, arm_of, bucket};
use bbrtop::lab::ss::parse_ss_tin;
use bbrtop_collect::caps::Cap;
use std::net::{IpAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

pub const BBRTOP: &str = env!("CARGO_BIN_EXE_bbrtop");

/// A server that joins the cgroup before it starts, listens on 127.0.0.1 and keeps every
/// connection it accepts. Returns it and its port.
pub fn server(cg: &Cg2) -> (Proc, u16) {
    let script = "import socket\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(1024)\n\
                  print(s.getsockname()[1],flush=True)\nc=[]\nwhile True:\n c.append(s.accept()[0])\n";
    let mut cmd = cg.shell("exec python3 -c \"$1\"");
    cmd.arg(script);
    super::serving(cmd)
}

/// The names of the sock_ops programs that run for `dir` (bpftool's JSON). The effective ones:
/// before 5.12 or so the kernel lists a program linked to a cgroup (not attached the old way)
/// only among those.
pub fn sock_ops(dir: &Path) -> Vec<String> {
    sock_ops_progs(dir).into_iter().map(|(_, name)| name).collect()
}

/// The sock_ops programs that run for `dir`: (ID, name).
pub fn sock_ops_progs(dir: &Path) -> Vec<(u64, String)> {
    let o = Command::new("bpftool")
        .args(["cgroup", "show"])
        .arg(dir)
        .args(["effective", "-j"])
        .output()
        .expect("bpftool");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["attach_type"] == "cgroup_sock_ops" || p["attach_type"] == "sock_ops")
        .map(|p| (p["id"].as_u64().unwrap_or(0), p["name"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// A child cgroup of a test's cgroup, removed on drop (declare it after its parent, so it goes
/// first).
pub struct Sub(pub std::path::PathBuf);

impl Sub {
    pub fn new(parent: &Cg2, name: &str) -> Sub {
        let dir = parent.0.join(name);
        std::fs::create_dir(&dir).expect("a child cgroup v2 directory");
        Sub(dir)
    }
}

impl Drop for Sub {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// `bbrtop experiment` on `dir`, which must be refused at once: exit 1 and one line on stderr,
/// with nothing more attached to `dir`. Returns that line.
pub fn refused(dir: &Path) -> String {
    let before = sock_ops(dir).len();
    let o = Command::new(BBRTOP)
        .args(["experiment", "--cgroup"])
        .arg(dir)
        .args(["--arm", "reno=50%", "--arm", "cubic=50%", "--duration", "5s"])
        .stdin(Stdio::null())
        .output()
        .expect("bbrtop");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{}: {err}", dir.display());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(sock_ops(dir).len(), before, "a refused experiment attached to {}", dir.display());
    err
}

pub fn wait_attached(dir: &Path) {
    let on =
        poll_until(Duration::from_secs(15), || sock_ops(dir).iter().any(|n| n == "experiment").then_some(()));
    assert!(on.is_some(), "the experiment's program never appeared on {}", dir.display());
}

/// The server side's sockets: (the client's port, the cc ss shows).
pub fn server_ccs(port: u16) -> Vec<(u16, String)> {
    server_peers(port).into_iter().map(|(a, cc)| (a.port(), cc)).collect()
}

/// The server side's sockets: (the client's address, the cc ss shows).
pub fn server_peers(port: u16) -> Vec<(std::net::SocketAddr, String)> {
    let o = Command::new("ss")
        .args(["-tinH", "state", "established", &format!("( sport = :{port} )")])
        .output()
        .expect("ss");
    parse_ss_tin(&String::from_utf8_lossy(&o.stdout))
        .into_iter()
        .filter_map(|s| Some((s.peer?, s.cc?)))
        .collect()
}

pub fn default_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap().trim().to_string()
}

pub fn can_run(what: &str) -> bool {
    guard::caps(what, &[Cap::Bpf, Cap::NetAdmin])
        && (v2().join("cgroup.procs").exists()
            || guard::unavailable(&format!("{what} needs the cgroup v2 hierarchy at {}", v2().display())))
        && (Command::new("bpftool").arg("version").output().is_ok() || guard::unavailable("bpftool"))
        && (Command::new("python3").arg("-V").output().is_ok() || guard::unavailable("python3"))
}

pub fn experiment(cg: &Cg2, extra: &[&str]) -> Proc {
    Proc(
        Command::new(BBRTOP)
            .args(["experiment", "--cgroup"])
            .arg(&cg.0)
            .args(["--arm", "bbr=30%", "--arm", "cubic=70%", "--seed", "12345", "--json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bbrtop"),
    )
}

/// The arm the Rust hash predicts for a server-side socket on `port` whose peer has `peer_port`.
pub fn predicted(port: u16, peer_port: u16) -> usize {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    predicted_for(Unit::Connection, (lo, port), (lo, peer_port))
}

pub fn predicted_for(unit: Unit, local: (IpAddr, u16), peer: (IpAddr, u16)) -> usize {
    arm_of(bucket(12345, unit, local, peer), &[3000, 10000], &[true, true])
}

/// Waits for the experiment's end and returns its JSON summary.
pub fn summary(mut p: Proc, limit: Duration) -> serde_json::Value {
    let status = wait_exit(&mut p.0, limit).expect("the experiment ends");
    let mut out = String::new();
    std::io::Read::read_to_string(p.0.stdout.as_mut().unwrap(), &mut out).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(p.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// `n` connections to a server in a cgroup of the test's own under `bbrtop experiment` (30% bbr,
/// 70% cubic by the connection): each has the cc the Rust hash predicts (or, `dry_run`, the
/// default), the program counted what was predicted, and the program leaves with the command.
pub fn run_arms(dry_run: bool, n: usize) {
    let what = if dry_run { "experiment --dry-run" } else { "experiment" };
    if !can_run(what) {
        return;
    }
    let cg = Cg2::new(if dry_run { "dry" } else { "arms" });
    let (_server, port) = server(&cg);
    let default = default_cc();
    // Connections from before the experiment keep their cc, whatever their arm would be.
    let before: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    let before_ports: Vec<u16> = before.iter().map(|s| s.local_addr().unwrap().port()).collect();

    let mut dur = vec!["--duration", "20s", "--unit", "connection"];
    if dry_run {
        dur.push("--dry-run");
    }
    let exp = experiment(&cg, &dur);
    wait_attached(&cg.0);
    let conns: Vec<TcpStream> = (0..n).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    let ports: Vec<u16> = conns.iter().map(|s| s.local_addr().unwrap().port()).collect();
    // Every connection established on the server's side (bounded wait).
    // Only the test's own connections (by the client's port): tests run in parallel on loopback,
    // and another's client may hold the same port number on another address.
    let seen = poll_until(Duration::from_secs(10), || {
        let s: Vec<_> = server_ccs(port)
            .into_iter()
            .filter(|(p, _)| ports.contains(p) || before_ports.contains(p))
            .collect();
        (s.len() >= n + before.len()).then_some(s)
    })
    .expect("ss lists every connection");

    let mut k = [0u64; 2];
    let mut wrong = Vec::new();
    for (peer, cc) in &seen {
        let arm = predicted(port, *peer);
        if before_ports.contains(peer) {
            assert_eq!(cc, &default, "a connection from before the experiment changed cc");
            continue;
        }
        k[arm] += 1;
        let want = if dry_run { default.as_str() } else { ["bbr", "cubic"][arm] };
        if cc != want {
            wrong.push((*peer, cc.clone(), want));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {n} connections with a cc other than predicted: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
    drop(conns);
    drop(before);

    let s = summary(exp, Duration::from_secs(40));
    let counted: Vec<u64> = (0..2).map(|i| s["arms"][i]["assigned"].as_u64().unwrap()).collect();
    let failed: Vec<u64> = (0..2).map(|i| s["arms"][i]["setsockopt_failures"].as_u64().unwrap()).collect();
    assert_eq!(counted, k.to_vec(), "the program's counts against the predicted arms: {s}");
    assert_eq!(failed, vec![0, 0], "{s}");
    assert_eq!(s["dry_run"], dry_run);
    let p = 0.3;
    let (np, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
    let z = (k[0] as f64 - np) / sd;
    eprintln!(
        "{what}: bbr {} cubic {} of {n}: bbr's share {:.3}, z {z:.2} (n p {np}, sd {sd:.2})",
        k[0],
        k[1],
        k[0] as f64 / n as f64
    );
    assert!(z.abs() <= 4.0, "bbr {} of {n}: z {z:.2}", k[0]);
    // Ended by --duration: the program is gone.
    assert!(sock_ops(&cg.0).is_empty(), "still attached after the experiment ended: {:?}", sock_ops(&cg.0));
}

/// Python: `n` connections to 127.0.0.1:PORT with cc CC (the default when empty), their local
/// ports said on one line, held. Arguments: PORT N CC.
const CLIENTS: &str = "import socket,sys,time\nc=[]\nfor _ in range(int(sys.argv[2])):\n s=socket.socket()\n \
                       if sys.argv[3]:\n  s.setsockopt(socket.IPPROTO_TCP,socket.TCP_CONGESTION,sys.argv[3].encode())\n \
                       s.connect(('127.0.0.1',int(sys.argv[1])))\n c.append(s)\n\
                       print(' '.join(str(s.getsockname()[1]) for s in c),flush=True)\ntime.sleep(60)\n";

/// `cmd` (CLIENTS) started: it and the ports its connections have.
fn clients(mut cmd: Command, n: usize) -> (Proc, Vec<u16>) {
    let mut p = Proc(cmd.stdout(Stdio::piped()).spawn().expect("python3"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(p.0.stdout.take().unwrap()), &mut line).unwrap();
    let ports: Vec<u16> = line.split_whitespace().filter_map(|p| p.parse().ok()).collect();
    assert_eq!(ports.len(), n, "the clients' ports: {line:?}");
    (p, ports)
}

/// The established sockets `ss` lists with `filter` whose local or peer port is one of `ports`,
/// each against the arm the hash predicts for it: dctcp with ECN negotiated, or cubic without.
/// How many each arm has.
fn ecn_arms(filter: &str, ports: &[u16]) -> [u64; 2] {
    // ss prints `ecn` only with -e or -o.
    let o = Command::new("ss").args(["-tieoH", "state", "established", filter]).output().expect("ss");
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let (mut k, mut wrong) = ([0u64; 2], Vec::new());
    for s in parse_ss_tin(&String::from_utf8_lossy(&o.stdout)) {
        let (Some(local), Some(peer)) = (s.local, s.peer) else { continue };
        if !ports.contains(&local.port()) && !ports.contains(&peer.port()) {
            continue;
        }
        let arm = predicted_for(Unit::Connection, (lo, local.port()), (lo, peer.port()));
        k[arm] += 1;
        let (want, got) = ((["dctcp", "cubic"][arm], arm == 0), (s.cc.clone().unwrap_or_default(), s.ecn));
        if got.0 != want.0 || got.1 != want.1 {
            wrong.push((local.port(), peer.port(), got, want));
        }
    }
    assert_eq!(k.iter().sum::<u64>(), ports.len() as u64, "ss lists every socket ({filter}): {k:?}");
    assert!(k[0] > 0 && k[1] > 0, "both arms drawn ({filter}): {k:?}");
    assert!(wrong.is_empty(), "(local, peer, (cc, ecn), wanted) ({filter}): {wrong:?}");
    k
}

/// `bbrtop experiment --arm dctcp=30% --arm cubic=70%` on a cgroup, with `n` connections each
/// way on loopback: each drawn into dctcp runs dctcp with ECN negotiated, not its Reno fallback;
/// each drawn into cubic runs cubic and asked for nothing. Outward, from the cgroup to a dctcp
/// listener (the program asks for ECN in the SYN; the kernel accepts a SYN that asks for it as
/// dctcp sends it, ECT-marked, only on a listener whose cc needs ECN: a data centre's, both ends
/// dctcp). Inward, from dctcp clients to a listener in the cgroup (the program accepts ECN for
/// the request socket). Needs tcp_dctcp loaded.
pub fn run_ecn_arm(n: usize) {
    if !can_run("an experiment with an ECN cc") {
        return;
    }
    let script = "import socket\ns=socket.socket()\n\
                  s.setsockopt(socket.IPPROTO_TCP,socket.TCP_CONGESTION,b'dctcp')\n\
                  s.bind(('127.0.0.1',0))\ns.listen(1024)\nprint(s.getsockname()[1],flush=True)\n\
                  c=[]\nwhile True:\n c.append(s.accept()[0])\n";
    let mut cmd = Command::new("python3");
    cmd.args(["-c", script]);
    let (_outside, port) = super::serving(cmd);
    let cg = Cg2::new("ecn");
    let (_inside, inside_port) = server(&cg);
    let exp = Proc(
        Command::new(BBRTOP)
            .args(["experiment", "--cgroup"])
            .arg(&cg.0)
            .args(["--arm", "dctcp=30%", "--arm", "cubic=70%", "--seed", "12345", "--json"])
            .args(["--duration", "10s", "--unit", "connection"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bbrtop"),
    );
    wait_attached(&cg.0);
    let mut out = cg.shell("exec python3 -c \"$1\" \"$2\" \"$3\" \"$4\"");
    out.args([CLIENTS, &port.to_string(), &n.to_string(), ""]);
    let (out, out_ports) = clients(out, n);
    let mut into = Command::new("python3");
    into.args(["-c", CLIENTS, &inside_port.to_string(), &n.to_string(), "dctcp"]);
    let (into, into_ports) = clients(into, n);
    let outward = ecn_arms(&format!("( dport = :{port} )"), &out_ports);
    let inward = ecn_arms(&format!("( sport = :{inside_port} )"), &into_ports);
    drop((out, into));
    let s = summary(exp, Duration::from_secs(60));
    let counted: Vec<u64> = (0..2).map(|i| s["arms"][i]["assigned"].as_u64().unwrap()).collect();
    let want: Vec<u64> = (0..2).map(|i| outward[i] + inward[i]).collect();
    assert_eq!(counted, want, "the program's counts against the predicted arms: {s}");
}
