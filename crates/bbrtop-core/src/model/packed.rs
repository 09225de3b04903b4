//! A socket record packed for keeping: most of an idle socket's numbers are zero or small, so
//! each is written as a LEB128 varint (tcp_info field by field, along its layout), and the
//! options as a presence bit and their fields. A record of 640 bytes packs into 150 to 250.
//! The names it shares with other records (its cc, its origin) stay shared pointers beside the
//! bytes. Packing and unpacking give back the same record, bit for bit; both are pure.
//!
//! This is an in-memory representation, never written anywhere: the engine keeps a socket that
//! stopped moving this way (see `bbrtop_engine`), and a reader unpacks it when it asks.

use super::bbr::{BbrExt, BbrInfo, BbrVersion, DctcpInfo};
use super::tcp_info::{TCP_INFO_LAYOUT, TcpInfo};
use super::{BbrState, MemInfo, Origin, RttWindow, SocketRecord, TcpState};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::sync::Arc;

/// A packed record.
#[derive(Clone, Debug, PartialEq)]
pub struct Packed {
    bytes: Box<[u8]>,
    cc: Option<Arc<str>>,
    origin: Option<Arc<Origin>>,
}

impl Packed {
    pub fn pack(r: &SocketRecord) -> Packed {
        let mut w = Writer(Vec::with_capacity(256));
        w.u(r.cookie);
        w.addr(r.local);
        w.addr(r.peer);
        w.u(r.state as u64);
        w.u(r.uid.into());
        w.u(r.inode.into());
        w.opt(r.netns, |w, v| w.u(v));
        w.opt(r.cgroup_id, |w, v| w.u(v));
        w.tcp_info(&r.tcp_info);
        w.opt(r.bbr, Writer::bbr);
        w.opt(r.dctcp, |w, d| {
            w.u(d.enabled.into());
            [d.ce_state.into(), d.alpha, d.ab_ecn_bytes, d.ab_tot_bytes]
                .into_iter()
                .for_each(|v| w.u(v.into()));
        });
        w.opt(r.skmem, |w, m| m.fields().into_iter().for_each(|v| w.u(v.into())));
        w.opt(r.kernel_rtt, Writer::window);
        Packed { bytes: w.0.into_boxed_slice(), cc: r.cc.clone(), origin: r.origin.clone() }
    }

    /// The record packed. Panics only on bytes `pack` did not write, which cannot be.
    pub fn unpack(&self) -> SocketRecord {
        let mut r = Reader(&self.bytes);
        let cookie = r.u();
        let (local, peer) = (r.addr(), r.addr());
        let state = TcpState::from_kernel(r.u() as u8).expect("a state pack wrote");
        let mut rec = SocketRecord::new(cookie, local, peer, state);
        rec.uid = r.u() as u32;
        rec.inode = r.u() as u32;
        rec.netns = r.opt(|r| r.u());
        rec.cgroup_id = r.opt(|r| r.u());
        rec.tcp_info = r.tcp_info();
        rec.bbr = r.opt(Reader::bbr);
        rec.dctcp = r.opt(|r| DctcpInfo {
            enabled: r.u() != 0,
            ce_state: r.u() as u16,
            alpha: r.u() as u32,
            ab_ecn_bytes: r.u() as u32,
            ab_tot_bytes: r.u() as u32,
        });
        rec.skmem = r.opt(|r| MemInfo::from_fields(std::array::from_fn(|_| r.u() as u32)));
        rec.kernel_rtt = r.opt(Reader::window);
        (rec.cc, rec.origin) = (self.cc.clone(), self.origin.clone());
        rec
    }

    /// Bytes this takes, its allocation included.
    pub fn size(&self) -> usize {
        std::mem::size_of::<Packed>() + self.bytes.len()
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn f(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn opt<T>(&mut self, v: Option<T>, f: impl FnOnce(&mut Writer, T)) {
        self.0.push(u8::from(v.is_some()));
        if let Some(v) = v {
            f(self, v);
        }
    }

    fn addr(&mut self, a: SocketAddr) {
        match a {
            SocketAddr::V4(a) => {
                self.0.push(4);
                self.0.extend_from_slice(&a.ip().octets());
            }
            SocketAddr::V6(a) => {
                self.0.push(6);
                self.0.extend_from_slice(&a.ip().octets());
                self.u(a.flowinfo().into());
                self.u(a.scope_id().into());
            }
        }
        self.u(a.port().into());
    }

    /// Its known length, each field along the layout that the length covers, then the bytes
    /// of a field it cuts short.
    fn tcp_info(&mut self, t: &TcpInfo) {
        let len = t.known_len();
        self.u(len as u64);
        let mut end = 0;
        for &(_, off, size) in TCP_INFO_LAYOUT.iter().take_while(|f| f.1 + f.2 <= len) {
            self.u(t.field(off, size).unwrap_or(0));
            end = off + size;
        }
        self.0.extend_from_slice(&t.bytes()[end..len]);
    }

    fn bbr(&mut self, b: BbrInfo) {
        self.u(b.bw_bytes_per_sec);
        self.u(b.min_rtt_us.into());
        self.f(b.pacing_gain);
        self.f(b.cwnd_gain);
        let version = match b.version {
            BbrVersion::V1 => 1,
            BbrVersion::V2Alpha => 2,
            BbrVersion::V3 => 3,
            BbrVersion::Unknown(v) => 0x100 | u64::from(v),
        };
        self.u(version);
        self.opt(b.ext, |w, e| {
            w.opt(e.bw_hi_bytes_per_sec, |w, v| w.u(v));
            w.opt(e.bw_lo_bytes_per_sec, |w, v| w.u(v));
            w.opt(e.inflight_lo_pkts, |w, v| w.u(v.into()));
            w.opt(e.inflight_hi_pkts, |w, v| w.u(v.into()));
            [e.extra_acked_pkts, e.kernel_mode.into(), e.kernel_phase.into()]
                .into_iter()
                .for_each(|v| w.u(v.into()));
        });
        self.u(b.unknown_trailing_bytes.into());
    }

    fn state(&mut self, s: BbrState) {
        self.u(s.mode.into());
        self.u(s.cycle_idx.into());
        self.u(u64::from(s.cycle_v3) | u64::from(s.full_bw_reached) << 1 | u64::from(s.lt_use_bw) << 2);
        self.opt(s.min_rtt_us, |w, v| w.u(v.into()));
    }

    fn window(&mut self, k: RttWindow) {
        self.u(k.samples.into());
        self.u(k.last_srtt_us.into());
        self.opt(k.min_srtt_us, |w, v| w.u(v.into()));
        self.opt(k.max_srtt_us, |w, v| w.u(v.into()));
        self.opt(k.bbr, Writer::state);
        self.u(k.rtt_samples.into());
        self.opt(k.rtt_min_us, |w, v| w.u(v.into()));
        self.u(k.prompt_samples.into());
        self.opt(k.prompt_min_us, |w, v| w.u(v.into()));
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().expect("bytes pack wrote");
        self.0 = rest;
        *b
    }

    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (b, rest) = self.0.split_first_chunk::<N>().expect("bytes pack wrote");
        self.0 = rest;
        *b
    }

    fn u(&mut self) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = self.byte();
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    fn f(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }

    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        (self.byte() != 0).then(|| f(self))
    }

    fn addr(&mut self) -> SocketAddr {
        let ip = match self.byte() {
            4 => IpAddr::V4(Ipv4Addr::from(self.take::<4>())),
            _ => {
                let ip = Ipv6Addr::from(self.take::<16>());
                let (flow, scope) = (self.u() as u32, self.u() as u32);
                let port = self.u() as u16;
                return SocketAddr::V6(SocketAddrV6::new(ip, port, flow, scope));
            }
        };
        let IpAddr::V4(v4) = ip else { unreachable!("v4 above") };
        SocketAddr::V4(SocketAddrV4::new(v4, self.u() as u16))
    }

    fn tcp_info(&mut self) -> TcpInfo {
        let len = self.u() as usize;
        let mut t = TcpInfo::default();
        let mut end = 0;
        for &(_, off, size) in TCP_INFO_LAYOUT.iter().take_while(|f| f.1 + f.2 <= len) {
            t.set_field(off, size, self.u());
            end = off + size;
        }
        let mut bytes = t.bytes().to_vec();
        bytes.resize(end, 0);
        bytes.extend((end..len).map(|_| self.byte()));
        TcpInfo::parse(&bytes).0
    }

    fn bbr(&mut self) -> BbrInfo {
        let (bw, min_rtt, pacing, cwnd) = (self.u(), self.u() as u32, self.f(), self.f());
        let version = match self.u() {
            1 => BbrVersion::V1,
            2 => BbrVersion::V2Alpha,
            3 => BbrVersion::V3,
            v => BbrVersion::Unknown(v as u8),
        };
        let ext = self.opt(|r| BbrExt {
            bw_hi_bytes_per_sec: r.opt(|r| r.u()),
            bw_lo_bytes_per_sec: r.opt(|r| r.u()),
            inflight_lo_pkts: r.opt(|r| r.u() as u32),
            inflight_hi_pkts: r.opt(|r| r.u() as u32),
            extra_acked_pkts: r.u() as u32,
            kernel_mode: r.u() as u8,
            kernel_phase: r.u() as u8,
        });
        BbrInfo {
            bw_bytes_per_sec: bw,
            min_rtt_us: min_rtt,
            pacing_gain: pacing,
            cwnd_gain: cwnd,
            version,
            ext,
            unknown_trailing_bytes: self.u() as u32,
        }
    }

    fn state(&mut self) -> BbrState {
        let (mode, cycle_idx, flags) = (self.u() as u8, self.u() as u8, self.u());
        BbrState {
            mode,
            cycle_idx,
            cycle_v3: flags & 1 != 0,
            full_bw_reached: flags & 2 != 0,
            lt_use_bw: flags & 4 != 0,
            min_rtt_us: self.opt(|r| r.u() as u32),
        }
    }

    fn window(&mut self) -> RttWindow {
        RttWindow {
            samples: self.u() as u32,
            last_srtt_us: self.u() as u32,
            min_srtt_us: self.opt(|r| r.u() as u32),
            max_srtt_us: self.opt(|r| r.u() as u32),
            bbr: self.opt(Reader::state),
            rtt_samples: self.u() as u32,
            rtt_min_us: self.opt(|r| r.u() as u32),
            prompt_samples: self.u() as u32,
            prompt_min_us: self.opt(|r| r.u() as u32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record the parser makes of arbitrary bytes, and the fixture with every field
    /// known, pack and unpack to themselves; an idle socket's record packs small.
    #[test]
    fn packing_gives_the_record_back() {
        let full = crate::testing::full_view().record.to_arc();
        let p = Packed::pack(&full);
        assert_eq!(p.unpack(), *full);
        let idle = crate::testing::record(3, "cubic").srtt_us(20_000).min_rtt_us(19_000).build();
        let p = Packed::pack(&idle);
        assert_eq!(p.unpack(), idle);
        assert!(p.size() < 200, "{} bytes", p.size());
        // Records the parser makes of mutated and random messages, packed and unpacked.
        use crate::wire::fixtures::{full_attrs, v4};
        use crate::wire::{CcNames, DumpStats, parse_socket};
        let msg = v4(9, &full_attrs(1))[16..].to_vec();
        crate::testing::fuzz::fuzz_n("packed records", 2_000, vec![msg], |b| {
            if let Ok(r) = parse_socket(b, &mut DumpStats::default(), &mut CcNames::default(), 0) {
                assert_eq!(Packed::pack(&r).unpack(), r);
            }
        });
    }
}
