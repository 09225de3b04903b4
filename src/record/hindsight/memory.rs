//! Hindsight held in memory, where no spool can be made: finished chunks as the bytes of their
//! two files.
//!
//! Memory is bounded: the chunks held, plus the encoder of the chunk under way, stay within
//! `max_bytes`. The oldest chunks go first, by age (past the window) and then by size. The
//! encoder's own buffers are the floor: a bound below them keeps the chunk under way only.

use super::HindsightOptions;
use crate::record::chunk::{self, Pair};
use crate::record::chunk::{POLLS_SUFFIX, SOCKETS_SUFFIX, TMP, put_in_place};
use crate::record::format::Meta;
use crate::record::keyframe::{Base, Source};
use anyhow::Context;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use bytes::Bytes;
use parquet::file::metadata::ParquetMetaDataReader;
use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// A finished chunk, in memory.
struct Held {
    stem: String,
    first_at: SystemTime,
    last_at: SystemTime,
    polls: u64,
    sockets_file: Bytes,
    polls_file: Vec<u8>,
}

impl Held {
    fn bytes(&self) -> u64 {
        (self.sockets_file.len() + self.polls_file.len()) as u64
    }
}

pub struct Memory {
    opts: HindsightOptions,
    system: SystemInfo,
    held: VecDeque<Held>,
    open: Option<(Pair<Vec<u8>>, String, SystemTime)>,
    /// What the next chunk's keyframe may copy of the chunk finished last (`keyframe.rs`).
    base: Option<Base>,
    closed_seq: u64,
    /// Polls dropped early to stay within the memory bound, since start.
    dropped_for_memory: u64,
    /// Keyframe rows copied from the chunk before rather than encoded, since start.
    rows_copied: u64,
}

impl Memory {
    pub fn new(opts: HindsightOptions, system: SystemInfo) -> Memory {
        Memory {
            opts,
            system,
            held: VecDeque::new(),
            open: None,
            base: None,
            closed_seq: 0,
            dropped_for_memory: 0,
            rows_copied: 0,
        }
    }

    /// Adds one poll, then forgets what is out of the window or over the bound.
    pub fn push(&mut self, snap: &Snapshot) -> anyhow::Result<()> {
        let meta = Meta { system: self.system.clone(), rule: snap.rule };
        if self
            .open
            .as_ref()
            .is_some_and(|(p, ..)| p.ends_before(snap, &meta, super::chunk_length(self.opts.window)))
        {
            self.finish_open()?;
        }
        let (pair, _, last) = match &mut self.open {
            Some(o) => o,
            None => {
                let stem = chunk::stem_of(snap.taken_at, snap.seq);
                self.open.insert((
                    Pair::new(Vec::new(), Vec::new(), meta, snap.taken_at)?
                        .keyframe_apart()
                        .with_base(self.base.take()),
                    stem,
                    snap.taken_at,
                ))
            }
        };
        pair.write(snap, &chunk::fresh_closed(snap, &mut self.closed_seq))?;
        if pair.polls_written == 1 {
            self.rows_copied += pair.rows_copied();
        }
        *last = snap.taken_at;
        self.forget(snap.taken_at);
        Ok(())
    }

    /// The newest closed flow written, and a start from another writer's (see
    /// `Recorder::closed_seq`).
    pub fn closed_seq(&self) -> u64 {
        self.closed_seq
    }

    pub fn closed_written_to(&mut self, seq: u64) {
        self.closed_seq = self.closed_seq.max(seq);
    }

    /// Memory held: finished chunks and the encoder's.
    pub fn bytes(&self) -> u64 {
        self.held_bytes() + self.encoder_bytes()
    }

    /// The finished chunks' bytes.
    pub fn held_bytes(&self) -> u64 {
        self.held.iter().map(Held::bytes).sum()
    }

    /// The chunk under way: its encoder's buffers, and its keyframe, written apart.
    pub fn encoder_bytes(&self) -> u64 {
        self.open.as_ref().map_or(0, |(p, ..)| p.in_memory() as u64)
    }

    /// Polls held, and the time they span.
    pub fn span(&self) -> (u64, Option<SystemTime>, Option<SystemTime>) {
        let open = self.open.as_ref().map(|(p, _, last)| (p.polls_written, p.started, *last));
        let polls = self.held.iter().map(|h| h.polls).sum::<u64>() + open.map_or(0, |o| o.0);
        let first = self.held.front().map(|h| h.first_at).or(open.map(|o| o.1));
        let last = open.map(|o| o.2).or(self.held.back().map(|h| h.last_at));
        (polls, first, last)
    }

    #[cfg(test)]
    pub fn dropped_for_memory(&self) -> u64 {
        self.dropped_for_memory
    }

    #[cfg(test)]
    pub fn rows_copied(&self) -> u64 {
        self.rows_copied
    }

    /// Finishes the chunk under way, so that the newest poll is in what is held; the polls held,
    /// and the time they span.
    pub fn finish_open(&mut self) -> anyhow::Result<(u64, Option<SystemTime>, Option<SystemTime>)> {
        if let Some((pair, stem, last_at)) = self.open.take() {
            let (polls, first_at, meta) = (pair.polls_written, pair.started, pair.meta.clone());
            let ((sockets_file, polls_file), carry) = pair.finish_carrying()?;
            let sockets_file = Bytes::from(sockets_file);
            // Shared with what is held, not copied.
            self.base = ParquetMetaDataReader::new()
                .parse_and_finish(&sockets_file)
                .ok()
                .and_then(|m| carry.base(Source::Bytes(sockets_file.clone()), &m, meta));
            self.held.push_back(Held { stem, first_at, last_at, polls, sockets_file, polls_file });
            // The chunk's encoders are gone: their memory goes back rather than wait for the next.
            crate::mem::trim();
        }
        Ok(self.span())
    }

    /// Drops the chunks out of the window at `now`, then the oldest while over the bound.
    pub fn forget(&mut self, now: SystemTime) {
        while self
            .held
            .front()
            .is_some_and(|h| now.duration_since(h.last_at).unwrap_or_default() > self.opts.window)
        {
            self.held.pop_front();
        }
        while self.bytes() > self.opts.max_bytes
            && let Some(h) = self.held.pop_front()
        {
            self.dropped_for_memory += h.polls;
        }
    }

    /// Writes the held chunks' files into `dir`; their bytes.
    pub fn write_into(&self, dir: &Path) -> anyhow::Result<u64> {
        let mut bytes = 0;
        for h in &self.held {
            for (suffix, data) in [(SOCKETS_SUFFIX, &h.sockets_file[..]), (POLLS_SUFFIX, &h.polls_file[..])] {
                let tmp = dir.join(format!("{}{suffix}{TMP}", h.stem));
                let mut f =
                    std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
                f.write_all(data).with_context(|| format!("writing {}", tmp.display()))?;
                bytes += put_in_place(dir, &h.stem, suffix, f)?;
            }
        }
        Ok(bytes)
    }
}
