//! `bbrtop doctor`: the host's BBR setup checked the way the BBR guides check it. Readings are
//! gathered at the edge ([`host`]); every verdict here is a pure function of them.

pub mod host;

use crate::caps::{Cap, CapSet};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Info,
    Warn,
    Fail,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Info => "info",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// One check: what it found, why it matters, and the exact lines that fix it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub value: String,
    pub why: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fix: Vec<String>,
}

/// How tcp_bbr is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BbrModule {
    Builtin,
    Loaded,
    /// A module file exists but is not loaded.
    Loadable,
    Missing,
}

/// BBR sockets seen in one dump, for the live check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Live {
    /// BBR sockets that sent data within the last second.
    pub bbr_active: usize,
    /// ...of which pacing_rate is nonzero.
    pub bbr_pacing: usize,
    pub bbr_total: usize,
}

/// Everything doctor reads from one network namespace of the host.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Readings {
    pub kernel: String,
    pub available_cc: Option<Vec<String>>,
    pub cc: Option<String>,
    pub default_qdisc: Option<String>,
    pub bbr_module: Option<BbrModule>,
    pub btf: bool,
    #[serde(skip)]
    pub caps: Option<CapSet>,
    pub rmem_max: Option<u64>,
    pub wmem_max: Option<u64>,
    pub tcp_rmem: Option<[u64; 3]>,
    pub tcp_wmem: Option<[u64; 3]>,
    pub window_scaling: Option<u64>,
    pub fastopen: Option<u64>,
    pub min_rtt_wlen: Option<u64>,
    pub live: Option<Live>,
}

/// A bandwidth-delay product to size buffers for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bdp {
    pub rate_bits_per_sec: f64,
    pub rtt_seconds: f64,
}

impl Default for Bdp {
    /// 1 Gbit/s x 100 ms, the guides' long fat path.
    fn default() -> Self {
        Bdp { rate_bits_per_sec: 1e9, rtt_seconds: 0.1 }
    }
}

impl Bdp {
    pub fn bytes(self) -> u64 {
        (self.rate_bits_per_sec / 8.0 * self.rtt_seconds).ceil() as u64
    }
}

/// Parses a rate such as `1gbit`, `100mbit`, `10Mbit/s`, `500kbit` or plain bits per second.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let l = s.trim().to_ascii_lowercase();
    let l = l.trim_end_matches("/s").trim_end_matches("ps").trim_end_matches("bit");
    let split = l.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(l.len());
    let (num, unit) = l.split_at(split);
    let mult = match unit {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        _ => return Err(format!("invalid rate {s:?} (try 1gbit, 100mbit, 500kbit)")),
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v * mult),
        _ => Err(format!("invalid rate {s:?} (try 1gbit, 100mbit, 500kbit)")),
    }
}

/// (major, minor) of a kernel release such as "6.18.44-fc".
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

fn check(name: &str, status: Status, value: impl Into<String>, why: &str, fix: &[String]) -> Check {
    Check { name: name.into(), status, value: value.into(), why: why.into(), fix: fix.to_vec() }
}

fn sysctl_fix(key: &str, value: &str) -> Vec<String> {
    vec![
        format!("sysctl -w {key}=\"{value}\""),
        format!("echo '{key} = {value}' >> /etc/sysctl.d/90-bbr.conf"),
    ]
}

/// Every check, in the order the guides walk them.
pub fn checks(r: &Readings, bdp: Bdp) -> Vec<Check> {
    let mut out = Vec::new();
    let ver = kernel_version(&r.kernel);
    out.push(match ver {
        Some(v) if v < (4, 9) => check("kernel", Status::Fail, &r.kernel, "BBR needs Linux 4.9 or later.", &["upgrade the kernel to 4.9+ (6.2+ for eBPF)".into()]),
        Some(v) if v < (6, 2) => check("kernel", Status::Warn, &r.kernel, "BBR works; the eBPF collectors need 6.2+ (CAP_BPF, ring buffer, bpf_rdonly_cast), so bbrtop runs on netlink only.", &[]),
        Some(_) => check("kernel", Status::Ok, &r.kernel, "4.9+ has BBR; 6.2+ has what the eBPF path needs.", &[]),
        None => check("kernel", Status::Warn, &r.kernel, "The kernel version could not be read.", &[]),
    });

    let has_bbr = r.available_cc.as_ref().map(|v| v.iter().any(|c| c == "bbr"));
    let avail = r.available_cc.as_ref().map_or("unknown".to_string(), |v| v.join(" "));
    out.push(match has_bbr {
        Some(true) => {
            check("tcp_available_congestion_control", Status::Ok, avail, "bbr is available to sockets.", &[])
        }
        _ => check(
            "tcp_available_congestion_control",
            Status::Fail,
            avail,
            "bbr is not available: tcp_bbr is neither built in nor loaded.",
            &["modprobe tcp_bbr".into(), "echo tcp_bbr > /etc/modules-load.d/bbr.conf".into()],
        ),
    });

    let cc = r.cc.clone().unwrap_or_else(|| "unknown".into());
    out.push(if cc == "bbr" {
        check("tcp_congestion_control", Status::Ok, cc, "New sockets use BBR by default.", &[])
    } else {
        check(
            "tcp_congestion_control",
            Status::Warn,
            cc,
            "New sockets do not use BBR unless the application sets TCP_CONGESTION.",
            &sysctl_fix("net.ipv4.tcp_congestion_control", "bbr"),
        )
    });

    let q = r.default_qdisc.clone().unwrap_or_else(|| "unknown".into());
    let internal_pacing = ver.is_some_and(|v| v >= (4, 13));
    out.push(match q.as_str() {
        "fq" => {
            check("default_qdisc", Status::Ok, q, "fq paces BBR's packets at the pacing rate, cheaply.", &[])
        }
        "fq_codel" => check(
            "default_qdisc",
            Status::Ok,
            q,
            "fq_codel keeps queues short; BBR paces itself with TCP's internal pacing (4.13+).",
            &[],
        ),
        _ if internal_pacing => check(
            "default_qdisc",
            Status::Info,
            q,
            "BBR falls back to TCP's internal pacing (4.13+), which costs more CPU than fq.",
            &sysctl_fix("net.core.default_qdisc", "fq"),
        ),
        _ => check(
            "default_qdisc",
            Status::Fail,
            q,
            "Before 4.13, BBR needs fq to pace; without it BBR misbehaves.",
            &sysctl_fix("net.core.default_qdisc", "fq"),
        ),
    });

    out.push(match r.bbr_module {
        Some(BbrModule::Builtin) => {
            check("tcp_bbr", Status::Ok, "built in", "BBR is compiled into the kernel.", &[])
        }
        Some(BbrModule::Loaded) => check(
            "tcp_bbr",
            Status::Ok,
            "loaded",
            "The tcp_bbr module is loaded.",
            &["echo tcp_bbr > /etc/modules-load.d/bbr.conf  # keep it across reboots".into()],
        ),
        Some(BbrModule::Loadable) => check(
            "tcp_bbr",
            Status::Warn,
            "not loaded",
            "The tcp_bbr module exists but is not loaded.",
            &["modprobe tcp_bbr".into(), "echo tcp_bbr > /etc/modules-load.d/bbr.conf".into()],
        ),
        Some(BbrModule::Missing) | None => check(
            "tcp_bbr",
            Status::Fail,
            "missing",
            "No tcp_bbr built in or as a module.",
            &["install a kernel with CONFIG_TCP_CONG_BBR=y or =m".into()],
        ),
    });

    out.push(if r.btf {
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
    });

    if let Some(caps) = r.caps {
        let held: Vec<&str> = [Cap::Bpf, Cap::Perfmon, Cap::SysAdmin, Cap::NetAdmin]
            .iter()
            .filter(|c| caps.has(**c))
            .map(|c| c.name())
            .collect();
        let missing = caps.missing(&[Cap::Bpf, Cap::Perfmon]);
        let value = if held.is_empty() { "none".to_string() } else { held.join(" ") };
        out.push(if missing.is_empty() {
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
                &format!("Missing {}: bbrtop runs on netlink only (eBPF off).", crate::caps::names(&missing)),
                &["setcap cap_bpf,cap_perfmon+ep $(command -v bbrtop)".into()],
            )
        });
    }

    let need = bdp.bytes().saturating_mul(2);
    let bdp_note = format!(
        "BDP {} bytes ({:.0} Mbit/s x {:.0} ms); a window needs about 2x BDP of buffer.",
        bdp.bytes(),
        bdp.rate_bits_per_sec / 1e6,
        bdp.rtt_seconds * 1e3
    );
    for (name, v) in [("net.core.rmem_max", r.rmem_max), ("net.core.wmem_max", r.wmem_max)] {
        out.push(buffer_check(name, v, need, &bdp_note));
    }
    for (name, v) in [("net.ipv4.tcp_rmem", r.tcp_rmem), ("net.ipv4.tcp_wmem", r.tcp_wmem)] {
        out.push(match v {
            Some([a, b, c]) if c >= need => check(name, Status::Ok, format!("{a} {b} {c}"), &bdp_note, &[]),
            Some([a, b, c]) => check(
                name,
                Status::Warn,
                format!("{a} {b} {c}"),
                &format!("The max ({c}) caps the window below what this path needs. {bdp_note}"),
                &sysctl_fix(name, &format!("{a} {b} {need}")),
            ),
            None => check(name, Status::Warn, "unknown", "Could not be read.", &[]),
        });
    }

    out.push(match r.window_scaling {
        Some(1) => check(
            "net.ipv4.tcp_window_scaling",
            Status::Ok,
            "1",
            "Windows above 64 KB need window scaling.",
            &[],
        ),
        Some(v) => check(
            "net.ipv4.tcp_window_scaling",
            Status::Fail,
            v.to_string(),
            "Without window scaling a window cannot pass 64 KB: throughput is capped at 64 KB per RTT.",
            &sysctl_fix("net.ipv4.tcp_window_scaling", "1"),
        ),
        None => check("net.ipv4.tcp_window_scaling", Status::Warn, "unknown", "Could not be read.", &[]),
    });
    out.push(match r.fastopen {
        Some(v) => check(
            "net.ipv4.tcp_fastopen",
            Status::Info,
            v.to_string(),
            "1 = client, 2 = server, 3 = both; TFO saves a round trip on repeat connections.",
            &[],
        ),
        None => check("net.ipv4.tcp_fastopen", Status::Info, "unknown", "Could not be read.", &[]),
    });
    out.push(match r.min_rtt_wlen {
        Some(v) => check("net.ipv4.tcp_min_rtt_wlen", if v >= 10 { Status::Ok } else { Status::Warn }, v.to_string(), "tcp_info's min RTT window (s); bbrtop's default alert baseline uses it because BBR's own 10 s window hides standing queues.", &if v >= 10 { vec![] } else { sysctl_fix("net.ipv4.tcp_min_rtt_wlen", "300") }),
        None => check("net.ipv4.tcp_min_rtt_wlen", Status::Info, "unknown", "Could not be read.", &[]),
    });

    if let Some(l) = r.live {
        out.push(if l.bbr_active == 0 {
            check(
                "live",
                Status::Info,
                format!("{} BBR sockets, none sending now", l.bbr_total),
                "Run traffic to check that BBR paces it.",
                &[],
            )
        } else if l.bbr_pacing == l.bbr_active {
            check(
                "live",
                Status::Ok,
                format!("{}/{} active BBR sockets pacing", l.bbr_pacing, l.bbr_active),
                "BBR sockets have a pacing rate: BBR is in charge.",
                &[],
            )
        } else {
            check(
                "live",
                Status::Fail,
                format!("{}/{} active BBR sockets pacing", l.bbr_pacing, l.bbr_active),
                "Active BBR sockets with a zero pacing rate: something is wrong with pacing.",
                &[],
            )
        });
    }
    out
}

fn buffer_check(name: &str, v: Option<u64>, need: u64, note: &str) -> Check {
    match v {
        Some(v) if v >= need => check(name, Status::Ok, v.to_string(), note, &[]),
        Some(v) => check(
            name,
            Status::Warn,
            v.to_string(),
            &format!("Below 2x BDP: applications that set SO_RCVBUF/SO_SNDBUF are capped. {note}"),
            &sysctl_fix(name, &need.to_string()),
        ),
        None => check(name, Status::Warn, "unknown", "Could not be read.", &[]),
    }
}

/// Checks whose values differ between the host and another namespace (most net.* sysctls are per
/// namespace), as Warn checks named `netns:<check>`. Host-wide settings that a namespace does not
/// have (such as net.core.default_qdisc) read "unknown" there and are not differences.
pub fn netns_differences(host: &[Check], ns: &[Check]) -> Vec<Check> {
    ns.iter()
        .filter_map(|n| {
            let h = host.iter().find(|h| h.name == n.name)?;
            (h.value != n.value && n.value != "unknown").then(|| Check {
                name: format!("netns:{}", n.name),
                status: Status::Warn.max(n.status),
                value: format!("host {} / netns {}", h.value, n.value),
                why: format!("The namespace differs from the host. {}", n.why),
                fix: n
                    .fix
                    .iter()
                    .filter(|f| f.starts_with("sysctl "))
                    .map(|f| format!("ip netns exec <ns> {f}"))
                    .collect(),
            })
        })
        .collect()
}

/// 0 when all is well, 1 for warnings, 2 for failures.
pub fn exit_code(checks: &[Check]) -> u8 {
    match checks.iter().map(|c| c.status).max() {
        Some(Status::Fail) => 2,
        Some(Status::Warn) => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
