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
}

impl Spool {
    pub fn open(dir: &Path, opts: HindsightOptions, system: &SystemInfo) -> anyhow::Result<Spool> {
        let record = RecordOptions {
            chunk: super::chunk_length(opts.window),
            segment: opts.segment,
            max_age: Some(opts.window),
            max_bytes: Some(opts.max_bytes),
        };
        Ok(Spool { recorder: Recorder::create(dir, record, system)? })
    }

    pub fn push(&mut self, snap: &Snapshot) -> anyhow::Result<()> {
        self.recorder.write(snap)
    }

    pub fn memory_bytes(&self) -> u64 {
        self.recorder.in_memory() as u64
    }

    /// The spool's chunks and segments on disk.
    pub fn bytes(&self) -> u64 {
        writer::chunks(self.recorder.dir()).map_or(0, |cs| cs.iter().map(|c| c.bytes).sum())
    }

    /// Closes the chunk under way, so that the newest poll is in a chunk; the chunks held.
    pub fn finish_open(&mut self) -> anyhow::Result<usize> {
        self.recorder.close_chunk()?;
        Ok(writer::chunks(self.recorder.dir())?.len())
    }

    /// Links every chunk's files into `dir` (copies them where links cannot be made); their bytes.
    pub fn link_into(&self, dir: &Path) -> anyhow::Result<u64> {
        let mut bytes = 0;
        for c in writer::chunks(self.recorder.dir())? {
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
