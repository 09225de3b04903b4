//! Hindsight spooled to disk: a recording in `<hindsight.dir>/.spool`, written by a [`Recorder`]
//! (segments of `--hindsight.segment`, chunks of a fifth of the window, retention by the
//! window and `--hindsight.max-size`). Memory holds only the segment's encoders. A dump links the
//! spool's chunks into the dump's directory: chunk files are never written again once whole, so
//! a link is a copy that costs nothing, and retention removing the spool's name leaves the dump's.
//!
//! A spool that cannot be written (a full disk, its directory gone) does not freeze hindsight:
//! the polls go to memory (`memory.rs`, the same window and bound) from the one that failed on,
//! the oldest spool chunk is removed to make room, and the spool is tried again a chunk's length
//! later, another chunk removed each time it fails again. Its failures are counted and a dump says
//! so, beside the polls of both.

use super::HindsightOptions;
use super::memory::Memory;
use crate::record::chunk::{POLLS_SUFFIX, SOCKETS_SUFFIX};
use crate::record::writer::{self, RecordOptions, Recorder};
use anyhow::Context;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub struct Spool {
    dir: PathBuf,
    record: RecordOptions,
    system: SystemInfo,
    /// `None` from a failure until the spool takes polls again.
    recorder: Option<Recorder>,
    /// The spool's bytes on disk, counted when its files last changed (the recorder's count
    /// then): a poll that only appends to the segment under way reads no directory.
    bytes: (u64, u64),
    /// The polls the spool could not take, until they leave the window.
    memory: Memory,
    failures: Failures,
}

/// What went wrong with the spool, since start.
#[derive(Default)]
struct Failures {
    count: u64,
    last: Option<String>,
    /// The poll time of the failure the spool is out since; `None` while it is written.
    since: Option<SystemTime>,
}

impl Spool {
    pub fn open(dir: &Path, opts: HindsightOptions, system: &SystemInfo) -> anyhow::Result<Spool> {
        let record = RecordOptions {
            chunk: super::chunk_length(opts.window),
            segment: opts.segment,
            max_age: Some(opts.window),
            max_bytes: Some(opts.max_bytes),
            layout: Default::default(),
        };
        let recorder = Recorder::create(dir, record.clone(), system)?;
        let mut spool = Spool {
            dir: recorder.dir().to_path_buf(),
            record,
            system: system.clone(),
            recorder: Some(recorder),
            bytes: (0, 0),
            memory: Memory::new(opts, system.clone()),
            failures: Failures::default(),
        };
        spool.recount()?;
        Ok(spool)
    }

    /// Adds one poll: to the spool, or to memory while the spool cannot be written.
    pub fn push(&mut self, snap: &Snapshot) -> anyhow::Result<()> {
        if self.failures.since.is_some_and(|t| elapsed(t, snap.taken_at) >= self.record.chunk) {
            self.reopen(snap.taken_at);
        }
        let written = match &mut self.recorder {
            Some(r) => r.write(snap).map(|()| r.file_changes()),
            None => return self.memory.push(snap),
        };
        match written {
            Ok(changes) if changes != self.bytes.0 => {
                if let Err(e) = self.recount() {
                    self.failed(e.context("reading the spool"), snap.taken_at);
                }
            }
            Ok(_) => {}
            Err(e) => {
                self.failed(e, snap.taken_at);
                return self.memory.push(snap);
            }
        }
        self.memory.forget(snap.taken_at);
        Ok(())
    }

    /// The spool failed at `at`: polls go to memory, and the oldest chunk goes to make room. The
    /// recorder is dropped (which finishes what it can of its chunk); a new one takes over later.
    fn failed(&mut self, e: anyhow::Error, at: SystemTime) {
        if self.failures.since.is_none() {
            tracing::warn!(
                "hindsight: the spool in {} failed, polls are kept in memory: {e:#}",
                self.dir.display()
            );
        }
        if let Some(r) = self.recorder.take() {
            self.memory.closed_written_to(r.closed_seq());
        }
        self.failures.count += 1;
        self.failures.last = Some(format!("{e:#}"));
        self.failures.since = Some(at);
        match writer::trim_oldest(&self.dir) {
            Ok(Some(stem)) => tracing::info!(chunk = stem, "hindsight: removed the spool's oldest chunk"),
            Ok(None) => {}
            Err(e) => tracing::debug!("hindsight: no chunk removed from the spool: {e:#}"),
        }
    }

    /// Tries the spool again; the polls in memory stay there until they leave the window.
    fn reopen(&mut self, at: SystemTime) {
        match Recorder::create(&self.dir, self.record.clone(), &self.system) {
            Ok(mut r) => {
                r.closed_written_to(self.memory.closed_seq());
                self.recorder = Some(r);
                self.failures.since = None;
                tracing::info!("hindsight: the spool in {} is written again", self.dir.display());
                if let Err(e) = self.memory.finish_open().and_then(|_| self.recount()) {
                    self.failed(e, at);
                }
            }
            Err(e) => self.failed(e, at),
        }
    }

    /// Counts the spool's bytes on disk.
    fn recount(&mut self) -> anyhow::Result<()> {
        let chunks = writer::chunks(&self.dir)?;
        let changes = self.recorder.as_ref().map_or(0, Recorder::file_changes);
        self.bytes = (changes, chunks.iter().map(|c| c.bytes).sum());
        Ok(())
    }

    /// Memory held: the recorder's encoders, and the polls the spool could not take.
    pub fn memory_bytes(&self) -> u64 {
        self.recorder.as_ref().map_or(0, |r| r.in_memory() as u64) + self.memory.bytes()
    }

    /// The spool's chunks and segments on disk.
    pub fn bytes(&self) -> u64 {
        self.bytes.1
    }

    /// How often the spool failed since start, and the last failure.
    pub fn failures(&self) -> (u64, Option<&str>) {
        (self.failures.count, self.failures.last.as_deref())
    }

    /// Closes the chunk under way, so that the newest poll is in what is held; the spool's
    /// chunks, and whether anything is held at all. What cannot be read is said in `errors`.
    pub fn finish_open(
        &mut self,
        errors: &mut Vec<String>,
    ) -> anyhow::Result<(Vec<writer::ChunkFile>, bool)> {
        if let Some(r) = &mut self.recorder
            && let Err(e) = r.close_chunk()
        {
            errors.push(format!("the spool's newest chunk: {e:#}"));
            self.failed(e, SystemTime::now());
        }
        let chunks = writer::chunks(&self.dir).unwrap_or_else(|e| {
            errors.push(format!("the spool: {e:#}"));
            Vec::new()
        });
        let _ = self.recount();
        let in_memory = self.memory.finish_open()?.0;
        let any = !chunks.is_empty() || in_memory > 0;
        Ok((chunks, any))
    }

    /// Writes `chunks` (linked) and the polls held in memory into `dir`; their bytes. A chunk
    /// that cannot be read is left out and said in `errors`, one line each.
    pub fn write_into(
        &self,
        chunks: &[writer::ChunkFile],
        dir: &Path,
        errors: &mut Vec<String>,
    ) -> anyhow::Result<u64> {
        let mut bytes = 0;
        for c in chunks {
            match link(&self.dir, &c.stem, dir) {
                Ok(()) => bytes += c.bytes,
                Err(e) => errors.push(format!("spool chunk {}: {e:#}", c.stem)),
            }
        }
        Ok(bytes + self.memory.write_into(dir)?)
    }
}

/// Links chunk `stem`'s files from `from` into `to` (copies them where links cannot be made);
/// on failure, none of it is left in `to`.
fn link(from: &Path, stem: &str, to: &Path) -> anyhow::Result<()> {
    // The sockets file first: a chunk is whole once its polls file is there.
    let names = [SOCKETS_SUFFIX, POLLS_SUFFIX].map(|suffix| format!("{stem}{suffix}"));
    let done = names.iter().try_for_each(|name| {
        let (from, to) = (from.join(name), to.join(name));
        anyhow::ensure!(from.is_file(), "{}: not a file", from.display());
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
        }
        Ok(())
    });
    if done.is_err() {
        names.iter().for_each(|n| drop(std::fs::remove_file(to.join(n))));
    }
    done
}

fn elapsed(since: SystemTime, now: SystemTime) -> std::time::Duration {
    now.duration_since(since).unwrap_or_default()
}
