//! The programs load on every `struct bbr` layout: mainline's (v1, as on this kernel), BBRv3's,
//! and none at all. Each is a BTF file made from this kernel's own (`support::btf`), handed to
//! libbpf as its custom BTF, so CO-RE relocates against it; the verifier then checks what it
//! produced. Only the relocation and the verifier run against v3: no v3 kernel runs here.
#![cfg(feature = "bpf")]

mod support;

use bbrtop_collect::bpf::loader::{self, LoadConfig, Loaded};
use bbrtop_core::btf::KIND_STRUCT;
use bbrtop_core::model::{BbrLayout, StructBbr};
use std::sync::Mutex;
use support::btf::{Edit, Field, layout, struct_entry};
use support::guard;

/// libbpf's log is kept process-wide: one load at a time.
static LOADS: Mutex<()> = Mutex::new(());

fn plain(ty: u32, size: u32, align: u32) -> Field {
    Field::Plain { ty, size, align }
}

/// Mainline's `struct bbr` (net/ipv4/tcp_bbr.c), member by member: the layout rules are checked
/// against the kernel's own on it.
fn v1_members(e: &mut Edit) -> Vec<(&'static str, Field)> {
    let (u32_, u64_) = (plain(e.typedef("u32"), 4, 4), plain(e.typedef("u64"), 8, 8));
    let minmax = plain(e.id(KIND_STRUCT, "minmax").expect("struct minmax"), 24, 4);
    let u16x2 = plain(e.add_array(e.typedef("u16"), 2), 4, 2);
    use Field::Bits as B;
    vec![
        ("min_rtt_us", u32_),
        ("min_rtt_stamp", u32_),
        ("probe_rtt_done_stamp", u32_),
        ("bw", minmax),
        ("rtt_cnt", u32_),
        ("next_rtt_delivered", u32_),
        ("cycle_mstamp", u64_),
        ("mode", B(3)),
        ("prev_ca_state", B(3)),
        ("packet_conservation", B(1)),
        ("round_start", B(1)),
        ("idle_restart", B(1)),
        ("probe_rtt_round_done", B(1)),
        ("unused", B(13)),
        ("lt_is_sampling", B(1)),
        ("lt_rtt_cnt", B(7)),
        ("lt_use_bw", B(1)),
        ("lt_bw", u32_),
        ("lt_last_delivered", u32_),
        ("lt_last_stamp", u32_),
        ("lt_last_lost", u32_),
        ("pacing_gain", B(10)),
        ("cwnd_gain", B(10)),
        ("full_bw_reached", B(1)),
        ("full_bw_cnt", B(2)),
        ("cycle_idx", B(3)),
        ("has_seen_rtt", B(1)),
        ("unused_b", B(5)),
        ("prior_cwnd", u32_),
        ("full_bw", u32_),
        ("ack_epoch_mstamp", u64_),
        ("extra_acked", u16x2),
        ("ack_epoch_acked", B(20)),
        ("extra_acked_win_rtts", B(5)),
        ("extra_acked_win_idx", B(1)),
        ("unused_c", B(6)),
    ]
}

/// BBRv3's `struct bbr` (google/bbr, branch v3, net/ipv4/tcp_bbr.c), member by member. Its 152
/// bytes outgrow this kernel's 104-byte `icsk_ca_priv` (v3 kernels have 216); what the programs
/// read of it lies within the first 96.
fn v3_members(e: &mut Edit) -> Vec<(&'static str, Field)> {
    let (u8_, u32_, u64_) =
        (plain(e.typedef("u8"), 1, 1), plain(e.typedef("u32"), 4, 4), plain(e.typedef("u64"), 8, 8));
    let u16x2 = plain(e.add_array(e.typedef("u16"), 2), 4, 2);
    let u32x2 = plain(e.add_array(e.typedef("u32"), 2), 8, 4);
    let plb = plain(e.id(KIND_STRUCT, "tcp_plb_state").expect("struct tcp_plb_state"), 8, 4);
    use Field::Bits as B;
    vec![
        ("min_rtt_us", u32_),
        ("min_rtt_stamp", u32_),
        ("probe_rtt_done_stamp", u32_),
        ("probe_rtt_min_us", u32_),
        ("probe_rtt_min_stamp", u32_),
        ("next_rtt_delivered", u32_),
        ("cycle_mstamp", u64_),
        ("mode", B(2)),
        ("prev_ca_state", B(3)),
        ("round_start", B(1)),
        ("ce_state", B(1)),
        ("bw_probe_up_rounds", B(5)),
        ("try_fast_path", B(1)),
        ("idle_restart", B(1)),
        ("probe_rtt_round_done", B(1)),
        ("init_cwnd", B(7)),
        ("unused_1", B(10)),
        ("pacing_gain", B(10)),
        ("cwnd_gain", B(10)),
        ("full_bw_reached", B(1)),
        ("full_bw_cnt", B(2)),
        ("cycle_idx", B(2)),
        ("has_seen_rtt", B(1)),
        ("unused_2", B(6)),
        ("prior_cwnd", u32_),
        ("full_bw", u32_),
        ("ack_epoch_mstamp", u64_),
        ("extra_acked", u16x2),
        ("ack_epoch_acked", B(20)),
        ("extra_acked_win_rtts", B(5)),
        ("extra_acked_win_idx", B(1)),
        ("full_bw_now", B(1)),
        ("startup_ecn_rounds", B(2)),
        ("loss_in_cycle", B(1)),
        ("ecn_in_cycle", B(1)),
        ("unused_3", B(1)),
        ("loss_round_delivered", u32_),
        ("undo_bw_lo", u32_),
        ("undo_inflight_lo", u32_),
        ("undo_inflight_hi", u32_),
        ("bw_latest", u32_),
        ("bw_lo", u32_),
        ("bw_hi", u32x2),
        ("inflight_latest", u32_),
        ("inflight_lo", u32_),
        ("inflight_hi", u32_),
        ("bw_probe_up_cnt", u32_),
        ("bw_probe_up_acks", u32_),
        ("probe_wait_us", u32_),
        ("prior_rcv_nxt", u32_),
        ("ecn_eligible", B(1)),
        ("ecn_alpha", B(9)),
        ("bw_probe_samples", B(1)),
        ("prev_probe_too_high", B(1)),
        ("stopped_risky_probe", B(1)),
        ("rounds_since_probe", B(8)),
        ("loss_round_start", B(1)),
        ("loss_in_round", B(1)),
        ("ecn_in_round", B(1)),
        ("ack_phase", B(3)),
        ("loss_events_in_round", B(4)),
        ("initialized", B(1)),
        ("alpha_last_delivered", u32_),
        ("alpha_last_delivered_ce", u32_),
        ("unused_4", u8_),
        ("plb", plb),
    ]
}

fn struct_bbr_id(e: &Edit) -> u32 {
    e.id(KIND_STRUCT, "bbr").expect("BBR is built into this kernel: struct bbr in its BTF")
}

/// The layout rules, applied to mainline's members, give the kernel's own `struct bbr`: every
/// name, bit offset and bitfield width, and its size. What they give for v3 rests on this.
#[test]
fn the_layout_rules_reproduce_the_kernels_own_struct_bbr() {
    let mut e = Edit::kernel();
    let id = struct_bbr_id(&e);
    let members = v1_members(&mut e);
    let (offsets, size) = layout(&members.iter().map(|m| m.1).collect::<Vec<_>>());
    let ours: Vec<(&str, u32, u32)> = members
        .iter()
        .zip(&offsets)
        .map(|((n, f), &off)| (*n, off, if let Field::Bits(w) = f { *w } else { 0 }))
        .collect();
    let kernels = e.members(id);
    let theirs: Vec<(&str, u32, u32)> =
        kernels.iter().map(|m| (m.name.as_str(), m.bit_offset, m.bitfield_size)).collect();
    assert_eq!(ours, theirs);
    let kernel_size = {
        let t = e.entry(id);
        let b = std::fs::read(bbrtop_collect::bpf::BTF_PATH).unwrap();
        u32::from_le_bytes(b[t.pos + 8..t.pos + 12].try_into().unwrap())
    };
    assert_eq!((size, kernel_size), (104, 104));
    // v3's, by the same rules: bw_hi at byte 88, 152 bytes in all.
    let mut e = Edit::kernel();
    let v3 = v3_members(&mut e);
    let (offsets, size) = layout(&v3.iter().map(|m| m.1).collect::<Vec<_>>());
    let at = |name: &str| offsets[v3.iter().position(|m| m.0 == name).unwrap()];
    assert_eq!((at("mode"), at("cycle_idx"), at("bw_hi"), size), (256, 311, 704, 152));
}

fn load_against(btf: &std::path::Path) -> (Loaded, String) {
    let l = loader::load(&LoadConfig {
        btf: Some(btf.to_path_buf()),
        walk: true,
        ..LoadConfig::from_rule(&Default::default())
    })
    .unwrap_or_else(|e| panic!("loads and passes the verifier: {e}"));
    assert!(l.failed.is_empty(), "attach failures: {:?}", l.failed);
    assert_eq!(l.links.len(), loader::planned_here().unwrap());
    (l, loader::last_load_log())
}

/// Where libbpf placed the reads of `struct bbr`'s `access` (such as "bw_hi[0]") in the target
/// BTF: the byte offsets ("38.7": bit 7 of byte 38, for a bitfield) of its log lines such as
/// "matching candidate #0 <byte_off> [43198] struct bbr.bw_hi[0] (0:42:0 @ offset 88)".
/// Empty when the target has no such field.
fn placed(log: &str, access: &str) -> Vec<String> {
    let mut v: Vec<String> = log
        .lines()
        .filter(|l| l.contains("matching candidate") && l.contains("<byte_off> "))
        .filter_map(|l| {
            let rest = l.split("struct bbr.").nth(1)?;
            let (path, off) = rest.split_once(" (")?;
            let off = off.split("@ offset ").nth(1)?.trim_end_matches(')');
            (path == access).then(|| off.to_string())
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn root_loads_against_mainlines_struct_bbr() {
    if !guard::bpf("loading BPF programs") {
        return;
    }
    let _one = LOADS.lock().unwrap_or_else(|e| e.into_inner());
    let (l, log) = load_against(std::path::Path::new(bbrtop_collect::bpf::BTF_PATH));
    let want =
        StructBbr::from_members(["min_rtt_us", "bw", "mode", "cycle_idx", "full_bw_reached", "lt_use_bw"]);
    assert_eq!(l.struct_bbr, Some(want));
    assert!(l.status().limits.is_empty(), "{:?}", l.status());
    // The kernel's own offsets (bits 448 and 631 for mode and cycle_idx), v1's filter, no bw_hi.
    assert_eq!(placed(&log, "mode"), ["56"], "{log}");
    assert_eq!(placed(&log, "cycle_idx"), ["78.7"]);
    assert_eq!(placed(&log, "bw.s[0].v"), ["16"], "the filter's best sample's value");
    assert_eq!(placed(&log, "lt_use_bw"), ["59.7"]);
    assert!(placed(&log, "bw_hi[0]").is_empty());
}

#[test]
fn root_loads_against_bbrv3s_struct_bbr() {
    if !guard::bpf("loading BPF programs") {
        return;
    }
    let _one = LOADS.lock().unwrap_or_else(|e| e.into_inner());
    let mut e = Edit::kernel();
    let id = struct_bbr_id(&e);
    let members = v3_members(&mut e);
    let entry = struct_entry(&mut e, "bbr", &members);
    e.replace(id, entry);
    let file = e.write();
    let (l, log) = load_against(file.path());
    let s = l.struct_bbr.clone().expect("struct bbr in the v3 file");
    assert_eq!(s.layout, BbrLayout::V3);
    assert_eq!(s.missing(), ["lt_use_bw", "bw"]);
    assert!(l.bbr_state() && l.status().limits.is_empty(), "{:?}", l.status());
    // Read at v3's offsets: mode at bit 256 and cycle_idx at 311 (2 bits each), bw_hi's two
    // slots; nothing of v1's filter or policer state, which v3 lacks.
    assert_eq!(placed(&log, "mode"), ["32"], "{log}");
    assert_eq!(placed(&log, "cycle_idx"), ["38.7"]);
    assert_eq!(placed(&log, "min_rtt_us"), ["0"]);
    assert_eq!(
        (placed(&log, "bw_hi[0]"), placed(&log, "bw_hi[1]")),
        (vec!["88".to_string()], vec!["92".to_string()])
    );
    assert!(placed(&log, "bw.s[0].v").is_empty() && placed(&log, "lt_use_bw").is_empty());
}

#[test]
fn root_loads_without_struct_bbr() {
    if !guard::bpf("loading BPF programs") {
        return;
    }
    let _one = LOADS.lock().unwrap_or_else(|e| e.into_inner());
    let file = support::btf::kernel_without_struct("bbr");
    let (l, _) = load_against(file.path());
    assert_eq!(l.struct_bbr, None);
    assert!(!l.bbr_state());
    let limits: Vec<String> = l.status().limits.iter().map(|r| r.detail.clone()).collect();
    assert_eq!(limits, [loader::BBR_STATE_OFF]);
}
