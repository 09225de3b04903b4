//! The exporter's AS and country databases, read again on SIGHUP and when their files change
//! (checked every [`CHECK_EVERY`]): a new database in place takes effect for the sockets seen
//! after it, and one that does not load is logged and the one before kept.

use super::args;
use super::peers::GeoFiles;
use crate::worker::Worker;
use bbrtop_core::geo::GeoCell;
use std::ops::ControlFlow;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the files are checked for a change.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);
/// How often the thread looks at its flags (SIGHUP's, the stop).
const TICK: Duration = Duration::from_millis(200);

/// What says a file changed: its inode (a file replaced by rename), size and modification time.
type Stamp = Option<(u64, u64, i64, i64)>;

impl GeoFiles {
    fn any(&self) -> bool {
        self.asn.is_some() || self.country.is_some()
    }

    fn stamps(&self) -> [Stamp; 2] {
        let stamp = |p: &Option<PathBuf>| {
            let m = std::fs::metadata(p.as_ref()?).ok()?;
            Some((m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
        };
        [stamp(&self.asn), stamp(&self.country)]
    }

    fn load(&self, cell: &GeoCell, why: &str) {
        match args::geo(self.asn.as_deref(), self.country.as_deref()) {
            Ok(geo) => {
                cell.set(geo);
                tracing::info!(why, "peer AS and country databases reloaded");
            }
            Err(e) => {
                tracing::warn!(why, "peer AS and country databases not reloaded, the ones before kept: {e}")
            }
        }
    }
}

/// Starts the reloading thread, if any database is given; it ends when `stop` is set, or when
/// dropped.
pub fn start(files: GeoFiles, cell: Arc<GeoCell>, stop: Arc<AtomicBool>) -> std::io::Result<Option<Worker>> {
    if !files.any() {
        return Ok(None);
    }
    let hup = Arc::clone(super::startup::hup());
    let mut stamps = files.stamps();
    let mut checked = Instant::now();
    let worker = Worker::start("bbrtop-geo-reload", TICK, move |now| {
        if stop.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        if hup.swap(false, Ordering::Relaxed) {
            stamps = files.stamps();
            files.load(&cell, "SIGHUP");
        } else if now.duration_since(checked) >= CHECK_EVERY {
            checked = now;
            let now = files.stamps();
            if now != stamps {
                stamps = now;
                files.load(&cell, "a database file changed");
            }
        }
        ControlFlow::Continue(())
    })?;
    Ok(Some(worker))
}
