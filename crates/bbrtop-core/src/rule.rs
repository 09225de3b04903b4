//! The queue-delay alert rule (ARCHITECTURE.md, "The alert rule"), implemented once. The eBPF
//! path hands over the onset the kernel timed per prompt RTT sample (one an ACK took with data
//! still in flight, which no delayed ACK or idle application can raise); the netlink path, which
//! sees only srtt, evaluates it at each poll, and only while the sender is network-limited with
//! data in flight. Time is always a parameter.

use crate::model::SocketRecord;
use crate::model::derive::Baseline;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// The rule's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleConfig {
    /// Inflated while srtt >= ratio x baseline.
    pub ratio: f64,
    /// ...and srtt - baseline >= floor, so 5 µs becoming 8 µs on loopback does not count.
    #[serde(with = "crate::units::serde_duration")]
    pub floor: Duration,
    /// Fires once inflated without a break for this long.
    #[serde(rename = "for", with = "crate::units::serde_duration")]
    pub hold: Duration,
    /// Only sockets that received an ACK within this long are evaluated.
    #[serde(with = "crate::units::serde_duration")]
    pub active_within: Duration,
    pub baseline: Baseline,
    /// Judge loopback sockets too (`--loopback`): left out by default, since a host talking to
    /// itself has no bottleneck queue, and its µs baselines make every pause look like one.
    #[serde(default)]
    pub loopback: bool,
}

impl Default for RuleConfig {
    fn default() -> Self {
        RuleConfig {
            ratio: 1.5,
            floor: Duration::from_millis(1),
            hold: Duration::from_secs(5),
            // Two seconds: a request/response socket asked once a second gets its ACKs about
            // a second apart, and must not fall idle between two.
            active_within: Duration::from_secs(2),
            baseline: Baseline::Min,
            loopback: false,
        }
    }
}

impl RuleConfig {
    /// Whether one RTT sample is inflated against its baseline (both in µs).
    pub fn inflated(&self, srtt_us: u32, baseline_us: u32) -> bool {
        if baseline_us == 0 {
            return false;
        }
        let (s, b) = (srtt_us as f64, baseline_us as f64);
        s >= self.ratio * b && s - b >= self.floor.as_secs_f64() * 1e6
    }

    /// Whether a socket whose last ACK arrived `since_last_ack` ago counts as active.
    pub fn active(&self, since_last_ack: Option<Duration>) -> bool {
        since_last_ack.is_some_and(|d| d <= self.active_within)
    }

    /// What the rule reads of one socket's record at a poll; None for a socket it does not
    /// judge (loopback, unless asked) or whose srtt or baseline the kernel did not give.
    pub fn sample(&self, r: &SocketRecord) -> Option<Sample> {
        if r.is_loopback() && !self.loopback {
            return None;
        }
        let i = &r.tcp_info;
        let since_ack = i.last_ack_recv_ms().map(|ms| Duration::from_millis(ms.into()));
        Some(Sample {
            srtt_us: i.srtt_us()?,
            baseline_us: self.baseline.of(r)?,
            active: self.active(since_ack),
            network_limited: i.unacked_segs().is_some_and(|n| n > 0) && i.app_limited() == Some(false),
        })
    }
}

/// Where one socket stands against the rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct AlertTracker {
    /// When the current unbroken spell of inflation began.
    #[serde(skip)]
    pub onset: Option<Instant>,
    /// When the alert fired (onset + hold), while it is firing.
    #[serde(skip)]
    pub fired: Option<Instant>,
    /// The largest srtt/baseline seen in the current spell.
    pub peak_ratio: f64,
}

/// What changed at one evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Inflation began (not yet long enough to fire).
    Onset,
    /// Inflated for the hold time: the alert fires. `began` when this same evaluation also
    /// started the spell (a kernel onset read late).
    Fired { began: bool },
    /// No longer inflated (or closed): the alert, if it fired, resolves.
    Ended { was_firing: bool },
}

impl AlertTracker {
    /// Advances the tracker to `now`. `onset` is when the present spell of inflation began, or
    /// `None` if the socket is not inflated now. The netlink path passes `self.onset.or(now)` at
    /// each inflated poll; the eBPF path passes the kernel's own onset.
    pub fn step(
        &mut self,
        cfg: &RuleConfig,
        now: Instant,
        onset: Option<Instant>,
        ratio: Option<f64>,
    ) -> Option<Transition> {
        let Some(onset) = onset else {
            return self.end();
        };
        let began = self.onset.is_none();
        // A kernel onset may move if the spell broke and restarted between two reads.
        if self.onset != Some(onset) && !began {
            self.fired = None;
            self.peak_ratio = 0.0;
        }
        self.onset = Some(onset);
        if let Some(r) = ratio {
            self.peak_ratio = self.peak_ratio.max(r);
        }
        if self.fired.is_none() && now.saturating_duration_since(onset) >= cfg.hold {
            self.fired = Some(onset + cfg.hold);
            return Some(Transition::Fired { began });
        }
        began.then_some(Transition::Onset)
    }

    /// The socket is no longer inflated, or it closed.
    pub fn end(&mut self) -> Option<Transition> {
        let t = self.onset.map(|_| Transition::Ended { was_firing: self.fired.is_some() });
        *self = AlertTracker::default();
        t
    }

    pub fn firing(&self) -> bool {
        self.fired.is_some()
    }

    /// The netlink path: evaluate one poll's sample. srtt counts only while the sender is
    /// network-limited: otherwise a delayed ACK or a pause of the application is in it.
    pub fn eval(&mut self, cfg: &RuleConfig, now: Instant, sample: Option<Sample>) -> Option<Transition> {
        match sample {
            Some(s) if s.active && s.network_limited && cfg.inflated(s.srtt_us, s.baseline_us) => {
                let ratio = s.srtt_us as f64 / s.baseline_us as f64;
                self.step(cfg, now, Some(self.onset.unwrap_or(now)), Some(ratio))
            }
            _ => self.step(cfg, now, None, None),
        }
    }
}

/// One poll's view of a socket, for the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub srtt_us: u32,
    pub baseline_us: u32,
    /// An ACK arrived within [`RuleConfig::active_within`].
    pub active: bool,
    /// The sender had data in flight and its latest delivery-rate sample was not limited by the
    /// application: the netlink path's only sign that srtt measures the path.
    pub network_limited: bool,
}

impl Sample {
    /// srtt / baseline (a zero baseline counts as 1 µs).
    pub fn ratio(&self) -> f64 {
        f64::from(self.srtt_us) / f64::from(self.baseline_us.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(srtt: u32, base: u32) -> Option<Sample> {
        Some(Sample { srtt_us: srtt, baseline_us: base, active: true, network_limited: true })
    }

    #[test]
    fn inflated_needs_ratio_and_floor() {
        let c = RuleConfig::default();
        assert!(c.inflated(30_000, 20_000));
        assert!(!c.inflated(29_999, 20_000));
        // 1.6x, but only 6 µs above: loopback noise, not a queue.
        assert!(!c.inflated(16, 10));
        assert!(!c.inflated(5000, 0));
        assert!(c.inflated(1500, 500));
    }

    #[test]
    fn fires_after_hold_and_resolves() {
        let c = RuleConfig::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut a = AlertTracker::default();
        // Each step: (ms, sample, expected transition, firing after).
        let script: &[(u64, Option<Sample>, Option<Transition>, bool)] = &[
            (0, s(10_000, 10_000), None, false),
            (1000, s(40_000, 10_000), Some(Transition::Onset), false),
            (2000, s(40_000, 10_000), None, false),
            (5999, s(50_000, 10_000), None, false),
            (6000, s(40_000, 10_000), Some(Transition::Fired { began: false }), true),
            (7000, s(40_000, 10_000), None, true),
            (8000, s(12_000, 10_000), Some(Transition::Ended { was_firing: true }), false),
            (9000, s(40_000, 10_000), Some(Transition::Onset), false),
            (10_000, None, Some(Transition::Ended { was_firing: false }), false),
        ];
        for &(ms, sample, want, firing) in script {
            assert_eq!(a.eval(&c, at(ms), sample), want, "at {ms} ms");
            assert_eq!(a.firing(), firing, "firing at {ms} ms");
        }
    }

    #[test]
    fn a_break_restarts_the_hold() {
        let c = RuleConfig::default();
        let t0 = Instant::now();
        let mut a = AlertTracker::default();
        for ms in [0u64, 1000, 2000, 3000, 4000] {
            a.eval(&c, t0 + Duration::from_millis(ms), s(40_000, 10_000));
        }
        a.eval(&c, t0 + Duration::from_millis(4500), s(10_000, 10_000));
        for ms in [5000u64, 6000, 9000] {
            assert_ne!(
                a.eval(&c, t0 + Duration::from_millis(ms), s(40_000, 10_000)),
                Some(Transition::Fired { began: false })
            );
        }
        assert_eq!(
            a.eval(&c, t0 + Duration::from_millis(10_000), s(40_000, 10_000)),
            Some(Transition::Fired { began: false })
        );
        assert_eq!(a.peak_ratio, 4.0);
    }

    #[test]
    fn idle_socket_is_not_inflated() {
        let c = RuleConfig::default();
        let t0 = Instant::now();
        let mut a = AlertTracker::default();
        let idle =
            Some(Sample { srtt_us: 90_000, baseline_us: 10_000, active: false, network_limited: true });
        assert_eq!(a.eval(&c, t0, idle), None);
        assert!(c.active(Some(Duration::from_millis(1999))));
        assert!(!c.active(Some(Duration::from_millis(2001))));
        assert!(!c.active(None));
        // An application-limited sender: a delayed ACK may be in its srtt.
        let waiting =
            Some(Sample { srtt_us: 90_000, baseline_us: 10_000, active: true, network_limited: false });
        assert_eq!(a.eval(&c, t0, waiting), None);
    }

    /// What the rule reads of a record: loopback is left out unless asked for; network-limited
    /// needs data in flight and a delivery-rate sample not limited by the application.
    #[test]
    fn samples_of_records() {
        use crate::testing::record;
        let c = RuleConfig::default();
        let sending = record(1, "cubic").srtt_us(90_000).min_rtt_us(20_000).last_ack_recv_ms(5);
        let s = c.sample(&sending.unacked_segs(10).app_limited_flags(0).build()).unwrap();
        assert_eq!((s.srtt_us, s.baseline_us, s.active, s.network_limited), (90_000, 20_000, true, true));
        let r = record(1, "cubic").srtt_us(90_000).min_rtt_us(20_000).last_ack_recv_ms(5);
        assert!(!c.sample(&r.unacked_segs(10).app_limited_flags(1).build()).unwrap().network_limited);
        let r = record(1, "cubic").srtt_us(90_000).min_rtt_us(20_000).last_ack_recv_ms(5);
        assert!(!c.sample(&r.unacked_segs(0).app_limited_flags(0).build()).unwrap().network_limited);
        let lo = record(1, "cubic").peer("127.0.0.1:80").srtt_us(90_000).min_rtt_us(20).build();
        assert_eq!(c.sample(&lo), None);
        assert!(RuleConfig { loopback: true, ..c }.sample(&lo).is_some());
    }

    #[test]
    fn kernel_onset_fires_on_its_own_clock() {
        let c = RuleConfig::default();
        let t0 = Instant::now();
        let mut a = AlertTracker::default();
        // The kernel saw inflation begin at t0; userspace first reads it 5.2 s later.
        let now = t0 + Duration::from_millis(5200);
        assert_eq!(a.step(&c, now, Some(t0), Some(2.0)), Some(Transition::Fired { began: true }));
        assert_eq!(a.fired, Some(t0 + Duration::from_secs(5)));
    }
}
