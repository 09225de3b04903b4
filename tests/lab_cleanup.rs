//! A lab never outlives its process: SIGHUP and SIGQUIT clean up like SIGINT, and the namespaces
//! of a lab killed outright are removed by the next run or `bbrtop lab --cleanup`, never those of
//! a live lab, even when a dead lab's PID has been reused. Privileged: namespaces.

mod support;

use bbrtop::lab::owner::{Owner, starttime};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

const BBRTOP: &str = env!("CARGO_BIN_EXE_bbrtop");

/// Every lab removes dead labs' namespaces as it starts, so a lab started by another test in
/// this binary would remove the cleanup test's dead namespaces before `lab --cleanup` could
/// report them: the tests here run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// Namespaces made by the test, removed when it ends, pass or fail.
struct Made(Vec<String>);

impl Made {
    fn add(&mut self, name: String) -> String {
        let ok = Command::new("ip").args(["netns", "add", &name]).status().expect("ip").success();
        assert!(ok, "ip netns add {name}");
        self.0.push(name.clone());
        name
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// A child that sleeps, killed and reaped on drop.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        Sleeper(Command::new("sleep").arg("60").spawn().expect("sleep"))
    }
    fn owner(&self) -> Owner {
        let pid = self.0.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
        Owner { pid, start: starttime(&stat).expect("starttime") }
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn root_cleanup_removes_dead_labs_and_keeps_live_ones() {
    if !support::guard::lab("lab namespaces") {
        return;
    }
    let _one = one_at_a_time();
    let mut made = Made(Vec::new());
    let dead = {
        let s = Sleeper::start();
        s.owner()
    };
    let me = Owner::me();
    let reused = Owner { start: me.start + 1, ..me };
    let live = Sleeper::start();
    let dead_ns = made.add(format!("{}-s", dead.lab_name(0)));
    let reused_ns = made.add(format!("{}-m", reused.lab_name(0)));
    let live_ns = made.add(format!("{}-r", live.owner().lab_name(0)));
    let other = made.add(format!("bbrtop-test-keep-{}", std::process::id()));

    let out = Command::new(BBRTOP).args(["lab", "--cleanup"]).output().expect("bbrtop");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&dead_ns) && stdout.contains(&reused_ns), "{stdout}");
    assert!(!netns_exists(&dead_ns) && !netns_exists(&reused_ns), "the dead labs' namespaces are gone");
    assert!(netns_exists(&live_ns), "a live lab's namespace stays");
    assert!(netns_exists(&other), "a namespace that is not a lab's is never touched");
}

/// Starts `bbrtop lab`, waits until its namespaces are up, sends `signal`, and checks that it
/// exits and leaves none behind.
fn lab_cleans_up_on(signal: i32) {
    let _one = one_at_a_time();
    let mut lab = Command::new(BBRTOP)
        .args(["lab", "bufferbloat", "--duration", "60s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bbrtop lab");
    let prefix = format!("bbrtop-{}-", lab.id());
    let ours = || -> Vec<String> {
        let Ok(dir) = std::fs::read_dir("/run/netns") else { return Vec::new() };
        dir.flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while ours().len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let up = ours();
    // A lab that never came up is killed either way, and its namespaces with it.
    #[allow(unsafe_code)]
    // SAFETY: kill() sends a signal to the child this test started and still holds.
    let sent = unsafe { libc::kill(lab.id() as i32, signal) } == 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = lab.try_wait().expect("wait") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = lab.kill();
            let _ = lab.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let left = ours();
    for n in &left {
        let _ = Command::new("ip").args(["netns", "del", n]).output();
    }
    assert_eq!(up.len(), 3, "the lab came up: {up:?}");
    assert!(sent, "signal {signal} sent");
    assert!(status.is_some(), "the lab exited after signal {signal}");
    assert!(left.is_empty(), "signal {signal} left {left:?}");
}

/// SIGUSR1 (the exporter's dump signal) does not end a lab: the run goes on to its report and
/// exit 0, and leaves no namespace (on main SIGUSR1 killed it and left its three).
#[test]
fn root_a_lab_goes_on_after_sigusr1() {
    if !support::guard::lab("a lab") {
        return;
    }
    let _one = one_at_a_time();
    let mut lab = support::Proc(
        Command::new(BBRTOP)
            .args(["lab", "ab", "--duration", "3s", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bbrtop lab"),
    );
    let prefix = format!("bbrtop-{}-", lab.0.id());
    let up = support::poll_until(Duration::from_secs(30), || {
        Some(()).filter(|_| support::lab::namespaces(&prefix).len() == 3)
    });
    support::signal(lab.0.id(), "USR1");
    let status = support::wait_exit(&mut lab.0, Duration::from_secs(60));
    let left = support::lab::namespaces(&prefix);
    for n in left.iter().filter_map(|l| l.split_whitespace().next()) {
        let _ = Command::new("ip").args(["netns", "del", n]).output();
    }
    assert!(up.is_some(), "the lab came up");
    let status = status.expect("the lab ended within 60 s");
    assert!(status.success(), "the run went on to its end: {status:?}");
    let mut report = String::new();
    std::io::Read::read_to_string(&mut lab.0.stdout.take().expect("stdout"), &mut report).expect("stdout");
    assert!(report.contains("\"flows\"") || report.contains("cubic"), "a report: {report}");
    assert!(left.is_empty(), "SIGUSR1 left {left:?}");
}

#[test]
fn root_a_lab_cleans_up_on_sighup() {
    if support::guard::lab("a lab") {
        lab_cleans_up_on(libc::SIGHUP);
    }
}

#[test]
fn root_a_lab_cleans_up_on_sigquit() {
    if support::guard::lab("a lab") {
        lab_cleans_up_on(libc::SIGQUIT);
    }
}
