//! Which process owns a socket: a /proc/*/fd scan by socket inode, on a thread of its own every
//! few seconds, so the render path only reads a cached map. "-" where we may not look.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Socket inode to (pid, command).
pub type Owners = HashMap<u32, (u32, String)>;

/// One scan of /proc: every `socket:[inode]` fd of every process we can read.
pub fn scan() -> Owners {
    let mut out = Owners::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return out };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else { continue };
        let mut comm = None;
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else { continue };
            let Some(inode) = socket_inode(&target.to_string_lossy()) else { continue };
            let c = comm.get_or_insert_with(|| {
                std::fs::read_to_string(p.path().join("comm"))
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default()
            });
            out.insert(inode, (pid, c.clone()));
        }
    }
    out
}

/// The inode of a `socket:[12345]` link target.
pub fn socket_inode(link: &str) -> Option<u32> {
    link.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// The scanner thread and its latest result.
pub struct ProcTable {
    latest: Arc<Mutex<Arc<Owners>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ProcTable {
    pub fn start(every: Duration) -> ProcTable {
        let latest = Arc::new(Mutex::new(Arc::new(Owners::new())));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (Arc::clone(&latest), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("bbrtop-procs".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    let owners = Arc::new(scan());
                    *l.lock().unwrap_or_else(|e| e.into_inner()) = owners;
                    let next = Instant::now() + every;
                    while !s.load(Ordering::Relaxed) && Instant::now() < next {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            })
            .ok();
        ProcTable { latest, stop, thread }
    }

    /// No scan: the sockets shown are not this host's now (another host's, a recording's).
    pub fn none() -> ProcTable {
        let latest = Arc::new(Mutex::new(Arc::new(Owners::new())));
        ProcTable { latest, stop: Arc::new(AtomicBool::new(true)), thread: None }
    }

    pub fn owners(&self) -> Arc<Owners> {
        Arc::clone(&self.latest.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for ProcTable {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_our_own_socket() {
        assert_eq!(socket_inode("socket:[4242]"), Some(4242));
        assert_eq!(socket_inode("pipe:[4242]"), None);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let owners = scan();
        let me = std::process::id();
        assert!(owners.values().any(|(pid, _)| *pid == me), "our listener's inode maps to our pid");
        drop(l);
    }
}
