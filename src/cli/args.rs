//! Flags shared by several commands, and their value parsers. Bad values are usage errors.

use bbrtop_collect::netns::NetnsSpec;
use bbrtop_core::filter::{self, Expr, Filter};
use bbrtop_core::model::TcpState;
use bbrtop_core::model::derive::Baseline;
use bbrtop_core::rule::RuleConfig;
use bbrtop_engine::EngineConfig;
use clap::Args;
use ipnet::IpNet;
use std::time::Duration;

/// What every polling command takes: where to look, which sockets, and the alert rule.
#[derive(Args, Clone, Debug)]
pub struct PollArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub alert: AlertArgs,
    /// Judge loopback sockets by the alert rule and count them in the per-cc figures too. They
    /// are listed either way; left out, since a host talking to itself has no bottleneck queue
    /// and its microsecond RTTs drown a comparison.
    #[arg(long)]
    pub loopback: bool,
}

impl PollArgs {
    pub fn engine_config(&self) -> EngineConfig {
        let rule = RuleConfig { loopback: self.loopback, ..self.alert.rule() };
        EngineConfig { rule, filter: self.filter.filter(), ..EngineConfig::default() }
    }
}

/// Which sockets: `--cc`, `--port`, `--peer`, `--state`, each of which may be repeated (OR), and
/// `--filter`; they AND.
#[derive(Args, Clone, Debug, Default)]
pub struct FilterArgs {
    /// Only sockets using this congestion control (e.g. bbr, cubic).
    #[arg(long, value_name = "NAME")]
    pub cc: Vec<String>,
    /// Only sockets with this local or peer port.
    #[arg(long, value_name = "PORT", value_parser = parse_port)]
    pub port: Vec<u16>,
    /// Only sockets whose peer is in this network (CIDR or address).
    #[arg(long, value_name = "CIDR", value_parser = parse_cidr)]
    pub peer: Vec<IpNet>,
    /// Only sockets in this state (ss names: established, syn-sent, fin-wait-1, listen, ...).
    /// Default: every state but listen and time-wait (every state when --filter names one).
    #[arg(long, value_name = "STATE", value_parser = parse_state)]
    pub state: Vec<TcpState>,
    /// Only sockets this expression matches, in the TUI's filter language (docs/watch-live.md):
    /// cc NAME, port/sport/dport [OP] N, src/dst ADDR[/LEN], state S, netns, pod, cgroup, lo,
    /// joined by and, or, not and parentheses (not binds tightest, then and, then or), e.g.
    /// 'cc bbr and not (dport = 22 or lo)'. It decides which sockets are tracked at all, so the
    /// words whose truth changes from poll to poll (sending, value comparisons such as
    /// srtt > 100ms) are refused here: a socket would lose its history and counters each time
    /// it left. They work in the TUI's / filter.
    #[arg(long = "filter", id = "filter", value_name = "EXPR", value_parser = parse_filter)]
    pub expr: Option<Expr>,
}

impl FilterArgs {
    pub fn filter(&self) -> Filter {
        let expr = self.expr.clone().unwrap_or_default();
        Filter::from_flags(&self.cc, &self.port, &self.peer, &self.state, expr)
    }
}

/// Where and how often to look.
#[derive(Args, Clone, Debug)]
pub struct SourceArgs {
    /// Read the sockets of another network namespace: a name from `ip netns` or a path such as
    /// /proc/PID/ns/net. Needs CAP_SYS_ADMIN.
    #[arg(long, value_name = "NAME|PATH", value_parser = parse_netns)]
    pub netns: Option<NetnsSpec>,
    /// Time between polls, e.g. 1s, 250ms.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,
    /// The eBPF collector (tcp_probe and close hooks, and the socket walk), on by default where
    /// BTF, CAP_BPF and CAP_PERFMON allow, else netlink alone. Given, it must run: bbrtop fails
    /// with the reason instead of falling back.
    #[arg(long = "collector.bpf", overrides_with = "no_collector_bpf")]
    pub collector_bpf: bool,
    /// Turn the eBPF collector off: netlink alone reads the sockets.
    #[arg(long = "no-collector.bpf", overrides_with = "collector_bpf")]
    pub no_collector_bpf: bool,
    /// The socket walk: eBPF notes the sockets that moved, in every network namespace, and
    /// netlink seeds the host's and reconciles them every 10 minutes and after eBPF lost events.
    /// On by default when eBPF runs and neither --netns nor --lab narrows the view to one
    /// namespace. Given, it must run.
    #[arg(long = "collector.walk", overrides_with = "no_collector_walk")]
    pub collector_walk: bool,
    /// Turn the socket walk off: netlink dumps every socket of one namespace each poll.
    #[arg(long = "no-collector.walk", overrides_with = "collector_walk")]
    pub no_collector_walk: bool,
    /// The spelling before --[no-]collector.walk: auto, walk or netlink.
    #[arg(long = "collector", value_name = "KIND", hide = true,
          conflicts_with_all = ["collector_walk", "no_collector_walk"])]
    pub collector: Option<CollectorChoice>,
    /// With the socket walk, where to read pod names from: a pod list (the kubelet's /pods, or
    /// the API server's pods of this node) as an http:// URL or a file. Without it, pods are
    /// named by uid and container id, from their cgroup. A file is a regular one of at most
    /// 64 MiB.
    #[arg(long = "kubernetes.pods", value_name = "URL|PATH", value_parser = parse_pod_source)]
    pub kubernetes_pods: Option<bbrtop_collect::attrib::PodSource>,
    /// The eBPF ring buffer, which holds the events between two drains (every 50 ms while
    /// events come; a close takes 200 bytes, a batch of up to 8 responses 200): a power of two
    /// from 4KiB to 1GiB.
    /// Events it has no room for are counted as lost, and the netlink collector then reconciles
    /// at once.
    #[arg(long = "bpf.ring-buffer-size", value_name = "SIZE", default_value = "4MiB",
          value_parser = parse_ring_size)]
    pub ring_bytes: u32,
}

/// `--bpf.ring-buffer-size`: what the kernel takes, a power of two of whole pages.
fn parse_ring_size(s: &str) -> Result<u32, String> {
    let b = parse_size(s)?;
    if !(4 << 10..=1 << 30).contains(&b) {
        return Err(format!("{s} is outside 4KiB..1GiB"));
    }
    if !b.is_power_of_two() {
        let below = 1u64 << (63 - b.leading_zeros());
        return Err(format!(
            "{s} is not a power of two (try {}KiB or {}KiB)",
            below >> 10,
            (below << 1) >> 10
        ));
    }
    Ok(b as u32)
}

fn parse_pod_source(s: &str) -> Result<bbrtop_collect::attrib::PodSource, String> {
    use bbrtop_collect::attrib::PodSource;
    if s.starts_with("https://") {
        return Err("https is not supported yet: use an http:// URL (a local proxy) or a file".into());
    }
    if s.starts_with("http://") {
        return Ok(PodSource::Url(s.into()));
    }
    if s.is_empty() {
        return Err("empty".into());
    }
    Ok(PodSource::File(s.into()))
}

impl SourceArgs {
    /// `--[no-]collector.bpf`.
    pub fn bpf(&self) -> Want {
        Want::from_toggle(self.collector_bpf, self.no_collector_bpf)
    }

    /// `--[no-]collector.walk`, or the old `--collector KIND`.
    pub fn walk(&self) -> Want {
        match self.collector {
            Some(CollectorChoice::Walk) => Want::On,
            Some(CollectorChoice::Netlink) => Want::Off,
            Some(CollectorChoice::Auto) => Want::Auto,
            None => Want::from_toggle(self.collector_walk, self.no_collector_walk),
        }
    }
}

/// What a `--[no-]collector.NAME` pair asks of a collector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Want {
    /// Neither flag: run it where it can run.
    #[default]
    Auto,
    /// `--collector.NAME`: run it or fail.
    On,
    /// `--no-collector.NAME`.
    Off,
}

impl Want {
    /// clap keeps only the last of the pair (`overrides_with`), so at most one is set.
    fn from_toggle(on: bool, off: bool) -> Want {
        match (on, off) {
            (true, _) => Want::On,
            (_, true) => Want::Off,
            _ => Want::Auto,
        }
    }
}

/// The old `--collector KIND`, kept as a hidden alias of the walk's toggles.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectorChoice {
    Auto,
    Walk,
    Netlink,
}

/// The queue-delay alert rule (ARCHITECTURE.md, "The alert rule").
#[derive(Args, Clone, Debug)]
pub struct AlertArgs {
    /// Inflated while srtt >= RATIO x baseline.
    #[arg(long = "alert.ratio", value_name = "RATIO", default_value = "1.5", value_parser = parse_ratio)]
    pub ratio: f64,
    /// Fire once inflated without a break for this long (0s to 24h).
    #[arg(long = "alert.for", value_name = "DURATION", default_value = "5s", value_parser = parse_hold)]
    pub hold: Duration,
    /// ...and srtt - baseline >= this, so microsecond jitter on loopback does not count (0s to 10s).
    #[arg(long = "alert.floor", value_name = "DURATION", default_value = "1ms", value_parser = parse_floor)]
    pub floor: Duration,
    /// Baseline RTT: min (smaller of tcp_info and BBR min RTT), tcp or bbr.
    #[arg(long = "alert.baseline", value_name = "KIND", default_value = "min")]
    pub baseline: Baseline,
}

impl AlertArgs {
    pub fn rule(&self) -> RuleConfig {
        RuleConfig {
            ratio: self.ratio,
            hold: self.hold,
            floor: self.floor,
            baseline: self.baseline,
            ..RuleConfig::default()
        }
    }
}

pub fn parse_port(s: &str) -> Result<u16, String> {
    filter::parse_port(s).map_err(|e| e.to_string())
}

pub fn parse_cidr(s: &str) -> Result<IpNet, String> {
    filter::parse_cidr(s).map_err(|e| e.to_string())
}

pub fn parse_state(s: &str) -> Result<TcpState, String> {
    filter::parse_state(s).map_err(|e| e.to_string())
}

/// `--filter`: the words that decide tracking (see [`Expr::parse_tracked`]).
pub fn parse_filter(s: &str) -> Result<Expr, String> {
    Expr::parse_tracked(s).map_err(|e| e.to_string())
}

pub use bbrtop_core::time_input::{parse_duration, parse_duration_in};

/// A size in bytes: a number with an optional unit, B, KB, MB, GB, TB (powers of 1000) or KiB,
/// MiB, GiB, TiB (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KB" => 1000,
        "MB" => 1000_u64.pow(2),
        "GB" => 1000_u64.pow(3),
        "TB" => 1000_u64.pow(4),
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        u => return Err(format!("invalid size {s:?}: unknown unit {u:?} (try 500MB, 10GiB)")),
    };
    let n: u64 = num.parse().map_err(|_| format!("invalid size {s:?} (try 500MB, 10GiB)"))?;
    n.checked_mul(mult).filter(|&b| b > 0).ok_or_else(|| format!("invalid size {s:?}: zero or too large"))
}

/// A poll interval: between 10 ms and 1 hour.
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    parse_duration_in(s, "interval", Duration::from_millis(10), Duration::from_secs(3600))
}

/// The alert's hold time: up to a day (a longer one would never fire in practice, and the clock
/// arithmetic must not overflow).
pub fn parse_hold(s: &str) -> Result<Duration, String> {
    parse_duration_in(s, "hold", Duration::ZERO, Duration::from_secs(24 * 3600))
}

/// The alert's floor: up to 10 s of queue delay.
pub fn parse_floor(s: &str) -> Result<Duration, String> {
    parse_duration_in(s, "floor", Duration::ZERO, Duration::from_secs(10))
}

pub fn parse_ratio(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 1.0 => Ok(r),
        _ => Err(format!("invalid ratio {s:?} (a number above 1, e.g. 1.5)")),
    }
}

/// A namespace must exist when the command starts.
pub fn parse_netns(s: &str) -> Result<NetnsSpec, String> {
    let spec = NetnsSpec::parse(s);
    if !spec.0.exists() {
        return Err(format!("network namespace {s:?} not found ({} does not exist)", spec.0.display()));
    }
    Ok(spec)
}

/// `--peer-groups.file`: the groups it names, or none. A file that cannot be read or parsed is a
/// usage error naming it.
pub fn peer_groups(
    path: Option<&std::path::Path>,
) -> Result<bbrtop_core::peer_groups::PeerGroups, super::Failure> {
    use bbrtop_collect::files::{Kind, read_to_string};
    let Some(path) = path else { return Ok(Default::default()) };
    let text = read_to_string("--peer-groups.file", path, Kind::Config).map_err(super::Failure::Usage)?;
    bbrtop_core::peer_groups::PeerGroups::parse(&text)
        .map_err(|e| super::Failure::Usage(format!("peer groups {}: {e}", path.display())))
}

/// `--peer-groups.asn.file` and `--peer-groups.country.file`: the databases they name, each
/// checked to be of its kind. A file that cannot be read or is not such a database is a usage
/// error naming it.
pub fn geo(
    asn: Option<&std::path::Path>,
    country: Option<&std::path::Path>,
) -> Result<bbrtop_core::geo::Geo, super::Failure> {
    use bbrtop_collect::files::{Kind, read};
    use bbrtop_core::geo::{Db, Kind as DbKind};
    let load =
        |flag: &str, kind: DbKind, path: Option<&std::path::Path>| -> Result<Option<Db>, super::Failure> {
            let Some(path) = path else { return Ok(None) };
            let bytes = read(flag, path, Kind::Geo).map_err(super::Failure::Usage)?;
            Db::new(kind, bytes)
                .map(Some)
                .map_err(|e| super::Failure::Usage(format!("{flag} {}: {e}", path.display())))
        };
    Ok(bbrtop_core::geo::Geo {
        asn: load("--peer-groups.asn.file", DbKind::Asn, asn)?,
        country: load("--peer-groups.country.file", DbKind::Country, country)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_parsers() {
        assert_eq!(parse_interval("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("soon").is_err());
        assert!(parse_ratio("1.0").is_err());
        assert!(parse_ratio("NaN").is_err());
        assert_eq!(parse_ratio("2"), Ok(2.0));
        assert!(parse_netns("no-such-namespace-bbrtop").is_err());
        assert!(parse_netns("/proc/self/ns/net").is_ok());
        assert_eq!(parse_hold("0s"), Ok(Duration::ZERO));
        assert!(parse_hold("1000000000h").unwrap_err().contains("out of range (0s to 1day)"));
        assert!(parse_floor("11s").is_err());
        assert_eq!((parse_ring_size("16MiB"), parse_ring_size("4KiB")), (Ok(16 << 20), Ok(4096)));
        assert_eq!(
            parse_ring_size("3MiB"),
            Err("3MiB is not a power of two (try 2048KiB or 4096KiB)".into())
        );
        assert!(parse_ring_size("2KiB").unwrap_err().contains("outside 4KiB..1GiB"));
        assert!(parse_ring_size("2GiB").unwrap_err().contains("outside 4KiB..1GiB"));
    }

    /// The flags and `--filter` AND; `--filter` refuses what cannot decide tracking.
    #[test]
    fn filter_flags_and_expression_combine() {
        use bbrtop_core::testing::record;
        let a = FilterArgs {
            cc: vec!["bbr".into(), "bbr2".into()],
            expr: Some(parse_filter("not lo").unwrap()),
            ..FilterArgs::default()
        };
        let f = a.filter();
        assert!(f.matches(&record(1, "bbr").build()));
        assert!(f.matches(&record(1, "bbr2").build()));
        assert!(!f.matches(&record(1, "cubic").build()));
        assert!(!f.matches(&record(1, "bbr").peer("127.0.0.1:80").build()));
        assert!(FilterArgs::default().filter().is_empty());
        assert!(parse_filter("sending").unwrap_err().contains("changes from poll to poll"));
        assert!(parse_filter("port 0").unwrap_err().contains("invalid port"));
    }
}
