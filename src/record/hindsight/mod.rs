//! Hindsight: the last minutes of polls, kept so that they can be written as a recording when
//! asked, and the minutes before an alert kept after it fired.
//!
//! They are kept in a spool on disk (`spool.rs`): a recording written as `bbrtop record` writes
//! one, in segments of a few seconds, so a SIGKILL, an OOM kill or a power cut loses at most the
//! segment under way, what is left reads at once (bbrtop, DuckDB), and an exporter restarted over
//! the same spool still holds the minutes before it died. Where no spool can be made (a read-only
//! disk, another exporter's spool), they are kept in memory (`memory.rs`), which a kill loses;
//! where a spool stops taking polls (a full disk), the polls after are kept in memory until it
//! takes them again.
//! Either way they are the recording's own encoding: a minute of 10k idle sockets costs a few MB.

mod memory;
mod spool;

use super::chunk::TMP;
use anyhow::Context;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What hindsight keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HindsightOptions {
    /// How far back: polls older than this are dropped.
    pub window: Duration,
    /// The bytes the held polls may take (on disk in a spool, in memory without one), with the
    /// encoder's buffers.
    pub max_bytes: u64,
    /// A spool's segment: what a kill can lose.
    pub segment: Duration,
}

/// The spool's directory under `--hindsight.dir`: hidden among the dumps beside it.
pub const SPOOL: &str = ".spool";

pub struct Hindsight {
    store: Store,
}

/// Boxed: each holds a chunk's encoders.
enum Store {
    Memory(Box<memory::Memory>),
    Spool(Box<spool::Spool>),
}

/// What a dump wrote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dumped {
    pub dir: PathBuf,
    pub polls: u64,
    /// On disk.
    pub bytes: u64,
    /// In memory, when asked (the held chunks, if not spooled, and the encoder's buffers).
    pub memory_bytes: u64,
    /// In the spool, when asked; absent when hindsight is held in memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spool_bytes: Option<u64>,
    /// How often the spool could not be written since start (the polls after each failure were
    /// kept in memory); absent when hindsight is held in memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spool_failures: Option<u64>,
    /// The spool's last failure, if it ever failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spool_error: Option<String>,
    /// What could not be read and is left out of the dump (a spool chunk that is no file), one
    /// line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    #[serde(with = "bbrtop_core::units::serde_time::option")]
    pub from: Option<SystemTime>,
    #[serde(with = "bbrtop_core::units::serde_time::option")]
    pub to: Option<SystemTime>,
}

impl Hindsight {
    /// Hindsight held in memory.
    pub fn in_memory(opts: HindsightOptions, system: SystemInfo) -> Hindsight {
        Hindsight { store: Store::Memory(Box::new(memory::Memory::new(opts, system))) }
    }

    /// Hindsight spooled to `dir` (created if missing; what a killed exporter left there is kept,
    /// as far back as the window).
    pub fn spooled(opts: HindsightOptions, system: SystemInfo, dir: &Path) -> anyhow::Result<Hindsight> {
        Ok(Hindsight { store: Store::Spool(Box::new(spool::Spool::open(dir, opts, &system)?)) })
    }

    /// Adds one poll, then forgets what is out of the window or over the bound.
    pub fn push(&mut self, snap: &Snapshot) -> anyhow::Result<()> {
        match &mut self.store {
            Store::Memory(m) => m.push(snap),
            Store::Spool(s) => s.push(snap),
        }
    }

    /// Memory held: the encoder's buffers, and the finished chunks when they are not spooled.
    pub fn memory_bytes(&self) -> u64 {
        match &self.store {
            Store::Memory(m) => m.bytes(),
            Store::Spool(s) => s.memory_bytes(),
        }
    }

    /// The spool's files on disk; `None` when hindsight is held in memory.
    pub fn spool_bytes(&self) -> Option<u64> {
        match &self.store {
            Store::Memory(_) => None,
            Store::Spool(s) => Some(s.bytes()),
        }
    }

    /// How often the spool could not be written since start (the polls after each failure kept
    /// in memory); `None` when hindsight is held in memory.
    pub fn spool_failures(&self) -> Option<u64> {
        match &self.store {
            Store::Memory(_) => None,
            Store::Spool(s) => Some(s.failures().0),
        }
    }

    /// Writes what is held as a recording in a new directory under `parent`, named for the
    /// time of the dump; the chunk under way is finished first, so the newest poll is in it.
    /// What cannot be read is left out and named in the answer's `errors`.
    pub fn dump(&mut self, parent: &Path, now: SystemTime) -> anyhow::Result<Dumped> {
        let (memory_bytes, spool_bytes) = (self.memory_bytes(), self.spool_bytes());
        let mut errors = Vec::new();
        let (dir, bytes) = match &mut self.store {
            Store::Memory(m) => {
                anyhow::ensure!(m.finish_open()?.0 > 0, "hindsight holds no polls yet");
                write_dump(parent, now, |tmp| m.write_into(tmp))?
            }
            Store::Spool(s) => {
                let (chunks, any) = s.finish_open(&mut errors)?;
                anyhow::ensure!(any, "hindsight holds no polls yet{}", said(&errors));
                write_dump(parent, now, |tmp| {
                    let bytes = s.write_into(&chunks, tmp, &mut errors)?;
                    anyhow::ensure!(bytes > 0, "none of what hindsight holds could be read{}", said(&errors));
                    Ok(bytes)
                })?
            }
        };
        let rec = super::Recording::open(&dir)?;
        let (polls, first, last) = (rec.polls().len() as u64, rec.polls().first(), rec.polls().last());
        let (spool_failures, spool_error) = match &self.store {
            Store::Memory(_) => (None, None),
            Store::Spool(s) => {
                let (n, last) = s.failures();
                (Some(n), last.map(str::to_string))
            }
        };
        errors.extend(rec.skipped().iter().cloned());
        Ok(Dumped {
            dir,
            polls,
            bytes,
            memory_bytes,
            spool_bytes,
            spool_failures,
            spool_error,
            errors,
            from: first.map(|p| p.at),
            to: last.map(|p| p.at),
        })
    }
}

/// `errors`, each after a `; `, to follow a one-line error.
fn said(errors: &[String]) -> String {
    errors.iter().map(|e| format!("; {e}")).collect()
}

/// A chunk's length: a fifth of the window (3 minutes of the default 15), at least 5 s, so that
/// age drops a fifth at a time. Each chunk starts with a keyframe, a row per socket, which costs
/// about 0.4 s of CPU at 100k idle sockets: a fifth keeps it near 0.2% of a core, where a
/// fifteenth (a keyframe a minute) cost 0.6%.
pub fn chunk_length(window: Duration) -> Duration {
    (window / 5).max(Duration::from_secs(5))
}

/// A new dump directory under `parent`, named for `now`, filled by `fill` (which gives the bytes
/// it wrote) under a temporary name and then renamed: a dump directory that exists is complete.
fn write_dump(
    parent: &Path,
    now: SystemTime,
    fill: impl FnOnce(&Path) -> anyhow::Result<u64>,
) -> anyhow::Result<(PathBuf, u64)> {
    let name = humantime::format_rfc3339_seconds(now).to_string().replace(['-', ':'], "");
    let name = |i: u32| if i == 0 { format!("hindsight-{name}") } else { format!("hindsight-{name}.{i}") };
    let taken = |n: &str| parent.join(n).exists() || parent.join(format!("{n}{TMP}")).exists();
    let name = (0..).map(name).find(|n| !taken(n)).expect("unbounded");
    let (dir, tmp_dir) = (parent.join(&name), parent.join(format!("{name}{TMP}")));
    std::fs::create_dir_all(&tmp_dir).with_context(|| format!("creating {}", tmp_dir.display()))?;
    let bytes = fill(&tmp_dir).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&tmp_dir);
    })?;
    std::fs::rename(&tmp_dir, &dir).with_context(|| format!("renaming {}", tmp_dir.display()))?;
    Ok((dir, bytes))
}

#[cfg(test)]
mod tests;
