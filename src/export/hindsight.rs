//! Hindsight in `bbrtop export`: a thread feeds every published snapshot to
//! `record::Hindsight` (spooled to disk, or held in memory), and writes what it holds as a recording when asked: SIGUSR1, or an
//! authenticated `POST /api/hindsight`. So the minutes before an alert can be kept after it fired.

use crate::record::hindsight::{Dumped, Hindsight};
use crate::runtime::Published;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// The least time between two dumps asked for over HTTP: each writes the whole window (up to
/// `--hindsight.max-size`) to disk, so a script or a stolen password must not fill the disk with
/// copies. SIGUSR1, which only the host's own users can send, is not limited.
pub const HTTP_DUMP_GAP: Duration = Duration::from_secs(60);

/// The held minutes, shared by the feeding thread and the HTTP handler.
pub struct Keeper {
    held: Mutex<Hindsight>,
    /// Where dumps go: a new recording directory under it each time.
    dir: PathBuf,
    /// When the last dump asked for over HTTP was written.
    last_http: Mutex<Option<Instant>>,
    /// What the held minutes take in memory and in the spool (if spooled) after the last push,
    /// for scrapes to read without waiting for the lock a push holds.
    memory_bytes: AtomicU64,
    spool_bytes: Option<AtomicU64>,
}

/// Why a dump asked for over HTTP was not written.
#[derive(Debug)]
pub enum Refused {
    /// The last one is younger than [`HTTP_DUMP_GAP`]: ask again after this long.
    TooSoon(Duration),
    Failed(anyhow::Error),
}

/// How long until the next HTTP dump may be written, if it may not be now.
fn wait_left(last: Option<Instant>, now: Instant) -> Option<Duration> {
    let since = now.saturating_duration_since(last?);
    (since < HTTP_DUMP_GAP).then(|| HTTP_DUMP_GAP - since)
}

impl Keeper {
    pub fn new(held: Hindsight, dir: PathBuf) -> Arc<Keeper> {
        let memory_bytes = AtomicU64::new(held.memory_bytes());
        let spool_bytes = held.spool_bytes().map(AtomicU64::new);
        Arc::new(Keeper {
            held: Mutex::new(held),
            dir,
            last_http: Mutex::default(),
            memory_bytes,
            spool_bytes,
        })
    }

    /// Bytes the held minutes take in memory: the encoder's buffers, and the finished chunks
    /// when they are not spooled.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes.load(Ordering::Relaxed)
    }

    /// Bytes of the spool's files; `None` when hindsight is held in memory.
    pub fn spool_bytes(&self) -> Option<u64> {
        self.spool_bytes.as_ref().map(|b| b.load(Ordering::Relaxed))
    }

    /// What the scrapes read, as of now.
    fn note_bytes(&self, held: &Hindsight) {
        self.memory_bytes.store(held.memory_bytes(), Ordering::Relaxed);
        if let (Some(b), Some(v)) = (&self.spool_bytes, held.spool_bytes()) {
            b.store(v, Ordering::Relaxed);
        }
    }

    /// A dump asked for over HTTP at `now`: at most one per [`HTTP_DUMP_GAP`]. A dump that
    /// failed (nothing held yet, a full disk) does not count.
    pub fn dump_requested(&self, now: Instant) -> Result<Dumped, Refused> {
        let mut last = self.last_http.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(left) = wait_left(*last, now) {
            return Err(Refused::TooSoon(left));
        }
        let d = self.dump().map_err(Refused::Failed)?;
        *last = Some(now);
        Ok(d)
    }

    /// Writes what is held as a recording; the pushes wait meanwhile (they are a poll apart).
    pub fn dump(&self) -> anyhow::Result<Dumped> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let d = held.dump(&self.dir, SystemTime::now());
        self.note_bytes(&held);
        let d = d?;
        tracing::info!(dir = %d.dir.display(), polls = d.polls, bytes = d.bytes, memory_bytes = d.memory_bytes, "hindsight written");
        if !d.errors.is_empty() {
            tracing::warn!(dir = %d.dir.display(), "hindsight written without what could not be read: {}", d.errors.join("; "));
        }
        Ok(d)
    }

    /// Feeds every snapshot `published` gets until `stop`; dumps whenever `wanted` is set (by
    /// SIGUSR1).
    pub fn start(
        self: &Arc<Keeper>,
        published: Arc<Published>,
        stop: Arc<AtomicBool>,
        wanted: Arc<AtomicBool>,
    ) -> std::io::Result<JoinHandle<()>> {
        let me = Arc::clone(self);
        std::thread::Builder::new().name("bbrtop-hindsight".into()).spawn(move || {
            let mut seq = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Some(snap) = published.wait_newer(seq, Duration::from_millis(250)) {
                    seq = snap.seq;
                    let mut held = me.held.lock().unwrap_or_else(|e| e.into_inner());
                    if let Err(e) = held.push(&snap) {
                        tracing::warn!("hindsight: {e:#}");
                    }
                    me.note_bytes(&held);
                }
                if wanted.swap(false, Ordering::Relaxed)
                    && let Err(e) = me.dump()
                {
                    tracing::warn!("hindsight not written: {e:#}");
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dumps_are_a_gap_apart() {
        let t0 = Instant::now();
        assert_eq!(wait_left(None, t0), None, "the first is written");
        assert_eq!(wait_left(Some(t0), t0 + Duration::from_secs(1)), Some(Duration::from_secs(59)));
        assert_eq!(wait_left(Some(t0), t0 + HTTP_DUMP_GAP), None);
        assert_eq!(
            wait_left(Some(t0 + Duration::from_secs(5)), t0),
            Some(HTTP_DUMP_GAP),
            "a clock read early"
        );
    }
}
