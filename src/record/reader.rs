//! `Recording`: a recording directory (or one chunk) read back as snapshots. The polls files are
//! read whole at open (a row per poll); a poll's sockets are read when asked for, by row range
//! (a chunk's rows are in poll order, and each poll row says how many rows it has), and rebuilt
//! from its keyframe's rows and the changes since (`rebuild.rs`).

use super::format::Meta;
use super::writer::{POLLS_SUFFIX, SOCKETS_SUFFIX, chunks};
use super::{layout, polls, rebuild, sockets};
use anyhow::Context;
use bbrtop_core::snapshot::{AlertStatus, Snapshot, Sockets};
use bbrtop_core::system::SystemInfo;
use bbrtop_core::units::from_unix_ms;
use bbrtop_core::{model::ClosedFlow, snapshot::DEFAULT_KEEP_CLOSED};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use std::collections::{BTreeMap, VecDeque};
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
    polls: PathBuf,
    /// Index in `Recording::polls` of this chunk's first poll.
    first: usize,
    /// Each poll's first row in the sockets file, and one past the last.
    rows: Vec<u64>,
}

pub struct Recording {
    meta: Meta,
    chunks: Vec<Chunk>,
    polls: Vec<PollIndex>,
    /// Every poll's row but its closed flows, which are read by chunk when a snapshot needs
    /// them (a busy host closes thousands of connections a second).
    rows: Vec<polls::Decoded>,
    onsets: Vec<usize>,
    /// The closed flows of the chunks read last: (chunk, each poll's flows).
    closed: VecDeque<(usize, Vec<Vec<ClosedFlow>>)>,
    /// Damaged chunks left out, a line each, for the command to say.
    skipped: Vec<String>,
    /// The poll read last and its sockets: the next poll's are rebuilt from them (a replay reads
    /// a poll at a time) rather than from the chunk's keyframe.
    cursor: Option<(usize, Sockets)>,
    /// The host of the hive layout's `host=NAME` directory it was read from, if it was.
    partition_host: Option<String>,
}

/// Chunks whose closed flows are kept decoded.
const CLOSED_CHUNKS: usize = 4;

impl Recording {
    /// A recording directory (or one chunk's file): every complete chunk, in time order, of the
    /// directory and its partitions (a hive layout's tree of one host: `layout.rs`; a directory
    /// of several hosts' trees is refused, naming them). In a directory a damaged chunk (a file that is not Parquet, a sockets file that is not its
    /// polls file's pair, polls that repeat an earlier chunk's) is left out and named in
    /// [`Recording::skipped`]; a recording whose every chunk is damaged is not one.
    pub fn open(path: &Path) -> anyhow::Result<Recording> {
        let stems: Vec<PathBuf> = if path.is_dir() {
            let hosts = layout::hosts(path);
            anyhow::ensure!(
                hosts.len() < 2,
                "{}: {} hosts' recordings (host={}): name one ({}), or compare them as a side",
                path.display(),
                hosts.len(),
                hosts.join(", host="),
                layout::host_dir(path, &hosts[0]).display()
            );
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
            closed: VecDeque::new(),
            skipped: Vec::new(),
            cursor: None,
            partition_host: if path.is_dir() { layout::partition_host(path) } else { None },
        };
        // Whether a file was left out since the last one kept: a segment of changes after it
        // would be applied to the wrong sockets.
        let mut gap = false;
        let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for (i, stem) in stems.iter().enumerate() {
            let after = rec.rows.last().map(|r| r.at_ms);
            let before = i.checked_sub(1).map(|i| name(&stems[i]));
            gap |= !super::segments::in_sequence(before.as_deref(), &name(stem));
            match read_chunk(stem, after) {
                Ok((_, _, rows)) if !follows(rec.rows.last(), &rows[0], gap) => {
                    let why = format!(
                        "{}: changes without their keyframe or the segment before (a chunk's later segment)",
                        stem.display()
                    );
                    anyhow::ensure!(stems.len() > 1, "{why}");
                    rec.skipped.push(format!("skipped a segment: {why}"));
                    gap = true;
                }
                Ok((meta, chunk, rows)) => {
                    gap = false;
                    if rec.chunks.is_empty() {
                        rec.meta = meta;
                    }
                    rec.chunks.push(Chunk { first: rec.polls.len(), ..chunk });
                    rec.polls
                        .extend(rows.iter().map(|r| PollIndex { seq: r.seq, at: from_unix_ms(r.at_ms) }));
                    rec.rows.extend(rows);
                }
                // One chunk asked for by name: its damage is the answer.
                Err(e) if stems.len() == 1 => return Err(e),
                Err(e) => {
                    rec.skipped.push(format!("skipped a damaged chunk: {e:#}"));
                    gap = true;
                }
            }
        }
        if rec.chunks.is_empty() {
            let why = rec.skipped.first().map(String::as_str).unwrap_or_default();
            anyhow::bail!("{}: not a recording: every chunk is damaged ({why})", path.display());
        }
        rec.onsets = onsets(&rec.rows);
        Ok(rec)
    }

    /// The damaged chunks left out at open, or found while reading, a line each.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Every poll recorded, oldest first.
    pub fn polls(&self) -> &[PollIndex] {
        &self.polls
    }

    /// The host the recording was made on.
    pub fn system(&self) -> &SystemInfo {
        &self.meta.system
    }

    /// The host its hive layout's `host=NAME` directory names (`--record.host`), if it has one.
    pub fn partition_host(&self) -> Option<&str> {
        self.partition_host.as_deref()
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
        if range.is_empty() {
            return Ok(out);
        }
        // A poll's sockets are rebuilt from its keyframe on (its chunk's first poll, perhaps in
        // an earlier segment's file; in format 1, its own), or on from the poll read last when
        // that lies between.
        let key = self.keyframe_of(range.start);
        let (from, mut state) = match self.cursor.take() {
            Some((i, s)) if key <= i && i < range.start => (i + 1, s),
            _ => (key, Sockets::default()),
        };
        let mut whole = true;
        for k in 0..self.chunks.len() {
            let (first, n) = (self.chunks[k].first, self.chunks[k].rows.len() - 1);
            let (lo, hi) = (from.max(first), range.end.min(first + n));
            if lo >= hi {
                continue;
            }
            let rows = self.chunks[k].rows.clone();
            let (lo, hi) = (lo - first, hi - first);
            // Damage the footer did not show (a data page): the chunk's polls are played without
            // their sockets, and said once, rather than ending the replay there.
            let mut socks = match read_sockets(&self.chunks[k].sockets, rows[lo]..rows[hi]) {
                Ok(s) => s,
                Err(e) => {
                    let line = format!("a damaged chunk's sockets left out: {e:#}");
                    if !self.skipped.contains(&line) {
                        tracing::warn!("{line}");
                        self.skipped.push(line);
                    }
                    whole = false;
                    Vec::new()
                }
            }
            .into_iter();
            for p in lo..hi {
                let n = (rows[p + 1] - rows[p]) as usize;
                let i = first + p;
                // Changes against another keyframe than the state's (a segment lost between)
                // start from nothing rather than from the wrong sockets.
                let key = self.rows[i].is_key()
                    || (i > from && self.rows[i - 1].key_at_ms != self.rows[i].key_at_ms);
                let at = self.rows[i].view_at(self.meta.rule);
                state = rebuild::apply(&state, key, socks.by_ref().take(n), at);
                if i >= range.start {
                    let mut row = self.rows[i].clone();
                    row.closed = self.closed_before(i)?;
                    out.push(row.into_snapshot(state.clone(), self.meta.rule));
                }
            }
        }
        if whole {
            self.cursor = Some((range.end - 1, state));
        }
        Ok(out)
    }

    /// The keyframe poll `i` is rebuilt from: the latest poll at or before it that names the same
    /// keyframe and is one, or the first that names it when the keyframe itself was lost.
    fn keyframe_of(&self, i: usize) -> usize {
        let want = self.rows[i].key_at_ms;
        let mut k = i;
        while !self.rows[k].is_key() && k > 0 && self.rows[k - 1].key_at_ms == want {
            k -= 1;
        }
        k
    }

    /// The closed flows a snapshot at poll `i` listed: those recorded up to it, newest first, as
    /// many as the engine keeps.
    fn closed_before(&mut self, i: usize) -> anyhow::Result<Vec<ClosedFlow>> {
        let mut out: Vec<ClosedFlow> = Vec::new();
        let Some(mut k) = self.chunks.iter().rposition(|c| c.first <= i) else { return Ok(out) };
        let mut last = i - self.chunks[k].first;
        loop {
            let flows = self.closed_of(k)?;
            for per_poll in flows[..=last.min(flows.len().saturating_sub(1))].iter().rev() {
                out.extend(per_poll.iter().cloned());
            }
            if out.len() >= DEFAULT_KEEP_CLOSED || k == 0 {
                break;
            }
            k -= 1;
            last = usize::MAX;
        }
        out.truncate(DEFAULT_KEEP_CLOSED);
        Ok(out)
    }

    /// Chunk `k`'s closed flows, poll by poll (each poll's newest first, as written).
    fn closed_of(&mut self, k: usize) -> anyhow::Result<&[Vec<ClosedFlow>]> {
        if let Some(at) = self.closed.iter().position(|(c, _)| *c == k) {
            let hit = self.closed.remove(at).expect("found");
            self.closed.push_back(hit);
        } else {
            let (_, rows) = read_polls(&self.chunks[k].polls, Columns::Closed)?;
            if self.closed.len() == CLOSED_CHUNKS {
                self.closed.pop_front();
            }
            self.closed.push_back((k, rows.into_iter().map(|r| r.closed).collect()));
        }
        Ok(&self.closed.back().expect("pushed").1)
    }
}

/// One chunk's polls and where its sockets are, checked against each other: the polls' times
/// increase and come after `after` (the last poll of the chunks before, in ms since the epoch;
/// times, not seqs, which start again when a recorder does), and the sockets file has as many
/// rows as the polls say, at times among theirs (from the file's own statistics, so nothing is
/// decoded). A sockets file swapped with, or copied from, another chunk's fails here, and so
/// does a chunk copied under a later name.
fn read_chunk(stem: &Path, after: Option<i64>) -> anyhow::Result<(Meta, Chunk, Vec<polls::Decoded>)> {
    let polls_file = PathBuf::from(format!("{}{POLLS_SUFFIX}", stem.display()));
    let sockets_file = PathBuf::from(format!("{}{SOCKETS_SUFFIX}", stem.display()));
    let (meta, rows) = read_polls(&polls_file, Columns::AllButClosed)?;
    let (Some(first), Some(last)) = (rows.first().map(|r| r.at_ms), rows.last().map(|r| r.at_ms)) else {
        anyhow::bail!("{}: no polls", polls_file.display());
    };
    // RFC 3339 has four-digit years: a damaged chunk's time past 9999 is shown as it is (its
    // Display would fail, and format! panic on that).
    let show = |ms: i64| match ms {
        0..=253_402_300_799_999 => humantime::format_rfc3339_millis(from_unix_ms(ms)).to_string(),
        _ => format!("{ms} ms since the epoch"),
    };
    anyhow::ensure!(
        rows.windows(2).all(|w| w[0].at_ms < w[1].at_ms) && after.is_none_or(|a| first > a),
        "{}: polls from {} to {} repeat or go back in time (a copy of another chunk's?)",
        polls_file.display(),
        show(first),
        show(last)
    );
    let mut offsets = vec![0u64];
    for r in &rows {
        offsets.push(offsets.last().copied().unwrap_or(0) + r.rows);
    }
    let want = offsets.last().copied().unwrap_or(0);
    let (times, had) = crate::contained::contain(&sockets_file.display().to_string(), || {
        let (_, b) = open_parquet(&sockets_file)?;
        Ok((column_range(b.metadata(), "at_ms"), b.metadata().file_metadata().num_rows()))
    })?;
    anyhow::ensure!(
        u64::try_from(had).ok() == Some(want) && times.is_none_or(|(lo, hi)| first <= lo && hi <= last),
        "{}: {had} rows, where its polls file says {want} from {} to {} (another chunk's sockets file?)",
        sockets_file.display(),
        show(first),
        show(last)
    );
    let chunk = Chunk { sockets: sockets_file, polls: polls_file, first: 0, rows: offsets };
    Ok((meta, chunk, rows))
}

/// The least and greatest value of an INT64 column (`at_ms`), from the row groups' statistics
/// (None where they were not written).
fn column_range(meta: &parquet::file::metadata::ParquetMetaData, name: &str) -> Option<(i64, i64)> {
    use parquet::file::statistics::Statistics;
    let col = meta.file_metadata().schema_descr().columns().iter().position(|c| c.name() == name)?;
    let mut range: Option<(i64, i64)> = None;
    for rg in meta.row_groups() {
        let Some(Statistics::Int64(s)) = rg.column(col).statistics() else { return None };
        let (lo, hi) = (*s.min_opt()?, *s.max_opt()?);
        range = Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
    }
    range
}

/// Whether a file whose first poll is `first` can follow the poll kept before it (`last`; `gap`
/// when a file between was left out): a keyframe stands alone; changes need the poll before them,
/// of the same keyframe.
fn follows(last: Option<&polls::Decoded>, first: &polls::Decoded, gap: bool) -> bool {
    first.is_key() || (!gap && last.is_some_and(|l| l.key_at_ms == first.key_at_ms))
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
    // A chunk's files come from a directory a flag names: a FIFO or a device there is refused
    // rather than read (the reader reads by ranges, so a regular file's size needs no bound).
    let f = bbrtop_collect::files::open_regular("recording", path).map_err(anyhow::Error::msg)?;
    let b = ParquetRecordBatchReaderBuilder::try_new(f)
        .with_context(|| format!("{}: not a readable Parquet file", path.display()))?;
    let meta = Meta::from_key_values(
        b.metadata().file_metadata().key_value_metadata(),
        &path.display().to_string(),
    )?;
    Ok((meta, b))
}

/// Which of a polls file's columns to read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Columns {
    AllButClosed,
    Closed,
}

fn read_polls(path: &Path, cols: Columns) -> anyhow::Result<(Meta, Vec<polls::Decoded>)> {
    crate::contained::contain(&path.display().to_string(), || read_polls_of(path, cols))
}

fn read_polls_of(path: &Path, cols: Columns) -> anyhow::Result<(Meta, Vec<polls::Decoded>)> {
    let (meta, b) = open_parquet(path)?;
    let schema = b.parquet_schema();
    let keep = (0..schema.num_columns())
        .filter(|&i| (schema.column(i).name() == "closed") == (cols == Columns::Closed));
    let mask = ProjectionMask::leaves(schema, keep.collect::<Vec<_>>());
    let mut rows = Vec::new();
    for batch in b.with_projection(mask).build()? {
        rows.extend(polls::read(&batch.with_context(|| format!("reading {}", path.display()))?)?);
    }
    Ok((meta, rows))
}

fn read_sockets(path: &Path, rows: Range<u64>) -> anyhow::Result<Vec<sockets::Decoded>> {
    crate::contained::contain(&path.display().to_string(), || read_sockets_of(path, rows))
}

fn read_sockets_of(path: &Path, rows: Range<u64>) -> anyhow::Result<Vec<sockets::Decoded>> {
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
