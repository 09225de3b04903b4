//! Opens, configures, loads and attaches the skeleton. Each program is attached on its own and
//! a failure is recorded, not fatal. The skeleton itself is closed once everything is set up:
//! the links keep the programs, the ring buffer's mapping keeps its map, and a duplicated fd
//! keeps the loss counter, so what is returned is plain owned values (and `Send`).

use super::event::{self, DecodeError, Event};
use super::{BpfStatus, PROGRAMS};
use crate::inet_diag::WindowStorage;
use bbrtop_core::model::{BbrLayout, StructBbr};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::status::{Cause, Reason};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{
    Link, MapCore, MapFlags, MapHandle, PrintLevel, ProgramHandle, RingBuffer, RingBufferBuilder,
};
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
        }
    }
}

/// What the programs say when they cannot read BBR's own state.
pub const BBR_STATE_OFF: &str = "BBR state off: struct bbr is in no kernel BTF (BBR is not built in \
    and tcp_bbr was not loaded when bbrtop started); BBR phases are inferred from netlink";

/// What the programs cannot read of `struct bbr` as this kernel has it (`None` when they read
/// all they need): each read sits behind a CO-RE check of its field (bpf/bbrtop.bpf.c).
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

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("BPF open failed: {0}")]
    Open(String),
    #[error("BPF load failed: {summary} (verifier log: {})", log.display())]
    Load { summary: String, log: PathBuf },
    #[error("BPF ring buffer setup failed: {0}")]
    RingBuf(String),
}

/// Decoded ring-buffer records, filled by the ring buffer's callback.
pub type Inbox = Arc<Mutex<Vec<Result<Event, DecodeError>>>>;

pub struct Loaded {
    /// Attached programs; dropping a link detaches it.
    pub links: Vec<(&'static str, Link)>,
    pub failed: Vec<(&'static str, String)>,
    /// Kernel program ids (for bpf_stats and the exit check).
    pub prog_ids: Vec<(&'static str, u32)>,
    /// The programs, for what the kernel counts of them.
    handles: Vec<(&'static str, ProgramHandle)>,
    pub ringbuf: RingBuffer<'static>,
    pub inbox: Inbox,
    /// `struct bbr` as the programs were relocated against it: its layout and which of the
    /// fields they read it has (`None`: no BTF has it, see [`BBR_STATE_OFF`]).
    pub struct_bbr: Option<StructBbr>,
    lost: MapHandle,
    socks: MapHandle,
    read_epoch: MapHandle,
    /// The socket walk's records and its per-CPU count of records not written, when loaded
    /// with it on.
    moved: Option<(MapHandle, MapHandle)>,
}

impl Loaded {
    pub fn status(&self) -> BpfStatus {
        BpfStatus {
            attached: self.links.iter().map(|(n, _)| *n).collect(),
            failed: self.failed.clone(),
            reason: None,
            limits: bbr_limit(self.struct_bbr.as_ref()).into_iter().collect(),
        }
    }

    /// Whether the programs read BBR's phase from `struct bbr`.
    pub fn bbr_state(&self) -> bool {
        self.struct_bbr.as_ref().is_some_and(StructBbr::has_phase)
    }

    /// Ring-buffer reserve failures since load, summed over CPUs.
    pub fn lost_total(&self) -> u64 {
        match self.lost.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(per_cpu)) => per_cpu
                .iter()
                .filter_map(|v| v.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_ne_bytes))
                .sum(),
            _ => 0,
        }
    }

    /// Runs of each program the kernel skipped because a program was already running on that CPU
    /// (a socket destroyed in a softirq that interrupted another close, say): for
    /// tcp_destroy_sock, each is a close record that never was.
    pub fn recursion_misses(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.handles.iter().map(|(name, h)| (*name, recursion_misses(h))).collect()
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
        Ok(super::walk::Walker::new(maps, states, resolver))
    }

    /// Drains the ring buffer without blocking, into the inbox.
    pub fn consume(&self) -> Result<(), String> {
        self.ringbuf.consume().map_err(|e| e.to_string())
    }
}

#[allow(unsafe_code)]
fn recursion_misses(prog: &ProgramHandle) -> u64 {
    use std::os::fd::{AsFd, AsRawFd};
    let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
    let mut len = size_of_val(&info) as u32;
    // SAFETY: the kernel writes at most `len` bytes of a bpf_prog_info into `info`, which lives
    // across the call; its pointer fields are null, so the kernel fills none of the arrays.
    let rc = unsafe {
        libbpf_rs::libbpf_sys::bpf_obj_get_info_by_fd(
            prog.as_fd().as_raw_fd(),
            (&mut info as *mut libbpf_rs::libbpf_sys::bpf_prog_info).cast(),
            &mut len,
        )
    };
    if rc == 0 { info.recursion_misses } else { 0 }
}

/// libbpf's messages during load, kept for the verifier log file.
static LIBBPF_LOG: Mutex<String> = Mutex::new(String::new());

fn keep_log(_: PrintLevel, msg: String) {
    LIBBPF_LOG.lock().unwrap_or_else(|e| e.into_inner()).push_str(&msg);
}

/// libbpf's messages during the last load, such as where each CO-RE relocation landed.
pub fn last_load_log() -> String {
    LIBBPF_LOG.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

pub fn verifier_log_path() -> PathBuf {
    std::env::temp_dir().join(format!("bbrtop-verifier-{}.log", std::process::id()))
}

/// Runs `load` (an object's load into the kernel) with libbpf's messages kept: on failure they
/// go to the verifier log file, and the error is one line that names it.
pub fn logged_load<T>(load: impl FnOnce() -> libbpf_rs::Result<T>) -> Result<T, LoadError> {
    LIBBPF_LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let prev = libbpf_rs::set_print(Some((PrintLevel::Debug, keep_log)));
    let loaded = load();
    libbpf_rs::set_print(prev);
    loaded.map_err(|e| {
        let log = verifier_log_path();
        let text = std::mem::take(&mut *LIBBPF_LOG.lock().unwrap_or_else(|e| e.into_inner()));
        let _ = std::fs::write(&log, format!("{text}\n{e:#}\n"));
        LoadError::Load { summary: e.to_string().lines().next().unwrap_or("").to_string(), log }
    })
}

pub fn load(cfg: &LoadConfig) -> Result<Loaded, LoadError> {
    let mut storage = MaybeUninit::uninit();
    let mut builder = skel::BbrtopSkelBuilder::default();
    if let Some(btf) = &cfg.btf {
        builder.object_builder_mut().btf_custom_path(btf).map_err(|e| LoadError::Open(e.to_string()))?;
    }
    let mut open = builder.open(&mut storage).map_err(|e| LoadError::Open(e.to_string()))?;
    if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
        ro.ratio_milli = cfg.ratio_milli;
        ro.floor_us = cfg.floor_us;
        ro.walk_on = u8::from(cfg.walk);
        ro.refresh_ns = cfg.walk_refresh.as_nanos().min(u64::MAX as u128) as u64;
    }
    let skel = logged_load(|| open.load())?;

    let progs = [
        &skel.progs.tcp_probe,
        &skel.progs.tcp_established,
        &skel.progs.tcp_rcv_space_adjust,
        &skel.progs.tcp_sendmsg_locked,
        &skel.progs.tcp_destroy_sock,
    ];
    let (mut links, mut failed, mut prog_ids, mut handles) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (name, prog) in PROGRAMS.into_iter().zip(progs) {
        if let Ok(h) = ProgramHandle::try_from(prog) {
            prog_ids.push((name, h.id()));
            handles.push((name, h));
        }
        match prog.attach() {
            Ok(l) => links.push((name, l)),
            Err(e) => failed.push((name, e.to_string())),
        }
    }

    let inbox: Inbox = Arc::default();
    let sink = Arc::clone(&inbox);
    let mut rb = RingBufferBuilder::new();
    rb.add(&skel.maps.events, move |data: &[u8]| {
        sink.lock().unwrap_or_else(|e| e.into_inner()).push(event::decode(data));
        0
    })
    .map_err(|e| LoadError::RingBuf(e.to_string()))?;
    let ringbuf = rb.build().map_err(|e| LoadError::RingBuf(e.to_string()))?;
    let handle = |m| MapHandle::try_from(m).map_err(|e: libbpf_rs::Error| LoadError::RingBuf(e.to_string()));
    let (lost, socks, read_epoch) =
        (handle(&skel.maps.lost)?, handle(&skel.maps.socks)?, handle(&skel.maps.read_epoch)?);
    let struct_bbr = crate::host::struct_bbr(cfg.btf.as_deref());
    let moved =
        if cfg.walk { Some((handle(&skel.maps.moved)?, handle(&skel.maps.moved_full)?)) } else { None };
    Ok(Loaded {
        links,
        failed,
        prog_ids,
        handles,
        ringbuf,
        inbox,
        struct_bbr,
        lost,
        socks,
        read_epoch,
        moved,
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
                offset_of!(bbrtop_resp, start_ns),
                offset_of!(bbrtop_resp, bytes),
                offset_of!(bbrtop_resp, family),
                offset_of!(bbrtop_resp, at_close),
                offset_of!(bbrtop_resp, opened),
                offset_of!(bbrtop_resp, lport),
                offset_of!(bbrtop_resp, rport),
                offset_of!(bbrtop_resp, daddr),
                offset_of!(bbrtop_resp, cc),
            ],
            [
                0,
                rs::START_NS,
                rs::BYTES,
                rs::FAMILY,
                rs::AT_CLOSE,
                rs::OPENED,
                rs::LPORT,
                rs::RPORT,
                rs::DADDR,
                rs::CC
            ]
        );
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
                walk_refresh: WALK_REFRESH
            }
        );
    }
}
