//! The one startup sequence of the long-running commands (the TUI, `watch`, `export`), in the
//! order privilege demands: signals, then the lab (namespaces, tc), then netlink (inside
//! `--netns`), then eBPF, then dropping the capabilities no longer needed, and only then the
//! engine and its poller. `lab` runs the first step and its own runner (see `cli::lab`).

use super::Failure;
use super::args::PollArgs;
use crate::bpf::{BpfStatus, Loading};
use crate::collect::InetDiag;
use crate::engine::Engine;
use crate::engine::sink::Source;
use crate::lab::{Lab, LabConfig};
use crate::netns::NetnsSpec;
use crate::runtime::Runtime;
use anyhow::Context;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What a running command holds. Fields drop in this order: the poller stops before the lab goes.
pub struct Started {
    pub runtime: Runtime,
    /// Set by SIGINT, SIGTERM, SIGHUP or SIGQUIT.
    pub stop: Arc<AtomicBool>,
    /// The namespace watched: `--netns`, the lab's sender, or this process's (None).
    pub netns: Option<NetnsSpec>,
    pub bpf: BpfStatus,
    pub lab: Option<Lab>,
}

/// Runs the sequence. `lab` builds the built-in lab first and watches its sender; `note` gets
/// one line when eBPF is off, partly attached or limited.
pub fn start(
    poll: &PollArgs,
    lab: Option<LabConfig>,
    note: &mut dyn FnMut(&str),
) -> Result<Started, Failure> {
    // 1. Signals, so an interrupt during the steps below still cleans up.
    let stop = signals()?;
    // 2. The lab: namespaces and shaping (CAP_NET_ADMIN, CAP_SYS_ADMIN).
    let lab = lab.map(start_lab).transpose()?;
    let netns = match &lab {
        Some(l) => Some(NetnsSpec(l.sender_netns().to_path_buf())),
        None => poll.source.netns.clone(),
    };
    // 3. Netlink, opened inside the watched namespace (CAP_SYS_ADMIN for another one).
    let cfg = poll.engine_config();
    let mut diag = InetDiag::open(netns.as_ref(), cfg.filter.state_set()).map_err(Failure::from_collect)?;
    // 4. eBPF: load and attach (CAP_BPF, CAP_PERFMON), or the reason it is off.
    let bpf = crate::bpf::load(&cfg.rule);
    // 5. Capabilities the attached programs no longer need.
    drop_privileges(&bpf, note);
    if let Some(line) = bpf_note(&bpf.status) {
        note(&line);
    }
    let Loading { sources: bpf_sources, status, windows } = bpf;
    if let Some(w) = windows {
        diag.read_windows(w);
    }
    let mut sources: Vec<Box<dyn Source>> = vec![Box::new(diag)];
    sources.extend(bpf_sources);
    // 6. The engine, and 7. its poller: unprivileged from here on.
    let engine = Engine::new(cfg);
    let runtime = Runtime::start(engine, sources, poll.source.interval).context("starting the poller")?;
    Ok(Started { runtime, stop, netns, bpf: status, lab })
}

/// The first step of every long-running command: SIGINT, SIGTERM, SIGHUP (a terminal or SSH
/// session that goes away) and SIGQUIT set the returned flag instead of killing the process, so
/// it can restore the terminal and tear the lab down. Registered before anything is set up.
pub fn signals() -> Result<Arc<AtomicBool>, Failure> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGTERM, SIGINT, SIGHUP, SIGQUIT] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing signal handlers")?;
    }
    Ok(stop)
}

/// The built-in lab of `bbrtop --lab`: a 40 ms round trip (so min RTT and inflation read as on a
/// real path), the default bottleneck, one BBR and one CUBIC flow.
fn start_lab(cfg: LabConfig) -> Result<Lab, Failure> {
    let mut lab = Lab::new(cfg).map_err(|e| match e {
        crate::lab::LabError::Privilege(m) => Failure::Privilege(format!("--lab needs {m}")),
        e => Failure::Runtime(e.into()),
    })?;
    for cc in ["bbr", "cubic"] {
        lab.start_flow(cc).map_err(|e| Failure::Runtime(e.into()))?;
    }
    Ok(lab)
}

/// The lab `--lab` watches.
pub fn live_lab() -> LabConfig {
    LabConfig { delay: Some(Duration::from_millis(20)), ..LabConfig::default() }
}

/// Drops what eBPF no longer needs, once it is attached: everything after this runs with less.
fn drop_privileges(bpf: &Loading, note: &mut dyn FnMut(&str)) {
    let drop = bpf.droppable();
    if drop.is_empty() {
        return;
    }
    if let Err(e) = crate::caps::drop(drop) {
        note(&format!("bbrtop: could not drop {}: {e}", crate::caps::names(drop)));
    }
}

/// One line about eBPF, when it is off, partly attached or limited.
pub fn bpf_note(status: &BpfStatus) -> Option<String> {
    if let Some(reason) = &status.reason {
        return Some(format!("bbrtop: {reason}"));
    }
    let mut parts = Vec::new();
    if !status.failed.is_empty() {
        parts.push(format!("partly attached: {}", crate::bpf::describe_failures(status)));
    }
    parts.extend(status.limits.iter().map(|r| r.detail.clone()));
    (!parts.is_empty()).then(|| format!("bbrtop: eBPF {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::status::{Cause, Reason};

    #[test]
    fn the_note_is_one_line_with_what_is_off_or_missing() {
        assert_eq!(bpf_note(&BpfStatus::default()), None);
        let limited = BpfStatus {
            limits: vec![Reason::new(Cause::BbrStateOff, "BBR state off: x")],
            ..Default::default()
        };
        assert_eq!(bpf_note(&limited).as_deref(), Some("bbrtop: eBPF BBR state off: x"));
        let both = BpfStatus { failed: vec![("tcp_probe", "EPERM".into())], ..limited.clone() };
        assert_eq!(
            bpf_note(&both).as_deref(),
            Some("bbrtop: eBPF partly attached: tcp_probe: EPERM; BBR state off: x")
        );
        let off = BpfStatus { reason: Some(Reason::new(Cause::NoBtf, "eBPF off: no BTF")), ..both };
        assert_eq!(bpf_note(&off).as_deref(), Some("bbrtop: eBPF off: no BTF"), "off says only why");
    }
}
