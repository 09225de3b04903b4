//! `Recorder`: polls into a recording directory, a chunk at a time, with retention by age and by
//! total size. A chunk under way is written as segments (`segments.rs`), each under `.tmp` names
//! and renamed when whole (the polls file last, which is what marks it complete), so a crash or
//! SIGKILL loses at most the segment being written; when the chunk closes its segments become
//! its two files. One recorder per directory: a lock file says so. With the hive layout
//! (`layout.rs`) the recorder's directory is its host's tree, `DIR/host=NAME`, and each chunk
//! (with its segments) sits in the `date=YYYY-MM-DD` partition of its first poll; a chunk's stem
//! is then its path within the tree (`date=2026-11-23/20261123T171000Z-42`).

use super::chunk::{self, Carry};
use super::format::{Meta, Pages};
use super::layout::{self, Layout};
use super::{keyframe, segments};
use anyhow::Context;
use bbrtop_core::snapshot::Snapshot;
use parquet::file::metadata::ParquetMetaDataReader;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where chunks are cut, where they go, and what is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordOptions {
    /// A chunk's length: what retention deletes at a time, and where readers start.
    pub chunk: Duration,
    /// A segment's length: what a crash can lose.
    pub segment: Duration,
    /// Chunks that ended longer ago than this are deleted.
    pub max_age: Option<Duration>,
    /// The oldest chunks are deleted while the recording is larger than this.
    pub max_bytes: Option<u64>,
    /// Flat, or in `host=NAME/date=YYYY-MM-DD/` partitions.
    pub layout: Layout,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            chunk: Duration::from_secs(60),
            segment: Duration::from_secs(5),
            max_age: None,
            max_bytes: None,
            layout: Layout::Flat,
        }
    }
}

pub use super::chunk::{POLLS_SUFFIX, SOCKETS_SUFFIX};
use super::chunk::{TMP, put_in_place};
const LOCK: &str = ".bbrtop-record.lock";

/// The chunk under way: the segment being written, and the chunk's name, first poll's time and
/// segments renamed so far.
struct Open {
    pair: chunk::Pair<BufWriter<File>>,
    chunk: Chunk,
}

struct Chunk {
    stem: String,
    started: SystemTime,
    parts: Vec<String>,
    /// Its newest poll's time.
    last_at: Option<SystemTime>,
}

pub struct Recorder {
    /// Where its chunks are: the directory, or its host's tree in it (the hive layout).
    dir: PathBuf,
    /// Whether chunks go into date partitions beneath `dir`.
    dated: bool,
    opts: RecordOptions,
    system: bbrtop_core::system::SystemInfo,
    open: Option<Open>,
    /// The newest closed flow written: each is written once, at the first poll that lists it.
    closed_seq: u64,
    /// Bytes of the chunks this recorder finished.
    written: u64,
    /// Segments ended and chunks closed so far: the directory's files change with it only.
    file_changes: u64,
    /// What the next chunk's keyframe may copy of the chunk closed last (`keyframe.rs`).
    base: Option<keyframe::Base>,
    /// Keyframe rows copied from the chunk before, since start.
    rows_copied: u64,
    _lock: File,
}

impl Recorder {
    /// Starts a recording in `dir` (created if missing; with the hive layout, in its host's tree
    /// there, and the lock in the tree, so that hosts may share a directory). An existing
    /// recording is continued: the whole segments a killed recorder left become their chunk (in
    /// every partition), its partial files are removed, and retention is applied. A flat
    /// recording and host trees are not mixed in one directory.
    pub fn create(
        dir: &Path,
        opts: RecordOptions,
        system: &bbrtop_core::system::SystemInfo,
    ) -> anyhow::Result<Recorder> {
        anyhow::ensure!(!opts.chunk.is_zero(), "the chunk length must be above zero");
        anyhow::ensure!(!opts.segment.is_zero(), "the segment length must be above zero");
        check_place(dir)?;
        layout::check_mix(dir, &opts.layout)?;
        let (dir, dated) = match &opts.layout {
            Layout::Flat => (dir.to_path_buf(), false),
            Layout::Hive { host } => (layout::host_dir(dir, host), true),
        };
        let dir = dir.as_path();
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let lock = File::create(dir.join(LOCK)).with_context(|| format!("writing in {}", dir.display()))?;
        if lock.try_lock().is_err() {
            anyhow::bail!("{}: another bbrtop is recording there", dir.display());
        }
        for leaf in layout::leaves(dir) {
            let leaf = dir.join(leaf);
            // Only its own partial files: a directory may hold anyone's `.tmp`.
            for e in std::fs::read_dir(&leaf)?.flatten() {
                if segments::is_own_tmp(&e.file_name().to_string_lossy()) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
            segments::recover(&leaf)?;
        }
        retain(dir, &opts, SystemTime::now())?;
        Ok(Recorder {
            dir: dir.to_path_buf(),
            dated,
            opts,
            system: system.clone(),
            open: None,
            closed_seq: 0,
            written: 0,
            file_changes: 0,
            base: None,
            rows_copied: 0,
            _lock: lock,
        })
    }

    /// Adds one poll, first closing the chunk under way (and applying retention) if this poll
    /// is `chunk` or more after the chunk's first. Then the segment under way is renamed if it
    /// covers `segment`, each poll counted until the next (taken as far as the one before was):
    /// renamed once its newest poll is in, a segment leaves at most `segment` of polls unread
    /// whenever the recorder is killed, where renaming it when the next poll came would leave up
    /// to a poll more.
    pub fn write(&mut self, snap: &Snapshot) -> anyhow::Result<()> {
        let meta = Meta { system: self.system.clone(), rule: snap.rule };
        let age = |since: SystemTime| snap.taken_at.duration_since(since).unwrap_or_default();
        if self.open.as_ref().is_some_and(|o| o.pair.meta != meta || age(o.chunk.started) >= self.opts.chunk)
        {
            self.close()?;
        }
        let keyframe = self.open.is_none();
        let open = match self.open.take() {
            Some(o) => o,
            None => self.start(snap, meta)?,
        };
        let open = self.open.insert(open);
        let fresh = chunk::fresh_closed(snap, &mut self.closed_seq);
        open.pair.write(snap, &fresh)?;
        if keyframe {
            self.rows_copied += open.pair.rows_copied();
            // The keyframe's encoders, and the chunk before's compaction, are gone: their memory
            // goes back rather than stay the process's until the next chunk (some 20 MB at 10k
            // sockets, most of it a zstd context per column and row group).
            crate::mem::trim();
        }
        let gap = open.chunk.last_at.map_or(Duration::ZERO, age);
        open.chunk.last_at = Some(snap.taken_at);
        if age(open.pair.started) + gap >= self.opts.segment {
            self.next_segment(snap.taken_at)?;
        }
        Ok(())
    }

    /// Closes the chunk under way now (and applies retention): the next poll starts a chunk.
    pub fn close_chunk(&mut self) -> anyhow::Result<()> {
        self.close()
    }

    /// Memory the chunk under way takes: its segment's encoders.
    pub fn in_memory(&self) -> usize {
        self.open.as_ref().map_or(0, |o| o.pair.buffered())
    }

    /// The newest closed flow written, and a start from another writer's: each closed flow is
    /// written once whichever writer takes the polls (hindsight's spool, or memory while it fails).
    pub fn closed_seq(&self) -> u64 {
        self.closed_seq
    }

    pub fn closed_written_to(&mut self, seq: u64) {
        self.closed_seq = self.closed_seq.max(seq);
    }

    /// Keyframe rows copied from the chunk before rather than encoded, since start.
    pub fn rows_copied(&self) -> u64 {
        self.rows_copied
    }

    /// Where its chunks are: the directory it was given, or its host's tree there.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How often the directory's files changed (a segment ended, a chunk closed): the same count,
    /// the same files.
    pub fn file_changes(&self) -> u64 {
        self.file_changes
    }

    /// Closes the chunk under way; the bytes this recorder wrote, in all.
    pub fn finish(mut self) -> anyhow::Result<u64> {
        self.close()?;
        Ok(self.written)
    }

    /// The files of segment `k` of chunk `stem`, under their `.tmp` names.
    fn create_part(&self, stem: &str, k: usize) -> anyhow::Result<(BufWriter<File>, BufWriter<File>)> {
        let part = segments::stem_of(stem, k);
        let create = |suffix: &str| -> anyhow::Result<BufWriter<File>> {
            let p = self.dir.join(format!("{part}{suffix}{TMP}"));
            Ok(BufWriter::new(File::create(&p).with_context(|| format!("creating {}", p.display()))?))
        };
        Ok((create(SOCKETS_SUFFIX)?, create(POLLS_SUFFIX)?))
    }

    fn start(&mut self, snap: &Snapshot, meta: Meta) -> anyhow::Result<Open> {
        let mut stem = chunk::stem_of(snap.taken_at, snap.seq);
        if self.dated {
            let partition = layout::date_partition(snap.taken_at);
            let p = self.dir.join(&partition);
            std::fs::create_dir_all(&p).with_context(|| format!("creating {}", p.display()))?;
            stem = format!("{partition}/{stem}");
        }
        let stem = unique_stem(&self.dir, &stem);
        let (socks, polls) = self.create_part(&stem, 0)?;
        let pair =
            chunk::Pair::new(socks, polls, meta, snap.taken_at)?.keyframe_apart().with_base(self.base.take());
        Ok(Open { pair, chunk: Chunk { stem, started: snap.taken_at, parts: Vec::new(), last_at: None } })
    }

    /// Renames the segment under way and starts the next, from where it ended.
    fn next_segment(&mut self, at: SystemTime) -> anyhow::Result<()> {
        let Some(Open { pair, mut chunk }) = self.open.take() else { return Ok(()) };
        let meta = pair.meta.clone();
        let carry = self.end_segment(pair, &mut chunk)?;
        self.file_changes += 1;
        let (socks, polls) = self.create_part(&chunk.stem, chunk.parts.len())?;
        self.open =
            Some(Open { pair: chunk::Pair::resume(socks, polls, meta, at, carry, Pages::Plain)?, chunk });
        Ok(())
    }

    /// Finishes segment `pair` of `chunk` and gives it its name; one without polls (the chunk
    /// closed just after a segment was renamed) is removed instead.
    fn end_segment(&self, pair: chunk::Pair<BufWriter<File>>, chunk: &mut Chunk) -> anyhow::Result<Carry> {
        let empty = pair.polls_written == 0;
        let ((socks, polls), carry) = pair.finish_carrying()?;
        let part = segments::stem_of(&chunk.stem, chunk.parts.len());
        for (w, suffix) in [(socks, SOCKETS_SUFFIX), (polls, POLLS_SUFFIX)] {
            let file = w.into_inner().context("finishing a segment")?;
            if empty {
                drop(file);
                let _ = std::fs::remove_file(self.dir.join(format!("{part}{suffix}{TMP}")));
            } else {
                put_in_place(&self.dir, &part, suffix, file)?;
            }
        }
        if !empty {
            chunk.parts.push(part);
        }
        if !empty && chunk.parts.len() == 1 {
            // The first segment's encoders, compressed (its keyframe's row groups are copied as
            // they are), are gone too.
            crate::mem::trim();
        }
        Ok(carry)
    }

    /// Finishes the last segment, makes the segments the chunk, and applies retention.
    fn close(&mut self) -> anyhow::Result<()> {
        let Some(Open { pair, mut chunk }) = self.open.take() else { return Ok(()) };
        let meta = pair.meta.clone();
        let carry = self.end_segment(pair, &mut chunk)?;
        self.file_changes += 1;
        self.written += segments::compact(&self.dir, &chunk.stem, &chunk.parts)?;
        // Opened before retention, which may remove the chunk's name but not what is open.
        let path = self.dir.join(format!("{}{SOCKETS_SUFFIX}", chunk.stem));
        self.base = base_of(&path, carry, meta)
            .inspect_err(|e| tracing::debug!("the next keyframe is encoded whole: {e:#}"))
            .ok()
            .flatten();
        retain(&self.dir, &self.opts, SystemTime::now())
    }
}

/// What the next keyframe may copy of the chunk whose sockets file is `path`.
fn base_of(path: &Path, carry: Carry, meta: Meta) -> anyhow::Result<Option<keyframe::Base>> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(carry.base(keyframe::Source::File(file), &metadata, meta))
}

impl Drop for Recorder {
    /// A recorder dropped without `finish` (an error on the way out) still keeps its last chunk.
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!("closing the last chunk: {e:#}");
        }
    }
}

/// Refuses a place no recording belongs, before anything is written there: a path that is no
/// directory, the filesystem's root, or the kernel's /proc and /sys. Created if missing.
fn check_place(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!("{}: not a directory", dir.display());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let real = dir.canonicalize().with_context(|| format!("reading {}", dir.display()))?;
    if real.parent().is_none() {
        anyhow::bail!("{}: the filesystem's root; record into a directory of its own", dir.display());
    }
    if real.starts_with("/proc") || real.starts_with("/sys") {
        anyhow::bail!("{}: a kernel filesystem, not a place for files", dir.display());
    }
    Ok(())
}

/// `stem`, or `stem.N` if a chunk of that name exists (a restarted bbrtop numbers polls anew;
/// the segments a killed one left were made chunks when this recorder started).
pub(super) fn unique_stem(dir: &Path, stem: &str) -> String {
    let taken = |s: &str| {
        dir.join(format!("{s}{POLLS_SUFFIX}")).exists() || dir.join(format!("{s}{SOCKETS_SUFFIX}")).exists()
    };
    (0..)
        .map(|i| if i == 0 { stem.to_string() } else { format!("{stem}.{i}") })
        .find(|s| !taken(s))
        .expect("unbounded")
}

/// A complete chunk on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkFile {
    pub stem: String,
    pub bytes: u64,
    pub modified: SystemTime,
}

/// The complete chunks in `dir` and in its partitions (`layout::leaves`), and the whole segments
/// of a chunk under way (or a killed recorder's) each as one, oldest first (by file name, which
/// starts with the first poll's time); a partitioned chunk's stem is its path within `dir`.
pub fn chunks(dir: &Path) -> anyhow::Result<Vec<ChunkFile>> {
    let mut out = Vec::new();
    for leaf in layout::leaves(dir) {
        let at = dir.join(&leaf);
        for e in std::fs::read_dir(&at).with_context(|| format!("reading {}", at.display()))?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // Only what a recorder names: as Prometheus' TSDB takes only the blocks whose names it
            // gave, retention never deletes another tool's `X.polls.parquet`.
            let Some(stem) = name.strip_suffix(POLLS_SUFFIX).filter(|s| segments::is_own(s)) else {
                continue;
            };
            // A segment left beside the chunk made of it (a recorder killed as it removed them).
            if segments::chunk_of(stem).is_some_and(|c| at.join(format!("{c}{POLLS_SUFFIX}")).exists()) {
                continue;
            }
            let sockets = at.join(format!("{stem}{SOCKETS_SUFFIX}"));
            let (Ok(pm), Ok(sm)) = (e.metadata(), std::fs::metadata(&sockets)) else { continue };
            out.push(ChunkFile {
                stem: if leaf.is_empty() { stem.to_string() } else { format!("{leaf}/{stem}") },
                bytes: pm.len() + sm.len(),
                modified: pm.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            });
        }
    }
    let name = |c: &ChunkFile| c.stem.rsplit('/').next().unwrap_or_default().to_string();
    out.sort_by_cached_key(|c| (name(c), c.stem.clone()));
    Ok(out)
}

/// Which of `chunks` (oldest first) retention deletes at `now`: those older than the age limit,
/// then the oldest while the rest are over the size limit. The newest chunk is always kept.
pub fn expired(chunks: &[ChunkFile], opts: &RecordOptions, now: SystemTime) -> usize {
    let old =
        |c: &ChunkFile| opts.max_age.is_some_and(|a| now.duration_since(c.modified).unwrap_or_default() > a);
    let mut n = chunks.iter().take(chunks.len().saturating_sub(1)).take_while(|c| old(c)).count();
    let mut total: u64 = chunks[n..].iter().map(|c| c.bytes).sum();
    while let Some(max) = opts.max_bytes
        && total > max
        && n + 1 < chunks.len()
    {
        total -= chunks[n].bytes;
        n += 1;
    }
    n
}

/// Applies retention. A chunk that cannot be removed is logged and tried again next time, as
/// Prometheus' TSDB does: it stops no recording.
fn retain(dir: &Path, opts: &RecordOptions, now: SystemTime) -> anyhow::Result<()> {
    let all = chunks(dir)?;
    for c in &all[..expired(&all, opts, now)] {
        match remove_chunk(dir, c) {
            Ok(()) => tracing::debug!(chunk = c.stem, "retention removed a chunk"),
            Err(e) => tracing::warn!(chunk = c.stem, "retention: {e:#}"),
        }
    }
    // Date partitions retention emptied (a directory with anything left in it stays).
    for leaf in layout::leaves(dir).iter().filter(|l| !l.is_empty()) {
        let _ = std::fs::remove_dir(dir.join(leaf));
    }
    Ok(())
}

/// Removes chunk `c` of `dir`: the polls file first, without which the chunk is no longer
/// complete, whatever happens next.
fn remove_chunk(dir: &Path, c: &ChunkFile) -> anyhow::Result<()> {
    for suffix in [POLLS_SUFFIX, SOCKETS_SUFFIX] {
        let p = dir.join(format!("{}{suffix}", c.stem));
        std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
    }
    Ok(())
}

/// Removes the oldest chunk of `dir` but the newest (room made on a full disk); its stem.
pub fn trim_oldest(dir: &Path) -> anyhow::Result<Option<String>> {
    let all = chunks(dir)?;
    let Some(c) = all.first().filter(|_| all.len() > 1) else { return Ok(None) };
    remove_chunk(dir, c)?;
    Ok(Some(c.stem.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(i: u64, bytes: u64, age_s: u64, now: SystemTime) -> ChunkFile {
        ChunkFile { stem: format!("c{i}"), bytes, modified: now - Duration::from_secs(age_s) }
    }

    #[test]
    fn retention_by_age_then_size_keeps_the_newest() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let cs: Vec<ChunkFile> = (0..5).map(|i| chunk(i, 100, 600 - i * 120, now)).collect();
        let by_age = RecordOptions { max_age: Some(Duration::from_secs(300)), ..Default::default() };
        assert_eq!(expired(&cs, &by_age, now), 3, "600, 480 and 360 s old");
        let by_size = RecordOptions { max_bytes: Some(250), ..Default::default() };
        assert_eq!(expired(&cs, &by_size, now), 3);
        let tiny = RecordOptions { max_bytes: Some(1), max_age: Some(Duration::ZERO), ..Default::default() };
        assert_eq!(expired(&cs, &tiny, now), 4, "the newest chunk is kept whatever the limits");
        assert_eq!(expired(&[], &tiny, now), 0);
        assert_eq!(expired(&cs, &RecordOptions::default(), now), 0);
    }

    #[test]
    fn stems_sort_by_time() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        let a = chunk::stem_of(t, 9);
        let b = chunk::stem_of(t + Duration::from_secs(61), 70);
        assert!(a < b, "{a} {b}");
        assert!(!a.contains(':'), "{a}");
    }
}
