//! The TUI in a real terminal: `bbrtop --lab` in tmux, driven by keys, read back from the pane,
//! and the shell usable after quitting. Privileged (the lab).

use bbrtop::lab::privileged;
use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux(String);

impl Tmux {
    fn start() -> Tmux {
        let t = Tmux(format!("bbrtop-test-{}", std::process::id()));
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
    }
}

#[test]
fn tui_on_a_lab_flow_answers_keys_and_restores_the_shell() {
    if !privileged("tmux TUI test") {
        return;
    }
    let t = Tmux::start();
    t.keys(&[&format!("{} --lab", env!("CARGO_BIN_EXE_bbrtop")), "Enter"]);
    let p = t.wait_for("2 sockets: bbr 1, cubic 1");
    assert!(p.contains("collectors: netlink: ok"), "{p}");
    assert!(p.contains("INFL↓"), "sorted by inflation by default:\n{p}");

    t.keys(&["s"]);
    t.wait_for("sort: PACING ↓");
    t.keys(&["/", "c", "c", " ", "b", "b", "r", "Enter"]);
    let p = t.wait_for("filter: cc bbr");
    assert!(p.contains("sockets (1)"), "the filter keeps the BBR flow only:\n{p}");
    t.keys(&[
        "/", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace", "BSpace", "p", "o", "r", "t", " ", "x",
        "Enter",
    ]);
    let p = t.wait_for("invalid port");
    assert!(p.contains("kept: \"cc bbr\""), "a bad filter keeps the previous one:\n{p}");
    t.keys(&["c"]);
    t.wait_for("sockets (2)");
    t.keys(&["Enter"]);
    let p = t.wait_for("phases over");
    assert!(p.contains("srtt ") && p.contains("cwnd "), "the detail pane's charts:\n{p}");
    t.keys(&["2"]);
    let p = t.wait_for("per congestion control");
    assert!(p.contains("bbr") && p.contains("cubic"), "{p}");
    t.keys(&["3"]);
    t.wait_for("TcpRttInflation");
    t.keys(&["4"]);
    t.wait_for("closed flows");
    t.keys(&["?"]);
    t.wait_for("this help");
    t.keys(&["q"]);
    // Back at the shell: it runs a command and the screen is the normal one.
    t.keys(&["echo done-$((40+2))", "Enter"]);
    let p = t.wait_for("done-42");
    assert!(!p.contains("collectors:"), "the TUI's screen is gone:\n{p}");
    // The lab is gone: no lab namespace belongs to a process that has exited.
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    for ns in String::from_utf8_lossy(&left.stdout).lines() {
        if let Some(pid) =
            ns.strip_prefix("bbrtop-").and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok())
        {
            assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "left behind: {ns}");
        }
    }
}
