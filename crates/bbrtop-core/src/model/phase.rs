//! BBR phases: read from the phase byte v2alpha and v3 send over netlink, inferred from the
//! gains with the table of the socket's BBR version, or read from `struct bbr` by eBPF.

use super::BbrVersion;
use serde::Serialize;
use std::fmt;

/// The PROBE_BW gain cycle's kinds of step (v1 has three, v2alpha and v3 add REFILL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeBwStep {
    /// pacing_gain 1.25: probing for more bandwidth.
    Up,
    /// pacing_gain 0.75 (v3: 0.91): draining the queue that probing built.
    Down,
    /// pacing_gain 1.0.
    Cruise,
    /// v2alpha and v3, pacing_gain 1.0: refilling the pipe for one round before probing up.
    Refill,
}

/// A BBR state machine phase (v1's, or v2alpha's and v3's with REFILL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "mode", content = "step")]
pub enum Phase {
    Startup,
    Drain,
    ProbeBw(ProbeBwStep),
    ProbeRtt,
}

/// Where a value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Read from the kernel's own state (eBPF).
    Kernel,
    /// Said by the kernel in the netlink attribute (v2alpha's and v3's phase byte).
    Netlink,
    /// Inferred from what netlink reports.
    Inferred,
}

impl Source {
    pub const ALL: [Source; 3] = [Source::Kernel, Source::Netlink, Source::Inferred];

    /// The source a [`Source::label`] names.
    pub fn from_label(s: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|x| x.label() == s)
    }

    /// As the JSON names it (`phase_source`), for screens.
    pub fn label(self) -> &'static str {
        match self {
            Source::Kernel => "kernel",
            Source::Netlink => "netlink",
            Source::Inferred => "inferred",
        }
    }
}

impl Phase {
    /// Infers the phase from `tcp_bbr_info` gains (ratios, 1.0 = BBR_UNIT).
    ///
    /// Mainline BBR sets these gains per mode (net/ipv4/tcp_bbr.c, bbr_update_gains):
    /// STARTUP 2.89/2.89, DRAIN 0.35/2.89, PROBE_BW x/2.0 with x in {1.25, 0.75, 1.0},
    /// PROBE_RTT 1.0/1.0. A policed flow (long-term bandwidth mode) paces at 1.0 and so reads as
    /// cruise. Returns `None` for gains no mainline mode uses.
    pub fn from_gains(pacing: f64, cwnd: f64) -> Option<Phase> {
        let near = |v: f64, target: f64| (v - target).abs() < 0.06;
        if cwnd > 2.5 {
            if pacing > 2.5 {
                Some(Phase::Startup)
            } else if pacing < 0.5 {
                Some(Phase::Drain)
            } else {
                None
            }
        } else if near(cwnd, 2.0) {
            if near(pacing, 1.25) {
                Some(Phase::ProbeBw(ProbeBwStep::Up))
            } else if near(pacing, 0.75) {
                Some(Phase::ProbeBw(ProbeBwStep::Down))
            } else if near(pacing, 1.0) {
                Some(Phase::ProbeBw(ProbeBwStep::Cruise))
            } else {
                None
            }
        } else if near(cwnd, 1.0) && near(pacing, 1.0) {
            Some(Phase::ProbeRtt)
        } else {
            None
        }
    }

    /// Infers the phase from the gains with the table of `version`. v2alpha uses v1's gains;
    /// a version this build does not know is read as v1, as before versions were told apart.
    pub fn infer(version: BbrVersion, pacing: f64, cwnd: f64) -> Option<Phase> {
        match version {
            BbrVersion::V3 => Phase::from_v3_gains(pacing, cwnd),
            _ => Phase::from_gains(pacing, cwnd),
        }
    }

    /// v3's gains per phase (net/ipv4/tcp_bbr.c of the v3 branch). CRUISE and REFILL pace
    /// alike, so the gains read as cruise.
    fn from_v3_gains(pacing: f64, cwnd: f64) -> Option<Phase> {
        use ProbeBwStep::*;
        const TABLE: [(f64, f64, Phase); 6] = [
            (2.77, 2.0, Phase::Startup),
            (0.35, 2.0, Phase::Drain),
            (1.25, 2.25, Phase::ProbeBw(Up)),
            (0.91, 2.0, Phase::ProbeBw(Down)),
            (1.0, 2.0, Phase::ProbeBw(Cruise)),
            (1.0, 1.0, Phase::ProbeRtt),
        ];
        let near = |v: f64, target: f64| (v - target).abs() < 0.06;
        TABLE.iter().find(|&&(p, c, _)| near(pacing, p) && near(cwnd, c)).map(|&(_, _, phase)| phase)
    }

    /// From the phase byte of v2alpha's and v3's netlink info (`enum tcp_bbr_phase`; v2alpha's
    /// `tcp_bbr2_phase` has the same values). `None` for INVALID and values past REFILL.
    pub fn from_netlink(phase: u8) -> Option<Phase> {
        use ProbeBwStep::*;
        match phase {
            1 => Some(Phase::Startup),
            2 => Some(Phase::Drain),
            3 => Some(Phase::ProbeRtt),
            4 => Some(Phase::ProbeBw(Up)),
            5 => Some(Phase::ProbeBw(Down)),
            6 => Some(Phase::ProbeBw(Cruise)),
            7 => Some(Phase::ProbeBw(Refill)),
            _ => None,
        }
    }

    /// From `struct bbr`'s `mode` (0..3) and `cycle_idx`, as read by eBPF: v1's index into its
    /// eight-step gain cycle (0 up, 1 down, the rest cruise), or with `v3`, v3's step (0 up,
    /// 1 down, 2 cruise, 3 refill).
    pub fn from_kernel(mode: u8, cycle_idx: u8, v3: bool) -> Option<Phase> {
        match mode {
            0 => Some(Phase::Startup),
            1 => Some(Phase::Drain),
            2 => Some(Phase::ProbeBw(match cycle_idx {
                0 => ProbeBwStep::Up,
                1 => ProbeBwStep::Down,
                3 if v3 => ProbeBwStep::Refill,
                _ => ProbeBwStep::Cruise,
            })),
            3 => Some(Phase::ProbeRtt),
            _ => None,
        }
    }

    /// A short label for tables: STARTUP, DRAIN, BW:UP, BW:DOWN, BW:CRUISE, BW:REFILL, PROBE_RTT.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Startup => "STARTUP",
            Phase::Drain => "DRAIN",
            Phase::ProbeBw(ProbeBwStep::Up) => "BW:UP",
            Phase::ProbeBw(ProbeBwStep::Down) => "BW:DOWN",
            Phase::ProbeBw(ProbeBwStep::Cruise) => "BW:CRUISE",
            Phase::ProbeBw(ProbeBwStep::Refill) => "BW:REFILL",
            Phase::ProbeRtt => "PROBE_RTT",
        }
    }

    pub const ALL: [Phase; 7] = [
        Phase::Startup,
        Phase::Drain,
        Phase::ProbeBw(ProbeBwStep::Up),
        Phase::ProbeBw(ProbeBwStep::Down),
        Phase::ProbeBw(ProbeBwStep::Cruise),
        Phase::ProbeBw(ProbeBwStep::Refill),
        Phase::ProbeRtt,
    ];

    /// The phase a [`Phase::label`] names.
    pub fn from_label(s: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.label() == s)
    }

    /// The mode without the PROBE_BW step, for aggregation labels.
    pub fn mode_name(self) -> &'static str {
        match self {
            Phase::Startup => "startup",
            Phase::Drain => "drain",
            Phase::ProbeBw(_) => "probe_bw",
            Phase::ProbeRtt => "probe_rtt",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_labels_are_the_json_names() {
        for s in Source::ALL {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.label()));
            assert_eq!(Source::from_label(s.label()), Some(s));
        }
    }

    #[test]
    fn gains_table() {
        // (pacing_gain, cwnd_gain) as the kernel encodes them (x256), and the phase they mean.
        let cases: &[(u32, u32, Option<Phase>)] = &[
            (739, 739, Some(Phase::Startup)),
            (88, 739, Some(Phase::Drain)),
            (320, 512, Some(Phase::ProbeBw(ProbeBwStep::Up))),
            (192, 512, Some(Phase::ProbeBw(ProbeBwStep::Down))),
            (256, 512, Some(Phase::ProbeBw(ProbeBwStep::Cruise))),
            (256, 256, Some(Phase::ProbeRtt)),
            (0, 0, None),
            (512, 512, None),
        ];
        for &(p, c, want) in cases {
            let got = Phase::from_gains(p as f64 / 256.0, c as f64 / 256.0);
            assert_eq!(got, want, "pacing {p} cwnd {c}");
        }
    }

    #[test]
    fn kernel_modes() {
        assert_eq!(Phase::from_kernel(0, 0, false), Some(Phase::Startup));
        assert_eq!(Phase::from_kernel(2, 0, false), Some(Phase::ProbeBw(ProbeBwStep::Up)));
        assert_eq!(Phase::from_kernel(2, 1, false), Some(Phase::ProbeBw(ProbeBwStep::Down)));
        assert_eq!(Phase::from_kernel(2, 5, false), Some(Phase::ProbeBw(ProbeBwStep::Cruise)));
        assert_eq!(Phase::from_kernel(3, 0, false), Some(Phase::ProbeRtt));
        assert_eq!(Phase::from_kernel(9, 0, false), None);
        // v3's cycle_idx: 3 is REFILL, which v1's index 3 (a cruise step) is not.
        assert_eq!(Phase::from_kernel(2, 3, true), Some(Phase::ProbeBw(ProbeBwStep::Refill)));
        assert_eq!(Phase::from_kernel(2, 3, false), Some(Phase::ProbeBw(ProbeBwStep::Cruise)));
        assert_eq!(Phase::from_kernel(2, 2, true), Some(Phase::ProbeBw(ProbeBwStep::Cruise)));
    }

    #[test]
    fn v3_gains_table() {
        use ProbeBwStep::*;
        // (pacing_gain, cwnd_gain) x256 as v3 sets them, and the phase they mean.
        let cases: &[(u32, u32, Option<Phase>)] = &[
            (709, 512, Some(Phase::Startup)),
            (88, 512, Some(Phase::Drain)),
            (320, 576, Some(Phase::ProbeBw(Up))),
            (232, 512, Some(Phase::ProbeBw(Down))),
            (256, 512, Some(Phase::ProbeBw(Cruise))),
            (256, 256, Some(Phase::ProbeRtt)),
            (739, 739, None),
            (320, 512, None),
        ];
        for &(p, c, want) in cases {
            let got = Phase::infer(BbrVersion::V3, p as f64 / 256.0, c as f64 / 256.0);
            assert_eq!(got, want, "pacing {p} cwnd {c}");
        }
        // v1's (and v2alpha's) table is the one from_gains reads.
        for v in [BbrVersion::V1, BbrVersion::V2Alpha, BbrVersion::Unknown(9)] {
            assert_eq!(Phase::infer(v, 320.0 / 256.0, 2.0), Some(Phase::ProbeBw(Up)));
        }
    }

    #[test]
    fn netlink_phase_byte() {
        use ProbeBwStep::*;
        let want = [
            None,
            Some(Phase::Startup),
            Some(Phase::Drain),
            Some(Phase::ProbeRtt),
            Some(Phase::ProbeBw(Up)),
            Some(Phase::ProbeBw(Down)),
            Some(Phase::ProbeBw(Cruise)),
            Some(Phase::ProbeBw(Refill)),
            None,
        ];
        for (byte, want) in want.into_iter().enumerate() {
            assert_eq!(Phase::from_netlink(byte as u8), want, "phase byte {byte}");
        }
        assert_eq!(Phase::ProbeBw(Refill).label(), "BW:REFILL");
    }
}
