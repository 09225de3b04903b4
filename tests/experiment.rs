//! `bbrtop experiment` against the real kernel: a server in a cgroup v2 of the test's own, on
//! loopback, and connections to it. Each connection's cc (read by `ss -tin`) is the one its arm
//! says, the arm predicted by the Rust copy of the program's hash; the shares pass a binomial
//! test; connections made before keep their cc; a dry run changes none; the program leaves the
//! cgroup when the command ends by --duration, SIGTERM or SIGKILL, or when its cgroup is removed;
//! a cc the kernel lacks, a path that is not a cgroup and a path another experiment runs on are
//! refused before anything is attached; a connection whose cc the kernel refused is counted as a
//! failure, not assigned. Privileged: BPF, cgroups.

mod support;

use bbrtop::experiment::Unit;
use bbrtop::lab::ss::parse_ss_tin;
use std::net::{IpAddr, TcpStream};
use std::process::Command;
use std::time::Duration;
use support::cgroup::{Cg2, v2};
use support::experiment::*;
use support::{Proc, poll_until, signal, wait_exit};

#[test]
fn root_experiment_assigns_each_connection_its_arm() {
    run_arms(false, 300);
}

#[test]
fn root_experiment_dry_run_counts_and_changes_nothing() {
    run_arms(true, 300);
}

#[test]
fn root_experiment_detaches_on_sigterm_and_sigkill() {
    if !can_run("experiment's detach") {
        return;
    }
    let cg = Cg2::new("signals");
    for sig in ["TERM", "KILL"] {
        let mut exp = experiment(&cg, &["--duration", "120s"]);
        wait_attached(&cg.0);
        signal(exp.0.id(), sig);
        let status = wait_exit(&mut exp.0, Duration::from_secs(10)).expect("the experiment ends");
        if sig == "TERM" {
            assert!(status.success(), "SIGTERM: {status}");
        }
        // The link closes with the process's last file descriptor; the kernel may take a moment.
        let gone = poll_until(Duration::from_secs(5), || sock_ops(&cg.0).is_empty().then_some(()));
        assert!(gone.is_some(), "SIG{sig}: still attached: {:?}", sock_ops(&cg.0));
    }
}

#[test]
fn root_experiment_refuses_before_attaching() {
    if !can_run("experiment's refusals") {
        return;
    }
    let cg = Cg2::new("refuse");
    let rel = cg.0.strip_prefix(v2()).unwrap().to_str().unwrap().to_string();
    let line = support::usage_error(&[
        "experiment",
        "--cgroup",
        &rel,
        "--arm",
        "nosuchcc=50%",
        "--arm",
        "cubic=50%",
    ]);
    assert!(
        line.contains("\"nosuchcc\" is not available") && line.contains("modprobe tcp_nosuchcc"),
        "{line}"
    );
    assert!(sock_ops(&cg.0).is_empty());
    let line =
        support::usage_error(&["experiment", "--cgroup", "/tmp", "--arm", "bbr=50%", "--arm", "cubic=50%"]);
    assert!(line.contains("--cgroup /tmp: not a cgroup v2 directory"), "{line}");
    let line = support::usage_error(&[
        "experiment",
        "--cgroup",
        v2().to_str().unwrap(),
        "--arm",
        "bbr=50%",
        "--arm",
        "cubic=50%",
    ]);
    assert!(line.contains("--whole-host"), "{line}");
    let line =
        support::usage_error(&["experiment", "--cgroup", &rel, "--arm", "bbr=50%", "--arm", "cubic=40%"]);
    assert!(line.contains("sum to 90%"), "{line}");
}

/// The peer and prefix units against the kernel: clients from 60 loopback addresses
/// (127.0.0.2 to .61), two connections each. By peer, each address's connections get the arm the
/// Rust hash predicts for it; by prefix, all of 127.0.0.0/24 gets one arm.
#[test]
fn root_experiment_peer_and_prefix_units() {
    if !can_run("experiment --unit") {
        return;
    }
    let cg = Cg2::new("units");
    let (_server, port) = server(&cg);
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    for unit in ["peer", "prefix"] {
        let exp = experiment(&cg, &["--duration", "60s", "--unit", unit]);
        wait_attached(&cg.0);
        let mut conns = Vec::new();
        for x in 2..=61u8 {
            for _ in 0..2 {
                let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
                s.bind(&std::net::SocketAddr::from(([127, 0, 0, x], 0)).into()).unwrap();
                s.connect(&std::net::SocketAddr::from(([127, 0, 0, 1], port)).into()).unwrap();
                conns.push(s);
            }
        }
        let ours: Vec<std::net::SocketAddr> =
            conns.iter().map(|c| c.local_addr().unwrap().as_socket().unwrap()).collect();
        // Only the test's own connections: tests run in parallel on loopback.
        let seen = poll_until(Duration::from_secs(10), || {
            let (mine, other): (Vec<_>, Vec<_>) =
                server_peers(port).into_iter().partition(|(a, _)| ours.contains(a));
            if !other.is_empty() {
                let all = Command::new("ss")
                    .args(["-tanpeH", &format!("( sport = :{port} or dport = :{port} )")])
                    .output();
                eprintln!(
                    "sockets on :{port} the test did not make: {other:?}; ss: {}",
                    all.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
                );
            }
            (mine.len() >= conns.len()).then_some(mine)
        })
        .expect("ss lists every connection");
        let u = if unit == "peer" { Unit::Peer } else { Unit::Prefix };
        let mut k = [0u64; 2];
        for (peer, cc) in &seen {
            let arm = predicted_for(u, (lo, port), (peer.ip(), peer.port()));
            k[arm] += 1;
            assert_eq!(cc, ["bbr", "cubic"][arm], "--unit {unit}: {peer}");
        }
        if u == Unit::Prefix {
            assert!(k[0] == 0 || k[1] == 0, "one /24, one arm: {k:?}");
        }
        eprintln!("--unit {unit}: bbr {} cubic {} of {} connections from 60 peers", k[0], k[1], seen.len());
        drop(conns);
        signal(exp.0.id(), "TERM");
        let s = summary(exp, Duration::from_secs(10));
        assert_eq!(s["unit"], unit);
        let counted: Vec<u64> = (0..2).map(|i| s["arms"][i]["assigned"].as_u64().unwrap()).collect();
        assert_eq!(counted, k.to_vec(), "{s}");
        assert!(sock_ops(&cg.0).is_empty());
    }
}

/// The server side's sockets with their socket cookies (`ss -tie`'s `sk:`): (client port, cookie,
/// cc).
fn server_cookies(port: u16) -> Vec<(u16, u64, String)> {
    let o = Command::new("ss")
        .args(["-tieH", "state", "established", &format!("( sport = :{port} )")])
        .output()
        .expect("ss");
    let text = String::from_utf8_lossy(&o.stdout);
    let cookies =
        text.lines().filter(|l| !l.starts_with(char::is_whitespace) && !l.trim().is_empty()).map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("sk:"))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
        });
    parse_ss_tin(&text)
        .into_iter()
        .zip(cookies)
        .filter_map(|(s, c)| Some((s.peer?.port(), c?, s.cc?)))
        .collect()
}

/// In process, through the library: the program's cookie -> arm map agrees with `ss` (cookie and
/// cc) and with the Rust hash; a closed arm's connections get the control (arm 0) and are counted
/// as redirected; dropping the handle detaches.
#[test]
fn root_experiment_records_arms_by_cookie_and_closes_an_arm() {
    use bbrtop::experiment::attach::{Plan, start};
    if !can_run("experiment through the library") {
        return;
    }
    let cg = Cg2::new("lib");
    let (_server, port) = server(&cg);
    let arms = ["bbr=30%", "cubic=70%"].iter().map(|s| s.parse().unwrap()).collect();
    let plan = Plan { arms, unit: Unit::Connection, seed: 12345, ports: vec![port], dry_run: false };
    let mut obj = std::mem::MaybeUninit::uninit();
    let mut run = start(&mut obj, &plan, &cg.0).expect("attached");
    let connect = |n: usize| -> Vec<TcpStream> {
        (0..n).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect()
    };
    let ours = |c: &[TcpStream]| -> Vec<u16> { c.iter().map(|s| s.local_addr().unwrap().port()).collect() };
    let settle = |ports: &[u16]| {
        poll_until(Duration::from_secs(10), || {
            let s: Vec<_> = server_cookies(port).into_iter().filter(|(p, ..)| ports.contains(p)).collect();
            (s.len() >= ports.len()).then_some(s)
        })
        .expect("ss lists every connection")
    };

    let first = connect(60);
    let by_cookie = run.arms_by_cookie();
    let mut k = [0u64; 2];
    for (peer, cookie, cc) in settle(&ours(&first)) {
        let arm = predicted(port, peer);
        k[arm] += 1;
        assert_eq!(by_cookie.get(&cookie), Some(&(arm as u32)), "cookie {cookie:#x} (peer {peer})");
        assert_eq!(cc, ["bbr", "cubic"][arm], "peer {peer}");
    }
    let c = run.counts();
    assert_eq!((c[0].assigned, c[1].assigned), (k[0], k[1]));

    // Close cubic: every new connection gets bbr, the control; cubic's draws are redirected.
    run.set_open(1, false);
    let second = connect(60);
    let mut drawn_cubic = 0;
    for (peer, _, cc) in settle(&ours(&second)) {
        drawn_cubic += u64::from(predicted(port, peer) == 1);
        assert_eq!(cc, "bbr", "peer {peer} while cubic is closed");
    }
    let c = run.counts();
    assert_eq!((c[0].assigned, c[1].assigned), (k[0] + 60, k[1]));
    assert_eq!(c[1].redirected, drawn_cubic);
    eprintln!(
        "by cookie: bbr {} cubic {} of 60; cubic closed: {drawn_cubic} of 60 redirected to bbr",
        k[0], k[1]
    );
    drop(run);
    assert!(sock_ops(&cg.0).is_empty(), "still attached after the handle dropped");
}

/// A program set a connection's cc only when the kernel took it: an arm whose cc the kernel does
/// not have (through the library, which leaves that check to the command) counts its draws as
/// failures, not as assigned, and keeps none of them in the cookie -> arm map; `ss` shows them on
/// the default cc.
#[test]
fn root_experiment_counts_only_the_connections_it_set() {
    use bbrtop::experiment::attach::{Plan, start};
    if !can_run("experiment's setsockopt failures") {
        return;
    }
    let cg = Cg2::new("failed");
    let (_server, port) = server(&cg);
    let arms = ["bbr=30%", "nosuchcc=70%"].iter().map(|s| s.parse().unwrap()).collect();
    let plan = Plan { arms, unit: Unit::Connection, seed: 12345, ports: vec![port], dry_run: false };
    let mut obj = std::mem::MaybeUninit::uninit();
    let run = start(&mut obj, &plan, &cg.0).expect("attached");
    let conns: Vec<TcpStream> = (0..30).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    let ours: Vec<u16> = conns.iter().map(|s| s.local_addr().unwrap().port()).collect();
    let seen = poll_until(Duration::from_secs(10), || {
        let s: Vec<_> = server_cookies(port).into_iter().filter(|(p, ..)| ours.contains(p)).collect();
        (s.len() >= ours.len()).then_some(s)
    })
    .expect("ss lists every connection");
    let (by_cookie, default) = (run.arms_by_cookie(), default_cc());
    let mut k = [0u64; 2];
    for (peer, cookie, cc) in seen {
        let arm = predicted(port, peer);
        k[arm] += 1;
        let (want_cc, want_arm) = if arm == 0 { ("bbr", Some(&0)) } else { (default.as_str(), None) };
        assert_eq!((cc.as_str(), by_cookie.get(&cookie)), (want_cc, want_arm), "peer {peer}, arm {arm}");
    }
    let c = run.counts();
    assert!(k[1] > 0, "no draw for the failing arm: {k:?}");
    assert_eq!((c[0].assigned, c[0].setsockopt_failures), (k[0], 0), "{c:?}");
    assert_eq!((c[1].assigned, c[1].setsockopt_failures), (0, k[1]), "{c:?}");
}

/// Two experiments on one path are refused, whichever starts second: on the same cgroup, on a
/// parent of a running one's and on a child of it, each with one line naming the running one's
/// program (its ID as bpftool shows it) and cgroup; only the first program stays attached.
#[test]
fn root_experiment_refuses_a_cgroup_path_another_runs_on() {
    if !can_run("experiment's overlap refusal") {
        return;
    }
    let parent = Cg2::new("overlap");
    let child = Sub::new(&parent, "child");
    for (first, other) in [(&child.0, &parent.0), (&parent.0, &child.0)] {
        let exp = Proc(
            Command::new(support::experiment::BBRTOP)
                .args(["experiment", "--cgroup"])
                .arg(first)
                .args(["--arm", "bbr=50%", "--arm", "cubic=50%", "--duration", "60s", "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("bbrtop"),
        );
        wait_attached(first);
        let (id, _) = sock_ops_progs(first).into_iter().find(|(_, n)| n == "experiment").unwrap();
        let whose = format!("sock_ops program {id} (another bbrtop experiment)");
        let same = refused(first);
        assert!(same.contains(&whose) && same.contains("is attached to it;"), "{same}");
        let line = refused(other);
        let rel = if first == &child.0 { "descendant" } else { "ancestor" };
        let at = format!("is attached to its {rel} {};", first.display());
        assert!(line.contains(&format!("--cgroup {}: ", other.display())), "{line}");
        assert!(line.contains(&whose) && line.contains(&at), "{line}");
        assert_eq!(sock_ops(&child.0), ["experiment"], "the child runs one program");
        signal(exp.0.id(), "TERM");
        summary(exp, Duration::from_secs(10));
        let gone = poll_until(Duration::from_secs(5), || sock_ops(&child.0).is_empty().then_some(()));
        assert!(gone.is_some(), "still attached: {:?}", sock_ops(&child.0));
    }
}

/// An experiment whose cgroup is removed says so in one line, prints its summary and ends.
#[test]
fn root_experiment_ends_when_its_cgroup_is_removed() {
    if !can_run("experiment on a removed cgroup") {
        return;
    }
    let cg = Cg2::new("removed");
    let mut exp = experiment(&cg, &["--duration", "60s"]);
    wait_attached(&cg.0);
    std::fs::remove_dir(&cg.0).expect("the empty cgroup removed");
    let status = wait_exit(&mut exp.0, Duration::from_secs(10)).expect("the experiment ends");
    let mut out = String::new();
    std::io::Read::read_to_string(exp.0.stdout.as_mut().unwrap(), &mut out).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(exp.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("cgroup was removed")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains(&cg.0.display().to_string()), "{err}");
    let s: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(s["seconds"].as_f64().unwrap() < 30.0, "{s}");
}

/// `--port 0` and a share with a doubled `%` are usage errors: one line, exit 2.
#[test]
fn experiment_refuses_port_zero_and_a_malformed_share() {
    let base = ["experiment", "--cgroup", "x", "--arm", "bbr=50%"];
    let line = support::usage_error(&[&base[..], &["--arm", "cubic=50%", "--port", "0"]].concat());
    assert!(line.contains("--port") && line.contains('0'), "{line}");
    let line = support::usage_error(&[&base[..], &["--arm", "cubic=50%%"]].concat());
    assert!(line.contains("cubic=50%%") && line.contains("not a percent"), "{line}");
}
