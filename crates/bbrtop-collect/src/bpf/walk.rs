//! The socket walk as a poller [`Source`]: the TCP hooks (bpf/bbrtop.bpf.c) write a record for
//! each socket that moves, in any network namespace, into a map keyed by cookie; each poll
//! bumps the read epoch, takes every record out of the map (read and deleted in batches), and
//! hands the engine the sockets that moved. A socket that did not move costs nothing here.

use super::clock::ktime_now_ns;
use crate::attrib::Resolver;
use bbrtop_core::model::{SocketRecord, StateSet, TcpState};
use bbrtop_core::seam::{Feed, Source};
use bbrtop_core::seam::{Now, Walk, WalkFailed};
use bbrtop_core::wire::CcNames;
use bbrtop_core::wire::walk::{self, WalkStats};
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use std::time::Instant;

/// Records per batch syscall.
const BATCH: u32 = 1024;
/// The `moved` map's size (bpf/bbrtop.bpf.c).
const MAX_ENTRIES: usize = 1 << 18;

pub struct Walker {
    moved: MapHandle,
    /// Per CPU, the records the hooks could not write.
    moved_full: MapHandle,
    /// Names for the namespaces and cgroups the records carry.
    resolver: Resolver,
    epoch_map: MapHandle,
    epoch: u32,
    /// The records of the last read, back to back, and the keys a batch reads beside them
    /// (kept: a poll allocates nothing here).
    buf: Vec<u8>,
    keys: Vec<u64>,
    names: CcNames,
    states: StateSet,
}

impl Walker {
    pub fn new(maps: WalkMaps, states: StateSet, resolver: Resolver) -> Walker {
        let WalkMaps { moved, moved_full, epoch: epoch_map } = maps;
        let epoch = read_u32(&epoch_map).unwrap_or(0);
        Walker {
            moved,
            moved_full,
            resolver,
            epoch_map,
            epoch,
            buf: Vec::new(),
            keys: vec![0; BATCH as usize],
            names: CcNames::default(),
            states,
        }
    }

    /// One read: the sockets that moved since the last, in the states asked for, and those that
    /// entered CLOSE.
    pub fn walk(&mut self) -> Result<Read, String> {
        // A hook that sees the new epoch fills the socket's record afresh at its next move.
        self.epoch = self.epoch.wrapping_add(1);
        let e = self.epoch.to_ne_bytes();
        self.epoch_map.update(&0u32.to_ne_bytes(), &e, MapFlags::ANY).map_err(|e| e.to_string())?;
        self.take_all()?;
        let values = self.buf.chunks_exact(walk::REC_LEN);
        let (mut sockets, mut stats) = walk::parse(values, self.epoch, ktime_now_ns(), &mut self.names);
        stats.dropped_total = percpu_sum(&self.moved_full);
        let gone = sockets.iter().filter(|r| r.state == TcpState::Close).map(|r| r.cookie).collect();
        sockets.retain(|r| self.states.contains(r.state));
        for r in &mut sockets {
            r.origin = self.resolver.origin(r.netns, r.cgroup_id);
        }
        Ok(Read { sockets, gone, stats })
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

fn percpu_sum(m: &MapHandle) -> u64 {
    let Ok(Some(per_cpu)) = m.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) else { return 0 };
    per_cpu.iter().filter_map(|v| Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?))).sum()
}

/// What one walk read.
pub struct Read {
    pub sockets: Vec<SocketRecord>,
    pub gone: Vec<bbrtop_core::model::Cookie>,
    pub stats: WalkStats,
}

impl Walker {
    /// Every record in the map, deleted as read, one after another in `self.buf`: one pass of
    /// `BPF_MAP_LOOKUP_AND_DELETE_BATCH` calls over the hash table, each filling up to `BATCH`
    /// records straight into the buffer. (libbpf-rs's batch iterator allocates twice per record
    /// and ends at the first batch shorter than asked for, which the kernel returns whenever
    /// the next bucket does not fit; the end is the kernel's ENOENT.)
    #[allow(unsafe_code)]
    fn take_all(&mut self) -> Result<(), String> {
        use libbpf_rs::libbpf_sys;
        use std::os::fd::{AsFd, AsRawFd};
        let fd = self.moved.as_fd().as_raw_fd();
        let opts = libbpf_sys::bpf_map_batch_opts {
            sz: size_of::<libbpf_sys::bpf_map_batch_opts>() as _,
            ..Default::default()
        };
        let (mut token_in, mut token_out, mut first) = (0u64, 0u64, true);
        self.buf.clear();
        for _ in 0..=MAX_ENTRIES / BATCH as usize + 1 {
            let len = self.buf.len();
            self.buf.reserve(BATCH as usize * walk::REC_LEN);
            let mut count = BATCH;
            let token: *mut u64 = if first { std::ptr::null_mut() } else { &mut token_in };
            // SAFETY: `self.keys` holds BATCH u64 keys and `buf` has room for BATCH values past its
            // length (reserved above); the kernel writes at most `count` (≤ BATCH) of each and
            // an 8-byte token (the hash map's is a u32 bucket index), and says how many in `count`.
            let ret = unsafe {
                libbpf_sys::bpf_map_lookup_and_delete_batch(
                    fd,
                    token.cast(),
                    (&mut token_out as *mut u64).cast(),
                    self.keys.as_mut_ptr().cast(),
                    self.buf.as_mut_ptr().add(len).cast(),
                    &mut count,
                    &opts,
                )
            };
            let err = (ret < 0).then(std::io::Error::last_os_error);
            if let Some(e) = err.as_ref().filter(|e| e.raw_os_error() != Some(libc::ENOENT)) {
                return Err(format!("reading the moved sockets: {e}"));
            }
            // SAFETY: the kernel initialised `count` values of REC_LEN bytes from `len` on.
            unsafe { self.buf.set_len(len + count as usize * walk::REC_LEN) };
            if err.is_some() {
                break;
            }
            (token_in, first) = (token_out, false);
        }
        Ok(())
    }
}

fn read_u32(m: &MapHandle) -> Option<u32> {
    let v = m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).ok()??;
    Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
}

impl Source for Walker {
    fn poll(&mut self, feed: &mut dyn Feed) {
        let started = Instant::now();
        let walk = match self.walk() {
            Ok(Read { sockets, gone, stats }) => {
                let now = Now::system();
                Ok(Walk { sockets, gone, stats, duration: started.elapsed(), now })
            }
            Err(error) => Err(WalkFailed { error, duration: started.elapsed() }),
        };
        feed.walked(walk);
    }
}
