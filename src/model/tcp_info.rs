//! `struct tcp_info` (include/uapi/linux/tcp.h), decoded by offset.
//!
//! The struct grows from kernel to kernel (104, 144, 232, 248, 280 bytes...). Every field is an
//! `Option`: a field past the end of the payload is unknown, not zero. Offsets are the kernel's.

use serde::Serialize;

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
    ($( $(#[$doc:meta])* $name:ident : $ty:ident @ $off:expr ),* $(,)?) => {
        /// Every `tcp_info` field bbrtop knows. Units are the kernel's, and named in each field.
        #[derive(Clone, Debug, Default, PartialEq, Serialize)]
        pub struct TcpInfo {
            $( $(#[$doc])* #[serde(skip_serializing_if = "Option::is_none")] pub $name: Option<$ty>, )*
        }

        impl TcpInfo {
            /// Decodes a payload of any length. Never panics.
            pub fn parse(b: &[u8]) -> (TcpInfo, InfoSize) {
                let info = TcpInfo { $( $name: tcp_info!(@get $ty, b, $off), )* };
                let size = match b.len().cmp(&TCP_INFO_KNOWN_LEN) {
                    std::cmp::Ordering::Equal => InfoSize::Exact,
                    std::cmp::Ordering::Less => InfoSize::Short,
                    std::cmp::Ordering::Greater => InfoSize::Long,
                };
                (info, size)
            }
        }
    };
    (@get u8, $b:expr, $off:expr) => { $b.get($off).copied() };
    (@get u16, $b:expr, $off:expr) => {
        $b.get($off..$off + 2).map(|s| u16::from_ne_bytes([s[0], s[1]]))
    };
    (@get u32, $b:expr, $off:expr) => {
        $b.get($off..$off + 4).map(|s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
    };
    (@get u64, $b:expr, $off:expr) => {
        $b.get($off..$off + 8)
            .map(|s| u64::from_ne_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
    };
}

/// The size of `struct tcp_info` on Linux 6.18 (with the AccECN counters).
pub const TCP_INFO_KNOWN_LEN: usize = 280;

tcp_info! {
    state: u8 @ 0,
    ca_state: u8 @ 1,
    retransmits: u8 @ 2,
    probes: u8 @ 3,
    backoff: u8 @ 4,
    options: u8 @ 5,
    /// snd_wscale in the low nibble, rcv_wscale in the high nibble.
    wscale: u8 @ 6,
    /// Bit 0: the last delivery-rate sample was application-limited.
    app_limited_flags: u8 @ 7,
    rto_us: u32 @ 8,
    ato_us: u32 @ 12,
    snd_mss_bytes: u32 @ 16,
    rcv_mss_bytes: u32 @ 20,
    unacked_segs: u32 @ 24,
    sacked_segs: u32 @ 28,
    lost_segs: u32 @ 32,
    /// Segments retransmitted and not yet acknowledged.
    retrans_segs: u32 @ 36,
    fackets: u32 @ 40,
    last_data_sent_ms: u32 @ 44,
    last_ack_sent_ms: u32 @ 48,
    last_data_recv_ms: u32 @ 52,
    last_ack_recv_ms: u32 @ 56,
    pmtu_bytes: u32 @ 60,
    rcv_ssthresh: u32 @ 64,
    srtt_us: u32 @ 68,
    rttvar_us: u32 @ 72,
    snd_ssthresh_segs: u32 @ 76,
    snd_cwnd_segs: u32 @ 80,
    advmss_bytes: u32 @ 84,
    reordering: u32 @ 88,
    rcv_rtt_us: u32 @ 92,
    rcv_space_bytes: u32 @ 96,
    total_retrans_segs: u32 @ 100,
    pacing_rate_bytes_per_sec: u64 @ 104,
    max_pacing_rate_bytes_per_sec: u64 @ 112,
    bytes_acked: u64 @ 120,
    bytes_received: u64 @ 128,
    segs_out: u32 @ 136,
    segs_in: u32 @ 140,
    notsent_bytes: u32 @ 144,
    min_rtt_us: u32 @ 148,
    data_segs_in: u32 @ 152,
    data_segs_out: u32 @ 156,
    delivery_rate_bytes_per_sec: u64 @ 160,
    busy_time_us: u64 @ 168,
    rwnd_limited_us: u64 @ 176,
    sndbuf_limited_us: u64 @ 184,
    delivered_segs: u32 @ 192,
    delivered_ce_segs: u32 @ 196,
    bytes_sent: u64 @ 200,
    bytes_retrans: u64 @ 208,
    dsack_dups: u32 @ 216,
    reord_seen: u32 @ 220,
    rcv_ooopack: u32 @ 224,
    snd_wnd_bytes: u32 @ 228,
    rcv_wnd_bytes: u32 @ 232,
    rehash: u32 @ 236,
    total_rto: u16 @ 240,
    total_rto_recoveries: u16 @ 242,
    total_rto_time_ms: u32 @ 244,
    received_ce_segs: u32 @ 248,
    delivered_e1_bytes: u32 @ 252,
    delivered_e0_bytes: u32 @ 256,
    delivered_ce_bytes: u32 @ 260,
    received_e1_bytes: u32 @ 264,
    received_e0_bytes: u32 @ 268,
    received_ce_bytes: u32 @ 272,
}

impl TcpInfo {
    /// Whether the most recent delivery-rate sample was limited by the application.
    pub fn app_limited(&self) -> Option<bool> {
        self.app_limited_flags.map(|f| f & 1 == 1)
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
        assert_eq!(info.srtt_us, Some(1234));
        assert_eq!(info.snd_cwnd_segs, Some(10));
        assert_eq!(info.total_retrans_segs, Some(0));
        assert_eq!(info.pacing_rate_bytes_per_sec, None);
        assert_eq!(info.delivery_rate_bytes_per_sec, None);
    }

    #[test]
    fn long_payload_is_accepted() {
        let mut b = vec![0u8; TCP_INFO_KNOWN_LEN + 16];
        b[104..112].copy_from_slice(&5_000_000u64.to_ne_bytes());
        b[7] = 1;
        let (info, size) = TcpInfo::parse(&b);
        assert_eq!(size, InfoSize::Long);
        assert_eq!(info.pacing_rate_bytes_per_sec, Some(5_000_000));
        assert_eq!(info.app_limited(), Some(true));
        assert_eq!(info.received_ce_bytes, Some(0));
    }

    #[test]
    fn field_straddling_the_end_is_unknown() {
        let b = vec![0u8; 106];
        let (info, _) = TcpInfo::parse(&b);
        assert_eq!(info.total_retrans_segs, Some(0));
        assert_eq!(info.pacing_rate_bytes_per_sec, None);
        assert_eq!(TcpInfo::parse(&[]).0, TcpInfo::default());
    }
}
