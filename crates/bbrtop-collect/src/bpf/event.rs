//! Ring-buffer events (layouts in crates/bbrtop-collect/bpf/bbrtop.h), decoded by a pure function
//! that never panics.

use bbrtop_core::model::{BbrState, Count, Tally};
use bbrtop_core::wire::record::Reader;
use std::net::SocketAddr;

pub const HDR_LEN: usize = 24;
pub const INFL_LEN: usize = 48;
pub const PHASE_LEN: usize = 56;
pub const CLOSE_LEN: usize = 192;
pub const RESP_LEN: usize = 192;
/// Responses a RESPONSE record carries at most (`BBRTOP_RESP_BATCH`).
pub const RESP_BATCH: usize = 8;

/// Byte offsets of every field the decoder reads, one module per struct of
/// crates/bbrtop-collect/bpf/bbrtop.h; a test checks each against the skeleton's types, which come
/// from the object's BTF.
pub mod off {
    /// `struct bbrtop_hdr`, first in every event.
    pub mod hdr {
        pub const KIND: usize = 0;
        pub const NETNS: usize = 4;
        pub const COOKIE: usize = 8;
        pub const TS_NS: usize = 16;
    }
    /// `struct bbrtop_infl`.
    pub mod infl {
        pub const SRTT_US: usize = 24;
        pub const BASELINE_US: usize = 28;
        pub const ONSET_NS: usize = 32;
        pub const PEAK_RATIO_MILLI: usize = 40;
    }
    /// `struct bbrtop_phase`.
    pub mod phase {
        pub const MODE: usize = 24;
        pub const CYCLE_IDX: usize = 25;
        pub const FULL_BW_REACHED: usize = 26;
        pub const LT_USE_BW: usize = 27;
        pub const PREV_MODE: usize = 28;
        pub const CYCLE_V3: usize = 29;
        pub const PREV_BEGAN_NS: usize = 32;
        pub const MIN_RTT_US: usize = 40;
        pub const ENTERED: usize = 44;
        pub const BW: usize = 48;
    }
    /// `struct bbrtop_close`.
    pub mod close {
        pub const FAMILY: usize = 24;
        pub const LPORT: usize = 26;
        pub const RPORT: usize = 28;
        pub const IS_BBR: usize = 30;
        pub const BBR_MODE: usize = 31;
        pub const SADDR: usize = 32;
        pub const DADDR: usize = 48;
        pub const CC: usize = 64;
        pub const CC_LEN: usize = 16;
        pub const LIFETIME_NS: usize = 80;
        pub const BYTES_ACKED: usize = 88;
        pub const BYTES_RECEIVED: usize = 96;
        pub const TOTAL_RETRANS: usize = 104;
        pub const SRTT_US: usize = 108;
        pub const MIN_RTT_US: usize = 112;
        pub const RATE_DELIVERED: usize = 116;
        pub const RATE_INTERVAL_US: usize = 120;
        pub const MSS: usize = 124;
        pub const BBR_MIN_RTT_US: usize = 128;
        pub const PEAK_RATIO_MILLI: usize = 132;
        pub const BBR_BW: usize = 136;
        pub const RTT_SAMPLES: usize = 144;
        pub const INFLATIONS: usize = 148;
        pub const BYTES_SENT: usize = 152;
        pub const BYTES_RETRANS: usize = 160;
        pub const SEGS_OUT: usize = 168;
        pub const DELIVERED: usize = 172;
        pub const DELIVERED_CE: usize = 176;
        pub const DSACK_DUPS: usize = 180;
        pub const TOTAL_RTO: usize = 184;
    }
    /// `struct bbrtop_resp`.
    pub mod resp {
        pub const FAMILY: usize = 24;
        pub const N: usize = 26;
        pub const OPENED: usize = 27;
        pub const LPORT: usize = 28;
        pub const RPORT: usize = 30;
        pub const DADDR: usize = 32;
        pub const CC: usize = 48;
        pub const CC_LEN: usize = 16;
        /// The first of `n` `struct bbrtop_resp_one`.
        pub const R: usize = 64;
        pub const ONE_LEN: usize = 16;
    }
    /// `struct bbrtop_resp_one`, from its start.
    pub mod resp_one {
        pub const START_NS: usize = 0;
        pub const TOOK_US: usize = 8;
        pub const BYTES: usize = 12;
    }
}

const KIND_INFL_START: u32 = 1;
const KIND_INFL_END: u32 = 2;
const KIND_PHASE: u32 = 3;
const KIND_CLOSE: u32 = 4;
const KIND_RESPONSE: u32 = 5;

/// Common to every event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub netns: u32,
    pub cookie: u64,
    /// `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) when the event was sent.
    pub ts_ns: u64,
}

/// The header of a record that carries none of its own (a batch decodes with at least one).
const EMPTY_HEADER: Header = Header { netns: 0, cookie: 0, ts_ns: 0 };

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    InflationStarted(Inflation),
    InflationEnded(Inflation),
    Phase(PhaseChange),
    Close(Box<Close>),
    /// The responses one socket delivered since its last such record, oldest first.
    Responses(Vec<Response>),
}

impl Event {
    pub fn header(&self) -> &Header {
        match self {
            Event::InflationStarted(i) | Event::InflationEnded(i) => &i.h,
            Event::Phase(p) => &p.h,
            Event::Close(c) => &c.h,
            Event::Responses(r) => r.first().map_or(&EMPTY_HEADER, |r| &r.h),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inflation {
    pub h: Header,
    pub srtt_us: u32,
    pub baseline_us: u32,
    /// ktime (ns) of the onset of this episode.
    pub onset_ns: u64,
    pub peak_ratio: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseChange {
    pub h: Header,
    /// `struct bbr` at the change, with BBR's min RTT.
    pub bbr: BbrState,
    /// None for the socket's first phase event.
    pub prev_mode: Option<u8>,
    pub prev_began_ns: u64,
    /// Times this mode has been entered, this time included.
    pub entered: u32,
    /// BBR's max-filtered bandwidth in bytes per second (needs the mss, so raw here).
    pub bw_raw: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Close {
    pub h: Header,
    pub local: SocketAddr,
    pub peer: SocketAddr,
    pub cc: String,
    pub lifetime_ns: u64,
    /// The socket's counters at its close.
    pub counts: Tally,
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    /// Bytes per second, from rate_delivered × mss / rate_interval; None when no interval.
    pub delivery_rate: Option<u64>,
    pub mss: u32,
    /// For BBR sockets: (mode, min_rtt_us, bw in bytes per second).
    pub bbr: Option<(u8, u32, u64)>,
    pub peak_ratio: f64,
    pub rtt_samples: u32,
    pub inflations: u32,
}

/// One response delivered (`struct bbrtop_resp_one`, with its record's socket): `h.ts_ns` is
/// when its last byte was delivered.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub h: Header,
    /// ktime (ns) of the first byte written.
    pub start_ns: u64,
    pub bytes: u32,
    pub peer: std::net::IpAddr,
    /// The socket's cc as its record was sent.
    pub cc: String,
    /// How the socket was opened: 1 by connect, 2 by accept (for a socket older than bbrtop,
    /// as its port's bind bucket tells), 0 not known.
    pub opened: u8,
    pub lport: u16,
    pub rport: u16,
}

impl Response {
    /// Whether a server sent it: the socket was accepted, or, not known how it was opened, its
    /// local port is below its peer's (clients connect from the ephemeral range, above the
    /// service ports). A client's request is not a response.
    pub fn served(&self) -> bool {
        match self.opened {
            2 => true,
            1 => false,
            _ => self.lport < self.rport,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("event of {len} bytes is shorter than {need}")]
    Short { len: usize, need: usize },
    #[error("unknown event kind {0}")]
    Kind(u32),
    #[error("unknown address family {0}")]
    Family(u16),
    #[error("a batch of {0} responses (1 to 8)")]
    Count(usize),
}

/// BBR's bw is delivered packets per µs scaled by 2^24 (BW_SCALE); × mss × 10^6 gives bytes/s.
pub fn bbr_bw_bytes_per_sec(raw: u64, mss: u32) -> u64 {
    ((raw as u128 * mss as u128 * 1_000_000) >> 24).min(u64::MAX as u128) as u64
}

fn need(b: &[u8], n: usize) -> Result<Reader<'_>, DecodeError> {
    if b.len() < n { Err(DecodeError::Short { len: b.len(), need: n }) } else { Ok(Reader(b)) }
}

/// Decodes one ring-buffer record. Longer records than this build knows are accepted (a newer
/// BPF object may append fields); shorter ones are an error.
pub fn decode(b: &[u8]) -> Result<Event, DecodeError> {
    use off::hdr;
    let r = need(b, HDR_LEN)?;
    let h = Header { netns: r.u32(hdr::NETNS), cookie: r.u64(hdr::COOKIE), ts_ns: r.u64(hdr::TS_NS) };
    match r.u32(hdr::KIND) {
        KIND_INFL_START => Ok(Event::InflationStarted(inflation(b, h)?)),
        KIND_INFL_END => Ok(Event::InflationEnded(inflation(b, h)?)),
        KIND_PHASE => phase(b, h).map(Event::Phase),
        KIND_CLOSE => close(b, h).map(|c| Event::Close(Box::new(c))),
        KIND_RESPONSE => responses(b, h).map(Event::Responses),
        k => Err(DecodeError::Kind(k)),
    }
}

fn inflation(b: &[u8], h: Header) -> Result<Inflation, DecodeError> {
    use off::infl;
    let r = need(b, INFL_LEN)?;
    Ok(Inflation {
        h,
        srtt_us: r.u32(infl::SRTT_US),
        baseline_us: r.u32(infl::BASELINE_US),
        onset_ns: r.u64(infl::ONSET_NS),
        peak_ratio: f64::from(r.u32(infl::PEAK_RATIO_MILLI)) / 1000.0,
    })
}

fn phase(b: &[u8], h: Header) -> Result<PhaseChange, DecodeError> {
    use off::phase as ph;
    let r = need(b, PHASE_LEN)?;
    let prev = r.u8(ph::PREV_MODE);
    Ok(PhaseChange {
        h,
        bbr: BbrState {
            mode: r.u8(ph::MODE),
            cycle_idx: r.u8(ph::CYCLE_IDX),
            cycle_v3: r.u8(ph::CYCLE_V3) != 0,
            full_bw_reached: r.u8(ph::FULL_BW_REACHED) != 0,
            lt_use_bw: r.u8(ph::LT_USE_BW) != 0,
            min_rtt_us: Some(r.u32(ph::MIN_RTT_US)),
        },
        prev_mode: (prev != 0xff).then_some(prev),
        prev_began_ns: r.u64(ph::PREV_BEGAN_NS),
        entered: r.u32(ph::ENTERED),
        bw_raw: r.u64(ph::BW),
    })
}

fn close(b: &[u8], h: Header) -> Result<Close, DecodeError> {
    use off::close as c;
    let r = need(b, CLOSE_LEN)?;
    let family = r.u16(c::FAMILY);
    let addr = |off: usize| r.addr(family, off).ok_or(DecodeError::Family(family));
    let cc = r.name(c::CC, c::CC_LEN);
    let mss = r.u32(c::MSS);
    let (delivered, interval) = (r.u32(c::RATE_DELIVERED), r.u32(c::RATE_INTERVAL_US));
    let bbr = (r.u8(c::IS_BBR) != 0)
        .then(|| (r.u8(c::BBR_MODE), r.u32(c::BBR_MIN_RTT_US), bbr_bw_bytes_per_sec(r.u64(c::BBR_BW), mss)));
    Ok(Close {
        h,
        local: SocketAddr::new(addr(c::SADDR)?, r.u16(c::LPORT)),
        peer: SocketAddr::new(addr(c::DADDR)?, r.u16(c::RPORT)),
        cc: String::from_utf8_lossy(cc).into_owned(),
        lifetime_ns: r.u64(c::LIFETIME_NS),
        counts: close_counts(&r),
        srtt_us: r.u32(c::SRTT_US),
        min_rtt_us: r.u32(c::MIN_RTT_US),
        // u128: packets x mss x 10^6 overflows u64 for values a record can carry.
        delivery_rate: (interval > 0).then(|| {
            let rate = u128::from(delivered) * u128::from(mss) * 1_000_000 / u128::from(interval);
            rate.min(u128::from(u64::MAX)) as u64
        }),
        mss,
        bbr,
        peak_ratio: f64::from(r.u32(c::PEAK_RATIO_MILLI)) / 1000.0,
        rtt_samples: r.u32(c::RTT_SAMPLES),
        inflations: r.u32(c::INFLATIONS),
    })
}

/// A response's time as `struct bbrtop_resp_one` keeps it: µs, or ms with the top bit set.
fn took_ns(took: u32) -> u64 {
    const MS: u32 = 1 << 31;
    match took & MS {
        0 => u64::from(took) * 1_000,
        _ => u64::from(took & !MS) * 1_000_000,
    }
}

/// A batch's responses, each with the socket's header but its own end as `ts_ns`.
fn responses(b: &[u8], h: Header) -> Result<Vec<Response>, DecodeError> {
    use off::{resp as rs, resp_one as one};
    let r = need(b, RESP_LEN)?;
    let family = r.u16(rs::FAMILY);
    let peer = r.addr(family, rs::DADDR).ok_or(DecodeError::Family(family))?;
    let cc = String::from_utf8_lossy(r.name(rs::CC, rs::CC_LEN)).into_owned();
    let n = usize::from(r.u8(rs::N));
    if n == 0 || n > RESP_BATCH {
        return Err(DecodeError::Count(n));
    }
    Ok((0..n)
        .map(|i| {
            let at = rs::R + i * rs::ONE_LEN;
            let start_ns = r.u64(at + one::START_NS);
            let took_ns = took_ns(r.u32(at + one::TOOK_US));
            Response {
                h: Header { ts_ns: start_ns.saturating_add(took_ns), ..h },
                start_ns,
                bytes: r.u32(at + one::BYTES),
                peer,
                cc: cc.clone(),
                opened: r.u8(rs::OPENED),
                lport: r.u16(rs::LPORT),
                rport: r.u16(rs::RPORT),
            }
        })
        .collect())
}

fn close_counts(r: &Reader) -> Tally {
    use off::close as c;
    Tally::from_counts([
        (Count::SegsOut, u64::from(r.u32(c::SEGS_OUT))),
        (Count::BytesSent, r.u64(c::BYTES_SENT)),
        (Count::RetransSegs, u64::from(r.u32(c::TOTAL_RETRANS))),
        (Count::BytesRetrans, r.u64(c::BYTES_RETRANS)),
        (Count::BytesAcked, r.u64(c::BYTES_ACKED)),
        (Count::BytesReceived, r.u64(c::BYTES_RECEIVED)),
        (Count::Rto, u64::from(r.u32(c::TOTAL_RTO))),
        (Count::DsackDups, u64::from(r.u32(c::DSACK_DUPS))),
        (Count::DeliveredSegs, u64::from(r.u32(c::DELIVERED))),
        (Count::DeliveredCeSegs, u64::from(r.u32(c::DELIVERED_CE))),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::Ipv6Addr;

    fn hdr(kind: u32, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[0..4].copy_from_slice(&kind.to_ne_bytes());
        b[4..8].copy_from_slice(&4026531840u32.to_ne_bytes());
        b[8..16].copy_from_slice(&77u64.to_ne_bytes());
        b[16..24].copy_from_slice(&5_000_000_000u64.to_ne_bytes());
        b
    }

    #[test]
    fn inflation_started() {
        let mut b = hdr(1, INFL_LEN);
        b[24..28].copy_from_slice(&30_000u32.to_ne_bytes());
        b[28..32].copy_from_slice(&10_000u32.to_ne_bytes());
        b[32..40].copy_from_slice(&4_999_000_000u64.to_ne_bytes());
        b[40..44].copy_from_slice(&3000u32.to_ne_bytes());
        let Event::InflationStarted(i) = decode(&b).unwrap() else { panic!("kind") };
        assert_eq!(i.h, Header { netns: 4026531840, cookie: 77, ts_ns: 5_000_000_000 });
        assert_eq!(
            (i.srtt_us, i.baseline_us, i.onset_ns, i.peak_ratio),
            (30_000, 10_000, 4_999_000_000, 3.0)
        );
        b[0] = 2;
        assert!(matches!(decode(&b), Ok(Event::InflationEnded(_))));
    }

    #[test]
    fn phase_change() {
        let mut b = hdr(3, PHASE_LEN);
        b[24..30].copy_from_slice(&[2, 5, 1, 0, 0xff, 0]);
        b[40..44].copy_from_slice(&150u32.to_ne_bytes());
        b[44..48].copy_from_slice(&2u32.to_ne_bytes());
        let Event::Phase(p) = decode(&b).unwrap() else { panic!("kind") };
        let s = p.bbr;
        assert_eq!((s.mode, s.cycle_idx, s.full_bw_reached, s.lt_use_bw), (2, 5, true, false));
        assert_eq!((p.prev_mode, s.min_rtt_us, p.entered), (None, Some(150), 2));
        assert_eq!(
            s.phase(),
            Some(bbrtop_core::model::Phase::ProbeBw(bbrtop_core::model::ProbeBwStep::Cruise))
        );
        b[28] = 0;
        let Event::Phase(p) = decode(&b).unwrap() else { panic!("kind") };
        assert_eq!(p.prev_mode, Some(0));
        // A v3 layout's cycle_idx 3 is REFILL.
        b[25] = 3;
        b[29] = 1;
        let Event::Phase(p) = decode(&b).unwrap() else { panic!("kind") };
        assert!(p.bbr.cycle_v3);
        assert_eq!(
            p.bbr.phase(),
            Some(bbrtop_core::model::Phase::ProbeBw(bbrtop_core::model::ProbeBwStep::Refill))
        );
    }

    #[test]
    fn close_v4_and_v6() {
        let mut b = hdr(4, CLOSE_LEN);
        b[24..26].copy_from_slice(&2u16.to_ne_bytes());
        b[26..28].copy_from_slice(&5201u16.to_ne_bytes());
        b[28..30].copy_from_slice(&40000u16.to_ne_bytes());
        b[30] = 1;
        b[31] = 2;
        b[32..36].copy_from_slice(&[10, 0, 0, 1]);
        b[48..52].copy_from_slice(&[10, 0, 0, 2]);
        b[64..67].copy_from_slice(b"bbr");
        b[116..120].copy_from_slice(&100u32.to_ne_bytes()); // packets
        b[120..124].copy_from_slice(&1000u32.to_ne_bytes()); // µs
        b[124..128].copy_from_slice(&1448u32.to_ne_bytes());
        b[136..144].copy_from_slice(&(1u64 << 24).to_ne_bytes()); // 1 packet per µs
        let Event::Close(c) = decode(&b).unwrap() else { panic!("kind") };
        assert_eq!(c.local, "10.0.0.1:5201".parse().unwrap());
        assert_eq!(c.peer, "10.0.0.2:40000".parse().unwrap());
        assert_eq!(c.cc, "bbr");
        assert_eq!(c.delivery_rate, Some(144_800_000));
        assert_eq!(c.bbr, Some((2, 0, 1_448_000_000)));

        b[24..26].copy_from_slice(&10u16.to_ne_bytes());
        b[32..48].copy_from_slice(&Ipv6Addr::LOCALHOST.octets());
        b[30] = 0;
        b[120..124].copy_from_slice(&0u32.to_ne_bytes());
        let Event::Close(c) = decode(&b).unwrap() else { panic!("kind") };
        assert_eq!(c.local, "[::1]:5201".parse().unwrap());
        assert_eq!((c.bbr, c.delivery_rate), (None, None));

        // The largest counts a record can carry saturate the rate instead of overflowing.
        b[116..120].copy_from_slice(&u32::MAX.to_ne_bytes());
        b[120..124].copy_from_slice(&1u32.to_ne_bytes());
        b[124..128].copy_from_slice(&u32::MAX.to_ne_bytes());
        let Event::Close(c) = decode(&b).unwrap() else { panic!("kind") };
        assert_eq!(c.delivery_rate, Some(u64::MAX));

        b[24] = 7;
        assert_eq!(decode(&b), Err(DecodeError::Family(7)));
    }

    #[test]
    fn a_batch_of_responses() {
        let mut b = hdr(5, RESP_LEN);
        b[24..26].copy_from_slice(&2u16.to_ne_bytes());
        b[26] = 2;
        b[27] = 2;
        b[28..30].copy_from_slice(&80u16.to_ne_bytes());
        b[30..32].copy_from_slice(&40000u16.to_ne_bytes());
        b[32..36].copy_from_slice(&[10, 9, 0, 2]);
        b[48..53].copy_from_slice(b"cubic");
        for (i, (start, took_us, bytes)) in
            [(4_970_000_000u64, 1_500u32, 15_360u32), (4_980_000_000, 2, 7)].iter().enumerate()
        {
            let at = 64 + 16 * i;
            b[at..at + 8].copy_from_slice(&start.to_ne_bytes());
            b[at + 8..at + 12].copy_from_slice(&took_us.to_ne_bytes());
            b[at + 12..at + 16].copy_from_slice(&bytes.to_ne_bytes());
        }
        // A third entry the count leaves out.
        b[96..104].copy_from_slice(&1u64.to_ne_bytes());
        let Event::Responses(rs) = decode(&b).unwrap() else { panic!("kind") };
        assert_eq!(rs.len(), 2);
        let r = &rs[0];
        assert_eq!((r.start_ns, r.h.ts_ns, r.bytes), (4_970_000_000, 4_971_500_000, 15_360));
        assert_eq!((rs[1].start_ns, rs[1].h.ts_ns, rs[1].bytes), (4_980_000_000, 4_980_002_000, 7));
        assert_eq!((r.h.netns, r.h.cookie), (4026531840, 77), "each has its socket's header");
        assert_eq!((r.opened, r.lport, r.rport), (2, 80, 40000));
        assert!(r.served());
        assert!(!Response { opened: 1, ..r.clone() }.served(), "a client's request");
        assert!(Response { opened: 0, ..r.clone() }.served(), "not known: by its ports");
        assert!(!Response { opened: 0, lport: 40000, rport: 80, ..r.clone() }.served());
        assert_eq!((r.peer.to_string().as_str(), rs[1].cc.as_str()), ("10.9.0.2", "cubic"));
        // Past 2^31 µs the time is in ms, the top bit set: a day's download.
        b[26] = 3;
        b[104..108].copy_from_slice(&(86_400_000u32 | 1 << 31).to_ne_bytes());
        let Event::Responses(rs) = decode(&b).unwrap() else { panic!("kind") };
        assert_eq!(rs[2].h.ts_ns - rs[2].start_ns, 86_400 * 1_000_000_000);
        b[26] = 0;
        assert_eq!(decode(&b), Err(DecodeError::Count(0)), "an empty batch");
        b[26] = 9;
        assert_eq!(decode(&b), Err(DecodeError::Count(9)), "more than a record holds");
        b[26] = 1;
        b[24] = 9;
        assert_eq!(decode(&b), Err(DecodeError::Family(9)));
    }

    #[test]
    fn bad_input() {
        assert_eq!(decode(&[1, 0, 0]), Err(DecodeError::Short { len: 3, need: HDR_LEN }));
        assert_eq!(decode(&hdr(4, 100)), Err(DecodeError::Short { len: 100, need: CLOSE_LEN }));
        assert_eq!(decode(&hdr(9, 200)), Err(DecodeError::Kind(9)));
        // A longer record (a newer object appending fields) still decodes.
        assert!(decode(&hdr(1, INFL_LEN + 8)).is_ok());
    }

    proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..200), kind in 0u32..6) {
            let _ = decode(&b);
            let mut b = b;
            if b.len() >= 4 { b[0..4].copy_from_slice(&kind.to_ne_bytes()); }
            let _ = decode(&b);
        }
    }
}
