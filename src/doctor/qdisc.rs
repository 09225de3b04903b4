//! The qdiscs attached to each interface, and whether fq sits where BBR's packets leave. The
//! sysctl net.core.default_qdisc only names what the kernel attaches to interfaces created later;
//! what paces BBR is the qdisc on the interface now: fq at the leaf a flow goes through, or else
//! TCP's internal pacing (4.13+). Pure: `ip -j link show` and `tc -s -j qdisc show` are parsed
//! here, and read in [`super::host`].

use super::{Check, Status};
use serde::Serialize;
use serde_json::Value;

/// One qdisc of an interface, as tc shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Qdisc {
    pub kind: String,
    /// "1:", "8001:", or "0:" for the children the kernel attaches to mq.
    pub handle: String,
    /// `None` for the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// fq's throttled flows, where the kernel has fq (tc -s prints it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled: Option<u64>,
}

/// An interface that is up, and its egress qdiscs (root first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Interface {
    pub name: String,
    pub qdiscs: Vec<Qdisc>,
}

/// Qdiscs that do not queue egress traffic (tc lists them beside the root).
const NOT_EGRESS: &[&str] = &["ingress", "clsact"];

/// The interfaces that are up and not loopback, from `ip -j link show`, with their qdiscs from
/// `tc -s -j qdisc show` (both for the whole namespace).
pub fn parse(links_json: &str, qdiscs_json: &str) -> Result<Vec<Interface>, String> {
    let links: Vec<Value> = serde_json::from_str(links_json).map_err(|e| format!("ip -j link show: {e}"))?;
    let qdiscs: Vec<Value> =
        serde_json::from_str(qdiscs_json).map_err(|e| format!("tc -j qdisc show: {e}"))?;
    let flag =
        |l: &Value, f: &str| l["flags"].as_array().is_some_and(|a| a.iter().any(|v| v.as_str() == Some(f)));
    Ok(links
        .iter()
        .filter(|l| flag(l, "UP") && !flag(l, "LOOPBACK"))
        .filter_map(|l| l["ifname"].as_str())
        .map(|name| {
            let mut qs: Vec<Qdisc> = qdiscs
                .iter()
                .filter(|q| q["dev"].as_str() == Some(name))
                .filter_map(qdisc)
                .filter(|q| !NOT_EGRESS.contains(&q.kind.as_str()))
                .collect();
            // The root first; tc lists children after it but does not promise to.
            qs.sort_by_key(|q| q.parent.is_some());
            Interface { name: name.to_string(), qdiscs: qs }
        })
        .collect())
}

fn qdisc(q: &Value) -> Option<Qdisc> {
    let root = q["root"].as_bool().unwrap_or(false);
    Some(Qdisc {
        kind: q["kind"].as_str()?.to_string(),
        handle: q["handle"].as_str().unwrap_or("0:").to_string(),
        parent: if root { None } else { q["parent"].as_str().map(str::to_string) },
        throttled: find_u64(q, "throttled"),
    })
}

/// A number under `key` anywhere in `v` (tc prints fq's extended stats beside the basic ones).
fn find_u64(v: &Value, key: &str) -> Option<u64> {
    match v {
        Value::Object(m) => {
            m.get(key).and_then(Value::as_u64).or_else(|| m.values().find_map(|x| find_u64(x, key)))
        }
        _ => None,
    }
}

/// "1:10" → "1"; "1:" → "1".
fn major(id: &str) -> &str {
    id.split(':').next().unwrap_or("")
}

/// The qdiscs packets end in: those under `q` with nothing under them (`q` itself if it has no
/// children). mq's children have handle 0: and so no children of their own.
fn leaves<'a>(all: &'a [Qdisc], q: &'a Qdisc, depth: usize) -> Vec<&'a Qdisc> {
    let m = major(&q.handle);
    let children: Vec<&Qdisc> =
        all.iter().filter(|c| m != "0" && c.parent.as_deref().is_some_and(|p| major(p) == m)).collect();
    if children.is_empty() || depth > 8 {
        return vec![q];
    }
    children.into_iter().flat_map(|c| leaves(all, c, depth + 1)).collect()
}

/// "mq: 4 x fq", "htb: pfifo", "tbf", "fq (throttled 2)".
fn describe(root: &Qdisc, leaves: &[&Qdisc]) -> String {
    let throttled: u64 = leaves.iter().filter_map(|q| q.throttled).sum();
    let has_fq = leaves.iter().any(|q| q.kind == "fq");
    let tail = if has_fq { format!(" (throttled {throttled})") } else { String::new() };
    if leaves.len() == 1 && std::ptr::eq(leaves[0], root) {
        return format!("{}{tail}", root.kind);
    }
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for l in leaves {
        match kinds.iter_mut().find(|(k, _)| *k == l.kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((&l.kind, 1)),
        }
    }
    let parts: Vec<String> =
        kinds.iter().map(|(k, n)| if *n > 1 { format!("{n} x {k}") } else { k.to_string() }).collect();
    format!("{}: {}{tail}", root.kind, parts.join(", "))
}

/// Replaces a leaf with `kind` (fq, or fq_codel on a kernel without fq).
fn fix_leaf(dev: &str, root: &Qdisc, leaf: &Qdisc, kind: &str) -> String {
    match &leaf.parent {
        None => match root.kind.as_str() {
            // A shaper with no qdisc of its own under it: attach one under its class.
            "tbf" => format!("tc qdisc add dev {dev} parent {}1 {kind}", root.handle),
            "htb" | "hfsc" | "drr" => {
                format!(
                    "tc qdisc add dev {dev} parent CLASSID {kind}  # each leaf class of: tc class show dev {dev}"
                )
            }
            _ => format!("tc qdisc replace dev {dev} root {kind}"),
        },
        Some(p) => format!("tc qdisc replace dev {dev} parent {p} {kind}"),
    }
}

/// Kinds under which BBR paces itself and the queue is kept short: fine without fq (4.13+).
const AQM: &[&str] = &["fq_codel", "cake"];

/// One check per interface: is fq where BBR's packets leave? `pacer` is the qdisc this kernel has
/// to recommend ([`super::sched::Kinds::pacer`]: fq, else fq_codel), or none: then there is no
/// `tc` line to offer, and BBR's own pacing is what it has.
pub fn checks(
    ifaces: Option<&[Interface]>,
    ver: Option<(u32, u32)>,
    default_qdisc: Option<&str>,
    pacer: Option<&str>,
) -> Vec<Check> {
    let Some(ifaces) = ifaces else {
        return vec![Check {
            name: "qdiscs".into(),
            status: Status::Info,
            value: "unknown".into(),
            why: "`ip -j link show` and `tc -j qdisc show` could not be run (iproute2 missing?), so the qdiscs on the interfaces are unknown.".into(),
            fix: vec![],
        }];
    };
    ifaces.iter().filter_map(|i| interface(i, ver, default_qdisc, pacer)).collect()
}

/// What the kernel's qdiscs leave to recommend, said after the finding.
fn without_fq(pacer: Option<&str>) -> &'static str {
    match pacer {
        Some("fq") => "",
        Some(_) => " This kernel has no fq: fq_codel keeps the queue short while BBR paces itself.",
        None => {
            " This kernel has neither fq nor fq_codel: TCP's internal pacing is what BBR has, and there is nothing to attach."
        }
    }
}

fn interface(
    i: &Interface,
    ver: Option<(u32, u32)>,
    default_qdisc: Option<&str>,
    pacer: Option<&str>,
) -> Option<Check> {
    let root = i.qdiscs.first()?;
    let leaves = leaves(&i.qdiscs, root, 0);
    let fq = leaves.iter().filter(|q| q.kind == "fq").count();
    let value = describe(root, &leaves);
    let fixes = |which: &dyn Fn(&Qdisc) -> bool| -> Vec<String> {
        let Some(kind) = pacer else { return Vec::new() };
        leaves
            .iter()
            .filter(|q| which(q) && q.kind != kind)
            .map(|q| fix_leaf(&i.name, root, q, kind))
            .collect()
    };
    let (status, why, fix) = if fq == leaves.len() {
        (Status::Ok, "fq paces BBR's packets at the pacing rate, cheaply.".to_string(), vec![])
    } else if fq > 0 {
        (
            Status::Warn,
            format!(
                "fq is on {fq} of {} queues: flows that leave through the others fall back to TCP's internal pacing.",
                leaves.len()
            ),
            fixes(&|q| q.kind != "fq"),
        )
    } else if ver.is_some_and(|v| v < (4, 13)) {
        (
            Status::Fail,
            "Before 4.13, BBR needs fq to pace; without it BBR misbehaves.".into(),
            // Only fq paces before 4.13: no other qdisc is a fix.
            if pacer == Some("fq") { fixes(&|_| true) } else { Vec::new() },
        )
    } else if root.kind == "noqueue" {
        (
            Status::Info,
            "No queue (a virtual device): BBR paces itself with TCP's internal pacing (4.13+).".into(),
            vec![],
        )
    } else if leaves.iter().all(|q| AQM.contains(&q.kind.as_str())) {
        (
            Status::Ok,
            format!(
                "{} keeps queues short; BBR paces itself with TCP's internal pacing (4.13+).",
                leaves[0].kind
            ),
            vec![],
        )
    } else if default_qdisc == Some("fq") && leaves.iter().any(|q| q.kind == "pfifo_fast") {
        (
            Status::Warn,
            "pfifo_fast left from before net.core.default_qdisc=fq (the sysctl only applies to qdiscs attached later): BBR falls back to TCP's internal pacing.".into(),
            fixes(&|q| q.kind != "fq"),
        )
    } else {
        (
            Status::Info,
            format!(
                "No fq where packets leave ({}): BBR falls back to TCP's internal pacing (4.13+), which costs more CPU than fq.{}",
                if std::ptr::eq(leaves[0], root) {
                    "the root".to_string()
                } else {
                    format!("{} under {}", leaves[0].kind, root.kind)
                },
                without_fq(pacer)
            ),
            fixes(&|_| true),
        )
    };
    Some(Check { name: format!("qdisc:{}", i.name), status, value, why, fix })
}
