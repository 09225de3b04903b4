//! Values derived from a socket record, in one place: phase, baseline RTT and inflation, the
//! "limited by" verdict, and rates between two polls. All pure.

use super::{Phase, SocketRecord, Source, TcpInfo};
use serde::{Deserialize, Serialize};
use std::str::FromStr;
use std::time::Duration;

/// An RTT the kernel keeps as a running minimum, if it has a sample: 0 and `u32::MAX` (the `~0U` a
/// minimum starts from, which a listener or a socket closed before its first ACK keeps) are none.
pub fn rtt_sample(us: u32) -> Option<u32> {
    (us != 0 && us != u32::MAX).then_some(us)
}

/// Which min RTT the inflation ratio is measured against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// The smaller of tcp_info's min_rtt and BBR's min_rtt. BBR's 10 s window is re-measured in
    /// PROBE_RTT, so a standing queue that outlives it raises BBR's baseline and hides itself;
    /// tcp_info's 300 s window does not.
    #[default]
    Min,
    /// tcp_info's `tcpi_min_rtt` (net.ipv4.tcp_min_rtt_wlen, 300 s by default).
    Tcp,
    /// BBR's own `min_rtt` (10 s window). Falls back to tcp_info for other algorithms.
    Bbr,
}

impl FromStr for Baseline {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "min" => Ok(Baseline::Min),
            "tcp" => Ok(Baseline::Tcp),
            "bbr" => Ok(Baseline::Bbr),
            _ => Err(format!("unknown baseline {s:?} (expected min, tcp or bbr)")),
        }
    }
}

impl Baseline {
    /// The baseline RTT of a socket in µs, or `None` if the kernel gave none (or gave zero).
    pub fn of(self, rec: &SocketRecord) -> Option<u32> {
        let tcp = rec.tcp_info.min_rtt_us().and_then(rtt_sample);
        let bbr = rec.bbr.and_then(|b| rtt_sample(b.min_rtt_us));
        match self {
            Baseline::Tcp => tcp,
            Baseline::Bbr => bbr.or(tcp),
            Baseline::Min => match (tcp, bbr) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// A BBR socket's phase as netlink gives it, and where it came from: the kernel's own phase
/// byte where the socket's BBR sends one (v2alpha, v3), else inferred from the gains with that
/// version's table.
pub fn netlink_phase(rec: &SocketRecord) -> Option<(Phase, Source)> {
    let b = rec.bbr?;
    let said = b.ext.filter(|_| b.version.has_phase_enum()).and_then(|e| Phase::from_netlink(e.kernel_phase));
    said.map(|p| (p, Source::Netlink))
        .or_else(|| Phase::infer(b.version, b.pacing_gain, b.cwnd_gain).map(|p| (p, Source::Inferred)))
}

/// srtt / baseline, when both are known.
pub fn inflation_ratio(srtt_us: Option<u32>, baseline_us: Option<u32>) -> Option<f64> {
    match (srtt_us, baseline_us) {
        (Some(s), Some(b)) if b > 0 => Some(s as f64 / b as f64),
        _ => None,
    }
}

/// What holds a sender back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    /// The application did not give TCP enough data to fill the pipe.
    Application,
    /// The peer's receive window.
    ReceiveWindow,
    /// The local send buffer.
    SendBuffer,
    /// Neither: the congestion window, i.e. the network.
    Network,
}

impl LimitedBy {
    pub const ALL: [LimitedBy; 4] =
        [LimitedBy::Application, LimitedBy::ReceiveWindow, LimitedBy::SendBuffer, LimitedBy::Network];

    /// What a [`LimitedBy::label`] names.
    pub fn from_label(s: &str) -> Option<LimitedBy> {
        LimitedBy::ALL.into_iter().find(|l| l.label() == s)
    }

    pub fn label(self) -> &'static str {
        match self {
            LimitedBy::Application => "app",
            LimitedBy::ReceiveWindow => "rwnd",
            LimitedBy::SendBuffer => "sndbuf",
            LimitedBy::Network => "cwnd",
        }
    }
}

/// The busy and limited timers that the verdict is made from (µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitTimes {
    pub busy_us: u64,
    pub rwnd_us: u64,
    pub sndbuf_us: u64,
}

impl LimitTimes {
    pub fn of(info: &TcpInfo) -> Option<LimitTimes> {
        Some(LimitTimes {
            busy_us: info.busy_time_us()?,
            rwnd_us: info.rwnd_limited_us()?,
            sndbuf_us: info.sndbuf_limited_us()?,
        })
    }

    /// The time spent in each since `earlier` (counters only grow; a reset gives zero).
    pub fn since(self, earlier: LimitTimes) -> LimitTimes {
        LimitTimes {
            busy_us: self.busy_us.saturating_sub(earlier.busy_us),
            rwnd_us: self.rwnd_us.saturating_sub(earlier.rwnd_us),
            sndbuf_us: self.sndbuf_us.saturating_sub(earlier.sndbuf_us),
        }
    }
}

/// The verdict, from the share of busy time spent limited (over an interval, or the socket's life)
/// and the app-limited flag of the latest rate sample. `None` when the socket has not been busy.
pub fn limited_by(t: LimitTimes, app_limited: Option<bool>) -> Option<LimitedBy> {
    if t.busy_us == 0 {
        return None;
    }
    // The kernel counts rwnd- and sndbuf-limited time inside busy time.
    let share = |v: u64| v as f64 / t.busy_us as f64;
    let (rwnd, sndbuf) = (share(t.rwnd_us), share(t.sndbuf_us));
    Some(if rwnd >= 0.5 && rwnd >= sndbuf {
        LimitedBy::ReceiveWindow
    } else if sndbuf >= 0.5 {
        LimitedBy::SendBuffer
    } else if app_limited == Some(true) {
        LimitedBy::Application
    } else {
        LimitedBy::Network
    })
}

/// Cumulative counters kept from one poll to compute rates at the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters {
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    pub total_retrans: Option<u32>,
    pub limits: Option<LimitTimes>,
}

impl Counters {
    pub fn of(info: &TcpInfo) -> Counters {
        Counters {
            bytes_acked: info.bytes_acked(),
            bytes_received: info.bytes_received(),
            total_retrans: info.total_retrans_segs(),
            limits: LimitTimes::of(info),
        }
    }
}

/// Rates between two polls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Rates {
    /// Goodput: bytes acknowledged by the peer per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_bytes_per_sec: Option<f64>,
    /// Bytes received per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recv_bytes_per_sec: Option<f64>,
    /// Segments retransmitted per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrans_segs_per_sec: Option<f64>,
}

/// Rates from two sets of counters `dt` apart. Unknown if `dt` is zero or a counter went missing.
pub fn rates(prev: &Counters, cur: &Counters, dt: Duration) -> Rates {
    let secs = dt.as_secs_f64();
    if secs <= 0.0 {
        return Rates::default();
    }
    let per_sec = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?) as f64 / secs);
    Rates {
        goodput_bytes_per_sec: per_sec(prev.bytes_acked, cur.bytes_acked),
        recv_bytes_per_sec: per_sec(prev.bytes_received, cur.bytes_received),
        retrans_segs_per_sec: per_sec(prev.total_retrans.map(u64::from), cur.total_retrans.map(u64::from)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BbrInfo, TcpState};

    #[test]
    fn phase_from_netlink_or_gains_per_version() {
        use crate::model::ProbeBwStep::*;
        use crate::model::bbr::fixtures;
        let with = |b: &[u8], cc: &str| {
            let mut r = rec(None, None);
            r.bbr = BbrInfo::parse(b, Some(cc));
            netlink_phase(&r)
        };
        assert_eq!(with(&fixtures::v1(), "bbr"), Some((Phase::ProbeBw(Up), Source::Inferred)));
        assert_eq!(with(&fixtures::ext(3, 2, 7), "bbr"), Some((Phase::ProbeBw(Refill), Source::Netlink)));
        assert_eq!(with(&fixtures::ext(2, 2, 5), "bbr2"), Some((Phase::ProbeBw(Down), Source::Netlink)));
        // v3 with its phase INVALID: v3's gains (1.25/2.25, probing up) say it.
        assert_eq!(with(&fixtures::ext(3, 2, 0), "bbr"), Some((Phase::ProbeBw(Up), Source::Inferred)));
        // An unknown version's phase byte is not read; its gains are read as v1's (2.25 is none).
        assert_eq!(with(&fixtures::ext(9, 2, 7), "bbr"), None);
        assert_eq!(netlink_phase(&rec(None, None)), None, "not BBR");
    }

    fn rec(tcp_min: Option<u32>, bbr_min: Option<u32>) -> SocketRecord {
        let a = "127.0.0.1:1".parse().unwrap();
        let mut r = SocketRecord::new(1, a, a, TcpState::Established);
        if let Some(v) = tcp_min {
            r.tcp_info.set_min_rtt_us(v);
        }
        r.bbr = bbr_min.map(|m| BbrInfo::v1(0, m, 1.0, 2.0));
        r
    }

    /// A listener's tcp_info and a BBR socket before its first ACK carry the minimum's ~0: no
    /// baseline, never 4294.97 s.
    #[test]
    fn a_minimum_without_a_sample_is_none() {
        assert_eq!((rtt_sample(0), rtt_sample(u32::MAX), rtt_sample(1)), (None, None, Some(1)));
        let listener = rec(Some(u32::MAX), Some(u32::MAX));
        for b in [Baseline::Min, Baseline::Tcp, Baseline::Bbr] {
            assert_eq!(b.of(&listener), None, "{b:?}");
        }
        assert_eq!(Baseline::Min.of(&rec(Some(u32::MAX), Some(30_000))), Some(30_000));
    }

    #[test]
    fn baseline_choices() {
        let cases = [
            (Baseline::Min, Some(100), Some(80), Some(80)),
            (Baseline::Min, Some(100), Some(300), Some(100)),
            (Baseline::Min, None, Some(300), Some(300)),
            (Baseline::Min, Some(0), None, None),
            (Baseline::Tcp, Some(100), Some(80), Some(100)),
            (Baseline::Bbr, Some(100), Some(80), Some(80)),
            (Baseline::Bbr, Some(100), None, Some(100)),
            (Baseline::Bbr, Some(100), Some(u32::MAX), Some(100)),
        ];
        for (b, t, m, want) in cases {
            assert_eq!(b.of(&rec(t, m)), want, "{b:?} tcp={t:?} bbr={m:?}");
        }
    }

    #[test]
    fn inflation() {
        assert_eq!(inflation_ratio(Some(300), Some(100)), Some(3.0));
        assert_eq!(inflation_ratio(Some(300), Some(0)), None);
        assert_eq!(inflation_ratio(None, Some(100)), None);
    }

    #[test]
    fn limited_by_table() {
        let t = |busy, rwnd, sndbuf| LimitTimes { busy_us: busy, rwnd_us: rwnd, sndbuf_us: sndbuf };
        let cases = [
            (t(0, 0, 0), None, None),
            (t(100, 60, 0), None, Some(LimitedBy::ReceiveWindow)),
            (t(100, 10, 70), None, Some(LimitedBy::SendBuffer)),
            (t(100, 10, 10), Some(true), Some(LimitedBy::Application)),
            (t(100, 10, 10), Some(false), Some(LimitedBy::Network)),
            (t(100, 50, 50), None, Some(LimitedBy::ReceiveWindow)),
        ];
        for (times, app, want) in cases {
            assert_eq!(limited_by(times, app), want, "{times:?} app={app:?}");
        }
    }

    #[test]
    fn rates_between_polls() {
        let a = Counters {
            bytes_acked: Some(1000),
            bytes_received: Some(0),
            total_retrans: Some(1),
            limits: None,
        };
        let b =
            Counters { bytes_acked: Some(3000), bytes_received: None, total_retrans: Some(5), limits: None };
        let r = rates(&a, &b, Duration::from_millis(500));
        assert_eq!(r.goodput_bytes_per_sec, Some(4000.0));
        assert_eq!(r.recv_bytes_per_sec, None);
        assert_eq!(r.retrans_segs_per_sec, Some(8.0));
        assert_eq!(rates(&a, &b, Duration::ZERO), Rates::default());
    }
}
