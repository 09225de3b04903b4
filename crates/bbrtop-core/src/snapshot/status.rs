//! Collector health, for every place the tool reports status: the TUI header, `/metrics` and
//! the snapshot's `collectors`.

use crate::seam::bpf_poll::BpfPoll;
pub use crate::seam::health::{Cause, Reason};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// Where a collector stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Health {
    /// Running, and its last poll succeeded.
    Ok,
    /// Running, not polled yet.
    #[default]
    Waiting,
    /// Not running: with why, or because this command does not use it.
    Off(Option<Reason>),
    /// Running, with a reason: its last poll failed, or (a limit) it cannot do everything here.
    Degraded(Reason),
}

impl Health {
    pub fn enabled(&self) -> bool {
        !matches!(self, Health::Off(_))
    }

    pub fn last_success(&self) -> bool {
        match self {
            Health::Ok => true,
            Health::Degraded(r) => r.cause.is_limit(),
            Health::Waiting | Health::Off(_) => false,
        }
    }

    pub fn reason(&self) -> Option<&Reason> {
        match self {
            Health::Off(r) => r.as_ref(),
            Health::Degraded(r) => Some(r),
            Health::Ok | Health::Waiting => None,
        }
    }
}

/// In JSON: `enabled`, `reason` (the detail, when there is one) and `last_success`, as before
/// the enum, so readers of the document see no change; and `cause`, the reason's kind, so that
/// a recording reads back the same health.
#[derive(Serialize, Deserialize)]
struct HealthFields<'a> {
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none", borrow)]
    reason: Option<std::borrow::Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<Cause>,
    last_success: bool,
}

impl Serialize for Health {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let reason = self.reason();
        HealthFields {
            enabled: self.enabled(),
            reason: reason.map(|r| r.detail.as_str().into()),
            cause: reason.map(|r| r.cause),
            last_success: self.last_success(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Health {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Health, D::Error> {
        let f = HealthFields::deserialize(d)?;
        let reason = match (f.cause, f.reason) {
            (Some(cause), detail) => Some(Reason::new(cause, detail.unwrap_or_default())),
            (None, _) => None,
        };
        Ok(match (f.enabled, reason) {
            (false, r) => Health::Off(r),
            (true, Some(r)) => Health::Degraded(r),
            (true, None) if f.last_success => Health::Ok,
            (true, None) => Health::Waiting,
        })
    }
}

/// One collector's health and counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectorStatus {
    #[serde(deserialize_with = "crate::units::interned::deserialize")]
    pub name: crate::units::interned::Name,
    /// What this collector is for on this host, and why (socket collectors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(flatten)]
    pub health: Health,
    /// When a poll last succeeded (readiness and the staleness rule read it).
    #[serde(skip_serializing_if = "Option::is_none", default, with = "crate::units::serde_time::option")]
    pub last_success_at: Option<SystemTime>,
    pub last_duration_seconds: f64,
    pub polls_total: u64,
    pub errors_total: u64,
    pub dump_intr_retries_total: u64,
    pub tcp_info_short_total: u64,
    pub tcp_info_long_total: u64,
    /// eBPF only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub programs_attached: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ringbuf_lost_total: Option<u64>,
    /// eBPF only: ring-buffer records this build could not decode, since start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecodable_events_total: Option<u64>,
    /// The socket walk only: records the kernel could not write, since start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk_records_dropped_total: Option<u64>,
    /// The socket walk only: records the refill pass wrote again, since start (sockets that
    /// stopped moving within the walk's refresh of their record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk_records_refilled_total: Option<u64>,
    /// eBPF only: runs of each program the kernel skipped because one was already running on
    /// that CPU; for tcp_destroy_sock, close records that never were.
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        default,
        deserialize_with = "crate::units::interned::keys"
    )]
    pub recursion_misses_total: BTreeMap<&'static str, u64>,
    /// eBPF only: each feature on this kernel, on or off and why.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub features: Vec<crate::seam::FeatureState>,
}

impl CollectorStatus {
    /// The netlink collector before its first poll.
    pub fn netlink() -> CollectorStatus {
        CollectorStatus { name: "netlink", health: Health::Waiting, ..Default::default() }
    }

    /// The kernel walk before its first walk.
    pub fn walk() -> CollectorStatus {
        CollectorStatus { name: "walk", health: Health::Waiting, ..Default::default() }
    }

    /// Counts one kernel walk, read at `at`. Without the kernel's HZ its records carry no
    /// tcp_info, which is a degraded walk.
    pub fn saw_walk(&mut self, w: &crate::wire::walk::WalkStats, duration: Duration, at: SystemTime) {
        self.polls_total += 1;
        self.walk_records_dropped_total = Some(w.dropped_total);
        self.walk_records_refilled_total = Some(w.refilled_total);
        self.last_duration_seconds = duration.as_secs_f64();
        self.last_success_at = Some(at);
        self.health = if w.records > 0 && w.hz == 0 {
            Health::Degraded(Reason::new(
                Cause::WalkNoHz,
                "the kernel's HZ is unknown (no /proc/config.gz): walk records carry no tcp_info",
            ))
        } else {
            Health::Ok
        };
    }

    /// Counts one failed kernel walk.
    pub fn walk_failed(&mut self, error: String, duration: Duration) {
        self.polls_total += 1;
        self.errors_total += 1;
        self.health = Health::Degraded(Reason::new(Cause::WalkFailed, error));
        self.last_duration_seconds = duration.as_secs_f64();
    }

    /// The eBPF collector before (or without) its programs.
    pub fn bpf_off() -> CollectorStatus {
        CollectorStatus { name: "bpf", health: Health::Off(None), ..Default::default() }
    }

    /// Counts one failed netlink dump.
    pub fn failed(&mut self, error: String, duration: Duration) {
        self.polls_total += 1;
        self.errors_total += 1;
        self.health = Health::Degraded(Reason::new(Cause::DumpFailed, error));
        self.last_duration_seconds = duration.as_secs_f64();
    }

    /// Counts one successful netlink dump, read at `at`.
    pub fn saw_dump(&mut self, d: &crate::wire::DumpStats, at: SystemTime) {
        self.polls_total += 1;
        self.health = Health::Ok;
        self.last_success_at = Some(at);
        self.last_duration_seconds = d.duration.as_secs_f64();
        self.dump_intr_retries_total += u64::from(d.intr_retries);
        self.tcp_info_short_total += d.info_short;
        self.tcp_info_long_total += d.info_long;
    }

    /// One eBPF poll. Health follows this poll alone, so the collector recovers after a clean one.
    pub fn bpf_poll(&mut self, p: BpfPoll) {
        self.polls_total += 1;
        self.health = match (p.failure, p.limit) {
            (Some(r), _) if p.programs_attached == 0 => Health::Off(Some(r)),
            (Some(r), _) | (None, Some(r)) => Health::Degraded(r),
            (None, None) => Health::Ok,
        };
        if self.health.last_success() {
            self.last_success_at = p.at.or(self.last_success_at);
        }
        self.programs_attached = Some(p.programs_attached);
        self.ringbuf_lost_total = Some(p.ringbuf_lost_total);
        self.undecodable_events_total = Some(p.undecodable_events_total);
        self.recursion_misses_total = p.recursion_misses_total;
        self.features = p.features;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_reads_as_the_old_fields_did() {
        let json = |h: Health| serde_json::to_string(&h).unwrap();
        assert_eq!(json(Health::Waiting), r#"{"enabled":true,"last_success":false}"#);
        assert_eq!(json(Health::Ok), r#"{"enabled":true,"last_success":true}"#);
        assert_eq!(json(Health::Off(None)), r#"{"enabled":false,"last_success":false}"#);
        let limit = Reason::new(Cause::BbrStateOff, "BBR state off");
        assert_eq!(
            json(Health::Degraded(limit)),
            r#"{"enabled":true,"reason":"BBR state off","cause":"bbr_state_off","last_success":true}"#
        );
        let failed = Reason::new(Cause::RingBuffer, "ring buffer: EIO");
        assert_eq!(
            json(Health::Degraded(failed)),
            r#"{"enabled":true,"reason":"ring buffer: EIO","cause":"ring_buffer","last_success":false}"#
        );
        // And back, whole (a recording reads it so).
        for h in [
            Health::Waiting,
            Health::Ok,
            Health::Off(None),
            Health::Degraded(Reason::new(Cause::WalkFailed, "x")),
        ] {
            assert_eq!(serde_json::from_str::<Health>(&json(h.clone())).unwrap(), h);
        }
    }

    #[test]
    fn a_bpf_poll_with_nothing_attached_is_off() {
        let mut s = CollectorStatus::bpf_off();
        let why = Reason::new(Cause::NoBtf, "eBPF off: no kernel BTF");
        s.bpf_poll(BpfPoll { failure: Some(why.clone()), ..BpfPoll::default() });
        assert_eq!(s.health, Health::Off(Some(why)));
        s.bpf_poll(BpfPoll { programs_attached: 3, ..BpfPoll::default() });
        assert_eq!(s.health, Health::Ok);
    }
}
