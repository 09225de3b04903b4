//! The TUI in a real terminal: `bbrtop --lab` in tmux, driven by keys, read back from the pane,
//! and the shell usable after quitting. Privileged (the lab).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};
use support::guard;
use support::lab::namespaces;
use support::tools::have;

/// A tmux session, and the bbrtop processes started in it: dropping it ends both, so a failed
/// test leaves no TUI running (by PID, only those it started).
struct Tmux(String, std::cell::RefCell<Vec<u32>>);

impl Tmux {
    /// A session named for the process and `test`, since tests run side by side.
    fn start(test: &str) -> Tmux {
        let t = Tmux(format!("bbrtop-test-{}-{test}", std::process::id()), Default::default());
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", &t.0, "-x", "120", "-y", "40", "bash", "--norc", "--noprofile"])
            .status()
            .unwrap();
        assert!(ok.success(), "tmux new-session");
        t
    }

    fn keys(&self, keys: &[&str]) {
        assert!(
            Command::new("tmux").args(["send-keys", "-t", &self.0]).args(keys).status().unwrap().success()
        );
    }

    fn pane(&self) -> String {
        let o = Command::new("tmux").args(["capture-pane", "-p", "-t", &self.0]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn resize(&self, w: u16, h: u16) {
        let (w, h) = (w.to_string(), h.to_string());
        let ok = Command::new("tmux").args(["resize-window", "-t", &self.0, "-x", &w, "-y", &h]).status();
        assert!(ok.unwrap().success(), "tmux resize-window");
    }

    /// The pid of the process running in the pane's shell (bbrtop), waiting (bounded) for it.
    fn child_pid(&self) -> u32 {
        let o = Command::new("tmux").args(["display", "-p", "-t", &self.0, "#{pane_pid}"]).output().unwrap();
        let shell = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let t = Instant::now();
        loop {
            let children =
                std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap_or_default();
            // bbrtop's own process: the shell may still have another child (a command
            // substitution typed before) when bbrtop starts.
            let bbrtop = children.split_whitespace().find(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "bbrtop")
            });
            if let Some(pid) = bbrtop.and_then(|p| p.parse().ok()) {
                return pid;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "no process under the pane's shell {shell}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts `bbrtop --lab` and waits for its first full screen; returns its pid.
    fn launch(&self, extra: &str) -> (u32, String) {
        self.keys(&[&format!("{} --lab {extra}", env!("CARGO_BIN_EXE_bbrtop")), "Enter"]);
        let pid = self.child_pid();
        self.1.borrow_mut().push(pid);
        (pid, self.wait_for("2 sockets: bbr 1, cubic 1"))
    }

    /// After bbrtop has gone: the shell runs a command, the terminal modes are those saved in $S0
    /// before bbrtop started (raw mode is off), the TUI's screen is gone, and so is its lab.
    fn back_at_shell(&self, pid: u32, how: &str) {
        // Keys typed before bbrtop has exited would go to it, not to the shell.
        let t = Instant::now();
        while std::path::Path::new(&format!("/proc/{pid}")).exists() {
            assert!(t.elapsed() < Duration::from_secs(20), "after {how}, bbrtop {pid} runs on");
            std::thread::sleep(Duration::from_millis(100));
        }
        self.keys(&[r#"[ "$(stty -g)" = "$S0" ] && echo same-$((40+2)) || echo changed-$((40+2))"#, "Enter"]);
        let t = Instant::now();
        let p = loop {
            let p = self.pane();
            if p.contains("same-42") || p.contains("changed-42") {
                break p;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "after {how}, the shell never answered:\n{p}");
            std::thread::sleep(Duration::from_millis(150));
        };
        assert!(p.contains("same-42"), "after {how}, the terminal modes differ from before:\n{p}");
        assert!(!p.contains("collectors:"), "after {how}, the TUI's screen is still shown:\n{p}");
        let left = namespaces(&format!("bbrtop-{pid}-"));
        assert!(left.is_empty(), "after {how}, its lab is left: {left:?}");
        self.keys(&["clear", "Enter"]);
    }

    /// Starts bbrtop on this host's own sockets, which needs no privilege, and waits for its
    /// screen; returns its pid.
    fn launch_on_host(&self) -> u32 {
        self.keys(&[&format!("{} --no-collector.bpf", env!("CARGO_BIN_EXE_bbrtop")), "Enter"]);
        let pid = self.child_pid();
        self.1.borrow_mut().push(pid);
        self.wait_for("collectors:");
        pid
    }

    /// Waits (bounded) until the pane shows `want`; returns the pane.
    fn wait_for(&self, want: &str) -> String {
        let t = Instant::now();
        loop {
            let p = self.pane();
            if p.contains(want) {
                return p;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "pane never showed {want:?}:\n{p}");
            std::thread::sleep(Duration::from_millis(150));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).status();
        for pid in self.1.borrow().iter() {
            stop(*pid);
        }
    }
}

/// Ends a bbrtop this test started, if it still runs: SIGTERM, then SIGKILL after 5 s and the
/// removal of the lab it could not tear down.
fn stop(pid: u32) {
    let alive = || std::path::Path::new(&format!("/proc/{pid}")).exists();
    if !alive() {
        return;
    }
    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    let t = Instant::now();
    while alive() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if alive() {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        while alive() && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new(env!("CARGO_BIN_EXE_bbrtop")).args(["lab", "--cleanup"]).status();
    }
}

#[test]
fn root_tui_on_a_lab_flow_answers_keys_and_restores_the_shell() {
    if !guard::lab("tmux TUI test") || !have("tmux") {
        return;
    }
    let t = Tmux::start("keys");
    t.keys(&["S0=$(stty -g)", "Enter"]);
    let (pid, p) = t.launch("");
    assert!(p.contains("collectors: netlink: ok"), "{p}");
    assert!(p.contains(&format!("netns bbrtop-{pid}-")), "the header names the lab's namespace:\n{p}");
    // Sorted by inflation by default. Waited for: a capture can catch the header written and the
    // table under it not yet (one CI run did).
    t.wait_for("INFL↓");

    t.keys(&["s"]);
    t.wait_for("sort: PACING ↓");
    t.keys(&["/", "c", "c", " ", "b", "b", "r", "Enter"]);
    let p = t.wait_for("filter: cc bbr");
    assert!(p.contains("sockets (1)"), "the filter keeps the BBR flow only:\n{p}");
    t.keys(&["/", "C-u", "port x", "Enter"]);
    let p = t.wait_for("invalid port");
    assert!(p.contains("kept: \"cc bbr\""), "a bad filter keeps the previous one:\n{p}");
    // `not` inverts, and the views of sockets follow: the CUBIC flow alone, in view 2 too.
    t.keys(&["/", "C-u", "not cc bbr", "Enter"]);
    let p = t.wait_for("filter: not cc bbr");
    assert!(p.contains("sockets (1)") && p.contains(" cubic "), "{p}");
    t.keys(&["2"]);
    let p = t.wait_for("filtered: 1 of 2 sockets");
    assert!(!p.lines().any(|l| l.starts_with("bbr ")), "no BBR row under the filter:\n{p}");
    t.keys(&["1", "c"]);
    t.wait_for("sockets (2)");
    t.keys(&["Enter"]);
    // A capture can catch the terminal mid-frame (a CI run saw the charts without the ribbon
    // below them): wait for the pane's charts and its ribbon both.
    let p = support::poll_until(Duration::from_secs(30), || {
        Some(t.pane()).filter(|p| p.contains("  pacing ") && p.contains("phases"))
    })
    .unwrap_or_else(|| panic!("the detail pane never showed its charts and ribbon:\n{}", t.pane()));
    assert!(p.contains("srtt ") && p.contains("cwnd "), "the detail pane's charts:\n{p}");
    assert!(p.contains("phases over") || p.contains("no BBR phases: cubic"), "the ribbon:\n{p}");
    t.keys(&["2"]);
    let p = t.wait_for("per congestion control");
    assert!(p.contains("bbr") && p.contains("cubic"), "{p}");
    t.keys(&["3"]);
    t.wait_for("TcpRttInflation");
    t.keys(&["4"]);
    t.wait_for("closed flows");
    t.keys(&["?"]);
    t.wait_for("this help");
    t.keys(&["?", "1"]);
    // The columns that do not fit at 120 are a scroll away.
    t.keys(&["Right"; 10]);
    let p = t.wait_for("LIMIT");
    assert!(p.contains("RETR") && p.contains("GAINS"), "{p}");
    t.keys(&["Left"; 10]);
    t.wait_for("PEER");
    // Resizing: below 80x24 a message, at 80x24 the table again.
    t.resize(70, 20);
    t.wait_for("terminal too small: 70x20");
    t.resize(80, 24);
    let p = t.wait_for("sockets (2)");
    assert!(p.contains("LOCAL") && !p.contains("too small"), "{p}");
    t.keys(&["q"]);
    t.back_at_shell(pid, "q");

    // Ctrl-C is a key in raw mode: it quits the same way.
    let (pid, _) = t.launch("");
    t.keys(&["C-c"]);
    t.back_at_shell(pid, "Ctrl-C");

    // SIGTERM from outside: the loop notices, restores the terminal and tears the lab down.
    // With stderr to a file: nothing is written there while the TUI is up; logs go to --log.file.
    let dir = tempfile::tempdir().unwrap();
    let (err, log) = (dir.path().join("stderr"), dir.path().join("log"));
    let (pid, _) = t.launch(&format!("--log.file {} 2>{}", log.display(), err.display()));
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    t.back_at_shell(pid, "SIGTERM");
    assert_eq!(std::fs::read_to_string(&err).unwrap(), "", "bbrtop wrote to stderr");
    let log = std::fs::read_to_string(&log).unwrap();
    // logfmt lines, the lab's name among the fields, and the last one the exit.
    let last = log.lines().last().unwrap_or_default();
    assert!(log.contains(" lab=bbrtop-") && last.contains("message=exit"), "the log file:\n{log}");
}

/// SIGUSR1 (the exporter's dump signal) neither ends the TUI nor leaves the terminal raw: it goes
/// on answering keys, and `q` then restores the shell. On main SIGUSR1 killed it (exit 138, the
/// terminal left raw; with `--lab`, its namespaces left behind).
fn goes_on_after_sigusr1(t: &Tmux, pid: u32) {
    assert!(Command::new("kill").args(["-USR1", &pid.to_string()]).status().unwrap().success());
    t.keys(&["?"]);
    t.wait_for("this help");
    t.keys(&["?", "q"]);
    t.back_at_shell(pid, "SIGUSR1, then q");
}

#[test]
fn root_tui_on_a_lab_goes_on_after_sigusr1() {
    if !guard::lab("tmux TUI test") || !have("tmux") {
        return;
    }
    let t = Tmux::start("usr1-lab");
    t.keys(&["S0=$(stty -g)", "Enter"]);
    let (pid, _) = t.launch("");
    goes_on_after_sigusr1(&t, pid);
}

/// The same for the TUI on this host's own sockets, which needs no privilege.
#[test]
fn tui_goes_on_after_sigusr1() {
    if !have("tmux") {
        return;
    }
    let t = Tmux::start("usr1");
    t.keys(&["S0=$(stty -g)", "Enter"]);
    let pid = t.launch_on_host();
    goes_on_after_sigusr1(&t, pid);
}

/// The `/` prompt in a real terminal: a bad filter is said in place and kept for mending, and the
/// line editor's keys (Ctrl-A, Ctrl-U, Ctrl-K, arrows) work. On this host's own sockets: no
/// privilege.
#[test]
fn tui_prompt_edits_and_says_what_it_did() {
    if !have("tmux") {
        return;
    }
    let t = Tmux::start("prompt");
    t.keys(&["S0=$(stty -g)", "Enter"]);
    let pid = t.launch_on_host();
    t.keys(&["/", "srtt > 100", "Enter"]);
    let p = t.wait_for("expected a time such as 100ms");
    assert!(p.contains("filter \"srtt > 100\"") && p.contains("(kept: \"\")"), "{p}");
    // `/` opens what was typed; mended at both ends, it applies.
    t.keys(&["/", "ms", "C-a", "not ", "Enter"]);
    t.wait_for("filter: not srtt > 100ms");
    t.keys(&["/", "C-u", "cc bbr", "Left", "Left", "Left", "C-k", "cubic", "Home", "!", "Enter"]);
    t.wait_for("filter: !cc cubic");
    t.keys(&["/", "C-e", " and", "Enter"]);
    let p = t.wait_for("needs a word on each side");
    assert!(p.contains("(kept: \"!cc cubic\")"), "{p}");
    t.keys(&["q"]);
    t.back_at_shell(pid, "q");
}

/// Closing the terminal (its window, its ssh session) ends bbrtop, lab included, within seconds:
/// crossterm alone would spin on the hung-up terminal and never see the stop flag.
#[test]
fn root_tui_ends_with_its_lab_when_the_terminal_goes_away() {
    if !guard::lab("tmux TUI test") || !have("tmux") {
        return;
    }
    let t = Tmux::start("hangup");
    let (pid, _) = t.launch("");
    assert!(Command::new("tmux").args(["kill-session", "-t", &t.0]).status().unwrap().success());
    let started = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "bbrtop {pid} runs on after its terminal closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let left = namespaces(&format!("bbrtop-{pid}-"));
    assert!(left.is_empty(), "after the terminal closed, its lab is left: {left:?}");
}

#[test]
fn without_a_terminal_it_says_so_in_one_line_and_exits_2() {
    for args in [&[][..], &["--lab"][..]] {
        let o = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("needs a terminal") && err.lines().count() == 1, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}: no escape sequences on a pipe");
    }
}
