//! The socket walk as a poller [`Source`]: the TCP hooks (crates/bbrtop-collect/bpf/bbrtop.bpf.c)
//! write a record for each socket that moves, in any network namespace, into a map keyed by cookie;
//! each poll bumps the read epoch, takes every record out of the map (read and deleted in batches),
//! and hands the engine the sockets that moved. A socket that did not move costs nothing here.
//! Before a read, when some socket's record fell behind its moves since the last read (the hooks
//! refill a record at most every refresh), the refill pass brings those records up to date.

use super::clock::ktime_now_ns;
use super::counts::percpu_sum;
use super::refill::Refill;
use crate::attrib::Resolver;
use crate::every::Reconcile;
use bbrtop_core::model::{Cookie, SocketRecord, StateSet, TcpState};
use bbrtop_core::seam::{Feed, Source};
use bbrtop_core::seam::{Now, Walk, WalkFailed};
use bbrtop_core::wire::CcNames;
use bbrtop_core::wire::walk::{self, WalkStats};
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use std::time::Instant;

/// Records per batch syscall.
const BATCH: u32 = 1024;
/// The `moved` map's size (crates/bbrtop-collect/bpf/bbrtop.bpf.c).
const MAX_ENTRIES: usize = 1 << 18;

pub struct Walker {
    moved: MapHandle,
    /// Per CPU, the records the hooks could not write.
    moved_full: MapHandle,
    epoch_map: MapHandle,
    epoch: u32,
    /// The records of the last whole read, back to back, and the keys a batch reads beside
    /// them (kept: a poll allocates nothing here).
    buf: Vec<u8>,
    keys: Vec<u64>,
    decode: Decode,
    /// Records the hooks could not write leave sockets unseen, closes among them: netlink then
    /// reconciles at once.
    reconcile: Reconcile,
    dropped_seen: u64,
    /// `None` where the kernel has no socket storage iterator: records may then stay behind.
    refill: Option<Refill>,
}

/// What turns records into sockets: the names they carry, the states asked for.
struct Decode {
    /// Names for the namespaces and cgroups the records carry.
    resolver: Resolver,
    names: CcNames,
    states: StateSet,
}

impl Walker {
    pub fn new(maps: WalkMaps, states: StateSet, resolver: Resolver, refill: Option<Refill>) -> Walker {
        let WalkMaps { moved, moved_full, epoch: epoch_map } = maps;
        let epoch = read_u32(&epoch_map).unwrap_or(0);
        Walker {
            moved,
            moved_full,
            epoch_map,
            epoch,
            buf: Vec::new(),
            keys: vec![0; BATCH as usize],
            decode: Decode { resolver, names: CcNames::default(), states },
            reconcile: Reconcile::default(),
            dropped_seen: 0,
            refill,
        }
    }

    /// Runs the refill pass now, whether or not a record fell behind (benches time it); `None`
    /// where the kernel has no socket storage iterator.
    pub fn refill_now(&mut self) -> Option<Result<(), String>> {
        self.refill.as_mut().map(Refill::run)
    }

    /// Asks `reconcile` for a netlink reconcile whenever records were dropped since the last read.
    pub fn reconciling(self, reconcile: Reconcile) -> Walker {
        Walker { reconcile, ..self }
    }

    /// One read, whole: the sockets that moved since the last, in the states asked for, and
    /// those that entered CLOSE.
    pub fn walk(&mut self) -> Result<Read, String> {
        self.next_epoch()?;
        self.buf.clear();
        let mut batches = Batches::new(&self.moved, &mut self.keys);
        for _ in 0..MAX_BATCHES {
            if !batches.next_into(&mut self.buf)? {
                break;
            }
        }
        let mut stats = WalkStats::default();
        let (sockets, gone) = self.decode.part(&self.buf, self.epoch, &mut stats);
        self.totals(&mut stats);
        Ok(Read { sockets, gone, stats })
    }

    /// Brings the records behind up to date, then starts a new epoch: a hook that sees it fills
    /// the socket's record afresh at its next move.
    fn next_epoch(&mut self) -> Result<(), String> {
        if let Some(r) = &mut self.refill {
            r.run_if_behind()?;
        }
        self.epoch = self.epoch.wrapping_add(1);
        let e = self.epoch.to_ne_bytes();
        self.epoch_map.update(&0u32.to_ne_bytes(), &e, MapFlags::ANY).map_err(|e| e.to_string())
    }

    /// One read, handed to `feed` in parts as it is read. When more than a batch moved, a
    /// thread of the read's own takes the batches out of the kernel while this one parses them
    /// and the engine takes them in: at 100k moving sockets the kernel's copy and the engine's
    /// update overlap. The usual read, one batch, starts no thread.
    fn stream(&mut self, feed: &mut dyn Feed, now: Now) -> Result<WalkStats, String> {
        self.next_epoch()?;
        let (epoch, mut stats) = (self.epoch, WalkStats::default());
        self.buf.clear();
        let mut batches = Batches::new(&self.moved, &mut self.keys);
        let more = batches.next_into(&mut self.buf)?;
        let decode = &mut self.decode;
        let mut take = |buf: &[u8], stats: &mut WalkStats| {
            let (sockets, gone) = decode.part(buf, epoch, stats);
            feed.walk_part(now, sockets, gone);
        };
        take(&self.buf, &mut stats);
        if !more {
            self.totals(&mut stats);
            return Ok(stats);
        }
        std::thread::scope(|scope| {
            // Two batches in flight at most; their buffers come back to be filled again.
            let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Result<Vec<u8>, String>>(2);
            let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<u8>>();
            scope.spawn(move || {
                for _ in 1..MAX_BATCHES {
                    let mut buf = empty_rx.try_recv().unwrap_or_default();
                    buf.clear();
                    let read = batches.next_into(&mut buf);
                    let last = !matches!(read, Ok(true));
                    if full_tx.send(read.map(|_| buf)).is_err() || last {
                        break;
                    }
                }
            });
            for read in full_rx {
                let buf = read?;
                take(&buf, &mut stats);
                let _ = empty_tx.send(buf);
            }
            Ok::<(), String>(())
        })?;
        self.totals(&mut stats);
        Ok(stats)
    }

    /// What the kernel counted since start: records it could not write, and refilled.
    fn totals(&self, stats: &mut WalkStats) {
        stats.dropped_total = percpu_sum(&self.moved_full, 0);
        stats.refilled_total = self.refill.as_ref().map_or(0, Refill::refilled_total);
    }
}

impl Decode {
    /// The sockets of `bytes` (records back to back) in the states asked for, and the cookies
    /// of those that entered CLOSE; what it could not use counts in `stats`.
    fn part(&mut self, bytes: &[u8], epoch: u32, stats: &mut WalkStats) -> (Vec<SocketRecord>, Vec<Cookie>) {
        let values = bytes.chunks_exact(walk::REC_LEN);
        let (mut sockets, part) = walk::parse(values, epoch, ktime_now_ns(), &mut self.names);
        stats.add(&part);
        let gone = sockets.iter().filter(|r| r.state == TcpState::Close).map(|r| r.cookie).collect();
        sockets.retain(|r| self.states.contains(r.state));
        for r in &mut sockets {
            r.origin = self.resolver.origin(r.netns, r.cgroup_id);
        }
        (sockets, gone)
    }
}

/// Where libbpf will find the kernel's config, whose `CONFIG_HZ` the walk's tcp_info needs (its
/// jiffies fields): /proc/config.gz, or /boot/config-RELEASE. `None` on a host (or in a
/// container) with neither; the walk's records would then carry no tcp_info.
pub fn kernel_config() -> Option<std::path::PathBuf> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let candidates =
        [std::path::PathBuf::from("/proc/config.gz"), format!("/boot/config-{}", release.trim()).into()];
    candidates.into_iter().find(|p| std::fs::File::open(p).is_ok())
}

/// The first object's maps the walk reads.
pub struct WalkMaps {
    pub moved: MapHandle,
    pub moved_full: MapHandle,
    pub epoch: MapHandle,
}

/// What one walk read.
pub struct Read {
    pub sockets: Vec<SocketRecord>,
    pub gone: Vec<bbrtop_core::model::Cookie>,
    pub stats: WalkStats,
}

/// Batch syscalls before a read gives up: the map's size over a batch, and one more.
const MAX_BATCHES: usize = MAX_ENTRIES / BATCH as usize + 2;

/// One pass of `BPF_MAP_LOOKUP_AND_DELETE_BATCH` calls over the `moved` hash table: every
/// record in it, deleted as read, each batch of up to `BATCH` records straight onto the end of
/// a buffer. (libbpf-rs's batch iterator allocates twice per record and ends at the first batch
/// shorter than asked for, which the kernel returns whenever the next bucket does not fit; the
/// end is the kernel's ENOENT.)
struct Batches<'a> {
    fd: std::os::fd::RawFd,
    keys: &'a mut [u64],
    /// Where the next batch starts; `None` before the first.
    token: Option<u64>,
    done: bool,
}

impl<'a> Batches<'a> {
    fn new(map: &MapHandle, keys: &'a mut [u64]) -> Batches<'a> {
        use std::os::fd::{AsFd, AsRawFd};
        Batches { fd: map.as_fd().as_raw_fd(), keys, token: None, done: false }
    }

    /// Reads the next batch onto the end of `buf`: whether more may follow.
    #[allow(unsafe_code)]
    fn next_into(&mut self, buf: &mut Vec<u8>) -> Result<bool, String> {
        use libbpf_rs::libbpf_sys;
        if self.done {
            return Ok(false);
        }
        let opts = libbpf_sys::bpf_map_batch_opts {
            sz: size_of::<libbpf_sys::bpf_map_batch_opts>() as _,
            ..Default::default()
        };
        let len = buf.len();
        let batch = self.keys.len().min(BATCH as usize);
        buf.reserve(batch * walk::REC_LEN);
        let (mut count, mut token_in, mut token_out) = (batch as u32, self.token.unwrap_or(0), 0u64);
        let token: *mut u64 = if self.token.is_some() { &mut token_in } else { std::ptr::null_mut() };
        // SAFETY: `self.keys` holds at least `batch` u64 keys and `buf` has room for `batch`
        // values past its length (reserved above); the kernel writes at most `count` (≤ batch)
        // of each and an 8-byte token (the hash map's is a u32 bucket index), and says how many
        // in `count`.
        let ret = unsafe {
            libbpf_sys::bpf_map_lookup_and_delete_batch(
                self.fd,
                token.cast(),
                (&mut token_out as *mut u64).cast(),
                self.keys.as_mut_ptr().cast(),
                buf.as_mut_ptr().add(len).cast(),
                &mut count,
                &opts,
            )
        };
        let err = (ret < 0).then(std::io::Error::last_os_error);
        if let Some(e) = err.as_ref().filter(|e| e.raw_os_error() != Some(libc::ENOENT)) {
            self.done = true;
            return Err(format!("reading the moved sockets: {e}"));
        }
        // SAFETY: the kernel initialised `count` values of REC_LEN bytes from `len` on.
        unsafe { buf.set_len(len + count as usize * walk::REC_LEN) };
        self.done = err.is_some();
        self.token = Some(token_out);
        Ok(!self.done)
    }
}

fn read_u32(m: &MapHandle) -> Option<u32> {
    let v = m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).ok()??;
    Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
}

impl Source for Walker {
    fn poll(&mut self, feed: &mut dyn Feed) {
        let (started, now) = (Instant::now(), Now::system());
        let walk = match self.stream(feed, now) {
            Ok(stats) => {
                self.reconcile.on_growth(&mut self.dropped_seen, stats.dropped_total);
                let (sockets, gone) = (Vec::new(), Vec::new());
                Ok(Walk { sockets, gone, stats, duration: started.elapsed(), now })
            }
            Err(error) => Err(WalkFailed { error, duration: started.elapsed() }),
        };
        feed.walked(walk);
    }
}
