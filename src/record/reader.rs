//! `Recording`: a recording directory (or one chunk) read back as snapshots. The polls files are
//! read whole at open (a row per poll); a poll's sockets are read when asked for, by row range
//! (a chunk's rows are in poll order, and each poll row says how many sockets it had).

use super::chunk::Meta;
use super::writer::{POLLS_SUFFIX, SOCKETS_SUFFIX, chunks};
use super::{polls, sockets};
use crate::engine::kernel::{ClosedFlow, DEFAULT_KEEP_CLOSED};
use crate::engine::snapshot::{AlertStatus, Snapshot, SocketView};
use crate::system::SystemInfo;
use crate::units::from_unix_ms;
use anyhow::Context;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One recorded poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollIndex {
    pub seq: u64,
    pub at: SystemTime,
}

struct Chunk {
    sockets: PathBuf,
    /// Index in `Recording::polls` of this chunk's first poll.
    first: usize,
    /// Each poll's first row in the sockets file, and one past the last.
    rows: Vec<u64>,
}

pub struct Recording {
    meta: Meta,
    chunks: Vec<Chunk>,
    polls: Vec<PollIndex>,
    rows: Vec<polls::Decoded>,
    onsets: Vec<usize>,
}

impl Recording {
    /// A recording directory (or one chunk's file): every complete chunk, in time order.
    pub fn open(path: &Path) -> anyhow::Result<Recording> {
        let stems: Vec<PathBuf> = if path.is_dir() {
            chunks(path)?.into_iter().map(|c| path.join(c.stem)).collect()
        } else {
            let name = path.to_string_lossy();
            let stem = name.strip_suffix(POLLS_SUFFIX).or_else(|| name.strip_suffix(SOCKETS_SUFFIX));
            let stem = stem.with_context(|| {
                if path.exists() {
                    format!("{}: not a recording (a directory, or a *{POLLS_SUFFIX} file)", path.display())
                } else {
                    format!("{}: no such file or directory", path.display())
                }
            })?;
            vec![PathBuf::from(stem)]
        };
        anyhow::ensure!(!stems.is_empty(), "{}: no complete chunk (an empty recording)", path.display());
        let mut rec = Recording {
            meta: Meta::default(),
            chunks: Vec::new(),
            polls: Vec::new(),
            rows: Vec::new(),
            onsets: Vec::new(),
        };
        for (i, stem) in stems.iter().enumerate() {
            let polls_file = PathBuf::from(format!("{}{POLLS_SUFFIX}", stem.display()));
            let (meta, rows) = read_polls(&polls_file)?;
            if i == 0 {
                rec.meta = meta;
            }
            let mut offsets = vec![0u64];
            for r in &rows {
                offsets.push(offsets.last().copied().unwrap_or(0) + r.sockets);
            }
            rec.chunks.push(Chunk {
                sockets: PathBuf::from(format!("{}{SOCKETS_SUFFIX}", stem.display())),
                first: rec.polls.len(),
                rows: offsets,
            });
            rec.polls.extend(rows.iter().map(|r| PollIndex { seq: r.seq, at: from_unix_ms(r.at_ms) }));
            rec.rows.extend(rows);
        }
        rec.onsets = onsets(&rec.rows);
        Ok(rec)
    }

    /// Every poll recorded, oldest first.
    pub fn polls(&self) -> &[PollIndex] {
        &self.polls
    }

    /// The host the recording was made on.
    pub fn system(&self) -> &SystemInfo {
        &self.meta.system
    }

    /// Indices of the polls at which an alert began firing.
    pub fn alert_onsets(&self) -> &[usize] {
        &self.onsets
    }

    /// Polls `range` (indices into `polls()`), as snapshots. Sockets carry their record and
    /// derived values; history is empty, for the player to build from consecutive polls.
    pub fn read(&mut self, range: Range<usize>) -> anyhow::Result<Vec<Snapshot>> {
        anyhow::ensure!(range.end <= self.polls.len(), "polls {range:?} of {}", self.polls.len());
        let mut out = Vec::with_capacity(range.len());
        for c in
            self.chunks.iter().filter(|c| c.first < range.end && c.first + c.rows.len() - 1 > range.start)
        {
            let lo = range.start.max(c.first) - c.first;
            let hi = range.end.min(c.first + c.rows.len() - 1) - c.first;
            let mut socks = read_sockets(&c.sockets, c.rows[lo]..c.rows[hi])?;
            for p in lo..hi {
                let n = (c.rows[p + 1] - c.rows[p]) as usize;
                let views: Vec<SocketView> =
                    socks.drain(..n.min(socks.len())).map(sockets::Decoded::into_view).collect();
                let i = c.first + p;
                let mut row = self.rows[i].clone();
                row.closed = self.closed_before(i);
                out.push(row.into_snapshot(views, self.meta.rule));
            }
        }
        Ok(out)
    }

    /// The closed flows a snapshot at poll `i` listed: those recorded up to it, newest first, as
    /// many as the engine keeps.
    fn closed_before(&self, i: usize) -> Vec<ClosedFlow> {
        let mut out: Vec<ClosedFlow> = Vec::new();
        for r in self.rows[..=i].iter().rev() {
            out.extend(r.closed.iter().cloned());
            if out.len() >= DEFAULT_KEEP_CLOSED {
                break;
            }
        }
        out.truncate(DEFAULT_KEEP_CLOSED);
        out
    }
}

/// The polls at which some alert fired (its `fired_at` falls after the poll before).
fn onsets(rows: &[polls::Decoded]) -> Vec<usize> {
    let mut seen = BTreeMap::new();
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let mut new = false;
        for a in r.alerts.iter().filter(|a| a.status == AlertStatus::Firing) {
            new |= seen.insert((a.cookie, a.fired_at), ()).is_none();
        }
        if new {
            out.push(i);
        }
    }
    out
}

fn open_parquet(path: &Path) -> anyhow::Result<(Meta, ParquetRecordBatchReaderBuilder<File>)> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(f)
        .with_context(|| format!("{}: not a readable Parquet file", path.display()))?;
    let meta = Meta::from_key_values(
        b.metadata().file_metadata().key_value_metadata(),
        &path.display().to_string(),
    )?;
    Ok((meta, b))
}

fn read_polls(path: &Path) -> anyhow::Result<(Meta, Vec<polls::Decoded>)> {
    let (meta, b) = open_parquet(path)?;
    let mut rows = Vec::new();
    for batch in b.build()? {
        rows.extend(polls::read(&batch.with_context(|| format!("reading {}", path.display()))?)?);
    }
    Ok((meta, rows))
}

fn read_sockets(path: &Path, rows: Range<u64>) -> anyhow::Result<Vec<sockets::Decoded>> {
    let (_, b) = open_parquet(path)?;
    let selection = RowSelection::from(vec![
        RowSelector::skip(rows.start as usize),
        RowSelector::select((rows.end - rows.start) as usize),
    ]);
    let mut out = Vec::with_capacity((rows.end - rows.start) as usize);
    for batch in b.with_row_selection(selection).build()? {
        out.extend(sockets::decode(&batch.with_context(|| format!("reading {}", path.display()))?)?);
    }
    Ok(out)
}
