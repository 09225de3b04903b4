//! BBR phases: inferred from the gains netlink reports, or read from `struct bbr` by eBPF.

use serde::Serialize;
use std::fmt;

/// The PROBE_BW gain cycle's three kinds of step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeBwStep {
    /// pacing_gain 1.25: probing for more bandwidth.
    Up,
    /// pacing_gain 0.75: draining the queue that probing built.
    Down,
    /// pacing_gain 1.0.
    Cruise,
}

/// A BBR (v1) state machine phase.
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
    /// Inferred from what netlink reports.
    Inferred,
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

    /// From `struct bbr`'s `mode` (0..3) and `cycle_idx` (0..7), as read by eBPF.
    pub fn from_kernel(mode: u8, cycle_idx: u8) -> Option<Phase> {
        match mode {
            0 => Some(Phase::Startup),
            1 => Some(Phase::Drain),
            2 => Some(Phase::ProbeBw(match cycle_idx {
                0 => ProbeBwStep::Up,
                1 => ProbeBwStep::Down,
                _ => ProbeBwStep::Cruise,
            })),
            3 => Some(Phase::ProbeRtt),
            _ => None,
        }
    }

    /// A short label for tables: STARTUP, DRAIN, BW:UP, BW:DOWN, BW:CRUISE, PROBE_RTT.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Startup => "STARTUP",
            Phase::Drain => "DRAIN",
            Phase::ProbeBw(ProbeBwStep::Up) => "BW:UP",
            Phase::ProbeBw(ProbeBwStep::Down) => "BW:DOWN",
            Phase::ProbeBw(ProbeBwStep::Cruise) => "BW:CRUISE",
            Phase::ProbeRtt => "PROBE_RTT",
        }
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
        assert_eq!(Phase::from_kernel(0, 0), Some(Phase::Startup));
        assert_eq!(Phase::from_kernel(2, 0), Some(Phase::ProbeBw(ProbeBwStep::Up)));
        assert_eq!(Phase::from_kernel(2, 1), Some(Phase::ProbeBw(ProbeBwStep::Down)));
        assert_eq!(Phase::from_kernel(2, 5), Some(Phase::ProbeBw(ProbeBwStep::Cruise)));
        assert_eq!(Phase::from_kernel(3, 0), Some(Phase::ProbeRtt));
        assert_eq!(Phase::from_kernel(9, 0), None);
    }
}
