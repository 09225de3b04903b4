//! A tmux session for the TUI tests: keys in, the pane read back, and the bbrtop processes it
//! started ended (by PID) when it drops, so a failed test leaves no TUI running.

use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux session, and the bbrtop processes started in it: dropping it ends both, so a failed
/// test leaves no TUI running (by PID, only those it started).
pub struct Tmux(pub String, pub std::cell::RefCell<Vec<u32>>);

impl Tmux {
    /// A session named for the process and `test`, since tests run side by side.
    pub fn start(test: &str) -> Tmux {
        let t = Tmux(format!("bbrtop-test-{}-{test}", std::process::id()), Default::default());
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", &t.0, "-x", "120", "-y", "40", "bash", "--norc", "--noprofile"])
            .status()
            .unwrap();
        assert!(ok.success(), "tmux new-session");
        t
    }

    pub fn keys(&self, keys: &[&str]) {
        assert!(
            Command::new("tmux").args(["send-keys", "-t", &self.0]).args(keys).status().unwrap().success()
        );
    }

    pub fn pane(&self) -> String {
        let o = Command::new("tmux").args(["capture-pane", "-p", "-t", &self.0]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub fn resize(&self, w: u16, h: u16) {
        let (w, h) = (w.to_string(), h.to_string());
        let ok = Command::new("tmux").args(["resize-window", "-t", &self.0, "-x", &w, "-y", &h]).status();
        assert!(ok.unwrap().success(), "tmux resize-window");
    }

    /// The pid of the process running in the pane's shell (bbrtop), waiting (bounded) for it.
    pub fn child_pid(&self) -> u32 {
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

    /// Types `bbrtop ARGS` at the shell and returns the pid of the bbrtop it starts, which the
    /// session ends on drop if it still runs.
    pub fn run_bbrtop(&self, args: &str) -> u32 {
        self.keys(&[&format!("{} {args}", env!("CARGO_BIN_EXE_bbrtop")), "Enter"]);
        let pid = self.child_pid();
        self.1.borrow_mut().push(pid);
        pid
    }

    /// Waits (bounded) until the pane shows `want`; returns the pane.
    pub fn wait_for(&self, want: &str) -> String {
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
pub fn stop(pid: u32) {
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
