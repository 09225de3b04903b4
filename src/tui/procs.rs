//! Which process owns a socket: a /proc/*/fd scan by socket inode, on a thread of its own, so the
//! render path only reads a cached map. "-" where we may not look. The filter's `process` word
//! reads the same map ([`Held`]).
//!
//! A scan reads every socket descriptor of every process, which at 100k sockets costs more than
//! everything else the TUI does (a second of CPU), and only the rows on screen show an owner; so
//! it runs when a socket on screen has an owner no scan has looked for (at most every few
//! seconds: a socket that came, a row scrolled into view), and otherwise once a minute, for the
//! owners that change under a socket that stays (a descriptor passed on, a parent that exits
//! after a fork). Sockets coming and going off screen cost nothing here, unless the filter says
//! `process`: it is then true or false of every socket, and the scan runs every few seconds.

use crate::worker::Worker;
use bbrtop_core::columns::Column;
use bbrtop_core::filter::{Place, Process, Subject};
use bbrtop_core::model::TcpState;
use bbrtop_core::snapshot::SocketView;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
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

/// How often the owners are scanned when every socket on screen has been looked for.
const REFRESH: Duration = Duration::from_secs(60);

/// Whether a scan is due `since` the last: a socket on screen is `missing` and `every` has
/// passed, or [`REFRESH`] has.
fn due(since: Duration, missing: bool, every: Duration) -> bool {
    since >= REFRESH || (missing && since >= every)
}

/// A socket as the filter sees it in the TUI: with who holds it, from the latest scan, so that
/// `process` is true or false of it. A socket no process we may read holds (or with no inode,
/// in TIME-WAIT) is held by none asked for; before any scan, by whom is unknown.
pub struct Held<'a> {
    view: &'a SocketView,
    owners: Option<&'a Arc<Owners>>,
}

impl<'a> Held<'a> {
    pub fn new(view: &'a SocketView, owners: Option<&'a Arc<Owners>>) -> Held<'a> {
        Held { view, owners }
    }
}

impl Subject for Held<'_> {
    fn ends(&self) -> (&str, SocketAddr, SocketAddr) {
        self.view.ends()
    }
    fn state(&self) -> Option<TcpState> {
        self.view.state()
    }
    fn place(&self, p: &Place) -> Option<bool> {
        self.view.place(p)
    }
    fn sending(&self) -> Option<bool> {
        self.view.sending()
    }
    fn value(&self, c: &Column) -> Option<f64> {
        self.view.value(c)
    }
    fn process(&self, p: &Process) -> Option<bool> {
        let owners = self.owners?;
        Some(owners.get(&self.view.record.inode).is_some_and(|(pid, comm)| p.is(*pid, comm)))
    }
}

/// The sockets on screen, as the scanner sees them.
#[derive(Default)]
struct Wanted {
    /// Their inodes, as the last frame drawn showed them.
    shown: Vec<u32>,
    /// Those the last scan looked for (found or not: a socket no process we may read holds is
    /// not looked for again until the refresh).
    searched: HashSet<u32>,
    /// A socket on screen that no scan has looked for.
    missing: bool,
    /// The filter asks who holds every socket (`process`): scan every `every`.
    all: bool,
}

/// Whether one of the inodes `shown` was neither found nor looked for (0: no inode, as in
/// TIME-WAIT, is never looked for).
fn missing(shown: &[u32], owners: &Owners, searched: &HashSet<u32>) -> bool {
    shown.iter().any(|i| *i != 0 && !owners.contains_key(i) && !searched.contains(i))
}

/// How often the scanner looks whether a scan is due.
const LOOK: Duration = Duration::from_millis(100);

/// The scanner thread (stopped and joined when dropped) and its latest result.
pub struct ProcTable {
    latest: Arc<Mutex<Arc<Owners>>>,
    wanted: Arc<Mutex<Wanted>>,
    scanner: Option<Worker>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ProcTable {
    /// Scans now, then within `every` of a socket on screen whose owner no scan looked for, and
    /// each [`REFRESH`] (see the module's words).
    pub fn start(every: Duration) -> ProcTable {
        let latest = Arc::new(Mutex::new(Arc::new(Owners::new())));
        let wanted = Arc::new(Mutex::new(Wanted::default()));
        let (l, w) = (Arc::clone(&latest), Arc::clone(&wanted));
        let mut last: Option<Instant> = None;
        let scanner = Worker::start("bbrtop-procs", LOOK, move |now| {
            let want = {
                let w = locked(&w);
                w.missing || w.all
            };
            if last.is_none_or(|t| due(now - t, want, every)) {
                // What is on screen now is what this scan looks for; a socket that comes on
                // screen during it asks for the next.
                {
                    let mut w = locked(&w);
                    w.missing = false;
                    w.searched = w.shown.iter().copied().collect();
                }
                last = Some(now);
                let owners = Arc::new(scan());
                *locked(&l) = owners;
            }
            ControlFlow::Continue(())
        })
        .ok();
        ProcTable { latest, wanted, scanner }
    }

    /// Tells the scanner the inodes of the sockets on screen: one whose owner no scan has looked
    /// for makes a scan due. Nothing without a scanner.
    pub fn shown(&self, inodes: Vec<u32>) {
        if self.scanner.is_none() {
            return;
        }
        let owners = self.owners();
        let mut w = locked(&self.wanted);
        w.missing |= missing(&inodes, &owners, &w.searched);
        w.shown = inodes;
    }

    /// Whether the filter asks who holds every socket (it says `process`): scans then come every
    /// few seconds, not only for the sockets on screen.
    pub fn want_all(&self, all: bool) {
        locked(&self.wanted).all = all;
    }

    /// No scan: the sockets shown are not this host's now (another host's, a recording's).
    pub fn none() -> ProcTable {
        let latest = Arc::new(Mutex::new(Arc::new(Owners::new())));
        ProcTable { latest, wanted: Arc::new(Mutex::new(Wanted::default())), scanner: None }
    }

    /// Whether it scans at all (it reads this host's /proc for this host's sockets).
    pub fn scans_here(&self) -> bool {
        self.scanner.is_some()
    }

    pub fn owners(&self) -> Arc<Owners> {
        Arc::clone(&locked(&self.latest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket on screen is looked for within `every`; with none missing, owners are read again
    /// each minute.
    #[test]
    fn scans_are_due_for_sockets_on_screen_or_once_a_minute() {
        let (every, s) = (Duration::from_secs(5), Duration::from_secs);
        assert!(!due(s(4), true, every));
        assert!(due(s(5), true, every));
        assert!(!due(s(59), false, every));
        assert!(due(s(60), false, every));
        let owners: Owners = [(7, (1, "nginx".to_string()))].into_iter().collect();
        let searched: HashSet<u32> = [8].into_iter().collect();
        assert!(!missing(&[7, 8, 0], &owners, &searched), "found, looked for, no inode");
        assert!(missing(&[7, 9], &owners, &searched), "9 came on screen since");
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
