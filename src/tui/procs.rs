//! Which process owns a socket: a /proc/*/fd scan by socket inode, on a thread of its own, so the
//! render path only reads a cached map. "-" where we may not look.
//!
//! A scan reads every socket descriptor of every process, which at 100k sockets costs more than
//! everything else the TUI does; so it runs when sockets came that no scan has looked for (at
//! most every few seconds), and otherwise once a minute, for the owners that change under a
//! socket that stays (a descriptor passed on, a parent that exits after a fork). Idle sockets
//! then cost a scan a minute.

use bbrtop_core::snapshot::{Change, Sockets};
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

/// How often the owners are scanned when no socket came.
const REFRESH: Duration = Duration::from_secs(60);

/// Whether a scan is due `since` the last: sockets `came` since it and `every` has passed, or
/// [`REFRESH`] has.
fn due(since: Duration, came: bool, every: Duration) -> bool {
    since >= REFRESH || (came && since >= every)
}

/// The scanner thread and its latest result.
pub struct ProcTable {
    latest: Arc<Mutex<Arc<Owners>>>,
    stop: Arc<AtomicBool>,
    /// Sockets came that no scan has looked for.
    came: Arc<AtomicBool>,
    /// The sockets last looked at for new ones.
    seen: Sockets,
    thread: Option<JoinHandle<()>>,
}

impl ProcTable {
    /// Scans now, then at most every `every` while sockets come (see the module's words).
    pub fn start(every: Duration) -> ProcTable {
        let latest = Arc::new(Mutex::new(Arc::new(Owners::new())));
        let stop = Arc::new(AtomicBool::new(false));
        let came = Arc::new(AtomicBool::new(false));
        let (l, s, c) = (Arc::clone(&latest), Arc::clone(&stop), Arc::clone(&came));
        let thread = std::thread::Builder::new()
            .name("bbrtop-procs".into())
            .spawn(move || {
                let mut last: Option<Instant> = None;
                while !s.load(Ordering::Relaxed) {
                    if last.is_none_or(|t| due(t.elapsed(), c.load(Ordering::Relaxed), every)) {
                        // Cleared first: a socket that comes during the scan asks for the next.
                        c.store(false, Ordering::Relaxed);
                        last = Some(Instant::now());
                        let owners = Arc::new(scan());
                        *l.lock().unwrap_or_else(|e| e.into_inner()) = owners;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
            .ok();
        ProcTable { latest, stop, came, seen: Sockets::default(), thread }
    }

    /// Looks at `sockets` (the latest snapshot's) for sockets that came since the last look: a
    /// scan is then due. Costs what changed since; nothing without a scanner.
    pub fn look(&mut self, sockets: &Sockets) {
        if self.thread.is_none() {
            return;
        }
        if sockets.changes_since(&self.seen).any(|c| matches!(c, Change::Added(_))) {
            self.came.store(true, Ordering::Relaxed);
        }
        self.seen = sockets.clone();
    }

    /// No scan: the sockets shown are not this host's now (another host's, a recording's).
    pub fn none() -> ProcTable {
        let latest = Arc::new(Mutex::new(Arc::new(Owners::new())));
        let (stop, came) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(false)));
        ProcTable { latest, stop, came, seen: Sockets::default(), thread: None }
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

    /// New sockets are looked for within `every`; with none, owners are read again each minute.
    #[test]
    fn scans_are_due_for_new_sockets_or_once_a_minute() {
        let (every, s) = (Duration::from_secs(5), Duration::from_secs);
        assert!(!due(s(4), true, every));
        assert!(due(s(5), true, every));
        assert!(!due(s(59), false, every));
        assert!(due(s(60), false, every));
    }

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
