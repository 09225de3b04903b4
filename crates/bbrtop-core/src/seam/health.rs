//! A collector's health as it reports it: why it is off or degraded (a cause from a fixed set,
//! and a line for people). The snapshot's
//! [`crate::snapshot::CollectorStatus`] keeps these per collector.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a collector is off or degraded. A fixed set, so the metric that carries it keeps a bounded
/// number of series; the human detail rides beside it in [`Reason`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Turned off by a flag (`--no-collector.bpf`).
    Disabled,
    /// Built without the `bpf` feature.
    NotBuilt,
    /// No kernel BTF.
    NoBtf,
    /// CAP_BPF or CAP_PERFMON missing.
    MissingCapabilities,
    /// The object did not load (the verifier, most often).
    LoadFailed,
    /// It loaded, but no program attached.
    NotAttached,
    /// The programs cannot read `struct bbr` here (a limit: polls still succeed).
    BbrStateOff,
    /// The programs read BBR's phase but not all of `struct bbr`'s fields (a limit too).
    BbrStatePartial,
    /// Draining the ring buffer failed.
    RingBuffer,
    /// Ring-buffer records this build could not decode.
    UndecodableEvents,
    /// A netlink dump failed.
    DumpFailed,
    /// The kernel walk's records carry no tcp_info: the kernel's HZ is unknown.
    WalkNoHz,
    /// Reading the kernel walk failed.
    WalkFailed,
    /// `--connect`: the remote exporter gave no frame (down, refused the credentials, sent
    /// something else).
    Remote,
    /// This kernel lacks what a program needs (a tracepoint, a function, a helper for tracing
    /// programs): that program is not loaded, the rest are.
    KernelLacks,
    /// The verifier refused one program (its log is kept); the rest loaded.
    Rejected,
    /// A feature that was not asked for (the walk without `--collector.walk`).
    NotAsked,
}

impl Cause {
    /// The value of the `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Cause::Disabled => "disabled",
            Cause::NotBuilt => "not_built",
            Cause::NoBtf => "no_btf",
            Cause::MissingCapabilities => "missing_capabilities",
            Cause::LoadFailed => "load_failed",
            Cause::NotAttached => "not_attached",
            Cause::BbrStateOff => "bbr_state_off",
            Cause::BbrStatePartial => "bbr_state_partial",
            Cause::RingBuffer => "ring_buffer",
            Cause::UndecodableEvents => "undecodable_events",
            Cause::DumpFailed => "dump_failed",
            Cause::WalkNoHz => "walk_no_hz",
            Cause::WalkFailed => "walk_failed",
            Cause::Remote => "remote",
            Cause::KernelLacks => "kernel_lacks",
            Cause::Rejected => "rejected",
            Cause::NotAsked => "not_asked",
        }
    }

    /// A limit of what the collector can do here, rather than a failure of its polls.
    pub fn is_limit(self) -> bool {
        matches!(
            self,
            Cause::BbrStateOff
                | Cause::BbrStatePartial
                | Cause::WalkNoHz
                | Cause::KernelLacks
                | Cause::Rejected
        )
    }
}

/// A cause, and one line for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    pub cause: Cause,
    pub detail: String,
}

impl Reason {
    pub fn new(cause: Cause, detail: impl Into<String>) -> Reason {
        Reason { cause, detail: detail.into() }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}
