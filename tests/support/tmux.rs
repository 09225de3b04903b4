//! A terminal for the TUI tests: a tmux session running bash, keys sent in, the pane read back,
//! and a check that the shell got its terminal back as it was. Killing the session on drop hangs
//! up on whatever runs in it, which ends a TUI.

use std::process::Command;
use std::time::Duration;

pub struct Tmux(String);

impl Tmux {
    /// A 120x40 session named for the process and `test` (tests run side by side), with the
    /// terminal's modes saved in $S0 for [`Tmux::back_at_shell`].
    pub fn start(test: &str) -> Tmux {
        let t = Tmux(format!("bbrtop-test-{}-{test}", std::process::id()));
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", &t.0, "-x", "120", "-y", "40", "bash", "--norc", "--noprofile"])
            .status()
            .unwrap();
        assert!(ok.success(), "tmux new-session");
        t.keys(&["S0=$(stty -g); clear", "Enter"]);
        t
    }

    /// Keys by tmux's names (Enter, Space, C-c), or words typed as they are.
    pub fn keys(&self, keys: &[&str]) {
        assert!(
            Command::new("tmux").args(["send-keys", "-t", &self.0]).args(keys).status().unwrap().success()
        );
    }

    /// Text sent literally (`{`, `;` and the like are not key names here).
    pub fn type_text(&self, text: &str) {
        let ok = Command::new("tmux").args(["send-keys", "-l", "-t", &self.0, text]).status().unwrap();
        assert!(ok.success());
    }

    /// The pid of the pane's process (the program a command `exec`ed in place of the shell).
    pub fn pane_pid(&self) -> u32 {
        let o = Command::new("tmux").args(["display", "-p", "-t", &self.0, "#{pane_pid}"]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim().parse().expect("a pane pid")
    }

    pub fn pane(&self) -> String {
        let o = Command::new("tmux").args(["capture-pane", "-p", "-t", &self.0]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Waits (bounded) until the pane shows `want`; returns the pane.
    pub fn wait_for(&self, want: &str) -> String {
        super::poll_until(Duration::from_secs(30), || Some(self.pane()).filter(|p| p.contains(want)))
            .unwrap_or_else(|| panic!("pane never showed {want:?}:\n{}", self.pane()))
    }

    /// After a TUI was told to go (`how`): its screen leaves, the shell runs a command, and the
    /// terminal's modes are those saved before it started (raw mode is off).
    pub fn back_at_shell(&self, how: &str) {
        // Keys typed before the terminal is given back would go to the TUI.
        super::poll_until(Duration::from_secs(30), || {
            Some(()).filter(|_| !self.pane().contains("collectors:"))
        })
        .unwrap_or_else(|| panic!("after {how}, the TUI's screen is still shown:\n{}", self.pane()));
        self.keys(&[r#"[ "$(stty -g)" = "$S0" ] && echo same-$((40+2)) || echo changed-$((40+2))"#, "Enter"]);
        let p = super::poll_until(Duration::from_secs(30), || {
            Some(self.pane()).filter(|p| p.contains("same-42") || p.contains("changed-42"))
        })
        .unwrap_or_else(|| panic!("after {how}, the shell never answered:\n{}", self.pane()));
        assert!(p.contains("same-42"), "after {how}, the terminal modes differ from before:\n{p}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).status();
    }
}
