//! `bbrtop check`: say which kernel and BBR the host runs, load and attach the eBPF programs this
//! kernel can carry (the rest left out, each with its reason), make one netlink dump, one
//! ring-buffer poll and one read of the socket walk (which `watch`, `export` and the TUI use by
//! default), load `bbrtop experiment`'s program without attaching it, and print each feature,
//! on or off and why. Exit 0 when everything this kernel can carry ran; 1 when something that
//! should have did not (a refused or unattached program, a failed read, a missing privilege).

use super::Failure;
use super::args::SourceArgs;
use bbrtop_collect::InetDiag;
use bbrtop_core::model::StateSet;
use bbrtop_core::seam::{Cause, Feature, FeatureState, Reason};
use clap::Args;
use serde::Serialize;

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print one JSON document instead of lines.
    #[arg(long)]
    pub json: bool,
}

/// What `check` found, as `--json` prints it.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub kernel: String,
    pub host_bbr: String,
    pub netlink: Step,
    /// Each program: attached, or why not.
    pub programs: Vec<ProgramLine>,
    /// `struct bbr` as the programs were relocated against it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub struct_bbr: Option<String>,
    pub ring_buffer: Step,
    pub walk: Step,
    pub features: Vec<FeatureState>,
    /// Everything this kernel can carry ran.
    pub ok: bool,
}

/// One step's outcome: ok with a line, or failed with why.
#[derive(Debug, Default, Serialize)]
pub struct Step {
    pub ok: bool,
    pub detail: String,
}

#[derive(Debug, Serialize)]
pub struct ProgramLine {
    pub name: &'static str,
    /// attached, not_needed, left_out (the kernel lacks what it needs), refused, not_attached
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

pub fn run(a: CheckArgs) -> Result<u8, Failure> {
    let mut r = Report {
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string(),
        host_bbr: bbrtop_collect::host::host_bbr().to_string(),
        ..Report::default()
    };
    r.netlink = match InetDiag::open(a.source.netns.as_ref(), StateSet::default_filter())
        .and_then(|mut d| d.dump())
    {
        Ok(d) => Step { ok: true, detail: format!("{} sockets", d.sockets.len()) },
        Err(e) => Step { ok: false, detail: e.to_string() },
    };
    let bpf_ok = bpf(&mut r);
    let experiment = experiment();
    r.features.push(experiment.clone());
    let excused = |c: Cause| matches!(c, Cause::KernelLacks | Cause::MissingCapabilities);
    r.ok = r.netlink.ok && bpf_ok && experiment.off.as_ref().is_none_or(|o| excused(o.cause));
    if a.json {
        println!("{}", serde_json::to_string(&r).map_err(|e| Failure::Runtime(e.into()))?);
    } else {
        print!("{}", text(&r));
    }
    Ok(if r.ok { 0 } else { 1 })
}

/// The report as lines, one per step, program and feature.
pub fn text(r: &Report) -> String {
    let mut out = format!("kernel: {}\nhost: {}\n", r.kernel, r.host_bbr);
    let step = |s: &Step| if s.ok { format!("ok, {}", s.detail) } else { format!("FAILED: {}", s.detail) };
    out += &format!("netlink: {}\n", step(&r.netlink));
    for p in &r.programs {
        out += &match (p.state, p.id, &p.reason) {
            ("attached", Some(id), _) => format!("bpf: attached {} (prog id {id})\n", p.name),
            (_, _, Some(why)) => format!("bpf: {} {}: {why}\n", p.state.replace('_', " "), p.name),
            (state, ..) => format!("bpf: {} {}\n", state.replace('_', " "), p.name),
        };
    }
    if let Some(s) = &r.struct_bbr {
        out += &format!("bpf: {s}\n");
    }
    out += &format!("bpf: ring buffer {}\n", step(&r.ring_buffer));
    out += &format!("walk: {}\n", step(&r.walk));
    for f in &r.features {
        out += &match &f.off {
            None => format!("feature {}: on\n", f.feature.label()),
            Some(why) => format!("feature {}: off: {why}\n", f.feature.label()),
        };
    }
    out
}

/// `bbrtop experiment`'s program through this kernel's verifier, where this process holds
/// what the experiment needs (CAP_BPF and CAP_NET_ADMIN: the exporter's unit has the one, not
/// the other, and that is no fault of the host).
fn experiment() -> FeatureState {
    use bbrtop_collect::caps::{Cap, CapSet, names};
    let missing = CapSet::effective().missing(&[Cap::Bpf, Cap::NetAdmin]);
    if !missing.is_empty() {
        let why = format!("not checked: loading it needs {}", names(&missing));
        return FeatureState::off(Feature::Experiment, Reason::new(Cause::MissingCapabilities, why));
    }
    #[cfg(feature = "bpf")]
    let loaded = crate::experiment::attach::verify().map_err(|e| e.to_string());
    #[cfg(not(feature = "bpf"))]
    let loaded: Result<(), String> = Err("built without the `bpf` feature".into());
    match loaded {
        Ok(()) => FeatureState::on(Feature::Experiment),
        Err(e) => FeatureState::off(Feature::Experiment, Reason::new(Cause::Rejected, e)),
    }
}

/// Loads the collectors' programs and reads what they give once; false when something this
/// kernel can carry did not run.
#[cfg(feature = "bpf")]
fn bpf(r: &mut Report) -> bool {
    use bbrtop_collect::bpf::{self, BpfStatus, loader, plan::Fate};
    use std::path::Path;
    let off = |r: &mut Report, reason: Reason| {
        let s = BpfStatus { reason: Some(reason), ..BpfStatus::default() };
        r.features = bpf::features::collector_features(&s, None, None);
        r.ring_buffer = Step { ok: false, detail: "not loaded".into() };
        r.walk = Step { ok: false, detail: "not loaded".into() };
    };
    if let Some(reason) =
        bpf::unavailable(bbrtop_collect::caps::CapSet::effective(), Path::new(bpf::BTF_PATH))
    {
        off(r, reason);
        return false;
    }
    let cfg = loader::LoadConfig {
        walk: true,
        ..loader::LoadConfig::from_rule(&bbrtop_core::rule::RuleConfig::default())
    };
    let l = match loader::load(&cfg) {
        Ok(l) => l,
        Err(e) => {
            off(r, Reason::new(Cause::LoadFailed, format!("eBPF off: {e}")));
            return false;
        }
    };
    let status = l.status();
    for (name, fate) in &l.fates {
        let id = l.prog_ids.iter().find(|(n, _)| n == name).map(|(_, id)| *id);
        let (state, reason) = match fate {
            Fate::Load => match l.failed.iter().find(|(n, _)| n == name) {
                Some((_, e)) => ("not_attached", Some(e.clone())),
                None => ("attached", None),
            },
            Fate::Lacks(need) => ("left_out", Some(need.to_string())),
            Fate::NotNeeded => ("not_needed", None),
            Fate::Rejected(why) => ("refused", Some(why.clone())),
        };
        r.programs.push(ProgramLine { name, state, id, reason });
    }
    r.struct_bbr = l.struct_bbr.as_ref().map(|s| {
        let from = if l.bbr_from_module { " (tcp_bbr's module BTF)" } else { "" };
        format!("{s}{from}: reads {}", s.fields.join(", "))
    });
    let polled = l.consume();
    let events = l.take_events().len();
    r.ring_buffer = match &polled {
        Ok(()) => Step { ok: true, detail: format!("{events} events, {} lost", l.lost_total()) },
        Err(e) => Step { ok: false, detail: e.clone() },
    };
    let walk_off = walk(&l, &mut r.walk);
    let mut status = status;
    status.judge(l.bbr_limit().as_ref(), walk_off.as_ref());
    r.features = status.features;
    let refused = r.programs.iter().any(|p| matches!(p.state, "refused" | "not_attached"));
    let lacks_all = l.links.is_empty();
    !refused && (lacks_all || (polled.is_ok() && (r.walk.ok || walk_lacks(&walk_off))))
}

/// Whether the walk is off only for what the kernel lacks.
#[cfg(feature = "bpf")]
fn walk_lacks(off: &Option<Reason>) -> bool {
    off.as_ref().is_some_and(|r| r.cause == Cause::KernelLacks)
}

/// One read of the socket walk, as the long-running commands make each poll; why it is off,
/// if it is.
#[cfg(feature = "bpf")]
fn walk(l: &bbrtop_collect::bpf::loader::Loaded, step: &mut Step) -> Option<Reason> {
    use bbrtop_collect::bpf::features::program_off;
    let status = l.status();
    if let Some(why) = ["tcp_probe", "tcp_established", "tcp_rcv_space_adjust", "tcp_destroy_sock"]
        .iter()
        .find_map(|p| program_off(&status, p))
    {
        *step = Step { ok: false, detail: format!("off: {why}") };
        return Some(why);
    }
    if bbrtop_collect::bpf::walk::kernel_config().is_none() {
        let why = "the kernel's config (/proc/config.gz or /boot/config-RELEASE) is not readable, and the \
                   walk needs its HZ; netlink reads one namespace instead";
        *step = Step { ok: false, detail: format!("off: {why}") };
        return Some(Reason::new(Cause::WalkNoHz, why));
    }
    let resolver = bbrtop_collect::attrib::Resolver::new(None);
    match l.walker(StateSet::default_filter(), resolver).and_then(|mut w| w.walk()) {
        Ok(read) => {
            let detail = format!(
                "{} sockets moved since the programs attached, in every namespace ({} records dropped)",
                read.sockets.len(),
                read.stats.dropped_total
            );
            *step = Step { ok: true, detail };
            None
        }
        Err(e) => {
            *step = Step { ok: false, detail: e.clone() };
            Some(Reason::new(Cause::WalkFailed, e))
        }
    }
}

#[cfg(not(feature = "bpf"))]
fn bpf(r: &mut Report) -> bool {
    let reason = Reason::new(Cause::NotBuilt, "eBPF off: built without the `bpf` feature (netlink-only)");
    let s = bbrtop_collect::bpf::BpfStatus { reason: Some(reason), ..Default::default() };
    r.features = bbrtop_collect::bpf::features::collector_features(&s, None, None);
    false
}
