//! One chunk's two Parquet streams: how they are written (`format.rs`; row groups of up
//! to 8192 rows, a keyframe's written as it is encoded, or copied from the chunk before's where
//! none of its sockets moved (`keyframe.rs`), and copied as they are when the chunk closes, its
//! changes merged then into groups as big, so that a socket's values repeat within the pages zstd
//! compresses) and how its files are named.

use super::format::{Meta, Pages, write, writer};
use super::keyframe::{self, Base, KeyGroups, Step};
use super::stream::Stream;
use super::{polls, sockets};
use anyhow::Context;
use bbrtop_core::model::ClosedFlow;
use bbrtop_core::snapshot::entry::Entry;
use bbrtop_core::snapshot::sockets::Change;
use bbrtop_core::snapshot::{Snapshot, Sockets};
use bbrtop_core::units::unix_ms;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::ParquetMetaData;
use sockets::{Kind, Row};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

pub const SOCKETS_SUFFIX: &str = ".sockets.parquet";
pub const POLLS_SUFFIX: &str = ".polls.parquet";
/// A file being written, until it is whole.
pub const TMP: &str = ".tmp";

/// Syncs a chunk's file written as `<stem><suffix>.tmp` and gives it its name; its size.
pub fn put_in_place(dir: &Path, stem: &str, suffix: &str, file: File) -> anyhow::Result<u64> {
    file.sync_all().context("syncing a chunk")?;
    let tmp = dir.join(format!("{stem}{suffix}{TMP}"));
    std::fs::rename(&tmp, dir.join(format!("{stem}{suffix}")))
        .with_context(|| format!("renaming {}", tmp.display()))?;
    Ok(file.metadata().map_or(0, |m| m.len()))
}

/// A chunk being written: its two tables, into files (a recording), memory (hindsight) or one
/// body (a frame).
///
/// Its first poll is a keyframe (every live socket's row, copied from the chunk before's keyframe
/// where none of a row group's sockets moved: `with_base`); each later poll has the rows of the
/// sockets that came, moved or went since the poll before. A keyframe at each chunk's start, and
/// nowhere else: a chunk is what retention deletes and where a reader starts (replay seeking,
/// compare's `@FROM`), so each must stand alone, and within one the deltas cost what moved.
pub struct Pair<W: Write + Send> {
    sockets: Stream<W>,
    polls: ArrowWriter<W>,
    pub meta: Meta,
    /// The first poll's time, and how many polls so far.
    pub started: SystemTime,
    pub polls_written: u64,
    /// The sockets of the poll written last (a clone of the snapshot's, which shares them).
    last: Option<Sockets>,
    /// The keyframe's time, in ms since the epoch.
    key_at_ms: i64,
    /// Whether the keyframe is a row group of its own (see [`Pair::keyframe_apart`]).
    keyframe_apart: bool,
    /// The keyframe's row groups, and which moved since (`keyframe.rs`).
    key_groups: KeyGroups,
    /// The chunk before's keyframe row groups, for this one's keyframe to copy.
    base: Option<Base>,
    rows_copied: u64,
}

impl<W: Write + Send> Pair<W> {
    pub fn new(sockets: W, polls: W, meta: Meta, started: SystemTime) -> anyhow::Result<Pair<W>> {
        Pair::with_pages(sockets, polls, meta, started, Pages::Zstd)
    }

    fn with_pages(
        sockets: W,
        polls: W,
        meta: Meta,
        started: SystemTime,
        pages: Pages,
    ) -> anyhow::Result<Pair<W>> {
        Ok(Pair {
            sockets: Stream::new(sockets, sockets::schema(), &meta, pages)?,
            polls: writer(polls, polls::schema(), &meta, pages)?,
            meta,
            started,
            polls_written: 0,
            last: None,
            key_at_ms: 0,
            keyframe_apart: false,
            key_groups: KeyGroups::default(),
            base: None,
            rows_copied: 0,
        })
    }

    /// Writes the keyframe out as a row group of its own as soon as it is encoded, rather than
    /// with the chunk's changes when the chunk closes: an encoder holds up to 8 bytes per row of
    /// each column until then (1.1 MB for 2,000 sockets' keyframe in `record::tests`), for the
    /// price of a second row group's footer (some 35 KB). For
    /// a chunk kept in memory (hindsight), and a recorder's first segment, so that the keyframe's
    /// encoders are freed, and their memory handed back (`mem::trim`), once it is written.
    pub fn keyframe_apart(mut self) -> Pair<W> {
        self.keyframe_apart = true;
        self
    }

    /// The keyframe copies `base`'s row groups in which no socket moved (`keyframe.rs`), if the
    /// base's chunk was written with the same metadata.
    pub fn with_base(mut self, base: Option<Base>) -> Pair<W> {
        self.base = base.filter(|b| b.meta == self.meta);
        self
    }

    /// Adds one poll, with the closed flows to write beside it.
    pub fn write(&mut self, snap: &Snapshot, closed: &[ClosedFlow]) -> anyhow::Result<()> {
        if self.polls_written == 0 {
            // A segment made ahead of its first poll starts there.
            self.started = snap.taken_at;
        }
        let at_ms = unix_ms(snap.taken_at);
        let written = match self.last.replace(snap.sockets.clone()) {
            None => {
                self.key_at_ms = at_ms;
                self.write_keyframe(snap, at_ms)?
            }
            Some(before) => self.write_changes(snap, at_ms, &before)?,
        };
        let poll = polls::Poll { snap, closed, rows: written, key_at_ms: self.key_at_ms };
        write(&mut self.polls, &polls::batch(&[poll])?)?;
        self.polls_written += 1;
        Ok(())
    }

    /// Every socket's row, a row group at a time (`keyframe::plan`): copied from the base where
    /// none of its sockets moved, else derived and encoded a slice at a time, so that a keyframe
    /// of 100k sockets never holds 100k views, nor an encoder's 8 bytes per row of each column
    /// (some 170 MB), at once. The last group stays open for the changes unless the keyframe is
    /// apart. The rows written.
    fn write_keyframe(&mut self, snap: &Snapshot, at_ms: i64) -> anyhow::Result<u64> {
        let now = &snap.sockets;
        let mut base = self.base.take();
        let cookies: Vec<_> = now.entries().map(|e| e.cookie).collect();
        let plan = keyframe::plan(cookies, base.as_mut().map(|b| b.settle(now)), ROWS_PER_GROUP);
        let entries: Vec<&Entry> = now.entries().collect();
        for (i, step) in plan.steps.iter().enumerate() {
            match (step, &base) {
                (Step::Copy { g, rows }, Some(b)) => {
                    let rg = b.row_group(*g).context("a keyframe row group not in its file")?;
                    self.sockets.copy(&b.from, rg, Some(&sockets::stamp(snap.seq, at_ms, *rows)?))?;
                    self.rows_copied += *rows as u64;
                    continue;
                }
                (Step::Copy { .. }, None) => anyhow::bail!("a keyframe row group to copy without its file"),
                (Step::Encode(members), _) => {
                    for slice in members.chunks(ROWS_PER_SLICE) {
                        let rows: Vec<Row> =
                            slice.iter().map(|&i| row(Kind::Key, entries[i as usize], now)).collect();
                        self.sockets.write(&sockets::batch(snap.seq, at_ms, &rows)?)?;
                    }
                }
            }
            if self.keyframe_apart || i + 1 < plan.steps.len() {
                self.sockets.flush().context("writing a keyframe")?;
            }
        }
        self.key_groups = plan.key;
        Ok(entries.len() as u64)
    }

    /// The rows of the sockets that came, moved or went since `before` (the poll written last),
    /// a slice at a time, written out as a row group every `ROWS_PER_GROUP`; each marks its
    /// keyframe group moved. The rows written.
    fn write_changes(&mut self, snap: &Snapshot, at_ms: i64, before: &Sockets) -> anyhow::Result<u64> {
        let mut rows = changes(&snap.sockets, before);
        let mut written = 0;
        loop {
            let slice: Vec<Row> = rows.by_ref().take(ROWS_PER_SLICE).collect();
            if slice.is_empty() {
                break;
            }
            written += slice.len() as u64;
            slice.iter().for_each(|r| self.key_groups.moved(r.cookie));
            self.sockets.write(&sockets::batch(snap.seq, at_ms, &slice)?)?;
            if self.sockets.rows_open() >= ROWS_PER_GROUP {
                self.sockets.flush().context("writing a poll's rows")?;
            }
        }
        Ok(written)
    }

    /// Whether `snap` belongs in a new chunk: this one is `chunk` long, or the metadata changed.
    pub fn ends_before(&self, snap: &Snapshot, meta: &Meta, chunk: Duration) -> bool {
        self.meta != *meta || snap.taken_at.duration_since(self.started).unwrap_or_default() >= chunk
    }

    /// Memory a chunk written into memory takes so far: the encoders' buffers, and what they
    /// wrote out (a keyframe apart).
    pub fn in_memory(&self) -> usize {
        self.buffered() + self.sockets.bytes_written() + self.polls.bytes_written()
    }

    /// The keyframe's rows copied from the base rather than encoded.
    pub fn rows_copied(&self) -> u64 {
        self.rows_copied
    }

    /// Memory the encoders hold, not yet written out (for a chunk written into files).
    pub fn buffered(&self) -> usize {
        self.sockets.memory_size() + self.polls.memory_size()
    }

    /// Both files, finished: sockets, then polls.
    pub fn finish(self) -> anyhow::Result<(W, W)> {
        Ok(self.finish_carrying()?.0)
    }

    /// Both files, finished, and what the chunk's next segment goes on from.
    pub fn finish_carrying(self) -> anyhow::Result<((W, W), Carry)> {
        let carry = Carry { last: self.last, key_at_ms: self.key_at_ms, key_groups: self.key_groups };
        let files = (
            self.sockets.finish().context("finishing a chunk")?,
            self.polls.into_inner().context("finishing a chunk")?,
        );
        Ok((files, carry))
    }

    /// The next segment of a chunk (`carry` from the one before): its first poll's rows are the
    /// changes since the segment before's last, against the same keyframe.
    pub fn resume(
        sockets: W,
        polls: W,
        meta: Meta,
        started: SystemTime,
        carry: Carry,
        pages: Pages,
    ) -> anyhow::Result<Pair<W>> {
        let mut p = Pair::with_pages(sockets, polls, meta, started, pages)?;
        (p.last, p.key_at_ms, p.key_groups) = (carry.last, carry.key_at_ms, carry.key_groups);
        Ok(p)
    }
}

/// Where a chunk's segment ended: its last poll's sockets, and the chunk's keyframe time and
/// row groups.
pub struct Carry {
    last: Option<Sockets>,
    key_at_ms: i64,
    key_groups: KeyGroups,
}

impl Carry {
    /// A poll the reader holds (its sockets, and its time in ms since the epoch), as what the
    /// next poll is written against: its rows are the changes since, and its `key_at_ms` that
    /// poll's time (a frame of changes, `frame.rs`).
    pub fn since(sockets: Sockets, at_ms: i64) -> Carry {
        Carry { last: Some(sockets), key_at_ms: at_ms, key_groups: KeyGroups::default() }
    }

    /// What the next chunk's keyframe may copy of this chunk (closed, its sockets file `from`,
    /// read as `metadata`): `None` before the chunk's first poll.
    pub fn base(self, from: keyframe::Source, metadata: &ParquetMetaData, meta: Meta) -> Option<Base> {
        Some(Base::new(from, metadata, self.key_groups, self.last?, meta))
    }
}

/// Socket `e`'s row of `kind`, as of `now`.
fn row(kind: Kind, e: &Entry, now: &Sockets) -> Row {
    Row { kind, cookie: e.cookie, view: Some(e.view(now.at())) }
}

/// The rows of the sockets `now` that came or moved (`change`) or went (`gone`) since `before`,
/// in cookie order. Entries shared with `before` are skipped without being looked at.
fn changes<'a>(now: &'a Sockets, before: &'a Sockets) -> impl Iterator<Item = Row> + 'a {
    now.changes_since(before).map(move |c| match c {
        Change::Added(e) | Change::Changed { new: e, .. } => row(Kind::Change, e, now),
        Change::Gone(e) => Row { kind: Kind::Gone, cookie: e.cookie, view: None },
    })
}

/// Rows derived and encoded at a time, and rows a poll writes out as a row group once it has
/// that many unwritten (see [`Pair::write`]); a row group's footer costs some 35 KB.
pub(super) const ROWS_PER_SLICE: usize = 1024;
pub(super) const ROWS_PER_GROUP: usize = 8192;

/// The closed flows of `snap` not written yet (each is written once, at the first poll that
/// lists it); moves `written` to the newest.
pub fn fresh_closed(snap: &Snapshot, written: &mut u64) -> Vec<ClosedFlow> {
    let fresh = snap.closed.iter().filter(|c| c.seq > *written).cloned().collect();
    *written = (*written).max(snap.closed.iter().map(|c| c.seq).max().unwrap_or(0));
    fresh
}

/// `20261123T171000Z-42`: a chunk's first poll, in UTC, and its number.
pub fn stem_of(at: SystemTime, seq: u64) -> String {
    let t = humantime::format_rfc3339_seconds(at).to_string().replace(['-', ':'], "");
    format!("{t}-{seq}")
}

/// Whether `stem` is a name [`stem_of`] gives (with the `.N` a restarted recorder adds when the
/// name is taken): what a recorder takes for its own chunks, and nothing else in its directory.
pub fn is_chunk_stem(stem: &str) -> bool {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let Some((time, rest)) = stem.split_once('-') else { return false };
    let (seq, n) = rest.split_once('.').map_or((rest, None), |(a, b)| (a, Some(b)));
    let t = time.as_bytes();
    t.len() == 16
        && digits(&t[..8])
        && t[8] == b'T'
        && digits(&t[9..15])
        && t[15] == b'Z'
        && digits(seq.as_bytes())
        && n.is_none_or(|n| digits(n.as_bytes()))
}
