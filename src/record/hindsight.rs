//! Hindsight: the last minutes of polls kept in memory as finished chunks (the recording's own
//! encoding, so a minute of 10k idle sockets costs a few MB, not the snapshots' hundreds), and
//! written out as a recording when asked, so the minutes before an alert can be kept after it.
//!
//! Memory is bounded: the chunks held, plus the encoder of the chunk under way, stay within
//! `max_bytes`. The oldest chunks go first, by age (past the window) and then by size. The
//! encoder's own buffers are the floor: a bound below them keeps the chunk under way only.

use super::chunk::{self, Meta, Pair};
use super::chunk::{POLLS_SUFFIX, SOCKETS_SUFFIX, TMP, put_in_place};
use anyhow::Context;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use serde::Serialize;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What hindsight keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HindsightOptions {
    /// How far back: polls older than this are dropped.
    pub window: Duration,
    /// The memory the held chunks and the encoder may take, in bytes.
    pub max_bytes: u64,
}

/// A finished chunk, in memory.
struct Held {
    stem: String,
    first_at: SystemTime,
    last_at: SystemTime,
    polls: u64,
    sockets_file: Vec<u8>,
    polls_file: Vec<u8>,
}

impl Held {
    fn bytes(&self) -> u64 {
        (self.sockets_file.len() + self.polls_file.len()) as u64
    }
}

pub struct Hindsight {
    opts: HindsightOptions,
    system: SystemInfo,
    held: VecDeque<Held>,
    open: Option<(Pair<Vec<u8>>, String, SystemTime)>,
    closed_seq: u64,
    /// Polls dropped early to stay within the memory bound, since start.
    dropped_for_memory: u64,
}

/// What a dump wrote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dumped {
    pub dir: PathBuf,
    pub polls: u64,
    /// On disk.
    pub bytes: u64,
    /// In memory, when asked (the held chunks and the encoder's buffers).
    pub memory_bytes: u64,
    #[serde(with = "bbrtop_core::units::serde_time::option")]
    pub from: Option<SystemTime>,
    #[serde(with = "bbrtop_core::units::serde_time::option")]
    pub to: Option<SystemTime>,
}

impl Hindsight {
    pub fn new(opts: HindsightOptions, system: SystemInfo) -> Hindsight {
        Hindsight { opts, system, held: VecDeque::new(), open: None, closed_seq: 0, dropped_for_memory: 0 }
    }

    /// A chunk's length: a fifteenth of the window (a minute of the default 15), at least 5 s,
    /// so that age drops a fifteenth at a time.
    fn chunk(&self) -> Duration {
        (self.opts.window / 15).max(Duration::from_secs(5))
    }

    /// Adds one poll, then forgets what is out of the window or over the bound.
    pub fn push(&mut self, snap: &Snapshot) -> anyhow::Result<()> {
        let meta = Meta { system: self.system.clone(), rule: snap.rule };
        if self.open.as_ref().is_some_and(|(p, ..)| p.ends_before(snap, &meta, self.chunk())) {
            self.finish_open()?;
        }
        let (pair, _, last) = match &mut self.open {
            Some(o) => o,
            None => {
                let stem = chunk::stem_of(snap.taken_at, snap.seq);
                self.open.insert((
                    Pair::new(Vec::new(), Vec::new(), meta, snap.taken_at)?.keyframe_apart(),
                    stem,
                    snap.taken_at,
                ))
            }
        };
        pair.write(snap, &chunk::fresh_closed(snap, &mut self.closed_seq))?;
        *last = snap.taken_at;
        self.forget(snap.taken_at);
        Ok(())
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

    pub fn dropped_for_memory(&self) -> u64 {
        self.dropped_for_memory
    }

    fn finish_open(&mut self) -> anyhow::Result<()> {
        let Some((pair, stem, last_at)) = self.open.take() else { return Ok(()) };
        let (polls, first_at) = (pair.polls_written, pair.started);
        let (sockets_file, polls_file) = pair.finish()?;
        self.held.push_back(Held { stem, first_at, last_at, polls, sockets_file, polls_file });
        Ok(())
    }

    fn forget(&mut self, now: SystemTime) {
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

    /// Writes what is held as a recording in a new directory under `parent`, named for the
    /// time of the dump; the chunk under way is finished first, so the newest poll is in it.
    pub fn dump(&mut self, parent: &Path, now: SystemTime) -> anyhow::Result<Dumped> {
        let memory_bytes = self.bytes();
        self.finish_open()?;
        let (polls, from, to) = self.span();
        anyhow::ensure!(polls > 0, "hindsight holds no polls yet");
        let name = humantime::format_rfc3339_seconds(now).to_string().replace(['-', ':'], "");
        let name =
            |i: u32| if i == 0 { format!("hindsight-{name}") } else { format!("hindsight-{name}.{i}") };
        let taken = |n: &str| parent.join(n).exists() || parent.join(format!("{n}{TMP}")).exists();
        let name = (0..).map(name).find(|n| !taken(n)).expect("unbounded");
        // Written whole under a temporary name, then renamed: a dump directory that exists is
        // complete.
        let (dir, tmp_dir) = (parent.join(&name), parent.join(format!("{name}{TMP}")));
        std::fs::create_dir_all(&tmp_dir).with_context(|| format!("creating {}", tmp_dir.display()))?;
        let mut bytes = 0;
        for h in &self.held {
            for (suffix, data) in [(SOCKETS_SUFFIX, &h.sockets_file), (POLLS_SUFFIX, &h.polls_file)] {
                let tmp = tmp_dir.join(format!("{}{suffix}{TMP}", h.stem));
                let mut f =
                    std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
                f.write_all(data).with_context(|| format!("writing {}", tmp.display()))?;
                bytes += put_in_place(&tmp_dir, &h.stem, suffix, f)?;
            }
        }
        std::fs::rename(&tmp_dir, &dir).with_context(|| format!("renaming {}", tmp_dir.display()))?;
        Ok(Dumped { dir, polls, bytes, memory_bytes, from, to })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Recording;
    use bbrtop_core::seam::Now;
    use bbrtop_core::testing::record;
    use bbrtop_core::wire::Dump;
    use bbrtop_engine::{Engine, EngineConfig};
    use std::time::Instant;

    /// `n` polls a second apart of `sockets` sockets, each acking more every poll.
    fn run(h: &mut Hindsight, n: u64, sockets: u64) {
        let mut e = Engine::new(EngineConfig::default());
        let t0 =
            Now { mono: Instant::now(), wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000) };
        for i in 0..n {
            let now = t0.after(Duration::from_secs(i));
            let socks = (0..sockets)
                .map(|c| record(c + 1, "bbr").srtt_us(20_000 + i as u32).bytes_acked(i * c).build());
            bbrtop_core::seam::feed_dump(&mut e, Dump { sockets: socks.collect(), ..Dump::default() }, now);
            h.push(&e.tick(now)).unwrap();
        }
    }

    #[test]
    fn keeps_the_window_and_dumps_it_as_a_recording() {
        let opts = HindsightOptions { window: Duration::from_secs(60), max_bytes: 64 << 20 };
        let mut h = Hindsight::new(opts, SystemInfo::default());
        run(&mut h, 150, 20);
        let (polls, from, to) = h.span();
        // The window, and at most one chunk (5 s here) beyond it.
        assert!((61..=66).contains(&polls), "{polls} polls held");
        assert_eq!(to.unwrap().duration_since(from.unwrap()).unwrap().as_secs(), polls - 1);
        let parent = tempfile::tempdir().unwrap();
        let d = h.dump(parent.path(), SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_200)).unwrap();
        assert_eq!(d.polls, polls);
        let mut rec = Recording::open(&d.dir).unwrap();
        assert_eq!(rec.polls().len() as u64, polls);
        let last = rec.read(polls as usize - 1..polls as usize).unwrap();
        assert_eq!((last[0].seq, last[0].sockets.len()), (150, 20), "the newest poll is in the dump");
        // A second dump does not overwrite the first.
        let again =
            h.dump(parent.path(), SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_200)).unwrap();
        assert_ne!(again.dir, d.dir);
    }

    #[test]
    fn stays_within_its_memory_bound() {
        let opts = HindsightOptions { window: Duration::from_secs(150), max_bytes: u64::MAX };
        let mut free = Hindsight::new(opts, SystemInfo::default());
        run(&mut free, 60, 500);
        // The encoder's buffers are the floor (the same at the end of the same polls); half of
        // what the finished chunks took above it.
        let bound = free.encoder_bytes() + free.held_bytes() / 2;
        let mut h = Hindsight::new(HindsightOptions { max_bytes: bound, ..opts }, SystemInfo::default());
        run(&mut h, 60, 500);
        assert!(h.bytes() <= bound, "{} bytes held, bound {bound}", h.bytes());
        assert!(h.dropped_for_memory() > 0, "the bound made it drop polls");
        assert_eq!(h.span().2, free.span().2, "the newest polls are kept");
        let empty =
            Hindsight::new(opts, SystemInfo::default()).dump(Path::new("/nonexistent"), SystemTime::now());
        assert!(empty.is_err());
    }
}
