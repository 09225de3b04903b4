//! The exporter's AS and country databases, read again on SIGHUP and when their files change
//! (checked every [`CHECK_EVERY`]): a new database in place takes effect for the sockets seen
//! after it, and one that does not load is logged and the one before kept.

use super::args;
use bbrtop_core::geo::GeoCell;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the files are checked for a change.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);
/// How often the thread looks at its flags.
const TICK: Duration = Duration::from_millis(200);

#[derive(Clone, Debug, Default)]
pub struct GeoFiles {
    pub asn: Option<PathBuf>,
    pub country: Option<PathBuf>,
}

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

/// Starts the reloading thread, if any database is given; it ends when `stop` is set.
pub fn start(
    files: GeoFiles,
    cell: Arc<GeoCell>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<Option<JoinHandle<()>>> {
    if !files.any() {
        return Ok(None);
    }
    let hup = Arc::clone(super::startup::hup());
    let thread = std::thread::Builder::new().name("bbrtop-geo-reload".into()).spawn(move || {
        let mut stamps = files.stamps();
        let mut checked = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(TICK);
            if hup.swap(false, Ordering::Relaxed) {
                stamps = files.stamps();
                files.load(&cell, "SIGHUP");
            } else if checked.elapsed() >= CHECK_EVERY {
                checked = Instant::now();
                let now = files.stamps();
                if now != stamps {
                    stamps = now;
                    files.load(&cell, "a database file changed");
                }
            }
        }
    })?;
    Ok(Some(thread))
}
