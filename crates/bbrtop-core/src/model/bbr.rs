//! The congestion control's own info over netlink: every published `tcp_bbr_info` layout (v1,
//! v2alpha, v3) and DCTCP's `tcp_dctcp_info`. The kernel answers one request bit with whichever
//! struct the socket's congestion control fills, so the cc name and the attribute's length say
//! which layout came.

use super::u32_at;
use serde::{Serialize, Serializer};
use std::fmt;

/// Which BBR wrote a socket's `tcp_bbr_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BbrVersion {
    /// Mainline `tcp_bbr` (also named "bbr1" where a kernel ships v3 as "bbr").
    V1,
    /// The google/bbr v2alpha branch, whose cc name is "bbr2".
    V2Alpha,
    /// google/bbr v3 (and the kernels that carry it, under the name "bbr").
    V3,
    /// A version byte this build does not know.
    Unknown(u8),
}

impl BbrVersion {
    /// From the cc name, and the version byte where the layout carries one (52 bytes or more).
    /// The name wins: v2alpha and a renamed v1 say who they are; otherwise a 20-byte layout is
    /// v1, and a longer one says its version.
    pub fn detect(cc: Option<&str>, version_byte: Option<u8>) -> BbrVersion {
        match (cc, version_byte) {
            (Some("bbr2"), _) => BbrVersion::V2Alpha,
            (Some("bbr1"), _) | (_, None | Some(1)) => BbrVersion::V1,
            (_, Some(2)) => BbrVersion::V2Alpha,
            (_, Some(3)) => BbrVersion::V3,
            (_, Some(v)) => BbrVersion::Unknown(v),
        }
    }

    /// Whether the kernel's phase byte uses `enum tcp_bbr_phase` (v2alpha's `tcp_bbr2_phase` has
    /// the same values). An unknown version's byte may mean anything.
    pub fn has_phase_enum(self) -> bool {
        matches!(self, BbrVersion::V2Alpha | BbrVersion::V3)
    }
}

impl std::str::FromStr for BbrVersion {
    type Err = String;

    /// What `Display` writes: v1, v2alpha, v3, unknown(N).
    fn from_str(s: &str) -> Result<BbrVersion, String> {
        match s {
            "v1" => Ok(BbrVersion::V1),
            "v2alpha" => Ok(BbrVersion::V2Alpha),
            "v3" => Ok(BbrVersion::V3),
            _ => s
                .strip_prefix("unknown(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|n| n.parse().ok())
                .map(BbrVersion::Unknown)
                .ok_or_else(|| format!("unknown BBR version {s:?}")),
        }
    }
}

impl fmt::Display for BbrVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BbrVersion::V1 => f.write_str("v1"),
            BbrVersion::V2Alpha => f.write_str("v2alpha"),
            BbrVersion::V3 => f.write_str("v3"),
            BbrVersion::Unknown(v) => write!(f, "unknown({v})"),
        }
    }
}

impl Serialize for BbrVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Whether a congestion-control name is one of BBR's ("bbr", "bbr1", "bbr2", "bbr3"...).
pub fn is_bbr(cc: &str) -> bool {
    cc.starts_with("bbr")
}

/// `struct tcp_bbr_info` (or v2alpha's `tcp_bbr2_info`), decoded. v1's fields come in every
/// layout; the rest only from the 52-byte layout of v2alpha and v3.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BbrInfo {
    /// BBR's bottleneck bandwidth estimate (max filter of delivery rate).
    pub bw_bytes_per_sec: u64,
    /// BBR's own min RTT: a 10 s windowed minimum, re-measured in PROBE_RTT.
    pub min_rtt_us: u32,
    /// pacing_gain as a ratio (the kernel sends it x256).
    pub pacing_gain: f64,
    /// cwnd_gain as a ratio (the kernel sends it x256).
    pub cwnd_gain: f64,
    pub version: BbrVersion,
    /// What only the 52-byte layout carries.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub ext: Option<BbrExt>,
    /// Bytes past the layout this build knows: counted, never read.
    #[serde(skip_serializing_if = "is_zero")]
    pub unknown_trailing_bytes: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// The fields v2alpha and v3 add after v1's. The kernel sends all-ones for a bound or an
/// estimate it has not set, which reads as `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BbrExt {
    /// The long-term bandwidth bound (`bw_hi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bw_hi_bytes_per_sec: Option<u64>,
    /// The short-term bandwidth bound (`bw_lo`), set after loss or ECN marks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bw_lo_bytes_per_sec: Option<u64>,
    /// The short-term and long-term bounds on data in flight, in packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflight_lo_pkts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflight_hi_pkts: Option<u32>,
    /// The most packets ACKed beyond the expected in an epoch (the ACK-aggregation allowance).
    pub extra_acked_pkts: u32,
    /// The kernel's `bbr_mode` byte (v3: 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT).
    pub kernel_mode: u8,
    /// The kernel's `bbr_phase` byte (`enum tcp_bbr_phase`, 0 INVALID to 7 PROBE_BW_REFILL).
    pub kernel_phase: u8,
}

/// Byte offsets of the 52-byte layout past v1's five u32s (include/uapi/linux/inet_diag.h of the
/// v2alpha and v3 branches).
mod off {
    pub const BW_HI: usize = 20;
    pub const BW_LO: usize = 28;
    pub const MODE: usize = 36;
    pub const PHASE: usize = 37;
    pub const VERSION: usize = 39;
    pub const INFLIGHT_LO: usize = 40;
    pub const INFLIGHT_HI: usize = 44;
    pub const EXTRA_ACKED: usize = 48;
}

/// A u64 sent as two u32s, low half first, at byte `at`.
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u32_at(b, at / 4 + 1)?) << 32 | u64::from(u32_at(b, at / 4)?))
}

/// The kernel's "not set": all ones.
fn set<T: PartialEq>(v: T, unset: T) -> Option<T> {
    (v != unset).then_some(v)
}

impl BbrInfo {
    /// Size of v1's `struct tcp_bbr_info`: bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain (u32 each).
    pub const LEN: usize = 20;
    /// Size of the v2alpha and v3 layout.
    pub const EXT_LEN: usize = 52;

    /// A v1 info, as mainline sends it.
    pub fn v1(bw_bytes_per_sec: u64, min_rtt_us: u32, pacing_gain: f64, cwnd_gain: f64) -> BbrInfo {
        BbrInfo {
            bw_bytes_per_sec,
            min_rtt_us,
            pacing_gain,
            cwnd_gain,
            version: BbrVersion::V1,
            ext: None,
            unknown_trailing_bytes: 0,
        }
    }

    /// Decodes the payload of an `INET_DIAG_BBRINFO` attribute of a socket whose congestion
    /// control is `cc`. `None` if it is shorter than v1's layout. Never panics.
    pub fn parse(b: &[u8], cc: Option<&str>) -> Option<BbrInfo> {
        let u = |i: usize| u32_at(b, i);
        let mut info = BbrInfo::v1(u64_at(b, 0)?, u(2)?, f64::from(u(3)?) / 256.0, f64::from(u(4)?) / 256.0);
        info.version =
            BbrVersion::detect(cc, b.get(off::VERSION).copied().filter(|_| b.len() >= Self::EXT_LEN));
        info.ext = BbrExt::parse(b);
        let known = if info.ext.is_some() { Self::EXT_LEN } else { Self::LEN };
        info.unknown_trailing_bytes = u32::try_from(b.len() - known).unwrap_or(u32::MAX);
        Some(info)
    }
}

impl BbrExt {
    /// The 52-byte layout's fields past v1's. `None` if the layout is shorter: a partial one is
    /// no layout any kernel sends, so its bytes stay unread.
    fn parse(b: &[u8]) -> Option<BbrExt> {
        if b.len() < BbrInfo::EXT_LEN {
            return None;
        }
        let u = |at: usize| u32_at(b, at / 4);
        Some(BbrExt {
            bw_hi_bytes_per_sec: set(u64_at(b, off::BW_HI)?, u64::MAX),
            bw_lo_bytes_per_sec: set(u64_at(b, off::BW_LO)?, u64::MAX),
            inflight_lo_pkts: set(u(off::INFLIGHT_LO)?, u32::MAX),
            inflight_hi_pkts: set(u(off::INFLIGHT_HI)?, u32::MAX),
            extra_acked_pkts: u(off::EXTRA_ACKED)?,
            kernel_mode: *b.get(off::MODE)?,
            kernel_phase: *b.get(off::PHASE)?,
        })
    }
}

/// `struct tcp_dctcp_info`: DCTCP's ECN state. Not BBR: a dctcp socket has no `bbr` object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DctcpInfo {
    /// False when the socket fell back to Reno (no ECN); the other fields are then zero.
    pub enabled: bool,
    pub ce_state: u16,
    /// The estimated fraction of marked bytes, x1024 (1024: every byte marked).
    pub alpha: u32,
    /// Bytes ACKed with ECE, and all bytes ACKed, in the current observation window.
    pub ab_ecn_bytes: u32,
    pub ab_tot_bytes: u32,
}

impl DctcpInfo {
    pub const LEN: usize = 16;

    /// Decodes an `INET_DIAG_DCTCPINFO` payload. `None` if it is too short. Never panics.
    pub fn parse(b: &[u8]) -> Option<DctcpInfo> {
        let u16_at = |at: usize| b.get(at..at + 2).map(|s| u16::from_ne_bytes([s[0], s[1]]));
        Some(DctcpInfo {
            enabled: u16_at(0)? != 0,
            ce_state: u16_at(2)?,
            alpha: u32_at(b, 1)?,
            ab_ecn_bytes: u32_at(b, 2)?,
            ab_tot_bytes: u32_at(b, 3)?,
        })
    }
}

/// The `struct bbr` fields bbrtop's eBPF programs read, each behind a CO-RE field check
/// (crates/bbrtop-collect/bpf/bbrtop.bpf.c): v1 has all but `bw_hi`; v3 has no `lt_use_bw` and
/// no `bw` filter.
pub const STRUCT_BBR_FIELDS: [&str; 7] =
    ["min_rtt_us", "mode", "cycle_idx", "full_bw_reached", "lt_use_bw", "bw", "bw_hi"];

/// Which `struct bbr` a kernel's BTF describes, told by its members.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BbrLayout {
    /// Mainline's: the `bw` max filter and the long-term (`lt_*`) policer state.
    V1,
    /// google/bbr v3's: `bw_hi[2]` and `bw_lo` instead of the filter, no `lt_*`.
    V3,
    /// Neither: the programs read what of [`STRUCT_BBR_FIELDS`] it has.
    Unknown,
}

/// `struct bbr` as a BTF describes it: its layout, and which of the fields the programs read
/// it has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StructBbr {
    pub layout: BbrLayout,
    /// Of [`STRUCT_BBR_FIELDS`], in that order.
    pub fields: Vec<&'static str>,
}

impl StructBbr {
    /// From the struct's member names.
    pub fn from_members<'a>(members: impl IntoIterator<Item = &'a str>) -> StructBbr {
        let names: Vec<&str> = members.into_iter().collect();
        let has = |f: &str| names.contains(&f);
        let layout = if has("bw") && has("lt_use_bw") {
            BbrLayout::V1
        } else if has("bw_hi") && !has("bw") {
            BbrLayout::V3
        } else {
            BbrLayout::Unknown
        };
        StructBbr { layout, fields: STRUCT_BBR_FIELDS.into_iter().filter(|f| has(f)).collect() }
    }

    /// Whether the programs can tell BBR's phase from it (they need `mode` and `cycle_idx`).
    pub fn has_phase(&self) -> bool {
        self.fields.contains(&"mode") && self.fields.contains(&"cycle_idx")
    }

    /// The fields of [`STRUCT_BBR_FIELDS`] it lacks.
    pub fn missing(&self) -> Vec<&'static str> {
        STRUCT_BBR_FIELDS.into_iter().filter(|f| !self.fields.contains(f)).collect()
    }
}

impl fmt::Display for StructBbr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.layout {
            BbrLayout::V1 => f.write_str("struct bbr v1 layout"),
            BbrLayout::V3 => f.write_str("struct bbr v3 layout"),
            BbrLayout::Unknown => {
                write!(f, "struct bbr of an unknown layout, without {}", self.missing().join(", "))
            }
        }
    }
}

/// Which BBR a host runs under the name "bbr", and what told: the names it offers, the module's
/// declared version, and the kernel BTF's `struct bbr`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostBbr {
    /// The version behind "bbr"; `None` when the host offers no "bbr", or nothing tells.
    pub version: Option<BbrVersion>,
    /// The BBR names in `tcp_available_congestion_control` ("bbr", "bbr1", "bbr2"...).
    pub names: Vec<String>,
    /// `/sys/module/tcp_bbr/version`: v3 declares "3"; mainline declares none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module_version: Option<String>,
    /// `struct bbr` in the kernel BTF; `None` when no BTF has it.
    pub btf: Option<StructBbr>,
}

impl HostBbr {
    /// Judges what was read. The module's version says most; then the BTF's layout; failing
    /// both, "bbr" is mainline's v1 unless a "bbr1" beside it says v1 was renamed.
    pub fn detect(available: &[String], module_version: Option<&str>, btf: Option<StructBbr>) -> HostBbr {
        let names: Vec<String> = available.iter().filter(|c| is_bbr(c)).cloned().collect();
        let has = |n: &str| names.iter().any(|c| c == n);
        let declared = module_version.and_then(|v| v.trim().parse::<u8>().ok()).map(|v| match v {
            1 => BbrVersion::V1,
            2 => BbrVersion::V2Alpha,
            3 => BbrVersion::V3,
            v => BbrVersion::Unknown(v),
        });
        let from_btf = btf.as_ref().and_then(|b| match b.layout {
            BbrLayout::V1 => Some(BbrVersion::V1),
            BbrLayout::V3 => Some(BbrVersion::V3),
            BbrLayout::Unknown => None,
        });
        let version =
            declared.or(from_btf).or((!has("bbr1")).then_some(BbrVersion::V1)).filter(|_| has("bbr"));
        HostBbr { version, names, module_version: module_version.map(|v| v.trim().to_string()), btf }
    }
}

impl fmt::Display for HostBbr {
    /// "bbr v1 (BTF: struct bbr v1 layout)", with the module's version and other names.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.names.iter().any(|c| c == "bbr"), self.version) {
            (false, _) => f.write_str("no bbr available")?,
            (true, Some(v)) => write!(f, "bbr {v}")?,
            (true, None) => f.write_str("bbr of an unknown version")?,
        }
        f.write_str(" (")?;
        if let Some(v) = &self.module_version {
            write!(f, "module version {v}; ")?;
        }
        match &self.btf {
            Some(b) => write!(f, "BTF: {b})")?,
            None => f.write_str("BTF: no struct bbr)")?,
        }
        let others: Vec<&str> = self.names.iter().map(String::as_str).filter(|&c| c != "bbr").collect();
        if !others.is_empty() {
            write!(f, ", also {}", others.join(", "))?;
        }
        Ok(())
    }
}

/// Layouts as the kernels send them, for this module's tests and the wire parser's.
#[cfg(any(test, feature = "test-support"))]
pub mod fixtures {
    fn u32s(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    /// v1's 20 bytes: 2.5 MB/s, min RTT 40 ms, gains 1.25 and 2.0 (PROBE_BW up).
    pub fn v1() -> Vec<u8> {
        u32s(&[2_500_000, 0, 40_000, 320, 512])
    }

    /// The 52-byte layout with the given version, mode and phase bytes: v1's fields with v3's
    /// probing-up gains (1.25, 2.25), bw_hi 3 MB/s, bw_lo unset, inflight_lo unset, inflight_hi
    /// 120 packets, extra_acked 7.
    pub fn ext(version: u8, mode: u8, phase: u8) -> Vec<u8> {
        let mut b = u32s(&[2_500_000, 0, 40_000, 320, 576, 3_000_000, 0, u32::MAX, u32::MAX]);
        b.extend([mode, phase, 0, version]);
        b.extend(u32s(&[u32::MAX, 120, 7]));
        b
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn version_from_name_and_byte() {
        use BbrVersion::*;
        let cases: &[(Option<&str>, Option<u8>, BbrVersion)] = &[
            (Some("bbr"), None, V1),
            (None, None, V1),
            (Some("bbr1"), Some(3), V1),
            (Some("bbr2"), None, V2Alpha),
            (Some("bbr2"), Some(2), V2Alpha),
            (Some("bbr"), Some(3), V3),
            (None, Some(3), V3),
            (Some("bbr"), Some(2), V2Alpha),
            (Some("bbr"), Some(9), Unknown(9)),
            (Some("bbr"), Some(0), Unknown(0)),
        ];
        for &(cc, byte, want) in cases {
            assert_eq!(BbrVersion::detect(cc, byte), want, "{cc:?} {byte:?}");
        }
        assert_eq!(Unknown(9).to_string(), "unknown(9)");
    }

    #[test]
    fn v1_twenty_bytes() {
        let i = BbrInfo::parse(&v1(), Some("bbr")).unwrap();
        assert_eq!(i, BbrInfo::v1(2_500_000, 40_000, 1.25, 2.0));
        assert_eq!(i.version, BbrVersion::V1);
    }

    #[test]
    fn v3_fifty_two_bytes() {
        let i = BbrInfo::parse(&ext(3, 2, 4), Some("bbr")).unwrap();
        assert_eq!(
            (i.bw_bytes_per_sec, i.min_rtt_us, i.pacing_gain, i.cwnd_gain),
            (2_500_000, 40_000, 1.25, 2.25)
        );
        assert_eq!((i.version, i.unknown_trailing_bytes), (BbrVersion::V3, 0));
        let want = BbrExt {
            bw_hi_bytes_per_sec: Some(3_000_000),
            bw_lo_bytes_per_sec: None,
            inflight_lo_pkts: None,
            inflight_hi_pkts: Some(120),
            extra_acked_pkts: 7,
            kernel_mode: 2,
            kernel_phase: 4,
        };
        assert_eq!(i.ext, Some(want));
    }

    #[test]
    fn v2alpha_by_name() {
        let i = BbrInfo::parse(&ext(2, 0, 1), Some("bbr2")).unwrap();
        assert_eq!(i.version, BbrVersion::V2Alpha);
        assert_eq!(i.ext.map(|e| (e.kernel_mode, e.kernel_phase)), Some((0, 1)));
    }

    #[test]
    fn trailing_bytes_are_counted_not_read() {
        let mut b = ext(3, 2, 6);
        b.extend([0xff; 12]);
        let i = BbrInfo::parse(&b, Some("bbr")).unwrap();
        assert_eq!((i.version, i.unknown_trailing_bytes), (BbrVersion::V3, 12));
        assert_eq!(i.ext, BbrInfo::parse(&ext(3, 2, 6), Some("bbr")).unwrap().ext);
        // A 20-byte layout with more after it that is not the whole 52: only v1's fields.
        let i = BbrInfo::parse(&ext(3, 2, 6)[..36], Some("bbr")).unwrap();
        assert_eq!((i.version, i.ext, i.unknown_trailing_bytes), (BbrVersion::V1, None, 16));
    }

    #[test]
    fn truncated_layouts() {
        assert_eq!(BbrInfo::parse(&v1()[..19], Some("bbr")), None);
        assert_eq!(BbrInfo::parse(&[], None), None);
        let i = BbrInfo::parse(&ext(3, 2, 4)[..51], Some("bbr")).unwrap();
        assert_eq!((i.version, i.ext, i.unknown_trailing_bytes), (BbrVersion::V1, None, 31));
        assert_eq!(DctcpInfo::parse(&[0; 15]), None);
    }

    #[test]
    fn serializes_only_what_came() {
        let v1 = serde_json::to_value(BbrInfo::parse(&v1(), Some("bbr")).unwrap()).unwrap();
        let keys: Vec<_> = v1.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["bw_bytes_per_sec", "cwnd_gain", "min_rtt_us", "pacing_gain", "version"]);
        assert_eq!(v1["version"], "v1");
        let v3 = serde_json::to_value(BbrInfo::parse(&ext(3, 2, 4), Some("bbr")).unwrap()).unwrap();
        assert_eq!(v3["version"], "v3");
        assert_eq!(
            (v3["bw_hi_bytes_per_sec"].as_u64(), v3["inflight_hi_pkts"].as_u64()),
            (Some(3_000_000), Some(120))
        );
        assert_eq!((v3["kernel_mode"].as_u64(), v3["kernel_phase"].as_u64()), (Some(2), Some(4)));
        assert!(v3.get("bw_lo_bytes_per_sec").is_none() && v3.get("inflight_lo_pkts").is_none(), "unset");
        assert!(v3.get("unknown_trailing_bytes").is_none());
    }

    #[test]
    fn dctcp_sixteen_bytes() {
        let mut b = [1u16, 3].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>();
        b.extend([512u32, 9_000, 64_000].iter().flat_map(|v| v.to_ne_bytes()));
        let want =
            DctcpInfo { enabled: true, ce_state: 3, alpha: 512, ab_ecn_bytes: 9_000, ab_tot_bytes: 64_000 };
        assert_eq!(DctcpInfo::parse(&b), Some(want));
    }

    #[test]
    fn struct_bbr_layouts_from_member_names() {
        let v1 = StructBbr::from_members([
            "min_rtt_us",
            "bw",
            "mode",
            "lt_use_bw",
            "cycle_idx",
            "full_bw_reached",
        ]);
        assert_eq!(v1.layout, BbrLayout::V1);
        assert_eq!(v1.missing(), ["bw_hi"]);
        assert!(v1.has_phase());
        assert_eq!(v1.to_string(), "struct bbr v1 layout");
        let v3 =
            StructBbr::from_members(["min_rtt_us", "mode", "cycle_idx", "full_bw_reached", "bw_lo", "bw_hi"]);
        assert_eq!((v3.layout, v3.missing()), (BbrLayout::V3, vec!["lt_use_bw", "bw"]));
        let odd = StructBbr::from_members(["min_rtt_us", "mode"]);
        assert_eq!(odd.layout, BbrLayout::Unknown);
        assert!(!odd.has_phase());
        assert_eq!(
            odd.to_string(),
            "struct bbr of an unknown layout, without cycle_idx, full_bw_reached, lt_use_bw, bw, bw_hi"
        );
    }

    #[test]
    fn host_version_from_module_btf_and_names() {
        use BbrVersion::*;
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let v1 = || Some(StructBbr::from_members(["min_rtt_us", "bw", "lt_use_bw", "mode", "cycle_idx"]));
        let v3 = || Some(StructBbr::from_members(["min_rtt_us", "bw_hi", "mode", "cycle_idx"]));
        type Case = (Vec<String>, Option<&'static str>, Option<StructBbr>, Option<BbrVersion>, &'static str);
        let cases: Vec<Case> = vec![
            (names(&["reno", "bbr", "cubic"]), None, v1(), Some(V1), "bbr v1 (BTF: struct bbr v1 layout)"),
            (
                names(&["bbr"]),
                Some("3\n"),
                v3(),
                Some(V3),
                "bbr v3 (module version 3; BTF: struct bbr v3 layout)",
            ),
            (names(&["bbr", "bbr1"]), None, v3(), Some(V3), "bbr v3 (BTF: struct bbr v3 layout), also bbr1"),
            (
                names(&["bbr", "bbr1"]),
                None,
                None,
                None,
                "bbr of an unknown version (BTF: no struct bbr), also bbr1",
            ),
            (names(&["bbr"]), None, None, Some(V1), "bbr v1 (BTF: no struct bbr)"),
            (names(&["bbr2", "cubic"]), None, None, None, "no bbr available (BTF: no struct bbr), also bbr2"),
            (
                names(&["bbr"]),
                Some("9"),
                None,
                Some(Unknown(9)),
                "bbr unknown(9) (module version 9; BTF: no struct bbr)",
            ),
        ];
        for (avail, module, btf, want, text) in cases {
            let h = HostBbr::detect(&avail, module, btf);
            assert_eq!((h.version, h.to_string().as_str()), (want, text), "{avail:?} {module:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120),
            cc in proptest::sample::select(vec![None, Some("bbr"), Some("bbr1"), Some("bbr2"), Some("bbr3")]),
        ) {
            if let Some(i) = BbrInfo::parse(&bytes, cc) {
                let known = if i.ext.is_some() { BbrInfo::EXT_LEN } else { BbrInfo::LEN };
                proptest::prop_assert_eq!(i.unknown_trailing_bytes as usize, bytes.len() - known);
            }
            let _ = DctcpInfo::parse(&bytes);
        }
    }
}
