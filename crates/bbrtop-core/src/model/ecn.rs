//! A socket's ECN, from tcp_info: whether it was negotiated, whether ECT packets came, and the
//! CE marks its data met (classic ECN echoes them with ECE; AccECN counts them exactly, in the
//! counters 6.18's tcp_info adds). Pure.

use super::TcpInfo;
use serde::Serialize;

/// `tcpi_options` bits (include/uapi/linux/tcp.h).
const TCPI_OPT_ECN: u8 = 8;
const TCPI_OPT_ECN_SEEN: u8 = 16;

/// What tcp_info says of one socket's ECN.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ecn {
    /// ECN was negotiated in the handshake (`TCPI_OPT_ECN`).
    pub negotiated: bool,
    /// At least one ECT-marked packet came in (`TCPI_OPT_ECN_SEEN`).
    pub seen: bool,
    /// Segments delivered whose CE marks the peer echoed (`tcpi_delivered_ce`).
    pub delivered_ce_segs: u32,
    /// `delivered_ce_segs / delivered_segs`: the fraction of this socket's data CE-marked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ce_fraction: Option<f64>,
    /// The AccECN counters, where tcp_info carries them: CE-marked segments received, and the
    /// CE-marked bytes delivered and received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_ce_segs: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered_ce_bytes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_ce_bytes: Option<u32>,
}

impl Ecn {
    /// `None` for a socket that neither negotiated ECN nor met a CE mark (most of them), or whose
    /// tcp_info is too short to say.
    pub fn of(info: &TcpInfo) -> Option<Ecn> {
        let opts = info.options()?;
        let delivered_ce = info.delivered_ce_segs().unwrap_or(0);
        let received_ce = info.received_ce_segs();
        let marked = delivered_ce > 0 || received_ce.unwrap_or(0) > 0;
        if opts & (TCPI_OPT_ECN | TCPI_OPT_ECN_SEEN) == 0 && !marked {
            return None;
        }
        Some(Ecn {
            negotiated: opts & TCPI_OPT_ECN != 0,
            seen: opts & TCPI_OPT_ECN_SEEN != 0,
            delivered_ce_segs: delivered_ce,
            ce_fraction: ce_fraction(delivered_ce.into(), info.delivered_segs().unwrap_or(0).into()),
            received_ce_segs: received_ce,
            delivered_ce_bytes: info.delivered_ce_bytes(),
            received_ce_bytes: info.received_ce_bytes(),
        })
    }
}

/// CE-marked over delivered; `None` when nothing was delivered.
pub fn ce_fraction(delivered_ce: u64, delivered: u64) -> Option<f64> {
    (delivered > 0).then(|| delivered_ce as f64 / delivered as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(options: u8, delivered: u32, delivered_ce: u32, len: usize) -> TcpInfo {
        let mut b = vec![0u8; len];
        b[5] = options;
        b[192..196].copy_from_slice(&delivered.to_ne_bytes());
        b[196..200].copy_from_slice(&delivered_ce.to_ne_bytes());
        if len >= 252 {
            b[248..252].copy_from_slice(&7u32.to_ne_bytes());
        }
        TcpInfo::parse(&b).0
    }

    #[test]
    fn negotiated_seen_and_marked() {
        let e = Ecn::of(&info(TCPI_OPT_ECN | TCPI_OPT_ECN_SEEN, 1000, 50, 280)).unwrap();
        assert!(e.negotiated && e.seen);
        assert_eq!((e.delivered_ce_segs, e.ce_fraction, e.received_ce_segs), (50, Some(0.05), Some(7)));
        assert_eq!(e.delivered_ce_bytes, Some(0));
    }

    #[test]
    fn absent_without_ecn_and_unknown_counters_stay_unknown() {
        assert_eq!(
            Ecn::of(&info(1 | 2 | 4, 1000, 0, 280)).map(|e| e.negotiated),
            Some(false),
            "AccECN: 7 CE received"
        );
        assert_eq!(Ecn::of(&info(1 | 2 | 4, 1000, 0, 248)), None, "no ECN, no marks");
        let old = Ecn::of(&info(TCPI_OPT_ECN, 0, 0, 248)).unwrap();
        assert_eq!((old.received_ce_segs, old.ce_fraction), (None, None), "a kernel without AccECN counters");
        assert_eq!(Ecn::of(&TcpInfo::parse(&[0u8; 4]).0), None, "too short for the options");
    }
}
