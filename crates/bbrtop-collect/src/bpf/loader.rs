//! Opens, configures, loads and attaches the skeleton. What this kernel cannot carry is decided
//! before the load (`plan`: tracepoints, functions and helpers from its BTF) and left out of it;
//! a program the verifier still refuses is left out too, its log kept, and the rest loaded again.
//! Each program is then attached on its own and a failure is recorded, not fatal. The skeleton
//! itself is closed once everything is set up: the links keep the programs, the ring buffer's
//! mapping keeps its map, and duplicated fds keep the other maps, so what is returned is plain
//! owned values (and `Send`). When tcp_bbr is loaded after the programs, [`Loaded::reload`] loads
//! them again over the same maps, relocated against its BTF.

use super::drain::{self, SharedRing};
use super::event::{self, DecodeError, Event};
use super::libbpf_log::{Failed, failed_program, load_logged, program_log_path};
pub use super::libbpf_log::{LoadError, last_load_log, logged_load, verifier_log_path};
use super::plan::{self, Fate, Offers, PROGRAMS};
use super::{BpfStatus, RING_BYTES};
use crate::host::RelocationBtf;
use crate::inet_diag::WindowStorage;
use bbrtop_core::model::bbr::STRUCT_BBR_FIELDS;
use bbrtop_core::model::{BbrLayout, StructBbr};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::status::{Cause, Reason};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, ProgramHandle, RingBufferBuilder};
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

crate::bpf_skeleton!(skel, "bbrtop.skel.rs");
pub use skel::types;

/// The rule's kernel half, written into the object's rodata before load, and the kernel types
/// to relocate against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadConfig {
    pub ratio_milli: u32,
    pub floor_us: u32,
    /// A BTF file to use instead of the running kernel's (libbpf's `btf_custom_path`).
    pub btf: Option<PathBuf>,
    /// Whether the hooks write the socket walk's records (`--collector.walk`).
    pub walk: bool,
    /// How often a moving socket's walk record is filled again within one poll: its values are
    /// at most this much older than its latest move.
    pub walk_refresh: std::time::Duration,
    /// Tracepoints to plan as if this kernel lacked them: a test drives the fallbacks (fentry,
    /// a refused program left out) on a kernel that has them.
    pub hide_tracepoints: Vec<&'static str>,
    /// The ring buffer's size in bytes (a power of two, at least a page): it holds the events
    /// between two drains (`--bpf.ring-buffer-size`, `drain.rs`).
    pub ring_bytes: u32,
}

/// The default [`LoadConfig::walk_refresh`]: a busy socket costs a few fills a second.
pub const WALK_REFRESH: std::time::Duration = std::time::Duration::from_millis(250);

impl LoadConfig {
    pub fn from_rule(rule: &RuleConfig) -> LoadConfig {
        LoadConfig {
            ratio_milli: (rule.ratio * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32,
            floor_us: rule.floor.as_micros().min(u32::MAX as u128) as u32,
            btf: None,
            walk: false,
            walk_refresh: WALK_REFRESH,
            hide_tracepoints: Vec::new(),
            ring_bytes: RING_BYTES,
        }
    }
}

/// What the programs say when they cannot read BBR's own state.
pub const BBR_STATE_OFF: &str = "BBR state off: struct bbr is in no kernel BTF (BBR is not built in \
    and tcp_bbr is not loaded: read from when it loads); BBR phases are inferred from netlink";

/// What the programs cannot read of `struct bbr` as this kernel has it (`None` when they read all
/// they need): each read sits behind a CO-RE check of its field
/// (crates/bbrtop-collect/bpf/bbrtop.bpf.c).
pub fn bbr_limit(s: Option<&StructBbr>) -> Option<Reason> {
    match s {
        None => Some(Reason::new(Cause::BbrStateOff, BBR_STATE_OFF)),
        Some(s) if !s.has_phase() => Some(Reason::new(
            Cause::BbrStateOff,
            format!("BBR state off: {s}; BBR phases are inferred from netlink"),
        )),
        Some(s) if s.layout == BbrLayout::Unknown => {
            Some(Reason::new(Cause::BbrStatePartial, format!("BBR state partial: {s}")))
        }
        Some(_) => None,
    }
}

/// The members of `struct bbr` the programs report they read (crates/bbrtop-collect/bpf/bbrtop.h,
/// `bbr_read`), as [`STRUCT_BBR_FIELDS`] names them.
pub fn bbr_read_fields(mask: u32) -> Vec<&'static str> {
    let bit = |f: &str| match f {
        "mode" => mask & 1 != 0,
        "cycle_idx" => mask & 2 != 0,
        "min_rtt_us" => mask & 4 != 0,
        "bw" => mask & 8 != 0 && mask & 64 == 0,
        "full_bw_reached" => mask & 16 != 0,
        "lt_use_bw" => mask & 32 != 0,
        "bw_hi" => mask & 64 != 0,
        _ => false,
    };
    STRUCT_BBR_FIELDS.into_iter().filter(|f| bit(f)).collect()
}

/// Decoded ring-buffer records, filled by the ring buffer's callback.
pub type Inbox = Arc<Mutex<Vec<Result<Event, DecodeError>>>>;

pub struct Loaded {
    /// Attached programs; dropping a link detaches it. Shared: the walk holds the refill pass's.
    pub links: Vec<(&'static str, Arc<Link>)>,
    pub failed: Vec<(&'static str, String)>,
    /// Kernel program ids (for bpf_stats and the exit check).
    pub prog_ids: Vec<(&'static str, u32)>,
    /// The programs, for what the kernel counts of them.
    handles: Vec<(&'static str, ProgramHandle)>,
    /// Drained by the collector's poll and, between polls, by its drain thread (`drain.rs`).
    pub ringbuf: SharedRing,
    /// What the ring's reader decoded, until [`Loaded::take_events`] takes it.
    inbox: Inbox,
    /// `struct bbr` as the programs were relocated against it: its layout and which of the
    /// fields they read it has (`None`: no BTF has it, see [`BBR_STATE_OFF`]).
    pub struct_bbr: Option<StructBbr>,
    /// Whether that `struct bbr` came from tcp_bbr's module BTF.
    pub bbr_from_module: bool,
    /// What became of each program on this kernel (the plan, and the verifier's refusals).
    pub fates: Vec<(&'static str, Fate)>,
    cfg: LoadConfig,
    /// The object's .bss: `bbr_read`, which the programs write.
    bss: MapHandle,
    lost: MapHandle,
    socks: MapHandle,
    read_epoch: MapHandle,
    /// The socket walk's records and its per-CPU count of records not written, when loaded
    /// with it on.
    moved: Option<(MapHandle, MapHandle)>,
    /// The refill pass's per-CPU counts: [0] marks, [1] records refilled.
    refill_counts: MapHandle,
    /// Every map a reload takes over, by name.
    maps: Vec<(String, MapHandle)>,
}

impl Loaded {
    /// What attached and what did not, and each feature (the walk's as this object allows it:
    /// whether its source runs is the caller's to say, [`BpfStatus::judge`]).
    pub fn status(&self) -> BpfStatus {
        let mut s = BpfStatus {
            attached: self.links.iter().map(|(n, _)| *n).collect(),
            failed: self.failed.clone(),
            reason: None,
            limits: Vec::new(),
            fates: self.fates.clone(),
            features: Vec::new(),
        };
        let walk = (!self.cfg.walk).then(|| Reason::new(Cause::NotAsked, "not asked for at load"));
        s.judge(self.bbr_limit().as_ref(), walk.as_ref());
        s
    }

    /// What the programs cannot do with `struct bbr`: from what they report reading once a
    /// BBR socket ran through them, and before that from the BTF they were relocated against
    /// (the same types libbpf used: [`RelocationBtf`]).
    pub fn bbr_limit(&self) -> Option<Reason> {
        match (self.bbr_read(), &self.struct_bbr) {
            (0, s) => bbr_limit(s.as_ref()),
            (mask, Some(s)) => {
                let read = StructBbr { fields: bbr_read_fields(mask), ..s.clone() };
                bbr_limit(Some(&read))
            }
            (_, None) => bbr_limit(None),
        }
    }

    /// Whether the programs read BBR's phase from `struct bbr`.
    pub fn bbr_state(&self) -> bool {
        self.bbr_limit().is_none_or(|r| r.cause == Cause::BbrStatePartial)
    }

    /// What the programs report they read of `struct bbr` (0 until a BBR socket ran through
    /// tcp_probe).
    pub fn bbr_read(&self) -> u32 {
        let at = std::mem::offset_of!(types::bss, bbr_read);
        match self.bss.lookup(&0u32.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(v)) => v.get(at..at + 4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_ne_bytes),
            _ => 0,
        }
    }

    /// Whether `struct bbr` may yet come: the programs were relocated without it, against the
    /// kernel's own BTF, and tcp_bbr (a module here) can load later.
    pub fn awaits_bbr_module(&self) -> bool {
        self.struct_bbr.is_none() && self.cfg.btf.is_none()
    }

    /// Loads the programs again, over the same maps (socket state, ring buffer, the walk's),
    /// relocated against the BTF there is now: tcp_bbr loaded after them. The new programs
    /// attach, then the old ones go. Needs CAP_BPF and CAP_PERFMON still. What the old reader
    /// has not taken yet is taken first, into the inbox the new one fills after it.
    pub fn reload(&mut self) -> Result<(), LoadError> {
        let btf = RelocationBtf::find(self.cfg.btf.as_deref());
        let fates = self.fates.clone();
        let _ = self.consume();
        let again = load_once(&self.cfg, &btf, &fates, Some(&self.maps), Arc::clone(&self.inbox))
            .map_err(|f| f.error)?;
        *self = again;
        Ok(())
    }

    /// Ring-buffer reserve failures since load, summed over CPUs.
    pub fn lost_total(&self) -> u64 {
        super::counts::percpu_sum(&self.lost, 0)
    }

    /// Runs of each program the kernel skipped because a program was already running on that CPU
    /// (a socket destroyed in a softirq that interrupted another close, say): for
    /// tcp_destroy_sock, each is a close record that never was.
    pub fn recursion_misses(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.stats().into_iter().map(|(name, s)| (name, s.recursion_misses)).collect()
    }

    /// What the kernel counts of each program (run time only while bpf_stats is on).
    pub fn stats(&self) -> std::collections::BTreeMap<&'static str, ProgStats> {
        use std::os::fd::AsFd;
        self.handles.iter().map(|(name, h)| (*name, prog_stats(h.as_fd()))).collect()
    }

    /// What the netlink collector needs to read the RTT windows with each dump.
    pub fn window_storage(&self) -> std::io::Result<WindowStorage> {
        use std::os::fd::AsFd;
        let map = self.socks.as_fd().try_clone_to_owned()?;
        let epoch = MapHandle::try_from(&self.read_epoch).map_err(std::io::Error::other)?;
        let set_epoch = move |e: u32| {
            epoch.update(&0u32.to_ne_bytes(), &e.to_ne_bytes(), MapFlags::ANY).map_err(std::io::Error::other)
        };
        Ok(WindowStorage { map, set_epoch: Box::new(set_epoch) })
    }

    /// The socket walk, of sockets in `states`, if the object was loaded with it on.
    pub fn walker(
        &self,
        states: bbrtop_core::model::StateSet,
        resolver: crate::attrib::Resolver,
    ) -> Result<super::walk::Walker, String> {
        let (moved, moved_full) = self.moved.as_ref().ok_or("socket walk off: not asked for at load")?;
        let dup = |m: &MapHandle| MapHandle::try_from(m).map_err(|e| format!("socket walk off: {e}"));
        let maps = super::walk::WalkMaps {
            moved: dup(moved)?,
            moved_full: dup(moved_full)?,
            epoch: dup(&self.read_epoch)?,
        };
        let refill = self.refill_pass().map_err(|e| format!("socket walk off: {e}"))?;
        Ok(super::walk::Walker::new(maps, states, resolver, refill))
    }

    /// The refill pass, where it loaded: it brings the walk's records behind up to date and sends
    /// the responses quiet sockets hold (`refill.rs`).
    pub fn refill_pass(&self) -> Result<Option<super::refill::Refill>, String> {
        let Some((_, link)) = self.links.iter().find(|(n, _)| *n == plan::REFILL) else { return Ok(None) };
        let counts = MapHandle::try_from(&self.refill_counts).map_err(|e| e.to_string())?;
        Ok(Some(super::refill::Refill::new(Arc::clone(link), counts)))
    }

    /// Drains the ring buffer without blocking, into the inbox.
    pub fn consume(&self) -> Result<(), String> {
        drain::lock(&self.ringbuf).consume().map_err(|e| e.to_string())
    }

    /// The events the inbox holds, taken out of it.
    pub fn take_events(&self) -> Vec<Result<Event, DecodeError>> {
        std::mem::take(&mut *self.inbox.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// What the kernel counts of one program: its runs and their time (while bpf_stats is on:
/// `kernel.bpf_stats_enabled`), and the runs it skipped because a program already ran on that CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgStats {
    pub run_time_ns: u64,
    pub run_cnt: u64,
    pub recursion_misses: u64,
}

/// [`ProgStats`] of the program behind `prog` (zeros where the kernel will not say).
#[allow(unsafe_code)]
pub fn prog_stats(prog: std::os::fd::BorrowedFd<'_>) -> ProgStats {
    use std::os::fd::AsRawFd;
    let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
    let mut len = size_of_val(&info) as u32;
    // SAFETY: the kernel writes at most `len` bytes of a bpf_prog_info into `info`, which lives
    // across the call; its pointer fields are null, so the kernel fills none of the arrays.
    let rc = unsafe {
        libbpf_rs::libbpf_sys::bpf_obj_get_info_by_fd(
            prog.as_raw_fd(),
            (&mut info as *mut libbpf_rs::libbpf_sys::bpf_prog_info).cast(),
            &mut len,
        )
    };
    match rc {
        0 => ProgStats {
            run_time_ns: info.run_time_ns,
            run_cnt: info.run_cnt,
            recursion_misses: info.recursion_misses,
        },
        _ => ProgStats::default(),
    }
}

/// What the running kernel offers the programs (its BTF: the attach targets libbpf resolves
/// against it, whatever BTF the relocations use).
pub fn kernel_offers() -> Result<Offers, LoadError> {
    let path = crate::host::VMLINUX_BTF;
    let bytes = std::fs::read(path).map_err(|e| LoadError::Open(format!("{path}: {e}")))?;
    Offers::from_btf(&bytes).map_err(|e| LoadError::Open(format!("{path}: {e}")))
}

/// How many programs the plan loads on the running kernel (one start of responses of two).
pub fn planned_here() -> Result<usize, LoadError> {
    Ok(plan::plan(&kernel_offers()?).iter().filter(|(_, f)| *f == Fate::Load).count())
}

/// Loads and attaches what this kernel can run: the plan from its BTF, then, should the
/// verifier refuse a program anyway, that program left out (its log kept in its own file) and
/// the rest loaded again.
pub fn load(cfg: &LoadConfig) -> Result<Loaded, LoadError> {
    let btf = RelocationBtf::find(cfg.btf.as_deref());
    let mut fates = plan::plan(&kernel_offers()?.without_tracepoints(&cfg.hide_tracepoints));
    loop {
        let failed = match load_once(cfg, &btf, &fates, None, Inbox::default()) {
            Ok(l) => return Ok(l),
            Err(f) => f,
        };
        let Some((name, why)) = failed_program(&failed.messages) else { return Err(failed.error) };
        let Some(i) = fates.iter().position(|(n, f)| *n == name && *f == Fate::Load) else {
            return Err(failed.error);
        };
        let log = program_log_path(&name);
        if let LoadError::Load { log: whole, .. } = &failed.error {
            let _ = std::fs::rename(whole, &log);
        }
        fates[i].1 = Fate::Rejected(format!("{why} (log: {})", log.display()));
        // A program that stands in for it (the same work on another hook) may load instead.
        let stand_in = PROGRAMS.iter().find(|p| p.instead_of == Some(fates[i].0)).map(|p| p.name);
        if let Some(j) = fates.iter().position(|(n, f)| Some(*n) == stand_in && *f == Fate::NotNeeded) {
            fates[j].1 = Fate::Load;
        }
    }
}

/// One open, load and attach with `fates`; with `reuse`, over those maps. The ring's records go
/// to `inbox`.
fn load_once(
    cfg: &LoadConfig,
    btf: &RelocationBtf,
    fates: &[(&'static str, Fate)],
    reuse: Option<&[(String, MapHandle)]>,
    inbox: Inbox,
) -> Result<Loaded, Failed> {
    let open_failed =
        |e: libbpf_rs::Error| Failed { error: LoadError::Open(e.to_string()), messages: String::new() };
    let mut storage = MaybeUninit::uninit();
    let mut builder = skel::BbrtopSkelBuilder::default();
    if let Some(path) = &btf.path {
        builder.object_builder_mut().btf_custom_path(path).map_err(open_failed)?;
    }
    let mut open = builder.open(&mut storage).map_err(open_failed)?;
    if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
        ro.ratio_milli = cfg.ratio_milli;
        ro.floor_us = cfg.floor_us;
        ro.walk_on = u8::from(cfg.walk);
        ro.refresh_ns = cfg.walk_refresh.as_nanos().min(u64::MAX as u128) as u64;
        // Responses wait in a batch only where the refill pass can send a quiet socket's.
        if !fates.iter().any(|(n, f)| *n == plan::REFILL && *f == Fate::Load) {
            ro.resp_batch = 1;
        }
    }
    for mut prog in open.open_object_mut().progs_mut() {
        let load = fates.iter().any(|(n, f)| prog.name() == *n && *f == Fate::Load);
        prog.set_autoload(load);
    }
    // A reload reuses the ring it has, whatever its size.
    open.maps.events.set_max_entries(cfg.ring_bytes).map_err(open_failed)?;
    if let Some(maps) = reuse {
        use std::os::fd::AsFd;
        for mut map in open.open_object_mut().maps_mut() {
            if let Some((_, h)) = maps.iter().find(|(n, _)| map.name() == n.as_str()) {
                map.reuse_fd(h.as_fd()).map_err(open_failed)?;
            }
        }
    }
    let skel = load_logged(verifier_log_path(), || open.load())?;

    // The refill pass iterates the socket storage map: attached to it, by a descriptor of its own
    // while the programs are borrowed.
    let socks_fd = {
        use std::os::fd::AsFd;
        skel.maps.socks.as_fd().try_clone_to_owned()
    };
    let (mut links, mut failed, mut prog_ids, mut handles) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for prog in skel.object().progs_mut() {
        let Some(name) = PROGRAMS.iter().map(|p| p.name).find(|n| prog.name() == *n) else { continue };
        if !prog.autoload() {
            continue;
        }
        if let Ok(h) = ProgramHandle::try_from(&prog) {
            prog_ids.push((name, h.id()));
            handles.push((name, h));
        }
        let attached = match (&socks_fd, name == plan::REFILL) {
            (Ok(fd), true) => prog.attach_iter(std::os::fd::AsFd::as_fd(fd)),
            (Err(e), true) => Err(libbpf_rs::Error::from(std::io::Error::new(e.kind(), e.to_string()))),
            (_, false) => prog.attach(),
        };
        match attached {
            Ok(l) => links.push((name, Arc::new(l))),
            Err(e) => failed.push((name, e.to_string())),
        }
    }

    let ring =
        |e: libbpf_rs::Error| Failed { error: LoadError::RingBuf(e.to_string()), messages: String::new() };
    let sink = Arc::clone(&inbox);
    let mut rb = RingBufferBuilder::new();
    rb.add(&skel.maps.events, move |data: &[u8]| {
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(event::decode(data));
        0
    })
    .map_err(ring)?;
    let ringbuf = Arc::new(Mutex::new(rb.build().map_err(ring)?));
    let maps = skel
        .object()
        .maps()
        .filter(|m| !m.name().to_string_lossy().contains('.'))
        .map(|m| Ok((m.name().to_string_lossy().into_owned(), MapHandle::try_from(&m)?)))
        .collect::<libbpf_rs::Result<Vec<_>>>()
        .map_err(ring)?;
    let handle = |m| MapHandle::try_from(m).map_err(ring);
    let (lost, socks, read_epoch, bss) = (
        handle(&skel.maps.lost)?,
        handle(&skel.maps.socks)?,
        handle(&skel.maps.read_epoch)?,
        handle(&skel.maps.bss)?,
    );
    let moved =
        if cfg.walk { Some((handle(&skel.maps.moved)?, handle(&skel.maps.moved_full)?)) } else { None };
    Ok(Loaded {
        links,
        failed,
        prog_ids,
        handles,
        ringbuf,
        inbox,
        struct_bbr: btf.struct_bbr.clone(),
        bbr_from_module: btf.from_module,
        fates: fates.to_vec(),
        cfg: cfg.clone(),
        bss,
        lost,
        socks,
        read_epoch,
        moved,
        refill_counts: handle(&skel.maps.refill_counts)?,
        maps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// Every offset the decoders read matches the C layouts (the skeleton's types come from the
    /// object's BTF), and so do the sizes.
    #[test]
    fn layouts_match_the_c_header() {
        use bbrtop_core::model::window_off as w;
        use event::off::resp as rs;
        use event::off::{close as c, hdr, infl, phase as ph};
        use types::{bbrtop_close, bbrtop_hdr, bbrtop_infl, bbrtop_phase, bbrtop_resp, bbrtop_rtt_window};
        assert_eq!(size_of::<bbrtop_hdr>(), event::HDR_LEN);
        assert_eq!(size_of::<bbrtop_infl>(), event::INFL_LEN);
        assert_eq!(size_of::<bbrtop_phase>(), event::PHASE_LEN);
        assert_eq!(size_of::<bbrtop_close>(), event::CLOSE_LEN);
        assert_eq!(size_of::<bbrtop_resp>(), event::RESP_LEN);
        assert_eq!(
            [
                offset_of!(bbrtop_resp, h),
                offset_of!(bbrtop_resp, family),
                offset_of!(bbrtop_resp, n),
                offset_of!(bbrtop_resp, opened),
                offset_of!(bbrtop_resp, lport),
                offset_of!(bbrtop_resp, rport),
                offset_of!(bbrtop_resp, daddr),
                offset_of!(bbrtop_resp, cc),
                offset_of!(bbrtop_resp, r),
            ],
            [0, rs::FAMILY, rs::N, rs::OPENED, rs::LPORT, rs::RPORT, rs::DADDR, rs::CC, rs::R]
        );
        {
            use event::off::resp_one as one;
            use types::bbrtop_resp_one;
            assert_eq!(size_of::<bbrtop_resp_one>(), rs::ONE_LEN);
            assert_eq!(
                [
                    offset_of!(bbrtop_resp_one, start_ns),
                    offset_of!(bbrtop_resp_one, took_us),
                    offset_of!(bbrtop_resp_one, bytes)
                ],
                [one::START_NS, one::TOOK_US, one::BYTES]
            );
            assert_eq!(size_of::<bbrtop_resp>(), rs::R + event::RESP_BATCH * rs::ONE_LEN);
        }
        assert_eq!(size_of::<bbrtop_rtt_window>(), bbrtop_core::model::RttWindow::LEN);
        // The header leads every event.
        assert_eq!(
            [offset_of!(bbrtop_infl, h), offset_of!(bbrtop_phase, h), offset_of!(bbrtop_close, h)],
            [0; 3]
        );
        // Each C field against the offset the Rust decoder reads it at.
        macro_rules! at {
            ($t:ty, $field:ident, $rust:expr) => {
                assert_eq!(offset_of!($t, $field), $rust, concat!(stringify!($t), ".", stringify!($field)))
            };
        }
        at!(bbrtop_hdr, kind, hdr::KIND);
        at!(bbrtop_hdr, netns, hdr::NETNS);
        at!(bbrtop_hdr, cookie, hdr::COOKIE);
        at!(bbrtop_hdr, ts_ns, hdr::TS_NS);
        at!(bbrtop_infl, srtt_us, infl::SRTT_US);
        at!(bbrtop_infl, baseline_us, infl::BASELINE_US);
        at!(bbrtop_infl, onset_ns, infl::ONSET_NS);
        at!(bbrtop_infl, peak_ratio_milli, infl::PEAK_RATIO_MILLI);
        at!(bbrtop_phase, mode, ph::MODE);
        at!(bbrtop_phase, cycle_idx, ph::CYCLE_IDX);
        at!(bbrtop_phase, full_bw_reached, ph::FULL_BW_REACHED);
        at!(bbrtop_phase, lt_use_bw, ph::LT_USE_BW);
        at!(bbrtop_phase, prev_mode, ph::PREV_MODE);
        at!(bbrtop_phase, cycle_v3, ph::CYCLE_V3);
        at!(bbrtop_phase, prev_began_ns, ph::PREV_BEGAN_NS);
        at!(bbrtop_phase, min_rtt_us, ph::MIN_RTT_US);
        at!(bbrtop_phase, entered, ph::ENTERED);
        at!(bbrtop_phase, bw, ph::BW);
        at!(bbrtop_close, family, c::FAMILY);
        at!(bbrtop_close, lport, c::LPORT);
        at!(bbrtop_close, rport, c::RPORT);
        at!(bbrtop_close, is_bbr, c::IS_BBR);
        at!(bbrtop_close, bbr_mode, c::BBR_MODE);
        at!(bbrtop_close, saddr, c::SADDR);
        at!(bbrtop_close, daddr, c::DADDR);
        at!(bbrtop_close, cc, c::CC);
        at!(bbrtop_close, lifetime_ns, c::LIFETIME_NS);
        at!(bbrtop_close, bytes_acked, c::BYTES_ACKED);
        at!(bbrtop_close, bytes_received, c::BYTES_RECEIVED);
        at!(bbrtop_close, total_retrans, c::TOTAL_RETRANS);
        at!(bbrtop_close, srtt_us, c::SRTT_US);
        at!(bbrtop_close, min_rtt_us, c::MIN_RTT_US);
        at!(bbrtop_close, rate_delivered, c::RATE_DELIVERED);
        at!(bbrtop_close, bytes_sent, c::BYTES_SENT);
        at!(bbrtop_close, bytes_retrans, c::BYTES_RETRANS);
        at!(bbrtop_close, segs_out, c::SEGS_OUT);
        at!(bbrtop_close, delivered, c::DELIVERED);
        at!(bbrtop_close, delivered_ce, c::DELIVERED_CE);
        at!(bbrtop_close, dsack_dups, c::DSACK_DUPS);
        at!(bbrtop_close, total_rto, c::TOTAL_RTO);
        at!(bbrtop_close, rate_interval_us, c::RATE_INTERVAL_US);
        at!(bbrtop_close, mss, c::MSS);
        at!(bbrtop_close, bbr_min_rtt_us, c::BBR_MIN_RTT_US);
        at!(bbrtop_close, peak_ratio_milli, c::PEAK_RATIO_MILLI);
        at!(bbrtop_close, bbr_bw, c::BBR_BW);
        at!(bbrtop_close, rtt_samples, c::RTT_SAMPLES);
        at!(bbrtop_close, inflations, c::INFLATIONS);
        at!(bbrtop_rtt_window, epoch, w::EPOCH);
        at!(bbrtop_rtt_window, samples, w::SAMPLES);
        at!(bbrtop_rtt_window, last_srtt_us, w::LAST_SRTT_US);
        at!(bbrtop_rtt_window, min_srtt_us, w::MIN_SRTT_US);
        at!(bbrtop_rtt_window, max_srtt_us, w::MAX_SRTT_US);
        at!(bbrtop_rtt_window, bbr, w::BBR);
        at!(bbrtop_rtt_window, bbr_mode, w::BBR_MODE);
        at!(bbrtop_rtt_window, cycle_idx, w::CYCLE_IDX);
        at!(bbrtop_rtt_window, bbr_flags, w::BBR_FLAGS);
        assert_eq!(size_of::<[std::ffi::c_char; c::CC_LEN]>(), size_of_val(&bbrtop_close::default().cc));
        // The storage value starts with the two windows RttWindow::parse_stored reads.
        assert_eq!(offset_of!(types::sock_state, w), 0);
        assert_eq!(size_of_val(&types::sock_state::default().w), 2 * bbrtop_core::model::RttWindow::LEN);
        // What every ACK touches lies in the storage's first three cache lines (its data starts
        // 8 bytes into a cache-aligned line): sock_state.h says why.
        let line = |off: usize| (off + 8) / 64;
        assert_eq!(line(offset_of!(types::sock_state, resp_start_ns) + 7), 2);
        assert_eq!(line(offset_of!(types::sock_state, bbr_min_rtt_us)), 2);
    }

    /// The socket walk's record, field by field, against the offsets its parser reads.
    #[test]
    fn the_walk_record_matches_the_c_header() {
        use bbrtop_core::wire::walk::{REC_LEN, off as o};
        use types::bbrtop_sock as s;
        macro_rules! at {
            ($field:ident, $rust:expr) => {
                assert_eq!(offset_of!(s, $field), $rust, concat!("bbrtop_sock.", stringify!($field)))
            };
        }
        assert_eq!(size_of::<s>(), REC_LEN);
        at!(cookie, o::COOKIE);
        at!(cgroup_id, o::CGROUP_ID);
        at!(netns, o::NETNS);
        at!(uid, o::UID);
        at!(inode, o::INODE);
        at!(family, o::FAMILY);
        at!(lport, o::LPORT);
        at!(rport, o::RPORT);
        at!(state, o::STATE);
        at!(bbr_len, o::BBR_LEN);
        at!(hz, o::HZ);
        at!(info_len, o::INFO_LEN);
        at!(chrono, o::CHRONO);
        at!(filled_ns, o::FILLED_NS);
        at!(saddr, o::SADDR);
        at!(daddr, o::DADDR);
        at!(cc, o::CC);
        at!(w, o::W);
        at!(info, o::INFO);
        at!(bbr, o::BBR);
        assert_eq!(size_of_val(&s::default().info), o::INFO_CAP);
        assert_eq!(size_of_val(&s::default().bbr), o::BBR_CAP);
        assert_eq!(size_of_val(&s::default().cc), o::CC_LEN);
    }

    #[test]
    fn what_the_programs_cannot_read_is_a_limit() {
        let of = |names: &[&str]| StructBbr::from_members(names.iter().copied());
        assert_eq!(bbr_limit(None).map(|r| r.cause), Some(Cause::BbrStateOff));
        assert_eq!(bbr_limit(Some(&of(&["min_rtt_us", "bw", "lt_use_bw", "mode", "cycle_idx"]))), None);
        assert_eq!(bbr_limit(Some(&of(&["min_rtt_us", "bw_hi", "mode", "cycle_idx"]))), None);
        let no_mode = bbr_limit(Some(&of(&["min_rtt_us", "cycle_idx"]))).unwrap();
        assert_eq!(no_mode.cause, Cause::BbrStateOff);
        assert!(no_mode.detail.contains("without mode"), "{no_mode}");
        let odd = bbr_limit(Some(&of(&["mode", "cycle_idx"]))).unwrap();
        assert_eq!(odd.cause, Cause::BbrStatePartial);
        assert!(
            odd.detail.starts_with("BBR state partial: struct bbr of an unknown layout, without min_rtt_us")
        );
    }

    #[test]
    fn rule_to_rodata() {
        let c = LoadConfig::from_rule(&RuleConfig::default());
        assert_eq!(
            c,
            LoadConfig {
                ratio_milli: 1500,
                floor_us: 1000,
                btf: None,
                walk: false,
                walk_refresh: WALK_REFRESH,
                hide_tracepoints: Vec::new(),
                ring_bytes: RING_BYTES,
            }
        );
    }
}
