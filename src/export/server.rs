//! The HTTP side of `bbrtop export`: hyper 1 on a current-thread tokio runtime.
//!
//! Slow or hostile clients cannot starve a scrape. The timeouts are Go's http.Server's: headers
//! must arrive within [`Limits::header_read`] (its ReadHeaderTimeout), which also times the wait
//! for a keep-alive connection's next request (its IdleTimeout), a TLS handshake must finish
//! within it too, and a connection lives at most [`Limits::connection`]. Past
//! [`Limits::max_connections`] a new connection takes the slot of the one that has waited longest
//! without answering an authorized request ([`super::slots`]), or is closed at once when every
//! slot is answering one. Idle connections cost no thread.

use super::alertmanager::PushStats;
use super::api::{self, API_RESPONSES};
use super::auth::Auth;
use super::frame::{FRAME_RESPONSES, FrameBody, Frames};
use super::metrics::{self, Scrape};
use super::probes::Probes;
use super::slots::{Holding, Slot, Slots};
use super::web_config::Security;
use crate::runtime::Published;
use bbrtop_core::peer_groups::PeerGroups;
use bytes::Bytes;
use http_body_util::Full;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Serialize;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener as StdListener, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_connections: usize,
    /// For a request's headers, counted from the moment the connection waits for them: so also
    /// how long a keep-alive connection may sit idle.
    pub header_read: Duration,
    /// A connection's whole life.
    pub connection: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 512,
            header_read: Duration::from_secs(10),
            connection: Duration::from_secs(120),
        }
    }
}

/// What the server is told beside the snapshots.
#[derive(Clone)]
pub struct Options {
    /// Per-socket gauges for the K most inflated sockets.
    pub top_k: usize,
    pub push_stats: Option<Arc<PushStats>>,
    /// The poller's interval, which says when data has gone stale.
    pub poll_interval: Duration,
    /// Serve the JSON API (`/api/sockets`, `/api/alerts`): off unless asked for.
    pub api: bool,
    /// Add the aggregates by pod namespace to /metrics.
    pub by_pod_namespace: bool,
    /// Where the metrics are served (`--web.telemetry-path`).
    pub telemetry_path: String,
    /// The watched namespace's host facts, which the API's frames carry.
    pub system: bbrtop_core::system::SystemInfo,
    /// Hindsight, written on `POST /api/hindsight` (with the API on).
    pub hindsight: Option<Arc<super::hindsight::Keeper>>,
    /// The OTLP shipper, whose counts /metrics shows.
    pub otlp: Option<Arc<super::otlp::Handle>>,
    /// A running experiment's status, which /metrics shows (`bbrtop experiment`).
    pub experiment: Option<Arc<crate::experiment::status::Latest>>,
    /// `--metrics.response-histograms.classic`: the response times per AS and country in classic
    /// buckets too.
    pub response_classic: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top_k: 0,
            push_stats: None,
            poll_interval: Duration::default(),
            api: false,
            by_pod_namespace: false,
            telemetry_path: "/metrics".into(),
            system: Default::default(),
            hindsight: None,
            otlp: None,
            experiment: None,
            response_classic: false,
        }
    }
}

/// What every request reads.
pub struct App {
    published: Arc<Published>,
    groups: Arc<PeerGroups>,
    top_k: usize,
    by_pod_namespace: bool,
    push_stats: Option<Arc<PushStats>>,
    tls: Option<Arc<rustls::ServerConfig>>,
    auth: Auth,
    probes: Probes,
    /// Slots for API responses, when the API is on.
    api: Option<Arc<Semaphore>>,
    /// The frames for `--connect`, and their response slots, when the API is on.
    frames: Option<(Arc<Frames>, Arc<Semaphore>)>,
    telemetry_path: String,
    landing: Bytes,
    hindsight: Option<Arc<super::hindsight::Keeper>>,
    otlp: Option<Arc<super::otlp::Handle>>,
    experiment: Option<Arc<crate::experiment::status::Latest>>,
    response_classic: bool,
}

impl App {
    pub fn new(published: Arc<Published>, groups: Arc<PeerGroups>, security: Security, o: Options) -> App {
        App {
            published,
            groups,
            top_k: o.top_k,
            by_pod_namespace: o.by_pod_namespace,
            push_stats: o.push_stats,
            tls: security.tls,
            auth: Auth::new(security.users),
            probes: Probes::new(o.poll_interval),
            api: o.api.then(|| Arc::new(Semaphore::new(API_RESPONSES))),
            frames: o
                .api
                .then(|| (Arc::new(Frames::new(o.system)), Arc::new(Semaphore::new(FRAME_RESPONSES)))),
            landing: landing(&o.telemetry_path).into(),
            hindsight: o.hindsight,
            otlp: o.otlp,
            experiment: o.experiment,
            response_classic: o.response_classic,
            telemetry_path: o.telemetry_path,
        }
    }

    /// bcrypt checks run so far (auth's cost).
    pub fn auth_checks(&self) -> u64 {
        self.auth.checks()
    }
}

/// Binds `host:port` (`:port` means every address, IPv6 and IPv4). Errors are one line.
pub fn bind(addr: &str) -> Result<StdListener, String> {
    let addrs: Vec<SocketAddr> = if let Some(port) = addr.strip_prefix(':') {
        let port: u16 = port.parse().map_err(|_| format!("listen address {addr:?}: bad port"))?;
        vec![SocketAddr::from(([0u16; 8], port)), SocketAddr::from(([0u8; 4], port))]
    } else {
        addr.to_socket_addrs().map_err(|e| format!("listen address {addr:?}: {e}"))?.collect()
    };
    let mut last = format!("listen address {addr:?}: no address");
    for a in addrs {
        match StdListener::bind(a) {
            Ok(l) => {
                l.set_nonblocking(true).map_err(|e| format!("listen address {addr:?}: {e}"))?;
                return Ok(l);
            }
            // A host without IPv6 falls back to 0.0.0.0; a port in use is final.
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                return Err(format!("listen address {addr:?}: {a} is already in use"));
            }
            Err(e) => last = format!("listen address {addr:?}: {a}: {e}"),
        }
    }
    Err(last)
}

/// Serves on every listener until `shutdown` completes.
pub async fn serve(
    listeners: Vec<StdListener>,
    app: Arc<App>,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Slots::new(limits.max_connections);
    let tls = app.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let mut tasks = tokio::task::JoinSet::new();
    for l in listeners {
        let l = tokio::net::TcpListener::from_std(l)?;
        let (app, slots, tls) = (Arc::clone(&app), slots.clone(), tls.clone());
        tasks.spawn(accept_loop(l, app, slots, tls, limits));
    }
    shutdown.await;
    tasks.abort_all();
    Ok(())
}

async fn accept_loop(
    l: tokio::net::TcpListener,
    app: Arc<App>,
    slots: Slots,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: Limits,
) {
    loop {
        let stream = match l.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // EMFILE and the like: say so, back off, keep serving.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some((slot, evicted)) = slots.admit() else {
            drop(stream);
            continue;
        };
        let (app, tls) = (Arc::clone(&app), tls.clone());
        tokio::spawn(async move {
            let slot = Arc::new(slot);
            let _ = stream.set_nodelay(true);
            let serve = async move {
                match tls {
                    Some(acc) => {
                        if let Ok(Ok(s)) = tokio::time::timeout(limits.header_read, acc.accept(stream)).await
                        {
                            serve_conn(s, app, slot, limits).await;
                        }
                    }
                    None => serve_conn(stream, app, slot, limits).await,
                }
            };
            // A newer connection took this one's slot while it waited: it is closed. (A held slot
            // never gives way; the sender, dropped unsent when the slot is freed, disables the
            // branch.)
            tokio::select! {
                () = serve => {}
                Ok(()) = evicted => {}
            }
        });
    }
}

async fn serve_conn<I: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    io: I,
    app: Arc<App>,
    slot: Arc<Slot>,
    limits: Limits,
) {
    let svc = hyper::service::service_fn(move |req| {
        let (app, slot) = (Arc::clone(&app), Arc::clone(&slot));
        async move { Ok::<_, std::convert::Infallible>(handle(&app, req, &slot).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .serve_connection(TokioIo::new(io), svc);
    let _ = tokio::time::timeout(limits.connection, conn).await;
}

type Resp = Response<BoxBody<Bytes, Infallible>>;

fn respond(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Resp {
    with_body(status, content_type, Full::new(body.into()))
}

fn with_body(
    status: StatusCode,
    content_type: &'static str,
    body: impl hyper::body::Body<Data = Bytes, Error = Infallible> + Send + Sync + 'static,
) -> Resp {
    let mut r = Response::new(BoxBody::new(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json<T: Serialize>(v: &T) -> Resp {
    match serde_json::to_vec(v) {
        Ok(b) => respond(StatusCode::OK, "application/json", b),
        Err(e) => respond(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", e.to_string()),
    }
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT_004: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition formats `/metrics` serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// Prometheus' protobuf, with native histograms ([`metrics::render_protobuf`]).
    Protobuf,
    OpenMetrics,
    Text004,
}

/// The format an `Accept` header asks for: of the media ranges naming one of the three, the one
/// of highest q (the earliest on a tie; q=0 refuses). Text 0.0.4 when none does: no header,
/// `*/*`, or only other types, as every scraper reads it. Prometheus asks for protobuf first
/// only when its native histograms are on.
fn negotiate(accept: Option<&str>) -> Format {
    let mut best: Option<(f32, Format)> = None;
    for range in accept.unwrap_or("").split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: Vec<(String, &str)> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"')))
            .collect();
        let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        let format = match media.as_str() {
            "application/vnd.google.protobuf"
                if param("proto") == Some("io.prometheus.client.MetricFamily")
                    && param("encoding") == Some("delimited") =>
            {
                Format::Protobuf
            }
            "application/openmetrics-text" => Format::OpenMetrics,
            "text/plain" | "text/*" | "*/*" => Format::Text004,
            _ => continue,
        };
        let q = param("q").map_or(Some(1.0), |q| q.parse::<f32>().ok()).unwrap_or(0.0);
        if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
            best = Some((q, format));
        }
    }
    best.map_or(Format::Text004, |(_, f)| f)
}

/// The landing page, which links the metrics wherever `--web.telemetry-path` puts them.
fn landing(telemetry_path: &str) -> String {
    let metrics = telemetry_path.trim_start_matches('/');
    format!(
        "<!DOCTYPE html><html><head><title>bbrtop exporter</title></head><body>\
<h1>bbrtop exporter</h1><p>Per-socket TCP congestion control: BBR, CUBIC and RTT inflation.</p><ul>\
<li><a href=\"{metrics}\">/{metrics}</a></li><li><a href=\"api/sockets\">/api/sockets</a></li>\
<li><a href=\"api/alerts\">/api/alerts</a></li><li><a href=\"-/healthy\">/-/healthy</a></li>\
<li><a href=\"-/ready\">/-/ready</a></li><li><a href=\"runbook\">/runbook</a></li></ul></body></html>\n"
    )
}

/// Paths the server answers itself, which `--web.telemetry-path` cannot take.
pub const RESERVED_PATHS: [&str; 8] = [
    "/",
    "/-/healthy",
    "/-/ready",
    "/api/sockets",
    "/api/alerts",
    "/api/hindsight",
    crate::record::frame::PATH,
    "/runbook",
];

/// What each alert means and what to do: docs/runbook.md, served with the binary so it matches
/// the version that fired.
static RUNBOOK: &str = include_str!("../../docs/runbook.md");

/// Answers one request; a request that passes auth (any but the probes, without users) holds
/// `slot` until its response is sent.
async fn handle(app: &App, req: Request<Incoming>, slot: &Arc<Slot>) -> Resp {
    let hindsight = req.uri().path() == "/api/hindsight";
    if (req.method() != Method::GET && req.method() != Method::HEAD && !hindsight)
        || (hindsight && req.method() != Method::POST)
    {
        return respond(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "Method Not Allowed\n");
    }
    let (snap, now) = (app.published.latest(), std::time::SystemTime::now());
    // The probes answer without auth (as Prometheus' own do): they tell nothing private, and
    // Kubernetes probes carry no password.
    match req.uri().path() {
        "/-/healthy" if app.probes.healthy(&snap, now) => {
            return respond(StatusCode::OK, "text/plain", "Healthy\n");
        }
        "/-/healthy" => {
            return respond(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "Unhealthy: polls have stopped\n");
        }
        "/-/ready" if app.probes.ready(&snap, now) => {
            return respond(StatusCode::OK, "text/plain", "Ready\n");
        }
        "/-/ready" => {
            return respond(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                "Not ready: no recent netlink dump\n",
            );
        }
        _ => {}
    }
    if app.auth.enabled() && !app.auth.check(req.headers().get(header::AUTHORIZATION)).await {
        let mut r = respond(StatusCode::UNAUTHORIZED, "text/plain", "Unauthorized\n");
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"bbrtop\""));
        return r;
    }
    let holding = slot.hold();
    let r = match req.uri().path() {
        p if p == app.telemetry_path => metrics_response(app, snap, &req).await,
        path @ ("/api/sockets" | "/api/alerts") => api_response(app, snap, path),
        "/api/hindsight" => hindsight_response(app).await,
        crate::record::frame::PATH => frame_response(app, snap, req.uri().query()).await,
        "/runbook" => respond(StatusCode::OK, "text/markdown; charset=utf-8", RUNBOOK),
        "/" => respond(StatusCode::OK, "text/html; charset=utf-8", app.landing.clone()),
        _ => respond(StatusCode::NOT_FOUND, "text/plain", "Not Found\n"),
    };
    r.map(|body| BoxBody::new(HeldBody { body, _holding: holding }))
}

/// A response's body that keeps its request's hold on the connection's slot until it is sent
/// (hyper drops a body once its last frame is taken, or when the connection ends).
struct HeldBody {
    body: BoxBody<Bytes, Infallible>,
    _holding: Holding,
}

impl hyper::body::Body for HeldBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Writes hindsight as a recording on the exporter's disk (`--hindsight.dir`); answers where, and
/// what it holds. With the API only: it is the same kind of door.
async fn hindsight_response(app: &App) -> Resp {
    let (Some(keeper), Some(_)) = (&app.hindsight, &app.api) else {
        return respond(
            StatusCode::NOT_FOUND,
            "text/plain",
            "Not Found: hindsight is written over HTTP with --web.enable-api and --hindsight.window above 0\n",
        );
    };
    use super::hindsight::Refused;
    let keeper = Arc::clone(keeper);
    match tokio::task::spawn_blocking(move || keeper.dump_requested(std::time::Instant::now())).await {
        Ok(Ok(d)) => json(&d),
        Ok(Err(Refused::TooSoon(left))) => {
            let secs = left.as_secs() + 1;
            let mut r = respond(
                StatusCode::TOO_MANY_REQUESTS,
                "text/plain",
                format!(
                    "Too Many Requests: hindsight was written less than a minute ago; again in {secs} s\n"
                ),
            );
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
            r
        }
        Ok(Err(Refused::Failed(e))) => {
            respond(StatusCode::SERVICE_UNAVAILABLE, "text/plain", format!("{e:#}\n"))
        }
        Err(_) => respond(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", "hindsight failed\n"),
    }
}

/// The JSON API, when it is on and has a slot free.
fn api_response(app: &App, snap: Arc<bbrtop_core::snapshot::Snapshot>, path: &str) -> Resp {
    let Some(slots) = &app.api else { return api_off() };
    let Ok(permit) = Arc::clone(slots).try_acquire_owned() else {
        return respond(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "Too many API requests at once\n");
    };
    if path == "/api/sockets" {
        with_body(StatusCode::OK, "application/json", api::sockets_body(snap, permit))
    } else {
        json(&AlertsDoc { taken_at: snap.taken_at, rule: &snap.rule, alerts: &snap.alerts })
    }
}

fn api_off() -> Resp {
    respond(StatusCode::NOT_FOUND, "text/plain", "Not Found: the JSON API is off (--web.enable-api)\n")
}

/// The poll a frame's reader holds: `since=SEQ` in the query, the only parameter.
fn since_of(query: Option<&str>) -> Result<Option<u64>, String> {
    let Some(q) = query.filter(|q| !q.is_empty()) else { return Ok(None) };
    match q.strip_prefix("since=").map(str::parse::<u64>) {
        Some(Ok(seq)) => Ok(Some(seq)),
        _ => Err(format!("Bad Request: {q:?}: the frame's one parameter is since=SEQ (a poll's number)\n")),
    }
}

/// A poll's frame for `bbrtop --connect`, when the API is on and a frame slot is free: the
/// changes since the poll the reader holds (`?since=SEQ`) where the exporter holds it too.
async fn frame_response(app: &App, snap: Arc<bbrtop_core::snapshot::Snapshot>, query: Option<&str>) -> Resp {
    use super::frame::Answer;
    let Some((frames, slots)) = &app.frames else { return api_off() };
    let since = match since_of(query) {
        Ok(s) => s,
        Err(why) => return respond(StatusCode::BAD_REQUEST, "text/plain", why),
    };
    let Ok(slot) = Arc::clone(slots).try_acquire_owned() else {
        return respond(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "Too many frame requests at once\n");
    };
    let frames = Arc::clone(frames);
    // Encoding 100k sockets takes a while: off the event loop.
    match tokio::task::spawn_blocking(move || frames.of(&snap, since)).await {
        Ok(Ok(Answer::Frame(frame))) => {
            with_body(StatusCode::OK, crate::record::frame::CONTENT_TYPE, FrameBody::new(frame, slot))
        }
        Ok(Ok(Answer::Held)) => respond(StatusCode::NOT_MODIFIED, crate::record::frame::CONTENT_TYPE, ""),
        Ok(Err(e)) => respond(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", format!("frame: {e:#}\n")),
        Err(e) => respond(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", format!("internal error: {e}\n")),
    }
}

async fn metrics_response(
    app: &App,
    snap: Arc<bbrtop_core::snapshot::Snapshot>,
    req: &Request<Incoming>,
) -> Resp {
    let format = negotiate(req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let posts = app.push_stats.as_ref().map(|s| s.snapshot()).unwrap_or_default();
    let scrape = Scrape {
        snap,
        groups: Arc::clone(&app.groups),
        top_k: app.top_k,
        by_pod_namespace: app.by_pod_namespace,
        posts,
        process: super::process::read(),
        hindsight_memory_bytes: app.hindsight.as_ref().map(|k| k.memory_bytes()),
        hindsight_spool_bytes: app.hindsight.as_ref().and_then(|k| k.spool_bytes()),
        otlp: app.otlp.as_deref().map(metrics::OtlpCounts::of),
        experiment: app.experiment.as_ref().map(|e| e.latest().as_ref().clone()),
        response_classic: app.response_classic,
    };
    // Rendering 100k sockets takes milliseconds: off the event loop, so other connections keep
    // being served meanwhile.
    let mut r = blocking(move || match format {
        Format::Protobuf => respond(StatusCode::OK, metrics::PROTOBUF, metrics::render_protobuf(scrape)),
        Format::OpenMetrics => respond(StatusCode::OK, OPENMETRICS, metrics::render_openmetrics(scrape)),
        Format::Text004 => {
            respond(StatusCode::OK, TEXT_004, metrics::to_text_004(&metrics::render_openmetrics(scrape)))
        }
    })
    .await;
    // The body depends on Accept: a cache between must not serve one scraper's format to another.
    r.headers_mut().insert(header::VARY, HeaderValue::from_static("accept"));
    r
}

async fn blocking(f: impl FnOnce() -> Resp + Send + 'static) -> Resp {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        respond(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", format!("internal error: {e}\n"))
    })
}

#[derive(Serialize)]
struct AlertsDoc<'a> {
    #[serde(with = "bbrtop_core::units::serde_time")]
    taken_at: std::time::SystemTime,
    rule: &'a bbrtop_core::rule::RuleConfig,
    alerts: &'a [bbrtop_core::snapshot::AlertView],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frames_one_parameter_is_the_poll_its_reader_holds() {
        assert_eq!(since_of(None), Ok(None));
        assert_eq!(since_of(Some("")), Ok(None));
        assert_eq!(since_of(Some("since=42")), Ok(Some(42)));
        for bad in ["since=", "since=-1", "since=x", "seq=4", "since=4&x=1"] {
            let e = since_of(Some(bad)).unwrap_err();
            assert!(e.starts_with("Bad Request") && e.contains("since=SEQ"), "{bad}: {e}");
        }
    }

    #[test]
    fn bind_errors_are_one_line() {
        let l = bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let e = bind(&format!("127.0.0.1:{port}")).unwrap_err();
        assert!(e.contains("already in use") && !e.contains('\n'), "{e}");
        assert!(bind(":notaport").unwrap_err().contains("bad port"));
        // ":port" listens on every address.
        assert!(bind(":0").unwrap().local_addr().unwrap().ip().is_unspecified());
    }

    #[test]
    fn accept_headers_pick_the_format() {
        // Prometheus 2.42 with and without its native histograms, as it sends them.
        let native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        let classic = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(native)), Format::Protobuf);
        assert_eq!(negotiate(Some(classic)), Format::OpenMetrics);
        assert_eq!(negotiate(None), Format::Text004);
        assert_eq!(negotiate(Some("*/*")), Format::Text004);
        assert_eq!(negotiate(Some("application/json")), Format::Text004);
        // q decides, not the order; q=0 refuses.
        assert_eq!(negotiate(Some("text/plain;q=0.5, application/openmetrics-text")), Format::OpenMetrics);
        assert_eq!(negotiate(Some("application/openmetrics-text;q=0.3,text/plain")), Format::Text004);
        assert_eq!(negotiate(Some("application/openmetrics-text;q=0")), Format::Text004);
        // Protobuf only as Prometheus' delimited MetricFamily stream.
        assert_eq!(
            negotiate(Some(
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"
            )),
            Format::Text004
        );
        assert_eq!(
            negotiate(Some(
                "Application/Vnd.Google.Protobuf; proto=\"io.prometheus.client.MetricFamily\"; encoding=delimited"
            )),
            Format::Protobuf
        );
    }

    #[test]
    fn the_runbook_is_the_runbook_document() {
        assert!(RUNBOOK.starts_with("# Runbook\n") && RUNBOOK.contains("\n## TcpRttInflation\n"));
    }
}
