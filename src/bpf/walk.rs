//! The socket walk as a poller [`Source`]: the TCP hooks (bpf/bbrtop.bpf.c) write a record for
//! each socket that moves, in any network namespace, into a map keyed by cookie; each poll
//! bumps the read epoch, takes every record out of the map (read and deleted in batches), and
//! hands the engine the sockets that moved. A socket that did not move costs nothing here.

use super::collector::ktime_now_ns;
use crate::attrib::Resolver;
use crate::engine::sink::{Feed, Source};
use crate::engine::{Now, Update, Walk};
use crate::model::{SocketRecord, StateSet, TcpState};
use crate::wire::CcNames;
use crate::wire::walk::{self, WalkStats};
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use std::time::Instant;

/// Records per batch syscall.
const BATCH: u32 = 1024;

pub struct Walker {
    moved: MapHandle,
    /// Per CPU, the records the hooks could not write.
    moved_full: MapHandle,
    /// Names for the namespaces and cgroups the records carry.
    resolver: Resolver,
    epoch_map: MapHandle,
    epoch: u32,
    names: CcNames,
    states: StateSet,
}

impl Walker {
    pub fn new(maps: WalkMaps, states: StateSet, resolver: Resolver) -> Walker {
        let WalkMaps { moved, moved_full, epoch: epoch_map } = maps;
        let epoch = read_u32(&epoch_map).unwrap_or(0);
        Walker { moved, moved_full, resolver, epoch_map, epoch, names: CcNames::default(), states }
    }

    /// One read: the sockets that moved since the last, in the states asked for, and those that
    /// entered CLOSE.
    pub fn walk(&mut self) -> Result<Read, String> {
        // A hook that sees the new epoch fills the socket's record afresh at its next move.
        self.epoch = self.epoch.wrapping_add(1);
        let e = self.epoch.to_ne_bytes();
        self.epoch_map.update(&0u32.to_ne_bytes(), &e, MapFlags::ANY).map_err(|e| e.to_string())?;
        let batches = self
            .moved
            .lookup_and_delete_batch(BATCH, MapFlags::ANY, MapFlags::ANY)
            .map_err(|e| format!("reading the moved sockets: {e}"))?;
        let values: Vec<Vec<u8>> = batches.map(|(_, v)| v).collect();
        let (mut sockets, mut stats) =
            walk::parse(values.iter().map(Vec::as_slice), self.epoch, ktime_now_ns(), &mut self.names);
        stats.dropped_total = percpu_sum(&self.moved_full);
        let gone = sockets.iter().filter(|r| r.state == TcpState::Close).map(|r| r.cookie).collect();
        sockets.retain(|r| self.states.contains(r.state));
        for r in &mut sockets {
            r.origin = self.resolver.origin(r.netns, r.cgroup_id);
        }
        Ok(Read { sockets, gone, stats })
    }
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
    pub gone: Vec<crate::model::Cookie>,
    pub stats: WalkStats,
}

fn read_u32(m: &MapHandle) -> Option<u32> {
    let v = m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).ok()??;
    Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
}

impl Source for Walker {
    fn poll(&mut self, feed: &mut dyn Feed) {
        let started = Instant::now();
        let update = match self.walk() {
            Ok(Read { sockets, gone, stats }) => {
                let now = Now::system();
                Update::Walked(Box::new(Walk { sockets, gone, stats, duration: started.elapsed(), now }))
            }
            Err(error) => Update::WalkFailed { error, duration: started.elapsed() },
        };
        feed.apply(update);
    }
}
