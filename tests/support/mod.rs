//! What the integration tests share. Each test file declares `mod support;` and uses a part of
//! it, hence the allow below.
#![allow(dead_code)]

pub mod btf;
pub mod exporter;
pub mod grafana;
pub mod guard;
pub mod http;
pub mod lab;
pub mod servers;
pub mod tmux;
pub mod tools;

use std::process::Child;
use std::time::{Duration, Instant};

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

/// A process's resident set, in KiB (0 once it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap_or("0");
    line.trim().trim_end_matches("kB").trim().parse().unwrap_or(0)
}
