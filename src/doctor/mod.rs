//! `bbrtop doctor`: the host's BBR setup checked the way the BBR guides check it. Readings are
//! gathered at the edge ([`host`]); the verdicts ([`checks()`]) are pure functions of them.

mod buffers;
mod checks;
mod fix;
pub mod host;
pub mod qdisc;
pub mod route;
pub mod sched;

pub use checks::checks;

use bbrtop_collect::caps::CapSet;
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

/// A check; every judging file builds its checks through it.
fn check(name: &str, status: Status, value: impl Into<String>, why: &str, fix: &[String]) -> Check {
    Check { name: name.into(), status, value: value.into(), why: why.into(), fix: fix.to_vec() }
}

/// For a sysctl that could not be read.
fn unreadable(name: &str, status: Status) -> Check {
    check(name, status, "unknown", "Could not be read.", &[])
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
    /// Which BBR runs as "bbr" (`None` where it was not read).
    pub bbr: Option<bbrtop_core::model::HostBbr>,
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
    pub slow_start_after_idle: Option<u64>,
    pub notsent_lowat: Option<u64>,
    /// The default routes of every table (`None` where iproute2 could not be run).
    pub routes: Option<Vec<route::DefaultRoute>>,
    pub live: Option<Live>,
    /// The interfaces that are up and their qdiscs (`None` where iproute2 could not be run).
    pub interfaces: Option<Vec<qdisc::Interface>>,
    /// Whether the kernel has fq and fq_codel, so only a qdisc it has is recommended.
    pub qdisc_kinds: sched::Kinds,
}

/// A bandwidth-delay product to size buffers for: the path the user names with `--bdp`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bdp {
    pub rate_bits_per_sec: f64,
    pub rtt_seconds: f64,
}

impl Bdp {
    pub fn bytes(self) -> u64 {
        (self.rate_bits_per_sec / 8.0 * self.rtt_seconds).ceil() as u64
    }
}

/// The fastest rate `--bdp` takes: 10 Tbit/s, past any NIC (308 nines gave "inf Mbit/s").
pub const MAX_RATE: f64 = 1e13;

/// Parses a rate such as `1gbit`, `100mbit`, `10Mbit/s`, `500kbit` or plain bits per second, up
/// to [`MAX_RATE`].
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
    match num.parse::<f64>().map(|v| v * mult) {
        Ok(v) if v > MAX_RATE => Err(format!("invalid rate {s:?}: above 10tbit")),
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("invalid rate {s:?} (try 1gbit, 100mbit, 500kbit)")),
    }
}

/// (major, minor) of a kernel release such as "6.18.44-fc".
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
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

/// What doctor adds for another namespace: where its settings differ from the host's, and what
/// the host does not share (its interfaces' qdiscs and its routes' initial windows), as
/// `netns:qdisc:<dev>` and `netns:initcwnd`.
pub fn netns_checks(host: &[Check], ns: &[Check]) -> Vec<Check> {
    let (own, rest): (Vec<&Check>, Vec<&Check>) =
        ns.iter().partition(|c| c.name.starts_with("qdisc") || c.name == route::NAME);
    let rest: Vec<Check> = rest.into_iter().cloned().collect();
    let mut out = netns_differences(host, &rest);
    out.extend(own.into_iter().map(|c| Check { name: format!("netns:{}", c.name), ..c.clone() }));
    out
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
