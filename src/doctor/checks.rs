//! The checks, one function each, in the order the BBR guides walk them. Each is a pure function of
//! the readings it judges; [`checks`] lists them.

use super::{BbrModule, Bdp, Check, Live, Readings, Status, check, fix, kernel_version, unreadable};
use bbrtop_collect::caps::{Cap, CapSet};
use bbrtop_core::model::HostBbr;
use bbrtop_core::seam::Feature;

/// Every check, in the order the guides walk them.
/// `bdp`: the path the user named to judge the buffers against (`--bdp`), if any.
pub fn checks(r: &Readings, bdp: Option<Bdp>) -> Vec<Check> {
    let ver = kernel_version(&r.kernel);
    let mut out = vec![
        kernel(&r.kernel, ver),
        available_cc(r.available_cc.as_deref()),
        default_cc(r.cc.as_deref()),
        default_qdisc(r.default_qdisc.as_deref(), ver, r.qdisc_kinds.pacer()),
        tcp_bbr(r.bbr_module),
        btf(r.btf),
    ];
    out.extend(features(ver, r.bbr_module));
    out.extend(super::qdisc::checks(
        r.interfaces.as_deref(),
        ver,
        r.default_qdisc.as_deref(),
        r.qdisc_kinds.pacer(),
    ));
    out.extend(r.bbr.as_ref().and_then(bbr_version));
    // Capabilities and live sockets are checked only where they were read.
    out.extend(r.caps.map(capabilities));
    out.extend(super::buffers::checks(r, bdp));
    out.extend([
        window_scaling(r.window_scaling),
        fastopen(r.fastopen),
        min_rtt_wlen(r.min_rtt_wlen),
        slow_start_after_idle(r.slow_start_after_idle),
        notsent_lowat(r.notsent_lowat),
        super::route::check_routes(r.routes.as_deref()),
    ]);
    out.extend(r.live.map(live));
    out
}

/// Loads tcp_bbr at every boot.
const LOAD_AT_BOOT: &str = "echo tcp_bbr > /etc/modules-load.d/bbr.conf";

/// Loads tcp_bbr now, and at every boot.
fn load_tcp_bbr() -> [String; 2] {
    ["modprobe tcp_bbr".into(), LOAD_AT_BOOT.into()]
}

fn kernel(release: &str, ver: Option<(u32, u32)>) -> Check {
    let lacks: Vec<&str> = ver.map_or_else(Vec::new, |v| {
        Feature::ALL.iter().filter(|f| v < f.since()).map(|f| f.label()).collect()
    });
    match ver {
        Some(v) if v < (4, 9) => check(
            "kernel",
            Status::Fail,
            release,
            "BBR needs Linux 4.9 or later.",
            &["upgrade the kernel to 4.9+ (5.12+ for the eBPF features)".into()],
        ),
        Some(_) if !lacks.is_empty() => check(
            "kernel",
            Status::Warn,
            release,
            &format!(
                "BBR works; this kernel cannot carry the eBPF features {} (the ebpf:* checks say what bbrtop does instead).",
                lacks.join(", ")
            ),
            &[],
        ),
        Some(_) => check(
            "kernel",
            Status::Ok,
            release,
            "4.9+ has BBR; 5.12+ carries every eBPF feature (the ebpf:* checks; bbrtop check loads them).",
            &[],
        ),
        None => check("kernel", Status::Warn, release, "The kernel version could not be read.", &[]),
    }
}

/// Each eBPF feature against this kernel's release and BBR (the catalog `bbrtop check`, the
/// kernel table of docs/kernels.md and the kernel matrix share): on from its floor, else what bbrtop does
/// without it. `bbrtop check` loads the programs and says what actually ran.
fn features(ver: Option<(u32, u32)>, module: Option<BbrModule>) -> Vec<Check> {
    let Some(v) = ver else { return Vec::new() };
    Feature::ALL
        .iter()
        .map(|&f| {
            let name = format!("ebpf:{}", f.label());
            if v < f.since() {
                let why = format!("Needs Linux {}; without it, {}.", f.floor(), f.below());
                return check(&name, Status::Info, "off", &why, &[]);
            }
            match (f, module) {
                (Feature::BbrState, Some(BbrModule::Loadable)) => check(
                    &name,
                    Status::Info,
                    "waits for tcp_bbr",
                    "Read once tcp_bbr loads (bbrtop loads its programs again then); until then BBR's phase is inferred from netlink.",
                    &load_tcp_bbr(),
                ),
                (Feature::BbrState, Some(BbrModule::Missing)) => {
                    check(&name, Status::Info, "off", "No BBR on this kernel to read.", &[])
                }
                _ => check(&name, Status::Ok, "on", f.gives(), &[]),
            }
        })
        .collect()
}

fn available_cc(available: Option<&[String]>) -> Check {
    const NAME: &str = "tcp_available_congestion_control";
    let value = available.map_or("unknown".to_string(), |v| v.join(" "));
    if available.is_some_and(|v| v.iter().any(|c| c == "bbr")) {
        check(NAME, Status::Ok, value, "bbr is available to sockets.", &[])
    } else {
        check(
            NAME,
            Status::Fail,
            value,
            "bbr is not available: tcp_bbr is neither built in nor loaded.",
            &load_tcp_bbr(),
        )
    }
}

fn default_cc(cc: Option<&str>) -> Check {
    const NAME: &str = "tcp_congestion_control";
    let cc = cc.unwrap_or("unknown");
    if cc == "bbr" {
        check(NAME, Status::Ok, cc, "New sockets use BBR by default.", &[])
    } else {
        check(
            NAME,
            Status::Warn,
            cc,
            "New sockets do not use BBR unless the application sets TCP_CONGESTION.",
            &fix::sysctl("net.ipv4.tcp_congestion_control", "bbr"),
        )
    }
}

/// `pacer`: the qdisc this kernel has to recommend (fq, else fq_codel), or none.
fn default_qdisc(qdisc: Option<&str>, ver: Option<(u32, u32)>, pacer: Option<&str>) -> Check {
    const NAME: &str = "default_qdisc";
    let q = qdisc.unwrap_or("unknown");
    let set_pacer = || pacer.map_or_else(Vec::new, |p| fix::sysctl("net.core.default_qdisc", p));
    match q {
        "fq" => check(NAME, Status::Ok, q, "fq paces BBR's packets at the pacing rate, cheaply.", &[]),
        "fq_codel" => check(
            NAME,
            Status::Ok,
            q,
            "fq_codel keeps queues short; BBR paces itself with TCP's internal pacing (4.13+).",
            &[],
        ),
        _ if ver.is_some_and(|v| v >= (4, 13)) => check(
            NAME,
            Status::Info,
            q,
            match pacer {
                Some("fq") => {
                    "BBR falls back to TCP's internal pacing (4.13+), which costs more CPU than fq."
                }
                Some(_) => {
                    "BBR falls back to TCP's internal pacing (4.13+). This kernel has no fq; fq_codel keeps queues short beside it."
                }
                None => {
                    "BBR paces itself with TCP's internal pacing (4.13+): this kernel has neither fq nor fq_codel, so there is nothing to attach."
                }
            },
            &set_pacer(),
        ),
        _ => check(
            NAME,
            Status::Fail,
            q,
            "Before 4.13, BBR needs fq to pace; without it BBR misbehaves.",
            // Only fq paces before 4.13: no other qdisc is a fix.
            &if pacer == Some("fq") { set_pacer() } else { Vec::new() },
        ),
    }
}

fn tcp_bbr(module: Option<BbrModule>) -> Check {
    const NAME: &str = "tcp_bbr";
    match module {
        Some(BbrModule::Builtin) => {
            check(NAME, Status::Ok, "built in", "BBR is compiled into the kernel.", &[])
        }
        Some(BbrModule::Loaded) => check(
            NAME,
            Status::Ok,
            "loaded",
            "The tcp_bbr module is loaded.",
            &[format!("{LOAD_AT_BOOT}  # keep it across reboots")],
        ),
        Some(BbrModule::Loadable) => check(
            NAME,
            Status::Warn,
            "not loaded",
            "The tcp_bbr module exists but is not loaded.",
            &load_tcp_bbr(),
        ),
        Some(BbrModule::Missing) | None => check(
            NAME,
            Status::Fail,
            "missing",
            "No tcp_bbr built in or as a module.",
            &["install a kernel with CONFIG_TCP_CONG_BBR=y or =m".into()],
        ),
    }
}

fn btf(present: bool) -> Check {
    if present {
        check(
            "btf",
            Status::Ok,
            "/sys/kernel/btf/vmlinux",
            "CO-RE eBPF programs can read struct bbr and tcp_sock.",
            &[],
        )
    } else {
        check(
            "btf",
            Status::Warn,
            "absent",
            "Without BTF the eBPF collectors cannot load; bbrtop runs on netlink only.",
            &["use a kernel built with CONFIG_DEBUG_INFO_BTF=y".into()],
        )
    }
}

/// Which BBR runs as "bbr"; nothing to say where the host offers none (tcp_bbr says that).
fn bbr_version(h: &HostBbr) -> Option<Check> {
    const NAME: &str = "bbr_version";
    if !h.names.iter().any(|c| c == "bbr") {
        return None;
    }
    Some(match h.version {
        Some(_) => check(
            NAME,
            Status::Ok,
            h.to_string(),
            "Told by the module's declared version, else the kernel BTF's struct bbr, else the names offered.",
            &[],
        ),
        None => check(
            NAME,
            Status::Info,
            h.to_string(),
            "Neither the module nor the kernel BTF says which BBR \"bbr\" is; bbrtop tells each socket's version from its BBR info.",
            &[],
        ),
    })
}

fn capabilities(caps: CapSet) -> Check {
    let held: Vec<&str> = [Cap::Bpf, Cap::Perfmon, Cap::SysAdmin, Cap::NetAdmin]
        .iter()
        .filter(|c| caps.has(**c))
        .map(|c| c.name())
        .collect();
    let missing = caps.missing(&[Cap::Bpf, Cap::Perfmon]);
    let value = if held.is_empty() { "none".to_string() } else { held.join(" ") };
    if missing.is_empty() {
        check(
            "capabilities",
            Status::Ok,
            value,
            "CAP_BPF and CAP_PERFMON load the eBPF collectors; netlink needs none in its own namespace.",
            &[],
        )
    } else {
        check(
            "capabilities",
            Status::Info,
            value,
            &format!(
                "Missing {}: bbrtop runs on netlink only (eBPF off).",
                bbrtop_collect::caps::names(&missing)
            ),
            &["setcap cap_bpf,cap_perfmon+ep $(command -v bbrtop)".into()],
        )
    }
}

fn window_scaling(v: Option<u64>) -> Check {
    const NAME: &str = "net.ipv4.tcp_window_scaling";
    match v {
        Some(1) => check(NAME, Status::Ok, "1", "Windows above 64 KB need window scaling.", &[]),
        Some(v) => check(
            NAME,
            Status::Fail,
            v.to_string(),
            "Without window scaling a window cannot pass 64 KB: throughput is capped at 64 KB per RTT.",
            &fix::sysctl(NAME, "1"),
        ),
        None => unreadable(NAME, Status::Warn),
    }
}

fn fastopen(v: Option<u64>) -> Check {
    const NAME: &str = "net.ipv4.tcp_fastopen";
    match v {
        Some(v) => check(
            NAME,
            Status::Info,
            v.to_string(),
            "1 = client, 2 = server, 3 = both; TFO saves a round trip on repeat connections.",
            &[],
        ),
        None => unreadable(NAME, Status::Info),
    }
}

fn min_rtt_wlen(v: Option<u64>) -> Check {
    const NAME: &str = "net.ipv4.tcp_min_rtt_wlen";
    const WHY: &str = "tcp_info's min RTT window (s); bbrtop's default alert baseline uses it because BBR's own 10 s window hides standing queues.";
    match v {
        Some(v) if v >= 10 => check(NAME, Status::Ok, v.to_string(), WHY, &[]),
        Some(v) => check(NAME, Status::Warn, v.to_string(), WHY, &fix::sysctl(NAME, "300")),
        None => unreadable(NAME, Status::Info),
    }
}

/// On (the kernel's default), a connection idle for an RTO restarts from the initial window, but
/// only under a cc without its own cong_control: CUBIC restarts, BBR does not
/// (tcp_slow_start_after_idle_check). Per network namespace.
fn slow_start_after_idle(v: Option<u64>) -> Check {
    const NAME: &str = "net.ipv4.tcp_slow_start_after_idle";
    match v {
        Some(0) => check(
            NAME,
            Status::Ok,
            "0",
            "Idle keep-alive connections keep their window under CUBIC as under BBR: a BBR vs CUBIC comparison on keep-alive traffic is not skewed by it.",
            &[],
        ),
        Some(v) => check(
            NAME,
            Status::Info,
            v.to_string(),
            "On (the kernel's default): a CUBIC keep-alive connection idle for an RTO falls back to the initial window, while BBR (its own cong_control) is exempt, so part of a BBR win on keep-alive traffic is this sysctl. BBR vs CUBIC comparisons are confounded unless it is 0.",
            &fix::sysctl(NAME, "0"),
        ),
        None => unreadable(NAME, Status::Info),
    }
}

/// The kernel's "unset": no limit on a socket's unsent bytes but its send buffer.
const NOTSENT_LOWAT_UNSET: u64 = u32::MAX as u64;

/// How many unsent bytes a socket queues before its writer waits. Per network namespace.
fn notsent_lowat(v: Option<u64>) -> Check {
    const NAME: &str = "net.ipv4.tcp_notsent_lowat";
    const SHARED: &str = "Hosts compared on response times should share it.";
    match v {
        Some(NOTSENT_LOWAT_UNSET) => check(
            NAME,
            Status::Info,
            NOTSENT_LOWAT_UNSET.to_string(),
            &format!(
                "Unset: a socket may queue its whole send buffer unsent, so what is written next (a response, an HTTP/2 stream of higher priority) waits behind all of it. A low value (16384 to 131072 is commonly recommended for BBR and latency-sensitive serving) keeps that queue short; applications may set TCP_NOTSENT_LOWAT per socket. {SHARED}"
            ),
            &[],
        ),
        Some(v) => check(
            NAME,
            Status::Info,
            v.to_string(),
            &format!(
                "At most {v} unsent bytes are queued per socket before its writer waits (TCP_NOTSENT_LOWAT overrides it per socket), so what is written next goes out after a short queue. {SHARED}"
            ),
            &[],
        ),
        None => unreadable(NAME, Status::Info),
    }
}

fn live(l: Live) -> Check {
    let pacing = format!("{}/{} active BBR sockets pacing", l.bbr_pacing, l.bbr_active);
    if l.bbr_active == 0 {
        check(
            "live",
            Status::Info,
            format!("{} BBR sockets, none sending now", l.bbr_total),
            "Run traffic to check that BBR paces it.",
            &[],
        )
    } else if l.bbr_pacing == l.bbr_active {
        check("live", Status::Ok, pacing, "BBR sockets have a pacing rate: BBR is in charge.", &[])
    } else {
        check(
            "live",
            Status::Fail,
            pacing,
            "Active BBR sockets with a zero pacing rate: something is wrong with pacing.",
            &[],
        )
    }
}
