//! `struct tcp_info` (include/uapi/linux/tcp.h), decoded by offset.
//!
//! The struct grows from kernel to kernel (104, 144, 232, 248, 280 bytes...). Every field is an
//! `Option`: a field past the end of the payload is unknown, not zero. Offsets are the kernel's.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// How a payload's length compared with what this build knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InfoSize {
    Exact,
    /// An older kernel: the fields past the end are unknown.
    Short,
    /// A newer kernel: the bytes past what we know are ignored.
    Long,
}

macro_rules! tcp_info {
    ($( $(#[$doc:meta])* $mode:ident $name:ident, $set:ident : $ty:ident @ $off:expr ),* $(,)?) => {
        /// Every field as (name, offset, size in bytes), in kernel order: for readers that take
        /// all of them alike (a recording's columns).
        pub const TCP_INFO_LAYOUT: &[(&str, usize, usize)] =
            &[$((stringify!($name), $off, std::mem::size_of::<$ty>())),*];


        impl TcpInfo {
            $(
                $(#[$doc])*
                #[inline]
                pub fn $name(&self) -> Option<$ty> {
                    let b = self.known().get($off..$off + std::mem::size_of::<$ty>())?;
                    Some($ty::from_ne_bytes(b.try_into().ok()?))
                }

                /// Sets the field (and marks the payload as long enough to carry it).
                pub fn $set(&mut self, v: $ty) {
                    let end = $off + std::mem::size_of::<$ty>();
                    self.bytes[$off..end].copy_from_slice(&v.to_ne_bytes());
                    self.len = self.len.max(end as u16);
                }
            )*
        }

        impl Serialize for TcpInfo {
            /// The fields marked `json`, and only those the kernel sent: a missing field is
            /// unknown, not zero. The rest stay readable through their accessors.
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(None)?;
                $( if tcp_info!(@json $mode) && let Some(v) = self.$name() {
                    m.serialize_entry(stringify!($name), &v)?;
                } )*
                m.end()
            }
        }
    };
    (@json json) => { true };
    (@json raw) => { false };
}

/// `struct tcp_info` as the kernel sent it: the first `len` bytes are known, the rest unknown.
/// Kept as bytes, so a dump costs one copy per socket and 282 bytes of memory; fields are read by
/// offset on access.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TcpInfo {
    bytes: [u8; TCP_INFO_KNOWN_LEN],
    len: u16,
}

impl Default for TcpInfo {
    fn default() -> Self {
        TcpInfo { bytes: [0; TCP_INFO_KNOWN_LEN], len: 0 }
    }
}

impl std::fmt::Debug for TcpInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TcpInfo({} bytes known)", self.len)
    }
}

impl TcpInfo {
    /// Decodes a payload of any length: copies `min(len, known)` bytes. Never panics.
    pub fn parse(b: &[u8]) -> (TcpInfo, InfoSize) {
        let mut info = TcpInfo::default();
        let size = info.fill(b);
        (info, size)
    }

    /// Like [`TcpInfo::parse`], in place (a dump fills 100k of these: no extra copies).
    pub fn fill(&mut self, b: &[u8]) -> InfoSize {
        let n = b.len().min(TCP_INFO_KNOWN_LEN);
        self.bytes[..n].copy_from_slice(&b[..n]);
        self.bytes[n..].fill(0);
        self.len = n as u16;
        match b.len().cmp(&TCP_INFO_KNOWN_LEN) {
            std::cmp::Ordering::Equal => InfoSize::Exact,
            std::cmp::Ordering::Less => InfoSize::Short,
            std::cmp::Ordering::Greater => InfoSize::Long,
        }
    }

    /// The unsigned field of `size` bytes at `off` (an entry of [`TCP_INFO_LAYOUT`]), if the
    /// kernel sent it.
    pub fn field(&self, off: usize, size: usize) -> Option<u64> {
        let b = self.known().get(off..off + size)?;
        let mut w = [0u8; 8];
        Some(if cfg!(target_endian = "little") {
            w[..size].copy_from_slice(b);
            u64::from_le_bytes(w)
        } else {
            w[8 - size..].copy_from_slice(b);
            u64::from_be_bytes(w)
        })
    }

    /// Sets the field of `size` bytes at `off` (truncating `v` to it), and marks the payload as
    /// long enough to carry it.
    pub fn set_field(&mut self, off: usize, size: usize, v: u64) {
        let src = if cfg!(target_endian = "little") {
            &v.to_le_bytes()[..size]
        } else {
            &v.to_be_bytes()[8 - size..]
        };
        self.bytes[off..off + size].copy_from_slice(src);
        self.len = self.len.max((off + size) as u16);
    }

    /// The same socket `ms` later with nothing moving: the fields that count milliseconds since
    /// something (data or an ACK sent or received) grown by `ms`, saturating.
    pub fn aged(&self, ms: u64) -> TcpInfo {
        let mut t = *self;
        for off in AGES {
            if let Some(v) = t.field(off, 4) {
                t.set_field(off, 4, (v + ms).min(u64::from(u32::MAX)));
            }
        }
        t
    }

    /// Equal but for those ages: nothing moved between the two reads.
    pub fn same_but_ages(&self, other: &TcpInfo) -> bool {
        let (lo, hi) = (AGES[0], AGES[AGES.len() - 1] + 4);
        self.len == other.len
            && self.bytes[..lo] == other.bytes[..lo]
            && self.bytes[hi..] == other.bytes[hi..]
    }

    /// Bytes the kernel sent (up to what this build knows).
    pub fn known_len(&self) -> usize {
        self.len as usize
    }

    /// The bytes the kernel sent (up to what this build knows).
    pub fn bytes(&self) -> &[u8] {
        self.known()
    }

    fn known(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// The offsets of `last_data_sent`, `last_ack_sent`, `last_data_recv` and `last_ack_recv`
/// (u32 ms each, one after the other): what grows while a socket is idle.
const AGES: [usize; 4] = [44, 48, 52, 56];

/// The size of `struct tcp_info` on Linux 6.18 (with the AccECN counters).
pub const TCP_INFO_KNOWN_LEN: usize = 280;

tcp_info! {
    json state, set_state: u8 @ 0,
    json ca_state, set_ca_state: u8 @ 1,
    json retransmits, set_retransmits: u8 @ 2,
    raw probes, set_probes: u8 @ 3,
    raw backoff, set_backoff: u8 @ 4,
    raw options, set_options: u8 @ 5,
    /// snd_wscale in the low nibble, rcv_wscale in the high nibble.
    raw wscale, set_wscale: u8 @ 6,
    /// Bit 0: the last delivery-rate sample was application-limited.
    json app_limited_flags, set_app_limited_flags: u8 @ 7,
    json rto_us, set_rto_us: u32 @ 8,
    raw ato_us, set_ato_us: u32 @ 12,
    json snd_mss_bytes, set_snd_mss_bytes: u32 @ 16,
    raw rcv_mss_bytes, set_rcv_mss_bytes: u32 @ 20,
    json unacked_segs, set_unacked_segs: u32 @ 24,
    raw sacked_segs, set_sacked_segs: u32 @ 28,
    json lost_segs, set_lost_segs: u32 @ 32,
    /// Segments retransmitted and not yet acknowledged.
    json retrans_segs, set_retrans_segs: u32 @ 36,
    raw fackets, set_fackets: u32 @ 40,
    json last_data_sent_ms, set_last_data_sent_ms: u32 @ 44,
    raw last_ack_sent_ms, set_last_ack_sent_ms: u32 @ 48,
    raw last_data_recv_ms, set_last_data_recv_ms: u32 @ 52,
    json last_ack_recv_ms, set_last_ack_recv_ms: u32 @ 56,
    raw pmtu_bytes, set_pmtu_bytes: u32 @ 60,
    raw rcv_ssthresh, set_rcv_ssthresh: u32 @ 64,
    json srtt_us, set_srtt_us: u32 @ 68,
    json rttvar_us, set_rttvar_us: u32 @ 72,
    json snd_ssthresh_segs, set_snd_ssthresh_segs: u32 @ 76,
    json snd_cwnd_segs, set_snd_cwnd_segs: u32 @ 80,
    raw advmss_bytes, set_advmss_bytes: u32 @ 84,
    json reordering, set_reordering: u32 @ 88,
    raw rcv_rtt_us, set_rcv_rtt_us: u32 @ 92,
    raw rcv_space_bytes, set_rcv_space_bytes: u32 @ 96,
    json total_retrans_segs, set_total_retrans_segs: u32 @ 100,
    json pacing_rate_bytes_per_sec, set_pacing_rate_bytes_per_sec: u64 @ 104,
    json max_pacing_rate_bytes_per_sec, set_max_pacing_rate_bytes_per_sec: u64 @ 112,
    json bytes_acked, set_bytes_acked: u64 @ 120,
    json bytes_received, set_bytes_received: u64 @ 128,
    json segs_out, set_segs_out: u32 @ 136,
    json segs_in, set_segs_in: u32 @ 140,
    json notsent_bytes, set_notsent_bytes: u32 @ 144,
    json min_rtt_us, set_min_rtt_us: u32 @ 148,
    raw data_segs_in, set_data_segs_in: u32 @ 152,
    raw data_segs_out, set_data_segs_out: u32 @ 156,
    json delivery_rate_bytes_per_sec, set_delivery_rate_bytes_per_sec: u64 @ 160,
    json busy_time_us, set_busy_time_us: u64 @ 168,
    json rwnd_limited_us, set_rwnd_limited_us: u64 @ 176,
    json sndbuf_limited_us, set_sndbuf_limited_us: u64 @ 184,
    json delivered_segs, set_delivered_segs: u32 @ 192,
    json delivered_ce_segs, set_delivered_ce_segs: u32 @ 196,
    json bytes_sent, set_bytes_sent: u64 @ 200,
    json bytes_retrans, set_bytes_retrans: u64 @ 208,
    json dsack_dups, set_dsack_dups: u32 @ 216,
    raw reord_seen, set_reord_seen: u32 @ 220,
    raw rcv_ooopack, set_rcv_ooopack: u32 @ 224,
    json snd_wnd_bytes, set_snd_wnd_bytes: u32 @ 228,
    json rcv_wnd_bytes, set_rcv_wnd_bytes: u32 @ 232,
    raw rehash, set_rehash: u32 @ 236,
    json total_rto, set_total_rto: u16 @ 240,
    json total_rto_recoveries, set_total_rto_recoveries: u16 @ 242,
    json total_rto_time_ms, set_total_rto_time_ms: u32 @ 244,
    raw received_ce_segs, set_received_ce_segs: u32 @ 248,
    raw delivered_e1_bytes, set_delivered_e1_bytes: u32 @ 252,
    raw delivered_e0_bytes, set_delivered_e0_bytes: u32 @ 256,
    raw delivered_ce_bytes, set_delivered_ce_bytes: u32 @ 260,
    raw received_e1_bytes, set_received_e1_bytes: u32 @ 264,
    raw received_e0_bytes, set_received_e0_bytes: u32 @ 268,
    raw received_ce_bytes, set_received_ce_bytes: u32 @ 272,
}

impl TcpInfo {
    /// Bytes retransmitted over bytes sent (retransmissions included), over the socket's life.
    pub fn retrans_ratio(&self) -> Option<f64> {
        let sent = self.bytes_sent().filter(|&s| s > 0)?;
        Some(self.bytes_retrans()? as f64 / sent as f64)
    }

    /// Whether the most recent delivery-rate sample was limited by the application.
    pub fn app_limited(&self) -> Option<bool> {
        self.app_limited_flags().map(|f| f & 1 == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_u32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }

    #[test]
    fn short_payload_leaves_later_fields_unknown() {
        let mut b = vec![0u8; 104];
        put_u32(&mut b, 68, 1234);
        put_u32(&mut b, 80, 10);
        let (info, size) = TcpInfo::parse(&b);
        assert_eq!(size, InfoSize::Short);
        assert_eq!(info.srtt_us(), Some(1234));
        assert_eq!(info.snd_cwnd_segs(), Some(10));
        assert_eq!(info.total_retrans_segs(), Some(0));
        assert_eq!(info.pacing_rate_bytes_per_sec(), None);
        assert_eq!(info.delivery_rate_bytes_per_sec(), None);
    }

    #[test]
    fn long_payload_is_accepted() {
        let mut b = vec![0u8; TCP_INFO_KNOWN_LEN + 16];
        b[104..112].copy_from_slice(&5_000_000u64.to_ne_bytes());
        b[7] = 1;
        let (info, size) = TcpInfo::parse(&b);
        assert_eq!(size, InfoSize::Long);
        assert_eq!(info.pacing_rate_bytes_per_sec(), Some(5_000_000));
        assert_eq!(info.app_limited(), Some(true));
        assert_eq!(info.received_ce_bytes(), Some(0));
    }

    #[test]
    fn field_straddling_the_end_is_unknown() {
        let b = vec![0u8; 106];
        let (info, _) = TcpInfo::parse(&b);
        assert_eq!(info.total_retrans_segs(), Some(0));
        assert_eq!(info.pacing_rate_bytes_per_sec(), None);
        assert_eq!(TcpInfo::parse(&[]).0, TcpInfo::default());
    }

    #[test]
    fn json_has_only_known_fields() {
        let (info, _) = TcpInfo::parse(&[0u8; 8]);
        let v = serde_json::to_value(info).unwrap();
        // Of the first 8 bytes, JSON carries state, ca_state, retransmits, app_limited_flags.
        assert_eq!(v.as_object().unwrap().len(), 4, "{v}");
        let (full, _) = TcpInfo::parse(&[0u8; TCP_INFO_KNOWN_LEN]);
        let v = serde_json::to_value(full).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 39, "{v}");
        let mut i = TcpInfo::default();
        i.set_srtt_us(1500);
        assert_eq!(i.srtt_us(), Some(1500));
        assert_eq!(i.known_len(), 72);
        assert_eq!(TCP_INFO_LAYOUT.len(), 66);
        // The generic accessors read and write what the named ones do.
        let &(_, off, size) = TCP_INFO_LAYOUT.iter().find(|f| f.0 == "srtt_us").unwrap();
        assert_eq!((off, size, i.field(off, size)), (68, 4, Some(1500)));
        i.set_field(104, 8, 7_000_000);
        assert_eq!(i.pacing_rate_bytes_per_sec(), Some(7_000_000));
        assert_eq!(i.field(240, 2), None, "past the payload");
    }
}
