//! The eBPF collector: availability checks, loading, and the poller [`Source`].
//!
//! The startup sequence (`cli::startup`) calls [`load`] once: it returns the BPF source when it
//! can run, and otherwise a status-only source carrying the one-line reason, so every status
//! report (snapshot collectors, exporter self-metrics) shows why eBPF is off. Which capabilities
//! can then be dropped is [`Loading::droppable`]'s answer; dropping them is the next step.

/// Includes a skeleton libbpf-cargo generated in OUT_DIR (see build.rs) as module `$name`, with
/// the lints its generated code trips allowed there only.
#[macro_export]
macro_rules! bpf_skeleton {
    ($name:ident, $file:literal) => {
        #[allow(
            unsafe_code,
            clippy::all,
            clippy::pedantic,
            clippy::undocumented_unsafe_blocks,
            non_camel_case_types,
            dead_code,
            unused_imports
        )]
        mod $name {
            include!(concat!(env!("OUT_DIR"), "/", $file));
        }
    };
}

#[cfg(feature = "bpf")]
mod clock;
#[cfg(feature = "bpf")]
mod collector;
#[cfg(feature = "bpf")]
mod counts;
#[cfg(feature = "bpf")]
mod drain;
pub mod event;
pub mod features;
#[cfg(feature = "bpf")]
mod libbpf_log;
#[cfg(feature = "bpf")]
pub mod loader;
pub mod plan;
#[cfg(feature = "bpf")]
pub mod refill;
#[cfg(feature = "bpf")]
pub mod walk;

use crate::caps::{self, Cap, CapSet};
use crate::every::Reconcile;
use crate::inet_diag::WindowStorage;
use bbrtop_core::model::StateSet;
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::seam::Update;
use bbrtop_core::seam::{BpfPoll, Cause, Reason};
use bbrtop_core::seam::{Feed, Source};
use std::path::Path;

pub use crate::host::VMLINUX_BTF as BTF_PATH;

/// Polls between netlink's reconciling dumps when the socket walk reads the sockets: the
/// backstop for what no counter sees. What one sees (ring records lost, walk records dropped, a
/// close the kernel skipped) reconciles at the next poll. At 100k sockets a dump costs 0.1 to 0.3
/// s of CPU, so it runs every 10 minutes, not every minute.
pub const RECONCILE_EVERY: u64 = 600;

/// What happened when the BPF collector was set up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BpfStatus {
    pub attached: Vec<&'static str>,
    /// Programs that failed to attach, with the error.
    pub failed: Vec<(&'static str, String)>,
    /// Why eBPF is off altogether (netlink-only).
    pub reason: Option<Reason>,
    /// What the attached programs cannot do on this kernel.
    pub limits: Vec<Reason>,
    /// What became of each program here.
    pub fates: Vec<(&'static str, plan::Fate)>,
    /// Each feature, on or off and why.
    pub features: Vec<bbrtop_core::seam::FeatureState>,
}

impl BpfStatus {
    fn off(reason: Reason) -> BpfStatus {
        let mut s = BpfStatus { reason: Some(reason), ..Default::default() };
        s.features = features::collector_features(&s, None, None);
        s
    }

    /// Sets the features from the programs' fates, what they read of `struct bbr` (`bbr`) and
    /// the walk's verdict, and the limits from them: each feature that is off, and a partial
    /// read of `struct bbr`.
    pub fn judge(&mut self, bbr: Option<&Reason>, walk: Option<&Reason>) {
        self.features = features::collector_features(self, bbr, walk);
        // One line per distinct reason, naming the features it turns off.
        let mut by_reason: Vec<(Vec<&str>, &Reason)> = Vec::new();
        for f in &self.features {
            let Some(r) = f.off.as_ref().filter(|r| r.cause != Cause::NotAsked) else { continue };
            match by_reason.iter_mut().find(|(_, seen)| seen.detail == r.detail) {
                Some((names, _)) => names.push(f.feature.label()),
                None => by_reason.push((vec![f.feature.label()], r)),
            }
        }
        let limits: Vec<Reason> = by_reason
            .into_iter()
            .map(|(names, r)| match r.cause {
                Cause::BbrStateOff => r.clone(),
                cause => Reason::new(cause, format!("{} off: {}", names.join(", "), r.detail)),
            })
            .chain(bbr.filter(|r| r.cause == Cause::BbrStatePartial).cloned())
            .collect();
        self.limits = limits;
    }
}

/// Why eBPF cannot run here, if it cannot: the feature, BTF, capabilities (never the uid).
pub fn unavailable(caps: CapSet, btf: &Path) -> Option<Reason> {
    if !cfg!(feature = "bpf") {
        return Some(Reason::new(
            Cause::NotBuilt,
            "eBPF off: built without the `bpf` feature (netlink-only)",
        ));
    }
    if !btf.exists() {
        let detail = format!("eBPF off: no kernel BTF at {} (netlink-only)", btf.display());
        return Some(Reason::new(Cause::NoBtf, detail));
    }
    let missing = caps.missing(&[Cap::Bpf, Cap::Perfmon]);
    if !missing.is_empty() {
        let detail = format!("eBPF off: missing {} (netlink-only)", caps::names(&missing));
        return Some(Reason::new(Cause::MissingCapabilities, detail));
    }
    None
}

/// The ring buffer's default size, 4 MiB: a close takes 200 bytes of it and a batch of up to 8
/// responses 200, so drained every 50 ms (`drain.rs`) it holds 20,000 closes at once (a proxy's
/// connections ended together), 400,000 a second, or as many batches: 20,000 sockets' responses. It is kernel memory, charged to
/// bbrtop's cgroup, and counts twice in its RSS (mapped twice, so a record never wraps).
pub const RING_BYTES: u32 = 4 << 20;

/// What loading eBPF gives the poller: its sources (or a status-only one with the reason it is
/// off), the status, and the RTT windows for the netlink collector to read.
pub struct Loading {
    pub sources: Vec<Box<dyn Source>>,
    pub status: BpfStatus,
    pub windows: Option<WindowStorage>,
    /// The kernel walk when asked for, or why there is none.
    pub walker: Result<Box<dyn Source>, String>,
    /// The programs were loaded without `struct bbr`, and tcp_bbr may load later: the collector
    /// then loads them again, which takes CAP_BPF and CAP_PERFMON.
    pub awaits_bbr: bool,
    /// Asked when the ring buffer or the walk's map lost events (closes among them, maybe): the
    /// netlink collector beside the walk reconciles at the next poll ([`crate::Every::or_when`]).
    pub lost: Reconcile,
}

impl Loading {
    fn off(reason: Reason) -> Loading {
        Loading {
            sources: vec![Box::new(Off(reason.clone()))],
            walker: Err(reason.detail.clone()),
            status: BpfStatus::off(reason),
            windows: None,
            awaits_bbr: false,
            lost: Reconcile::default(),
        }
    }

    /// The capabilities no longer needed once this is loaded: with programs attached,
    /// CAP_PERFMON (the fds are open), and CAP_BPF too unless the netlink collector reads the RTT
    /// windows (the kernel checks it each time inet_diag hands socket storage over). The walk
    /// needs neither: its iterator was attached at load, and its maps are open fds. None while
    /// tcp_bbr may still load: the programs are then loaded again, with both.
    pub fn droppable(&self) -> &'static [Cap] {
        match (self.status.attached.is_empty() || self.awaits_bbr, self.windows.is_some()) {
            (true, _) => &[],
            (false, true) => &[Cap::Perfmon],
            (false, false) => &[Cap::Bpf, Cap::Perfmon],
        }
    }
}

/// What the socket walk is asked for: the states it hands over, and where pod names come from.
pub struct WalkAsk {
    pub states: StateSet,
    pub pods: Option<crate::attrib::PodSource>,
}

/// eBPF turned off by `flag`: nothing is loaded, and the status says which flag did it.
pub fn disabled(flag: &str) -> Loading {
    Loading::off(Reason::new(Cause::Disabled, format!("eBPF off: {flag} (netlink-only)")))
}

/// Loads and attaches the programs, if this host and process can; with the socket walk when
/// asked for.
pub fn load(rule: &RuleConfig, walk: Option<WalkAsk>) -> Loading {
    load_sized(rule, walk, RING_BYTES)
}

/// [`load`] with a ring buffer of `ring_bytes` (`--bpf.ring-buffer-size`).
pub fn load_sized(rule: &RuleConfig, walk: Option<WalkAsk>, ring_bytes: u32) -> Loading {
    if let Some(reason) = unavailable(CapSet::effective(), Path::new(BTF_PATH)) {
        return Loading::off(reason);
    }
    load_source(rule, walk, ring_bytes)
}

#[cfg(feature = "bpf")]
fn load_source(rule: &RuleConfig, walk: Option<WalkAsk>, ring_bytes: u32) -> Loading {
    let cfg = loader::LoadConfig { walk: walk.is_some(), ring_bytes, ..loader::LoadConfig::from_rule(rule) };
    let lost = Reconcile::default();
    match loader::load(&cfg) {
        Ok(l) => {
            let mut status = l.status();
            if l.links.is_empty() {
                let detail = format!("eBPF off: no program attached ({})", describe_off(&status));
                let reason = Reason::new(Cause::NotAttached, detail);
                return Loading::off(reason);
            }
            let windows = l.window_storage().ok();
            let walker = match walk {
                Some(_) if walk::kernel_config().is_none() => Err("socket walk off: the kernel's config \
                    (/proc/config.gz or /boot/config-RELEASE) is not readable, and the walk needs its HZ"
                    .to_string()),
                Some(ask) => {
                    let resolver = crate::attrib::Resolver::new(ask.pods);
                    l.walker(ask.states, resolver)
                        .map(|w| Box::new(w.reconciling(lost.clone())) as Box<dyn Source>)
                }
                None => Err("not asked for".into()),
            };
            let walk_off = walker.as_ref().err().map(|why| {
                let cause = if why == "not asked for" { Cause::NotAsked } else { Cause::WalkFailed };
                Reason::new(cause, why.clone())
            });
            status.judge(l.bbr_limit().as_ref(), walk_off.as_ref());
            let awaits_bbr = l.awaits_bbr_module();
            let collector = collector::Collector::new(l, walk_off, lost.clone());
            Loading { sources: vec![Box::new(collector)], status, windows, walker, awaits_bbr, lost }
        }
        Err(e) => Loading::off(Reason::new(Cause::LoadFailed, format!("eBPF off: {e}"))),
    }
}

/// Why nothing attached: each program's reason.
#[cfg(feature = "bpf")]
fn describe_off(s: &BpfStatus) -> String {
    let offs: Vec<String> =
        features::program_names().filter_map(|p| features::program_off(s, p)).map(|r| r.detail).collect();
    offs.join("; ")
}

#[cfg(not(feature = "bpf"))]
fn load_source(_: &RuleConfig, _: Option<WalkAsk>, _: u32) -> Loading {
    unreachable!("unavailable() is Some without the bpf feature")
}

/// "tcp_probe: <error>; ..." for messages.
pub fn describe_failures(s: &BpfStatus) -> String {
    s.failed.iter().map(|(p, e)| format!("{p}: {e}")).collect::<Vec<_>>().join("; ")
}

/// Reports, at every poll, that eBPF is off and why.
struct Off(Reason);

impl Source for Off {
    fn poll(&mut self, feed: &mut dyn Feed) {
        feed.apply(Update::BpfStatus(BpfPoll { failure: Some(self.0.clone()), ..BpfPoll::default() }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_what_is_missing() {
        let all = CapSet((1 << 39) | (1 << 38));
        let btf = Path::new(BTF_PATH);
        if cfg!(feature = "bpf") {
            let none = unavailable(CapSet(0), Path::new("/nonexistent/btf")).unwrap();
            assert!(none.detail.contains("no kernel BTF") && none.cause == Cause::NoBtf, "{none}");
            if btf.exists() {
                let r = unavailable(CapSet(1 << 39), btf).unwrap();
                assert!(r.detail.contains("CAP_PERFMON") && !r.detail.contains("CAP_BPF"), "{r}");
                assert_eq!(r.cause, Cause::MissingCapabilities);
                assert_eq!(unavailable(all, btf), None);
            }
        } else {
            assert!(unavailable(all, btf).unwrap().detail.contains("feature"));
        }
    }
}
