//! `bbrtop export`: poll, serve /metrics and the JSON API, and push alerts to Alertmanager.

use super::Failure;
use super::args::PollArgs;
use crate::export::alertmanager::{PushConfig, Pusher};
use crate::export::hindsight::Keeper;
use crate::export::metrics::TOP_K_CAP;
use crate::export::otlp::record::Source;
use crate::export::otlp::{OtlpConfig, Peers as OtlpPeers, Shipper};
use crate::export::server::{self, App, Limits, Options};
use crate::export::web_config::{Security, WebConfig};
use crate::record::{Hindsight, HindsightOptions};
use anyhow::{Context, anyhow};
use bbrtop_core::peer_groups::PeerGroups;
use clap::Args;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub poll: PollArgs,
    /// Address to listen on, host:port or :port (every address). May be given more than once.
    #[arg(long = "web.listen-address", value_name = "ADDR", default_value = ":10027", value_parser = parse_listen)]
    pub listen: Vec<String>,
    /// Serve on the sockets systemd passes (socket activation: LISTEN_FDS, from a .socket unit)
    /// instead of binding --web.listen-address.
    #[arg(long = "web.systemd-socket")]
    pub systemd_socket: bool,
    /// The path of the metrics page.
    #[arg(long = "web.telemetry-path", value_name = "PATH", default_value = "/metrics",
          value_parser = parse_telemetry_path)]
    pub telemetry_path: String,
    /// Serve the JSON API (/api/sockets, /api/alerts) and the live state `bbrtop --connect` reads
    /// (/api/v1/frame): the host's connection table, so off unless asked for; behind the same
    /// auth as /metrics.
    #[arg(long = "web.enable-api")]
    pub enable_api: bool,
    /// exporter-toolkit web config (YAML): TLS and basic auth. A regular file of at most 1 MiB;
    /// the certificate and key files it names, at most 4 MiB each.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config: Option<PathBuf>,
    /// Concurrent connections (1 to 65536); past this, a new connection takes the slot of the one
    /// idle longest (or not yet past auth), or is closed at once if every slot is answering an
    /// authorized request.
    #[arg(long = "web.max-connections", value_name = "N", default_value = "512",
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,
    #[command(flatten)]
    pub otlp: super::otlp::OtlpArgs,
    /// Alertmanager to push alerts to (http://host:port, no user or password). May be given more
    /// than once.
    #[arg(long = "alertmanager.url", value_name = "URL", value_parser = AmUrl)]
    pub alertmanager: Vec<String>,
    /// The pushed alerts' `instance` label (default HOST:PORT of this exporter); set it to what
    /// the scrape config sets (the node name on Kubernetes), so the shipped inhibit rule matches.
    #[arg(long = "alertmanager.instance", value_name = "LABEL")]
    pub instance: Option<String>,
    /// The pushed alerts' `runbook_url` (default: this exporter's /runbook page).
    #[arg(long = "alertmanager.runbook-url", value_name = "URL")]
    pub runbook_url: Option<String>,
    /// Resend firing alerts this often (1s to 1h); endsAt is 4 times this ahead.
    #[arg(long = "alertmanager.resend-interval", value_name = "DURATION", default_value = "1m",
          value_parser = parse_resend)]
    pub resend: Duration,
    /// Export per-socket gauges for the N most inflated sockets (0: none; at most 1000).
    #[arg(long = "metrics.per-socket.top-k", value_name = "N", default_value = "0", value_parser = parse_top_k)]
    pub top_k: usize,
    /// Add aggregates of pods' sockets by the pod's namespace (and cc): 4 gauge series per
    /// (namespace, cc) with sockets. Needs the socket walk, and --kubernetes.pods for names.
    #[arg(long = "metrics.by-pod-namespace")]
    pub by_pod_namespace: bool,
    /// Serve the response times per AS and country in classic buckets too (132 series each):
    /// without it they are native histograms only, and text scrapes get them summed over AS and
    /// country.
    #[arg(long = "metrics.response-histograms.classic")]
    pub response_classic: bool,
    /// Keep the last DURATION of polls (0 turns hindsight off), to be written as a recording on
    /// SIGUSR1 or `POST /api/hindsight` (with --web.enable-api), so the minutes before an alert
    /// can be kept after it fired. They are spooled to DIR/.spool (--hindsight.dir), which
    /// outlives a kill or a restart; in memory where that cannot be written.
    #[arg(long = "hindsight.window", value_name = "DURATION", default_value = "15m", value_parser = parse_window)]
    pub hindsight_window: Duration,
    /// The space hindsight's polls may take (in its spool, or in memory without one); past it the
    /// oldest polls go first. The encoder's buffers take some MB of memory besides.
    #[arg(long = "hindsight.max-size", value_name = "SIZE", default_value = "256MiB", value_parser = super::args::parse_size)]
    pub hindsight_max: u64,
    /// Where hindsight is written: a new recording directory under it each time, and the spool
    /// in DIR/.spool.
    #[arg(long = "hindsight.dir", value_name = "DIR", default_value = "/var/lib/bbrtop/hindsight")]
    pub hindsight_dir: PathBuf,
    /// A spool segment's length: the spool's newest polls are written as a segment readable once
    /// it covers this long, so a SIGKILL, an OOM kill or a power cut loses at most this long.
    #[arg(long = "hindsight.segment", value_name = "DURATION", default_value = "5s", value_parser = super::record::parse_segment)]
    pub hindsight_segment: Duration,
    #[command(flatten)]
    pub peers: super::peers::PeerArgs,
}

/// An absolute path of its own: not one the server answers itself, no query, no spaces.
fn parse_telemetry_path(s: &str) -> Result<String, String> {
    use crate::export::server::RESERVED_PATHS;
    let bad = |why: &str| Err(format!("invalid telemetry path {s:?}: {why}"));
    if !s.starts_with('/') {
        return bad("it must start with /");
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control() || c == '?' || c == '#') {
        return bad("no spaces, ? or #");
    }
    if RESERVED_PATHS.contains(&s) {
        return bad("the exporter serves that path itself");
    }
    Ok(s.to_string())
}

fn parse_window(s: &str) -> Result<Duration, String> {
    super::args::parse_duration_in(s, "hindsight window", Duration::ZERO, Duration::from_secs(24 * 3600))
}

fn parse_top_k(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= TOP_K_CAP => Ok(n),
        _ => Err(format!("invalid top-k {s:?} (0 to {TOP_K_CAP})")),
    }
}

/// At least a second, so an alert's endsAt (4 resends ahead) outlives the next resend; at most an
/// hour, so Alertmanager hears of a firing alert often enough.
fn parse_resend(s: &str) -> Result<Duration, String> {
    super::args::parse_duration_in(s, "resend interval", Duration::from_secs(1), Duration::from_secs(3600))
}

/// `host:port` or `:port`, with a port from 0 to 65535: a usage error when parsed, not a runtime
/// failure at bind. Whether the host resolves is only known at bind.
pub(super) fn parse_listen(s: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("invalid listen address {s:?}: {why} (expected host:port or :port)"));
    let Some((host, port)) = s.rsplit_once(':') else { return bad("no port") };
    if port.parse::<u16>().is_err() {
        return bad("the port is not 0 to 65535");
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("spaces in the host");
    }
    Ok(s.to_string())
}

/// `--alertmanager.url`'s parser. Not a plain function: clap's error for one quotes the value,
/// which may hold a password; this one's errors show it masked.
#[derive(Clone)]
struct AmUrl;

impl clap::builder::TypedValueParser for AmUrl {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let checked = value.to_str().ok_or_else(|| "not UTF-8".to_string()).and_then(parse_am_url);
        checked.map_err(|why| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("--alertmanager.url: {why}\n"))
                .with_cmd(cmd)
        })
    }
}

/// The push speaks plain http, so credentials in the URL would cross the network in clear (and
/// ureq would send them as basic auth): they are refused, not sent.
fn parse_am_url(s: &str) -> Result<String, String> {
    use crate::export::url_redact;
    let shown = url_redact::redacted(s);
    let rest = s
        .strip_prefix("http://")
        .ok_or_else(|| format!("invalid Alertmanager URL {shown:?} (expected http://host:port)"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("invalid Alertmanager URL {shown:?}: no host"));
    }
    if url_redact::userinfo(s).is_some() {
        return Err(format!(
            "invalid Alertmanager URL {shown:?}: no credentials in the URL; the push speaks plain \
             http, so they would cross the network in clear (put a proxy that adds them in front)"
        ));
    }
    // The URL is only used at the first alert: a host with spaces would fail then, every time.
    match s.parse::<hyper::Uri>() {
        Ok(u) if u.authority().is_some_and(|a| !a.host().is_empty()) => {}
        _ => {
            return Err(format!("invalid Alertmanager URL {shown:?}: not a URL (expected http://host:port)"));
        }
    }
    Ok(s.trim_end_matches('/').to_string())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

pub fn run(a: ExportArgs) -> Result<(), Failure> {
    let (peers, geo_files) = a.peers.load()?;
    let (groups, geo) = (Arc::clone(&peers.groups), Arc::clone(&peers.geo));
    let otlp = a.otlp.endpoint(&|k| std::env::var(k).ok()).map_err(Failure::Usage)?;
    // SIGHUP reads the databases again; it does not stop a daemon.
    super::startup::HUP_RELOADS.store(true, Ordering::Relaxed);
    let security = match &a.web_config {
        Some(p) => WebConfig::load(p).map_err(Failure::Usage)?,
        None => Security::default(),
    };
    // Bound before anything else starts: a port in use is a one-line error, at once.
    let listeners = if a.systemd_socket { systemd_listeners()? } else { bind_all(&a.listen)? };
    let port = listeners[0].local_addr().context("listener address")?.port();
    let bound: Vec<String> =
        listeners.iter().filter_map(|l| l.local_addr().ok()).map(|a| a.to_string()).collect();
    let started = super::startup::start(&a.poll, peers, None, &mut |line| tracing::warn!("{line}"))?;
    let reload = super::reload::start(geo_files, Arc::clone(&geo), Arc::clone(&started.stop))
        .context("starting the database reloader")?;
    let me = Me { host: hostname(), port, scheme: if security.tls.is_some() { "https" } else { "http" } };
    let pusher = match push_config(&a, &me, &groups) {
        Some(cfg) => Some(
            Pusher::start(cfg, started.runtime.published()).context("starting the Alertmanager pusher")?,
        ),
        None => None,
    };
    let system = bbrtop_collect::host::system_info(started.netns.as_ref());
    let shipper = match otlp {
        Some(endpoint) => Some(start_otlp(&a, endpoint, &system, &started, (&groups, &geo))?),
        None => None,
    };
    let options = Options {
        top_k: a.top_k,
        push_stats: pusher.as_ref().map(Pusher::stats),
        poll_interval: a.poll.source.interval,
        api: a.enable_api,
        by_pod_namespace: a.by_pod_namespace,
        telemetry_path: a.telemetry_path.clone(),
        system,
        hindsight: None,
        otlp: shipper.as_ref().map(Shipper::handle),
        experiment: None,
        response_classic: a.response_classic,
    };
    let hindsight = start_hindsight(&a, &started)?;
    let options = Options { hindsight: hindsight.as_ref().map(|(k, _)| Arc::clone(k)), ..options };
    let app = Arc::new(App::new(started.runtime.published(), groups, security, options));
    let limits = Limits { max_connections: a.max_connections as usize, ..Limits::default() };
    tracing::info!(address = bound.join(","), scheme = me.scheme, "listening");
    serve_until(listeners, app, limits, Arc::clone(&started.stop), hindsight.is_some())?;
    // Both stop at once: each may wait for a request in flight (Alertmanager's 5 s timeout, the
    // OTLP sender's 5 s grace), and one after the other would pass the DaemonSet's 10 s grace.
    std::thread::scope(|s| {
        s.spawn(move || drop(pusher));
        drop(shipper);
    });
    if let Some((_, thread)) = hindsight {
        let _ = thread.join();
    }
    if let Some(thread) = reload {
        let _ = thread.join();
    }
    drop(started);
    Ok(())
}

/// The OTLP shipper of closed flows (the flows come from eBPF's close records: without them it
/// has nothing to send, which is said).
fn start_otlp(
    a: &ExportArgs,
    endpoint: crate::export::otlp::send::Endpoint,
    system: &bbrtop_core::system::SystemInfo,
    started: &super::startup::Started,
    (groups, geo): (&Arc<bbrtop_core::peer_groups::PeerGroups>, &Arc<bbrtop_core::geo::GeoCell>),
) -> Result<Shipper, Failure> {
    let url = endpoint.url.clone();
    let cfg = OtlpConfig {
        endpoint,
        queue: a.otlp.queue as usize,
        batch: a.otlp.batch as usize,
        source: Source { host: system.host.clone(), bbr: system.bbr.clone() },
        loopback: a.poll.loopback,
    };
    let peers = OtlpPeers { groups: Arc::clone(groups), geo: Arc::clone(geo) };
    let shipper = Shipper::start(cfg, peers, started.runtime.published()).map_err(Failure::Usage)?;
    tracing::info!(endpoint = url, "pushing closed flows over OTLP");
    Ok(shipper)
}

/// Hindsight's keeper, and the thread that feeds it.
type Kept = (Arc<Keeper>, std::thread::JoinHandle<()>);

/// Hindsight, unless `--hindsight.window 0`; SIGUSR1 asks for a dump.
fn start_hindsight(a: &ExportArgs, started: &super::startup::Started) -> Result<Option<Kept>, Failure> {
    if a.hindsight_window.is_zero() {
        return Ok(None);
    }
    let opts = HindsightOptions {
        window: a.hindsight_window,
        max_bytes: a.hindsight_max,
        segment: a.hindsight_segment,
    };
    let sys = bbrtop_collect::host::system_info(started.netns.as_ref());
    let spool = a.hindsight_dir.join(crate::record::hindsight::SPOOL);
    let held = Hindsight::spooled(opts, sys.clone(), &spool).unwrap_or_else(|e| {
        tracing::warn!("hindsight is held in memory, which a kill loses: no spool: {e:#}");
        Hindsight::in_memory(opts, sys)
    });
    let keeper = Keeper::new(held, a.hindsight_dir.clone());
    // The startup sequence took SIGUSR1; hindsight's thread is its one reader.
    let wanted = Arc::clone(super::startup::usr1());
    let thread = keeper
        .start(started.runtime.published(), Arc::clone(&started.stop), wanted)
        .context("starting hindsight")?;
    Ok(Some((keeper, thread)))
}

pub(super) fn bind_all(addrs: &[String]) -> Result<Vec<TcpListener>, Failure> {
    addrs
        .iter()
        .map(|l| server::bind(l))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::Runtime(anyhow!(e)))
}

/// The listening sockets systemd passed (LISTEN_FDS, LISTEN_PID), each checked to be a TCP
/// listener: anything else is bad usage, refused at start.
fn systemd_listeners() -> Result<Vec<TcpListener>, Failure> {
    crate::export::listen_fds::from_env().map_err(|e| Failure::Usage(format!("--web.systemd-socket: {e}")))
}

/// How this exporter is reached, for the links its alerts carry.
struct Me {
    host: String,
    port: u16,
    scheme: &'static str,
}

/// The Alertmanager pusher's settings, when an Alertmanager is given.
fn push_config(a: &ExportArgs, me: &Me, groups: &Arc<PeerGroups>) -> Option<PushConfig> {
    if a.alertmanager.is_empty() {
        return None;
    }
    let base = format!("{}://{}:{}", me.scheme, me.host, me.port);
    Some(PushConfig {
        urls: a.alertmanager.clone(),
        resend: a.resend,
        instance: a.instance.clone().unwrap_or_else(|| format!("{}:{}", me.host, me.port)),
        // The alert's page on this exporter: the JSON API when it is served, else the landing.
        generator_url: format!("{base}/{}", if a.enable_api { "api/alerts" } else { "" }),
        runbook_url: a.runbook_url.clone().unwrap_or_else(|| format!("{base}/runbook#tcprttinflation")),
        groups: Arc::clone(groups),
    })
}

/// Serves HTTP until the startup sequence's signal flag is set. Without hindsight, a SIGUSR1
/// (the dump signal) is answered with a log line saying there is nothing to write.
pub(super) fn serve_until(
    listeners: Vec<TcpListener>,
    app: Arc<App>,
    limits: Limits,
    stop: Arc<std::sync::atomic::AtomicBool>,
    hindsight: bool,
) -> Result<(), Failure> {
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the HTTP runtime")?;
    let usr1 = super::startup::usr1();
    let shutdown = async move {
        // Checked a few times a second.
        while !stop.load(Ordering::Relaxed) {
            if !hindsight && usr1.swap(false, Ordering::Relaxed) {
                tracing::warn!(
                    "SIGUSR1: hindsight is off (--hindsight.window 0), so there is nothing to write"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio_rt.block_on(server::serve(listeners, app, limits, shutdown)).context("serving HTTP")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, usage_line};
    use clap::Parser;

    /// `bbrtop export --alertmanager.url URL`'s usage error, as printed (exit code 2), if any.
    fn refused(url: &str) -> Option<String> {
        Cli::try_parse_from(["bbrtop", "export", "--alertmanager.url", url]).err().map(|e| usage_line(&e))
    }

    /// Credentials in the URL are refused, and the error, like every line, masks the password.
    #[test]
    fn credentials_in_an_alertmanager_url_are_refused_and_never_shown() {
        let e = refused("http://alice:s3cret@am:9093").expect("refused");
        assert!(e.contains("no credentials") && e.contains("alice:xxxxx@am:9093"), "{e}");
        assert!(!e.contains("s3cret") && e.lines().count() == 1, "{e}");
        assert!(refused("http://alice@am:9093").is_some_and(|e| e.contains("no credentials")));
        // Every refusal masks it, whatever else is wrong.
        for url in ["ftp://u:s3cret@am", "http://u:s3cret@a b:9093"] {
            let e = refused(url).expect(url);
            assert!(e.contains("Alertmanager URL") && !e.contains("s3cret"), "{e}");
        }
        assert_eq!(refused("http://am:9093/"), None);
        assert_eq!(refused("http://am:9093/prefix/a@b"), None, "an @ in the path is no userinfo");
    }
}
