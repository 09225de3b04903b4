//! Hindsight in `bbrtop export`: a thread feeds every published snapshot to the in-memory
//! `record::Hindsight`, and writes what it holds as a recording when asked: SIGUSR1, or an
//! authenticated `POST /api/hindsight`. So the minutes before an alert can be kept after it fired.

use crate::record::hindsight::{Dumped, Hindsight};
use crate::runtime::Published;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// The held minutes, shared by the feeding thread and the HTTP handler.
pub struct Keeper {
    held: Mutex<Hindsight>,
    /// Where dumps go: a new recording directory under it each time.
    dir: PathBuf,
}

impl Keeper {
    pub fn new(held: Hindsight, dir: PathBuf) -> Arc<Keeper> {
        Arc::new(Keeper { held: Mutex::new(held), dir })
    }

    /// Writes what is held as a recording; the pushes wait meanwhile (they are a poll apart).
    pub fn dump(&self) -> anyhow::Result<Dumped> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let d = held.dump(&self.dir, SystemTime::now())?;
        tracing::info!(dir = %d.dir.display(), polls = d.polls, bytes = d.bytes, memory_bytes = d.memory_bytes, "hindsight written");
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
