//! The one startup sequence of the long-running commands (the TUI, `watch`, `export`), in the
//! order privilege demands: signals, then the lab (namespaces, tc), then netlink (inside
//! `--netns`), then eBPF, then dropping the capabilities no longer needed, and only then the
//! engine and its poller. `lab` runs the first step and its own runner (see `cli::lab`).

use super::Failure;
use super::args::{PollArgs, Want};
use crate::lab::{Lab, LabConfig};
use crate::runtime::Runtime;
use anyhow::Context;
use bbrtop_collect::bpf::{BpfStatus, Loading};
use bbrtop_collect::netns::NetnsSpec;
use bbrtop_collect::{Every, InetDiag};
use bbrtop_core::seam::Source;
use bbrtop_engine::{Engine, EngineConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Runs the sequence. `peers` say what the counters are kept per; `lab` builds the built-in lab
/// first and watches its sender; `note` gets one line when eBPF is off, partly attached or
/// limited.
pub fn start(
    poll: &PollArgs,
    peers: super::peers::Peers,
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
    let defaults = poll.engine_config();
    let top_labels = if peers.top == 0 { defaults.top_labels } else { peers.top };
    let cfg = EngineConfig { groups: peers.groups, geo: peers.geo, top_labels, arms: peers.arms, ..defaults };
    let states = cfg.filter.state_set();
    let mut diag = InetDiag::open(netns.as_ref(), states).map_err(Failure::from_collect)?;
    let (bpf_want, walk_want) = (poll.source.bpf(), poll.source.walk());
    let want_walk = wants_walk(bpf_want, walk_want, netns.is_some())?;
    let ask =
        want_walk.then(|| bbrtop_collect::bpf::WalkAsk { states, pods: poll.source.kubernetes_pods.clone() });
    let mut bpf = match bpf_want {
        Want::Off => bbrtop_collect::bpf::disabled("--no-collector.bpf"),
        _ => bbrtop_collect::bpf::load_sized(&cfg.rule, ask, poll.source.ring_bytes),
    };
    if let (Want::On, Some(reason)) = (bpf_want, &bpf.status.reason) {
        return Err(Failure::Privilege(format!("--collector.bpf: {reason}")));
    }
    let walker = take_walker(&mut bpf, walk_want, want_walk)?;
    drop_privileges(&bpf, note);
    if let Some(line) = bpf_note(&bpf.status) {
        note(&line);
    }
    let Loading { sources: bpf_sources, status, windows, walker: walk_off, lost, .. } = bpf;
    let walk_off = walk_off.err().filter(|w| !w.is_empty());
    let mut engine = Engine::new(cfg);
    let mut sources: Vec<Box<dyn Source>> = Vec::new();
    match walker {
        Some(walker) => {
            sources.push(Box::new(Every::new(diag, RECONCILE_EVERY).or_when(lost)));
            sources.extend(bpf_sources);
            sources.push(walker);
            engine.set_roles(netlink_seeds(), Some(WALK_READS.into()));
        }
        None => {
            if let Some(w) = windows {
                diag.read_windows(w);
            }
            sources.push(Box::new(diag));
            sources.extend(bpf_sources);
            let why = walk_off.as_deref();
            engine.set_roles(netlink_reads(walk_want, netns.is_some(), &status, why), None);
        }
    }
    let runtime = Runtime::start(engine, sources, poll.source.interval).context("starting the poller")?;
    Ok(Started { runtime, stop, netns, bpf: status, lab })
}

/// The first step of every long-running command: SIGINT, SIGTERM, SIGHUP (a terminal or SSH
/// session that goes away) and SIGQUIT set the returned flag instead of killing the process, so
/// it can restore the terminal and tear the lab down. Registered before anything is set up.
use bbrtop_collect::bpf::RECONCILE_EVERY;
/// What netlink does beside the walk, for the header.
fn netlink_seeds() -> String {
    format!(
        "seeds the host namespace's sockets at start and reconciles them every {RECONCILE_EVERY} polls, \
         and at the poll after eBPF lost events"
    )
}
const WALK_READS: &str = "reads the sockets that moved since the last poll, in every network namespace";

/// Whether to ask for the kernel walk: always for `--collector.walk` (an error with a narrowed
/// view or without eBPF), never for `--no-collector.walk` or `--no-collector.bpf`, and by
/// default unless one namespace is asked for.
fn wants_walk(bpf: Want, walk: Want, one_netns: bool) -> Result<bool, Failure> {
    match (bpf, walk, one_netns) {
        (Want::Off, Want::On, _) => {
            Err(Failure::Usage("--collector.walk needs eBPF, which --no-collector.bpf turns off".into()))
        }
        (_, Want::On, true) => Err(Failure::Usage(
            "--collector.walk reads every namespace; --netns and --lab read one (use --no-collector.walk)"
                .into(),
        )),
        (Want::Off, ..) | (_, Want::Off, _) | (_, Want::Auto, true) => Ok(false),
        (_, Want::On | Want::Auto, false) => Ok(true),
    }
}

/// The walk, if it loaded; `--collector.walk` without it is an error, auto falls back to netlink.
/// With the walk, netlink reads no RTT windows (the walk carries them), so CAP_BPF can go too.
fn take_walker(bpf: &mut Loading, choice: Want, wanted: bool) -> Result<Option<Box<dyn Source>>, Failure> {
    if !wanted {
        return Ok(None);
    }
    match std::mem::replace(&mut bpf.walker, Err(String::new())) {
        Ok(w) => {
            bpf.windows = None;
            Ok(Some(w))
        }
        Err(why) if choice == Want::On => Err(Failure::Privilege(format!("--collector.walk: {why}"))),
        Err(why) => {
            bpf.walker = Err(why);
            Ok(None)
        }
    }
}

/// Netlink's role when it reads every socket, and why the walk does not (`walk_off`: the
/// walk's own reason, when it was asked for and could not run).
fn netlink_reads(choice: Want, one_netns: bool, bpf: &BpfStatus, walk_off: Option<&str>) -> String {
    let why = match (choice, one_netns, &bpf.reason, walk_off) {
        (Want::Off, ..) => "--no-collector.walk".to_string(),
        (_, true, ..) => "one namespace asked for".to_string(),
        (_, _, Some(r), _) => r.detail.clone(),
        (.., Some(w)) => w.to_string(),
        _ => "the kernel walk did not load".to_string(),
    };
    format!("reads every socket of its namespace each poll (no kernel walk: {why})")
}

///
/// SIGUSR1 is the exporter's hindsight signal, and its default action kills: a `kill -USR1` meant
/// for the exporter (or sent to every bbrtop by name) must not end a lab, a recording or the TUI
/// mid-run. So every long-running command takes it here and it only sets [`usr1`]'s flag, which
/// the exporter reads and the other commands leave alone. SIGUSR2, SIGALRM, SIGVTALRM and SIGPROF
/// do nothing (see [`STRAYS`]).
pub fn signals() -> Result<Arc<AtomicBool>, Failure> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1};
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGTERM, SIGINT, SIGQUIT] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing signal handlers")?;
    }
    let hup = if HUP_RELOADS.load(Ordering::Relaxed) { Arc::clone(hup()) } else { Arc::clone(&stop) };
    signal_hook::flag::register(SIGHUP, hup).context("installing signal handlers")?;
    static USR1_TAKEN: std::sync::Once = std::sync::Once::new();
    let mut taken = Ok(());
    USR1_TAKEN.call_once(|| taken = signal_hook::flag::register(SIGUSR1, Arc::clone(usr1())).map(drop));
    taken.context("installing the SIGUSR1 handler")?;
    ignore_strays()?;
    Ok(stop)
}

/// Signals bbrtop does not use whose default action terminates: as node_exporter and Prometheus
/// do, a stray one (a mistyped `kill`, a timer meant for someone else) must not end a recording
/// mid-chunk or an experiment before its summary.
const STRAYS: [std::ffi::c_int; 4] = {
    use signal_hook::consts::{SIGALRM, SIGPROF, SIGUSR2, SIGVTALRM};
    [SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF]
};

/// Takes [`STRAYS`] with a handler that does nothing, once. A handler rather than SIG_IGN: an
/// ignored signal stays ignored across exec, in the `ip` and `tc` the lab runs; a handler does not.
fn ignore_strays() -> Result<(), Failure> {
    static TAKEN: std::sync::Once = std::sync::Once::new();
    let mut taken = Ok(());
    TAKEN.call_once(|| {
        let unread = Arc::new(AtomicBool::new(false));
        taken = STRAYS
            .iter()
            .try_for_each(|&sig| signal_hook::flag::register(sig, Arc::clone(&unread)).map(drop));
    });
    taken.context("installing signal handlers")?;
    Ok(())
}

/// Whether SIGHUP asks for a reload ([`hup`]) rather than a stop: the exporter's, a daemon's,
/// set before [`signals`] runs.
pub static HUP_RELOADS: AtomicBool = AtomicBool::new(false);

/// Set by SIGHUP where it reloads; whoever acts on it swaps it back to false.
pub fn hup() -> &'static Arc<AtomicBool> {
    static HUP: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    HUP.get_or_init(Arc::default)
}

/// Set by SIGUSR1 once [`signals`] ran; whoever acts on it swaps it back to false.
pub fn usr1() -> &'static Arc<AtomicBool> {
    static USR1: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    USR1.get_or_init(Arc::default)
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
    if bpf.awaits_bbr {
        note(
            "bbrtop: keeping CAP_BPF and CAP_PERFMON: tcp_bbr is not loaded, and the eBPF programs are \
             loaded again to read BBR's state once it is",
        );
    }
    let drop = bpf.droppable();
    if drop.is_empty() {
        return;
    }
    if let Err(e) = bbrtop_collect::caps::drop(drop) {
        note(&format!("bbrtop: could not drop {}: {e}", bbrtop_collect::caps::names(drop)));
    }
}

/// One line about eBPF, when it is off, partly attached or limited.
pub fn bpf_note(status: &BpfStatus) -> Option<String> {
    if let Some(reason) = &status.reason {
        return Some(format!("bbrtop: {reason}"));
    }
    let mut parts = Vec::new();
    if !status.failed.is_empty() {
        parts.push(format!("partly attached: {}", bbrtop_collect::bpf::describe_failures(status)));
    }
    parts.extend(status.limits.iter().map(|r| r.detail.clone()));
    (!parts.is_empty()).then(|| format!("bbrtop: eBPF {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::snapshot::status::{Cause, Reason};

    #[test]
    fn netlinks_role_says_why_the_walk_is_not_used() {
        let ok = BpfStatus::default();
        let role = |c, one, w| netlink_reads(c, one, &ok, w);
        assert!(role(Want::Off, false, None).ends_with("(no kernel walk: --no-collector.walk)"));
        assert!(role(Want::Auto, true, None).contains("one namespace asked for"));
        let no_hz = "socket walk off: the kernel's config is not readable";
        assert!(role(Want::Auto, false, Some(no_hz)).contains(no_hz));
        let off = BpfStatus { reason: Some(Reason::new(Cause::NoBtf, "eBPF off: no BTF")), ..ok.clone() };
        assert!(netlink_reads(Want::Auto, false, &off, Some(no_hz)).contains("eBPF off: no BTF"));
    }

    #[test]
    fn the_walk_is_asked_for_unless_turned_off_or_one_namespace_is_watched() {
        let walk = |bpf, walk, one| wants_walk(bpf, walk, one).map_err(|f| f.to_string());
        assert_eq!(walk(Want::Auto, Want::Auto, false), Ok(true));
        assert_eq!(walk(Want::On, Want::Auto, false), Ok(true));
        assert_eq!(walk(Want::Auto, Want::Auto, true), Ok(false));
        assert_eq!(walk(Want::Auto, Want::Off, false), Ok(false));
        assert_eq!(walk(Want::Off, Want::Auto, false), Ok(false), "no eBPF, no walk");
        assert!(walk(Want::Auto, Want::On, true).unwrap_err().contains("--no-collector.walk"));
        assert!(walk(Want::Off, Want::On, false).unwrap_err().contains("--no-collector.bpf"));
    }

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
