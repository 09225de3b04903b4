//! A memory cgroup of the test's own (cgroup v1 at /sys/fs/cgroup/memory here; systemd is not
//! PID 1, so there is no scope to borrow), removed on drop.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Cgroup(PathBuf);

impl Cgroup {
    /// A new cgroup limited to `limit` bytes; `name` tells the test's cgroups apart.
    pub fn new(name: &str, limit: u64) -> Cgroup {
        let dir = PathBuf::from(format!("/sys/fs/cgroup/memory/bbrtop-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("a memory cgroup (cgroup v1 memory controller)");
        let cgroup = Cgroup(dir);
        std::fs::write(cgroup.0.join("memory.limit_in_bytes"), limit.to_string()).unwrap();
        cgroup
    }

    /// Moves a running process in (what it allocated before stays charged where it was).
    pub fn adopt(&self, pid: u32) {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).unwrap();
    }

    /// `program` started inside the cgroup from its first instruction: a shell joins the cgroup,
    /// then execs it (same PID). The caller adds the args.
    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", "echo $$ > \"$0\" && exec \"$@\""]).arg(self.0.join("cgroup.procs")).arg(program);
        c
    }

    /// One of the cgroup's counters (memory.failcnt, memory.max_usage_in_bytes...); 0 if unreadable.
    pub fn read(&self, file: &str) -> u64 {
        std::fs::read_to_string(self.0.join(file)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }

    /// The OOM kills in the cgroup (`oom_kill` in memory.oom_control).
    pub fn oom_kills(&self) -> u64 {
        let text = std::fs::read_to_string(self.0.join("memory.oom_control")).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Cgroup {
    /// Removed once empty: the caller's guards have killed its processes by then.
    fn drop(&mut self) {
        for _ in 0..20 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// The cgroup v2 hierarchy: the first cgroup2 mount (this machine's cgroups are v1 with a v2
/// hierarchy at /sys/fs/cgroup/unified; the kernel matrix's guests mount v2 at /sys/fs/cgroup).
pub fn v2() -> PathBuf {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mounts = bbrtop::experiment::attach::cgroup2_mounts(&mountinfo);
    mounts.into_iter().next().unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup/unified"))
}

/// A cgroup v2 of the test's own, removed on drop (after the processes in it are killed).
pub struct Cg2(pub PathBuf);

impl Cg2 {
    pub fn new(name: &str) -> Cg2 {
        let dir = v2().join(format!("bbrtop-exp-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("a cgroup v2 directory");
        Cg2(dir)
    }

    /// `sh -c SCRIPT ARGS...` started inside the cgroup: the shell joins it first, so whatever
    /// the script execs (`ip netns exec` included, which remounts /sys) runs there.
    pub fn shell(&self, script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", &format!("echo $$ > \"$0\" && {script}")]).arg(self.0.join("cgroup.procs"));
        c
    }
}

impl Drop for Cg2 {
    fn drop(&mut self) {
        for _ in 0..30 {
            if std::fs::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
