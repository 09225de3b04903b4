//! The socket walk's records (`struct bbrtop_sock`, crates/bbrtop-collect/bpf/bbrtop.h): one
//! fixed-size record per socket that moved, filled by the TCP hooks, with tcp_info and tcp_bbr_info
//! in the kernel's own layouts, so they are decoded by the same code as netlink's copies. Pure:
//! bytes in, records out.

use super::CcNames;
use super::record::Reader;
use crate::model::{BbrInfo, RttWindow, SocketRecord, TcpState};
use std::net::SocketAddr;

/// Byte offsets of `struct bbrtop_sock`; a test checks each against the eBPF skeleton's types.
pub mod off {
    pub const COOKIE: usize = 0;
    pub const CGROUP_ID: usize = 8;
    pub const NETNS: usize = 16;
    pub const UID: usize = 20;
    pub const INODE: usize = 24;
    pub const FAMILY: usize = 28;
    pub const LPORT: usize = 30;
    pub const RPORT: usize = 32;
    pub const STATE: usize = 34;
    pub const BBR_LEN: usize = 35;
    pub const HZ: usize = 36;
    pub const INFO_LEN: usize = 38;
    pub const CHRONO: usize = 40;
    pub const FILLED_NS: usize = 48;
    pub const SADDR: usize = 56;
    pub const DADDR: usize = 72;
    pub const CC: usize = 88;
    pub const CC_LEN: usize = 16;
    pub const W: usize = 104;
    pub const INFO: usize = 144;
    pub const INFO_CAP: usize = 248;
    pub const BBR: usize = 392;
    pub const BBR_CAP: usize = 20;
}

/// Size of `struct bbrtop_sock`.
pub const REC_LEN: usize = 416;

/// What one walk read and could not use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    /// Records read (sockets that moved).
    pub records: u64,
    /// Records of a family or state this build does not know, skipped.
    pub skipped: u64,
    /// Bytes of values that were not a whole record, ignored.
    pub trailing: u64,
    /// Records the kernel could not write since start (the map full, or its allocator out of
    /// memory in a burst): those sockets are seen at their next move.
    pub dropped_total: u64,
    /// Records the refill pass wrote since start: sockets that stopped moving within the refresh
    /// after their record was filled, brought up to date at the next read.
    pub refilled_total: u64,
    /// The kernel's HZ the records carry; 0 when the kernel's config was not readable, and then
    /// the records carry no tcp_info.
    pub hz: u16,
}

impl WalkStats {
    /// Adds what a part of a read counted.
    pub fn add(&mut self, part: &WalkStats) {
        self.records += part.records;
        self.skipped += part.skipped;
        self.trailing += part.trailing;
        self.dropped_total = self.dropped_total.max(part.dropped_total);
        self.refilled_total = self.refilled_total.max(part.refilled_total);
        if part.hz != 0 {
            self.hz = part.hz;
        }
    }
}

/// The window's own epoch decides whether it is this read's: the epoch was bumped just before
/// the read, so a window of the previous epoch, or of this one (an ACK during the read), holds
/// the samples since the last read.
fn window(b: &[u8], epoch: u32) -> Option<RttWindow> {
    let own = Reader(b).u32(crate::model::window_off::EPOCH);
    let recent = epoch.wrapping_sub(own) <= 1;
    RttWindow::parse(b, if recent { own } else { own.wrapping_add(2) })
}

/// The tcp_info fields that count time: the record was filled `age_ns` before it was read, and
/// they are brought up to the read as tcp_get_info would then compute them: the time since the
/// last send and ACK grows, and so does the chrono that was running (`chrono`: 1 busy, 2
/// rwnd-limited, 3 sndbuf-limited; busy time is their sum).
fn age(rec: &mut SocketRecord, age_ns: u64, chrono: u8) {
    let age_ms = (age_ns / 1_000_000).min(u64::from(u32::MAX)) as u32;
    let age_us = age_ns / 1000;
    let i = &mut rec.tcp_info;
    if (1..=3).contains(&chrono)
        && let Some(v) = i.busy_time_us()
    {
        i.set_busy_time_us(v.saturating_add(age_us));
        match (chrono, i.rwnd_limited_us(), i.sndbuf_limited_us()) {
            (2, Some(v), _) => i.set_rwnd_limited_us(v.saturating_add(age_us)),
            (3, _, Some(v)) => i.set_sndbuf_limited_us(v.saturating_add(age_us)),
            _ => {}
        }
    }
    if let Some(v) = i.last_data_sent_ms() {
        i.set_last_data_sent_ms(v.saturating_add(age_ms));
    }
    if let Some(v) = i.last_data_recv_ms() {
        i.set_last_data_recv_ms(v.saturating_add(age_ms));
    }
    if let Some(v) = i.last_ack_recv_ms() {
        i.set_last_ack_recv_ms(v.saturating_add(age_ms));
    }
}

/// Decodes one record read at `now_ns` (the kernel's monotonic clock); `None` for a family or
/// state this build does not know.
pub fn parse_record(b: &[u8; REC_LEN], epoch: u32, now_ns: u64, names: &mut CcNames) -> Option<SocketRecord> {
    use off as o;
    let r = Reader(b);
    let family = r.u16(o::FAMILY);
    let local = SocketAddr::new(r.addr(family, o::SADDR)?, r.u16(o::LPORT));
    let peer = SocketAddr::new(r.addr(family, o::DADDR)?, r.u16(o::RPORT));
    let state = TcpState::from_kernel(r.u8(o::STATE))?;
    let mut rec = SocketRecord::new(r.u64(o::COOKIE), local, peer, state);
    rec.uid = r.u32(o::UID);
    rec.inode = r.u32(o::INODE);
    rec.netns = Some(u64::from(r.u32(o::NETNS)));
    rec.cgroup_id = Some(r.u64(o::CGROUP_ID)).filter(|&id| id != 0);
    let cc = r.name(o::CC, o::CC_LEN);
    if !cc.is_empty() {
        rec.cc = Some(names.intern(cc));
    }
    let info_len = usize::from(r.u16(o::INFO_LEN)).min(o::INFO_CAP);
    rec.tcp_info.fill(&b[o::INFO..o::INFO + info_len]);
    let bbr_len = usize::from(r.u8(o::BBR_LEN)).min(o::BBR_CAP);
    if bbr_len > 0 {
        rec.bbr = BbrInfo::parse(&b[o::BBR..o::BBR + bbr_len], rec.cc.as_deref());
    }
    rec.kernel_rtt = window(&b[o::W..o::W + RttWindow::LEN], epoch);
    age(&mut rec, now_ns.saturating_sub(r.u64(o::FILLED_NS)), r.u8(o::CHRONO));
    Some(rec)
}

/// Decodes records (each a value of the kernel's map), read at `now_ns`. Never panics: a value
/// of another size counts as trailing bytes.
pub fn parse<'a>(
    values: impl IntoIterator<Item = &'a [u8]>,
    epoch: u32,
    now_ns: u64,
    names: &mut CcNames,
) -> (Vec<SocketRecord>, WalkStats) {
    let mut stats = WalkStats::default();
    let values = values.into_iter();
    let mut out = Vec::with_capacity(values.size_hint().0);
    for v in values {
        let Ok(b) = <&[u8; REC_LEN]>::try_from(v) else {
            stats.trailing += v.len() as u64;
            continue;
        };
        stats.records += 1;
        stats.hz = Reader(b).u16(off::HZ);
        match parse_record(b, epoch, now_ns, names) {
            Some(r) => out.push(r),
            None => stats.skipped += 1,
        }
    }
    (out, stats)
}

/// A record's bytes, as the hooks write it, for tests and the fuzz corpus.
#[cfg(any(test, feature = "test-support"))]
pub mod fixture {
    use super::{REC_LEN, off as o};

    pub struct Rec(pub [u8; REC_LEN]);

    impl Rec {
        /// An IPv4 socket 10.0.0.1:4000 -> 10.0.0.2:5000, ESTABLISHED, with `cc`.
        pub fn v4(cookie: u64, cc: &str) -> Rec {
            let mut r = Rec([0; REC_LEN]);
            r.put(o::COOKIE, &cookie.to_ne_bytes());
            r.put(o::FAMILY, &2u16.to_ne_bytes());
            r.put(o::LPORT, &4000u16.to_ne_bytes());
            r.put(o::RPORT, &5000u16.to_ne_bytes());
            r.put(o::SADDR, &[10, 0, 0, 1]);
            r.put(o::DADDR, &[10, 0, 0, 2]);
            r.0[o::STATE] = 1;
            r.put(o::CC, cc.as_bytes());
            r.put(o::HZ, &250u16.to_ne_bytes());
            r.put(o::INFO_LEN, &(o::INFO_CAP as u16).to_ne_bytes());
            r
        }

        pub fn put(&mut self, at: usize, b: &[u8]) -> &mut Rec {
            self.0[at..at + b.len()].copy_from_slice(b);
            self
        }

        /// A u32 of tcp_info at its kernel offset.
        pub fn info_u32(&mut self, at: usize, v: u32) -> &mut Rec {
            self.put(o::INFO + at, &v.to_ne_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::Rec;
    use super::*;

    fn parse_one(r: &Rec, epoch: u32, now_ns: u64) -> (Vec<SocketRecord>, WalkStats) {
        parse([&r.0[..]], epoch, now_ns, &mut CcNames::default())
    }

    #[test]
    fn a_record_decodes_to_the_socket_with_its_attribution() {
        let mut r = Rec::v4(42, "bbr");
        r.put(off::NETNS, &4026531840u32.to_ne_bytes()).put(off::CGROUP_ID, &777u64.to_ne_bytes());
        r.put(off::UID, &65534u32.to_ne_bytes()).put(off::INODE, &123u32.to_ne_bytes());
        r.info_u32(68, 1500).info_u32(80, 10).info_u32(56, 3); // srtt, cwnd, last_ack_recv_ms
        r.put(off::FILLED_NS, &1_000_000_000u64.to_ne_bytes()).put(off::CHRONO, &[2]);
        r.put(off::INFO + 168, &5_000u64.to_ne_bytes()).put(off::INFO + 176, &1_000u64.to_ne_bytes());
        // tcp_bbr_info v1: bw 1e6 B/s, min RTT 1000 us, gains 1.25 and 2.
        let bbr: Vec<u8> = [1_000_000u32, 0, 1000, 320, 512].iter().flat_map(|v| v.to_ne_bytes()).collect();
        r.put(off::BBR, &bbr).put(off::BBR_LEN, &[20]);
        let (socks, stats) = parse_one(&r, 5, 1_250_000_000);
        assert_eq!(stats, WalkStats { records: 1, hz: 250, ..WalkStats::default() });
        let s = &socks[0];
        assert_eq!(
            (s.cookie, s.local.to_string(), s.peer.to_string()),
            (42, "10.0.0.1:4000".into(), "10.0.0.2:5000".into())
        );
        assert_eq!((s.netns, s.cgroup_id, s.uid, s.inode), (Some(4026531840), Some(777), 65534, 123));
        assert_eq!((s.state, s.cc_name()), (TcpState::Established, "bbr"));
        assert_eq!((s.tcp_info.srtt_us(), s.tcp_info.snd_cwnd_segs()), (Some(1500), Some(10)));
        // Filled 250 ms before the read: the time since the last ACK is brought up to the read.
        assert_eq!(s.tcp_info.last_ack_recv_ms(), Some(253));
        // ... and so is the chrono that was running (rwnd-limited), and busy time, their sum.
        assert_eq!((s.tcp_info.busy_time_us(), s.tcp_info.rwnd_limited_us()), (Some(255_000), Some(251_000)));
        assert_eq!(s.tcp_info.sndbuf_limited_us(), Some(0));
        let b = s.bbr.unwrap();
        assert_eq!(
            (b.bw_bytes_per_sec, b.min_rtt_us, b.pacing_gain, b.cwnd_gain),
            (1_000_000, 1000, 1.25, 2.0)
        );
        // Past what the record carries, tcp_info is unknown, not zero.
        assert_eq!(s.tcp_info.received_ce_segs(), None);
    }

    #[test]
    fn without_hz_there_is_no_tcp_info_and_unknown_kinds_are_skipped() {
        let mut r = Rec::v4(1, "cubic");
        r.put(off::HZ, &0u16.to_ne_bytes()).put(off::INFO_LEN, &0u16.to_ne_bytes());
        let (socks, stats) = parse_one(&r, 1, 0);
        assert_eq!((stats.hz, socks[0].tcp_info.srtt_us(), socks[0].cgroup_id), (0, None, None));
        let mut odd = Rec::v4(2, "cubic");
        odd.put(off::FAMILY, &1u16.to_ne_bytes());
        let (socks, stats) = parse([&odd.0[..], &[0u8; 10][..]], 1, 0, &mut CcNames::default());
        assert!(socks.is_empty());
        assert_eq!((stats.records, stats.skipped, stats.trailing), (1, 1, 10));
    }

    #[test]
    fn the_rtt_window_counts_when_it_is_of_this_read_or_the_one_before() {
        let window = |own: u32| {
            let mut r = Rec::v4(3, "cubic");
            let w: Vec<u8> = [own, 4, 1200, 1000, 1500, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
            r.put(off::W, &w);
            parse_one(&r, 9, 0).0[0].kernel_rtt.unwrap()
        };
        assert_eq!(window(9).samples, 4, "an ACK during the read");
        assert_eq!(window(8).samples, 4, "the interval just read");
        assert_eq!((window(7).samples, window(7).last_srtt_us), (0, 1200), "older: no ACK since");
    }
}
