//! What the integration tests share. Each test file declares `mod support;` and uses a part of
//! it, hence the allow below.
#![allow(dead_code)]

pub mod alert_rig;
pub mod btf;
pub mod cgroup;
pub mod daemonset;
pub mod duckdb;
#[cfg(feature = "bpf")]
pub mod events;
pub mod experiment;
pub mod exporter;
pub mod grafana;
pub mod guard;
pub mod holder;
pub mod http;
pub mod lab;
pub mod otelcol;
pub mod packages;
pub mod reference;
#[cfg(feature = "bpf")]
pub mod refill;
pub mod servers;
pub mod tmux;
pub mod tools;
pub mod watch;

use std::process::Child;
use std::time::{Duration, Instant};

/// Starts a server whose first line on stdout is the port it listens on; it, and that port.
pub fn serving(mut cmd: std::process::Command) -> (Proc, u16) {
    use std::io::BufRead;
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().expect("the server starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().parse().unwrap_or_else(|_| panic!("server's port: {line:?}"));
    (Proc(child), port)
}

/// The `q` quantile of `sorted` (nearest rank), in seconds.
pub fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let at = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at].as_secs_f64()
}

/// Polls `f` every 100 ms until it returns Some, at most `limit`.
pub fn poll_until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process killed (by its PID) and reaped on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `--hindsight.dir=DIR` for an exporter under test, and DIR (removed on drop, so it must drop
/// after the exporter): tests never spool hindsight into the host's /var/lib/bbrtop.
pub fn hindsight_dir() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().expect("tempdir");
    let flag = format!("--hindsight.dir={}", d.path().display());
    (d, flag)
}

/// An exporter under test, and its hindsight directory, removed once the exporter has ended.
pub struct Exporter {
    pub proc: Proc,
    pub _hindsight: tempfile::TempDir,
}

/// A process's resident set, in KiB (0 once it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap_or("0");
    line.trim().trim_end_matches("kB").trim().parse().unwrap_or(0)
}

/// `bbrtop ARGS` with no terminal on stdin, which must fail as a usage error: exit 2 and one line
/// on stderr. Returns that line.
pub fn usage_error<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("bbrtop runs");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    err
}

/// Sends `signal` (`USR1`, `INT`, `TERM`...) to `pid`, a process the test started.
pub fn signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status();
    assert!(sent.is_ok_and(|s| s.success()), "kill -{signal} {pid}");
}

/// Waits at most `limit` for `child` to exit: its status, or None while it still runs.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    poll_until(limit, || child.try_wait().expect("wait"))
}

/// `scripts/mmdb_write.py` (mmdb-writer, from scripts/setup.sh) writes `spec` as a MaxMind-format
/// database at `out`; false once its absence is said (which fails the test under CI).
pub fn mmdb_write(out: &std::path::Path, spec: &serde_json::Value) -> bool {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/mmdb-venv/bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", "import mmdb_writer"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        guard::unavailable("mmdb-writer (scripts/setup.sh installs it into target/mmdb-venv)");
        return false;
    }
    let mut child = std::process::Command::new(&python)
        .arg(root.join("scripts/mmdb_write.py"))
        .arg(out)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(spec.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success(), "mmdb_write.py {}", out.display());
    true
}
