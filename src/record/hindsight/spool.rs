//! Hindsight spooled to disk: a recording in `<hindsight.dir>/.spool`, written by a [`Recorder`]
//! (segments of `--hindsight.segment`, chunks of a fifteenth of the window, retention by the
//! window and `--hindsight.max-size`). Memory holds only the segment's encoders. A dump links the
//! spool's chunks into the dump's directory: chunk files are never written again once whole, so
//! a link is a copy that costs nothing, and retention removing the spool's name leaves the dump's.

use super::HindsightOptions;
use crate::record::chunk::{POLLS_SUFFIX, SOCKETS_SUFFIX};
use crate::record::writer::{self, RecordOptions, Recorder};
use anyhow::Context;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use std::path::Path;

pub struct Spool {
    recorder: Recorder,
    /// The spool's bytes on disk, counted when its files last changed (the recorder's count
    /// then): a poll that only appends to the segment under way reads no directory.
    bytes: (u64, u64),
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
        let mut spool = Spool { recorder: Recorder::create(dir, record, system)?, bytes: (0, 0) };
        spool.recount()?;
        Ok(spool)
    }

    pub fn push(&mut self, snap: &Snapshot) -> anyhow::Result<()> {
        self.recorder.write(snap)?;
        if self.bytes.0 != self.recorder.file_changes() {
            self.recount()?;
        }
        Ok(())
    }

    /// Counts the spool's bytes on disk; its chunks.
    fn recount(&mut self) -> anyhow::Result<Vec<writer::ChunkFile>> {
        let chunks = writer::chunks(self.recorder.dir())?;
        self.bytes = (self.recorder.file_changes(), chunks.iter().map(|c| c.bytes).sum());
        Ok(chunks)
    }

    pub fn memory_bytes(&self) -> u64 {
        self.recorder.in_memory() as u64
    }

    /// The spool's chunks and segments on disk.
    pub fn bytes(&self) -> u64 {
        self.bytes.1
    }

    /// Closes the chunk under way, so that the newest poll is in a chunk; the chunks held.
    pub fn finish_open(&mut self) -> anyhow::Result<Vec<writer::ChunkFile>> {
        self.recorder.close_chunk()?;
        self.recount()
    }

    /// Links `chunks`' files into `dir` (copies them where links cannot be made); their bytes.
    pub fn link_into(&self, chunks: &[writer::ChunkFile], dir: &Path) -> anyhow::Result<u64> {
        let mut bytes = 0;
        for c in chunks {
            // The sockets file first: a chunk is whole once its polls file is there.
            for suffix in [SOCKETS_SUFFIX, POLLS_SUFFIX] {
                let name = format!("{}{suffix}", c.stem);
                let (from, to) = (self.recorder.dir().join(&name), dir.join(&name));
                if std::fs::hard_link(&from, &to).is_err() {
                    std::fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
                }
            }
            bytes += c.bytes;
        }
        Ok(bytes)
    }
}
