//! Reading the host for doctor: /proc/sys, /sys and one netlink dump. The I/O edge.

use super::{BbrModule, Live, Readings};
use bbrtop_collect::caps::CapSet;
use bbrtop_core::wire::Dump;
use std::path::Path;

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_u64(path: &str) -> Option<u64> {
    read(path)?.parse().ok()
}

fn read_triple(path: &str) -> Option<[u64; 3]> {
    let v: Vec<u64> = read(path)?.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    v.try_into().ok()
}

/// How tcp_bbr is present: a loaded module is in /proc/modules; a module file is listed in
/// modules.dep; built in means bbr is available with neither.
pub fn bbr_module(
    available: Option<&[String]>,
    modules: Option<&str>,
    module_files: Option<&str>,
) -> BbrModule {
    if modules.is_some_and(|m| m.lines().any(|l| l.starts_with("tcp_bbr "))) {
        BbrModule::Loaded
    } else if available.is_some_and(|a| a.iter().any(|c| c == "bbr")) {
        BbrModule::Builtin
    } else if module_files.is_some_and(|m| m.contains("tcp_bbr.ko")) {
        BbrModule::Loadable
    } else {
        BbrModule::Missing
    }
}

/// The sysctls of the calling thread's network namespace, and host-wide facts.
pub fn read_readings() -> Readings {
    let kernel = read("/proc/sys/kernel/osrelease").unwrap_or_default();
    let available_cc: Option<Vec<String>> = read("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(str::to_string).collect());
    let module_files = read(&format!("/lib/modules/{kernel}/modules.dep"));
    let modules = read("/proc/modules");
    let interfaces = read_interfaces();
    let qdisc_kinds =
        qdisc_kinds(&kernel, modules.as_deref(), module_files.as_deref(), interfaces.as_deref());
    Readings {
        bbr_module: Some(bbr_module(available_cc.as_deref(), modules.as_deref(), module_files.as_deref())),
        available_cc,
        bbr: Some(bbrtop_collect::host::host_bbr()),
        cc: read("/proc/sys/net/ipv4/tcp_congestion_control"),
        default_qdisc: read("/proc/sys/net/core/default_qdisc"),
        btf: Path::new("/sys/kernel/btf/vmlinux").exists(),
        caps: Some(CapSet::effective()),
        rmem_max: read_u64("/proc/sys/net/core/rmem_max"),
        wmem_max: read_u64("/proc/sys/net/core/wmem_max"),
        tcp_rmem: read_triple("/proc/sys/net/ipv4/tcp_rmem"),
        tcp_wmem: read_triple("/proc/sys/net/ipv4/tcp_wmem"),
        window_scaling: read_u64("/proc/sys/net/ipv4/tcp_window_scaling"),
        fastopen: read_u64("/proc/sys/net/ipv4/tcp_fastopen"),
        min_rtt_wlen: read_u64("/proc/sys/net/ipv4/tcp_min_rtt_wlen"),
        slow_start_after_idle: read_u64("/proc/sys/net/ipv4/tcp_slow_start_after_idle"),
        notsent_lowat: read_u64("/proc/sys/net/ipv4/tcp_notsent_lowat"),
        routes: read_routes(),
        kernel,
        live: None,
        interfaces,
        qdisc_kinds,
    }
}

/// Whether the kernel has fq and fq_codel: its config (Debian's /boot/config-RELEASE, else
/// /proc/config.gz through zcat), its module lists, and the qdiscs attached now.
fn qdisc_kinds(
    kernel: &str,
    modules: Option<&str>,
    dep: Option<&str>,
    interfaces: Option<&[super::qdisc::Interface]>,
) -> super::sched::Kinds {
    let config = read(&format!("/boot/config-{kernel}")).or_else(|| output("zcat", &["/proc/config.gz"]));
    let builtin = read(&format!("/lib/modules/{kernel}/modules.builtin"));
    let in_use: Vec<&str> =
        interfaces.unwrap_or_default().iter().flat_map(|i| &i.qdiscs).map(|q| q.kind.as_str()).collect();
    let sources =
        super::sched::Sources { config: config.as_deref(), modules, builtin: builtin.as_deref(), dep };
    super::sched::Kinds::read(sources, &in_use)
}

/// The stdout of a command that succeeded.
fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let o = std::process::Command::new(cmd).args(args).output().ok()?;
    o.status.success().then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The interfaces of the calling thread's namespace and their qdiscs, from iproute2 (a child
/// process starts in the namespace of the thread that forks it). `None` where it cannot be run.
pub fn read_interfaces() -> Option<Vec<super::qdisc::Interface>> {
    let links = output("ip", &["-j", "link", "show"])?;
    let qdiscs = output("tc", &["-s", "-j", "qdisc", "show"])?;
    super::qdisc::parse(&links, &qdiscs).ok()
}

/// The default routes of every table of the calling thread's namespace, from iproute2. `None`
/// where `ip` cannot be run; a kernel without IPv6 has no IPv6 routes to read.
pub fn read_routes() -> Option<Vec<super::route::DefaultRoute>> {
    let show = |family| output("ip", &["-j", family, "route", "show", "table", "all", "default"]);
    let mut routes = super::route::parse(&show("-4")?, false).ok()?;
    if let Some(v6) = show("-6") {
        routes.extend(super::route::parse(&v6, true).ok()?);
    }
    Some(routes)
}

/// The live check from one dump: BBR sockets that sent data within the last second, and how many
/// of those have a pacing rate.
pub fn live_of(dump: &Dump) -> Live {
    let mut l = Live::default();
    for s in dump.sockets.iter().filter(|s| s.cc.as_deref() == Some("bbr")) {
        l.bbr_total += 1;
        let i = &s.tcp_info;
        if i.last_data_sent_ms().is_some_and(|ms| ms <= 1000) && i.bytes_acked().unwrap_or(0) > 0 {
            l.bbr_active += 1;
            l.bbr_pacing += usize::from(i.pacing_rate_bytes_per_sec().unwrap_or(0) > 0);
        }
    }
    l
}
