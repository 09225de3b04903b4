//! The OTLP flags of `bbrtop export`, and the standard `OTEL_EXPORTER_OTLP_*` variables they
//! stand beside: either turns the export of closed flows on. A flag wins over the logs-specific
//! variable, which wins over the general one, as the OpenTelemetry specification orders them.

use crate::export::otlp::send::Endpoint;
use crate::export::url_redact::{redacted, without_userinfo};
use base64::Engine as _;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Closed flows as OpenTelemetry log records, over OTLP/HTTP with protobuf.
#[derive(Args, Clone, Debug, Default)]
pub struct OtlpArgs {
    /// Push each closed flow (eBPF's close records, of every namespace; loopback peers only with
    /// --loopback) as an OTLP log record to this collector's base URL (http:// or https://;
    /// /v1/logs is added), as OTEL_EXPORTER_OTLP_ENDPOINT does. A user:password@ in it goes as basic
    /// auth, over https:// only.
    /// OTEL_EXPORTER_OTLP_LOGS_ENDPOINT gives the full URL instead. Default: off.
    #[arg(long = "otlp.endpoint", value_name = "URL")]
    pub endpoint: Option<String>,
    /// A header sent with every request, e.g. for auth (repeat for more; not one HTTP or bbrtop
    /// sets, such as host or content-length). Beside
    /// OTEL_EXPORTER_OTLP_HEADERS (name=value,...). A command line is visible to every user of the
    /// host: give a secret in the variable, from a file only root reads (a systemd EnvironmentFile).
    #[arg(long = "otlp.header", value_name = "NAME=VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// gzip or none (OTEL_EXPORTER_OTLP_COMPRESSION; default none).
    #[arg(long = "otlp.compression", value_name = "gzip|none", value_parser = parse_compression)]
    pub compression: Option<bool>,
    /// Only http/protobuf is spoken (OTEL_EXPORTER_OTLP_PROTOCOL); grpc and http/json are refused.
    #[arg(long = "otlp.protocol", value_name = "PROTOCOL")]
    pub protocol: Option<String>,
    /// A request's timeout, 100ms to 5m (OTEL_EXPORTER_OTLP_TIMEOUT, in ms; default 10s). A stop
    /// waits 5 s at most for what is queued or in flight, whatever the timeout.
    #[arg(long = "otlp.timeout", value_name = "DURATION", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// Trust only the CA certificates in this PEM file for an https endpoint
    /// (OTEL_EXPORTER_OTLP_CERTIFICATE); default: the system's.
    #[arg(long = "otlp.ca.file", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Records held while the collector is slow or down (a batch in flight included), and at
    /// most N KiB of them; past either they are dropped and counted
    /// (bbrtop_otlp_log_records_dropped_total{reason="queue_full"}). About 400 bytes each: the
    /// default holds some 3 MiB.
    #[arg(long = "otlp.queue-size", value_name = "N", default_value_t = 8192, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub queue: u64,
    /// Records per request (sent at once when full, else each second).
    #[arg(long = "otlp.batch-size", value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub batch: u64,
}

/// A request's timeout, the flag's and the variable's: a shorter one fails every request.
const MIN_TIMEOUT: Duration = Duration::from_millis(100);
const MAX_TIMEOUT: Duration = Duration::from_secs(300);

/// Headers bbrtop sets or HTTP's framing owns: one given again would break every request.
const OWN_HEADERS: [&str; 11] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "content-type",
    "content-encoding",
];

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("{s:?}: expected NAME=VALUE"))?;
    let (k, v) = (k.trim(), v.trim());
    check_header(k, v)?;
    Ok((k.to_string(), v.to_string()))
}

/// A header a request can carry: a name of letters, digits, - and _ that is not one of
/// [`OWN_HEADERS`], and a value of visible characters, spaces and tabs (RFC 9110), so never
/// CR or LF.
fn check_header(k: &str, v: &str) -> Result<(), String> {
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
        return Err(format!("{k:?}: not a header name"));
    }
    if OWN_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(k)) {
        return Err(format!("header {k:?}: set by bbrtop or HTTP itself, not by a flag"));
    }
    if v.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!("header {k:?}: its value holds a control character (CR, LF, ...)"));
    }
    Ok(())
}

fn parse_compression(s: &str) -> Result<bool, String> {
    match s.trim() {
        "gzip" => Ok(true),
        "none" => Ok(false),
        _ => Err(format!("{s:?}: expected gzip or none")),
    }
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    super::args::parse_duration_in(s, "timeout", MIN_TIMEOUT, MAX_TIMEOUT)
}

/// OTEL_EXPORTER_OTLP_TIMEOUT: milliseconds, within the flag's bounds.
fn env_timeout(ms: &str) -> Result<Duration, String> {
    let bad = |why: &str| format!("OTEL_EXPORTER_OTLP_TIMEOUT {ms:?}: {why}");
    let d = Duration::from_millis(ms.trim().parse().map_err(|_| bad("not milliseconds"))?);
    if d < MIN_TIMEOUT || d > MAX_TIMEOUT {
        return Err(bad(&format!(
            "out of range ({} to {} ms)",
            MIN_TIMEOUT.as_millis(),
            MAX_TIMEOUT.as_millis()
        )));
    }
    Ok(d)
}

/// `name=value,...` with percent-encoded values, as OTEL_EXPORTER_OTLP_HEADERS holds them.
fn env_headers(s: &str) -> Result<Vec<(String, String)>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (k, v) = parse_header(p)?;
            let v = percent_encoding::percent_decode_str(&v).decode_utf8_lossy().into_owned();
            check_header(&k, &v)?;
            Ok((k, v))
        })
        .collect()
}

/// The logs URL: a base URL gets /v1/logs.
fn logs_url(base: &str) -> String {
    format!("{}/v1/logs", base.trim_end_matches('/'))
}

/// A checked URL without its userinfo, and the basic auth header the userinfo stood for (as Go's
/// HTTP client, the Collector's, turns it into one). Credentials are refused over http://, where
/// they would cross the network in clear. Errors show the URL redacted.
fn check_url(what: &str, url: &str) -> Result<(String, Option<(String, String)>), String> {
    let shown = redacted(url);
    let scheme = match url.split_once("://") {
        Some((s @ ("http" | "https"), _)) => s,
        _ => return Err(format!("{what} {shown:?}: expected http:// or https://")),
    };
    let (info, bare) = without_userinfo(url);
    match bare.parse::<hyper::Uri>() {
        Ok(u) if u.authority().is_some_and(|a| !a.host().is_empty()) => {}
        _ => return Err(format!("{what} {shown:?}: not a URL with a host")),
    }
    let Some(info) = info else { return Ok((bare, None)) };
    if scheme == "http" {
        return Err(format!(
            "{what} {shown:?}: credentials in an http:// URL would cross the network in clear: use https://"
        ));
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    let (user, password) = info.split_once(':').unwrap_or((info, ""));
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", decode(user), decode(password)));
    Ok((bare, Some(("Authorization".to_string(), format!("Basic {basic}")))))
}

impl OtlpArgs {
    /// Where closed flows go, if anywhere: from the flags, else the variables `env` reads.
    pub fn endpoint(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Endpoint>, String> {
        // Off, the variables are not read at all (the flags still are).
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            && self.endpoint.is_none()
        {
            return Ok(None);
        }
        // The logs-specific variable, else the general one.
        let var = |name: &str| {
            let get = |n: String| env(&n).filter(|v| !v.trim().is_empty());
            get(format!("OTEL_EXPORTER_OTLP_LOGS_{name}"))
                .or_else(|| get(format!("OTEL_EXPORTER_OTLP_{name}")))
        };
        let (url, auth) =
            match (&self.endpoint, env("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT").filter(|v| !v.is_empty())) {
                (Some(base), _) => check_url("--otlp.endpoint", base).map(|(u, a)| (logs_url(&u), a))?,
                (None, Some(full)) => check_url("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", &full)?,
                (None, None) => match env("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|v| !v.is_empty()) {
                    Some(base) => {
                        check_url("OTEL_EXPORTER_OTLP_ENDPOINT", &base).map(|(u, a)| (logs_url(&u), a))?
                    }
                    None => return Ok(None),
                },
            };
        let protocol =
            self.protocol.clone().or_else(|| var("PROTOCOL")).unwrap_or_else(|| "http/protobuf".into());
        if protocol.trim() != "http/protobuf" {
            return Err(format!("OTLP protocol {protocol:?} is not supported: bbrtop speaks http/protobuf"));
        }
        let gzip = match self.compression {
            Some(z) => z,
            None => var("COMPRESSION").map(|v| parse_compression(&v)).transpose()?.unwrap_or(false),
        };
        let timeout = match self.timeout {
            Some(t) => t,
            None => var("TIMEOUT").map(|ms| env_timeout(&ms)).transpose()?.unwrap_or(Duration::from_secs(10)),
        };
        let mut headers = var("HEADERS").map(|h| env_headers(&h)).transpose()?.unwrap_or_default();
        // A flag's header replaces the variable's of the same name.
        headers.retain(|(k, _)| !self.headers.iter().any(|(f, _)| f.eq_ignore_ascii_case(k)));
        headers.extend(self.headers.iter().cloned());
        // The URL's credentials, unless a header gives the authorization.
        headers.extend(auth.filter(|(k, _)| !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k))));
        let ca_file = self.ca_file.clone().or_else(|| var("CERTIFICATE").map(PathBuf::from));
        Ok(Some(Endpoint { url, headers, gzip, timeout, ca_file }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn off_unless_a_flag_or_a_variable_names_an_endpoint() {
        assert_eq!(OtlpArgs::default().endpoint(&with(&[])).unwrap(), None);
        let e = OtlpArgs::default()
            .endpoint(&with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]))
            .unwrap()
            .unwrap();
        assert_eq!(e.url, "http://c:4318/v1/logs");
        assert_eq!((e.gzip, e.timeout), (false, Duration::from_secs(10)), "the specification's defaults");
        let both = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://l:9/in"),
        ];
        assert_eq!(
            OtlpArgs::default().endpoint(&with(&both)).unwrap().unwrap().url,
            "http://l:9/in",
            "used as given"
        );
        let flag = OtlpArgs { endpoint: Some("https://f:4318".into()), ..OtlpArgs::default() };
        assert_eq!(
            flag.endpoint(&with(&both)).unwrap().unwrap().url,
            "https://f:4318/v1/logs",
            "the flag wins"
        );
        let off = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), ("OTEL_SDK_DISABLED", "true")];
        assert_eq!(OtlpArgs::default().endpoint(&with(&off)).unwrap(), None);
    }

    #[test]
    fn settings_come_from_flags_then_the_logs_variables_then_the_general_ones() {
        let vars = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20abc,x-tenant=a"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
            ("OTEL_EXPORTER_OTLP_LOGS_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem"),
        ]);
        let e = OtlpArgs::default().endpoint(&vars).unwrap().unwrap();
        assert!(e.gzip);
        assert_eq!(e.timeout, Duration::from_millis(2500));
        assert_eq!(
            e.headers,
            [("authorization".into(), "Bearer abc".into()), ("x-tenant".into(), "a".into())]
        );
        assert_eq!(e.ca_file, Some(PathBuf::from("/etc/ca.pem")));
        let flags = OtlpArgs {
            headers: vec![("X-Tenant".into(), "b".into())],
            compression: Some(false),
            ..OtlpArgs::default()
        };
        let e = flags.endpoint(&vars).unwrap().unwrap();
        assert!(!e.gzip);
        assert_eq!(
            e.headers,
            [("authorization".into(), "Bearer abc".into()), ("X-Tenant".into(), "b".into())]
        );
    }

    #[test]
    fn what_cannot_work_is_a_one_line_error() {
        let grpc = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        let e = OtlpArgs::default().endpoint(&grpc).unwrap_err();
        assert!(e.contains("grpc") && e.contains("http/protobuf"), "{e}");
        for bad in ["c:4318", "ftp://c", "http://", "http:///v1"] {
            let a = OtlpArgs { endpoint: Some(bad.into()), ..OtlpArgs::default() };
            let e = a.endpoint(&with(&[])).unwrap_err();
            assert!(e.starts_with("--otlp.endpoint") && !e.contains('\n'), "{bad}: {e}");
        }
        assert!(parse_header("novalue").is_err());
        assert!(parse_header("bad name=1").is_err());
        let t = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:1"), ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")]);
        assert!(OtlpArgs::default().endpoint(&t).unwrap_err().contains("OTEL_EXPORTER_OTLP_TIMEOUT"));
    }

    #[test]
    fn with_the_sdk_disabled_no_variable_is_read_even_a_bad_one() {
        let off = with(&[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
        ]);
        assert_eq!(OtlpArgs::default().endpoint(&off).unwrap(), None);
        let flag = OtlpArgs { endpoint: Some("http://f:4318".into()), ..OtlpArgs::default() };
        assert!(flag.endpoint(&off).is_err(), "a flag still turns it on, and the variables count then");
    }

    #[test]
    fn the_timeout_variable_has_the_flags_bounds() {
        let timeout = |ms: &str| {
            OtlpArgs::default()
                .endpoint(&with(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:1"),
                    ("OTEL_EXPORTER_OTLP_TIMEOUT", ms),
                ]))
                .map(|e| e.unwrap().timeout)
        };
        for bad in ["0", "99", "300001"] {
            let e = timeout(bad).unwrap_err();
            assert!(e.contains("OTEL_EXPORTER_OTLP_TIMEOUT") && e.contains("range"), "{bad}: {e}");
        }
        assert_eq!(timeout("100"), Ok(Duration::from_millis(100)));
        assert!(parse_timeout("50ms").is_err());
    }

    #[test]
    fn a_header_that_would_break_every_request_is_refused() {
        for bad in [
            "x-a=1\r\nx-b: 2",
            "x-a=1\nb",
            "x-a=\u{0}",
            "content-length=5",
            "Host=h",
            "Transfer-Encoding=chunked",
        ] {
            let e = parse_header(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad:?}: {e}");
        }
        assert_eq!(parse_header("x-tenant = a\tb "), Ok(("x-tenant".into(), "a\tb".into())));
        let encoded = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:1"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-a=1%0D%0Ax-b:%202"),
        ]);
        let e = OtlpArgs::default().endpoint(&encoded).unwrap_err();
        assert!(e.contains("control character"), "{e}");
    }

    #[test]
    fn credentials_in_the_url_go_as_basic_auth_over_https_only_and_are_never_shown() {
        let plain = OtlpArgs { endpoint: Some("http://alice:pw@c:4318".into()), ..OtlpArgs::default() };
        let e = plain.endpoint(&with(&[])).unwrap_err();
        assert!(e.contains("https://") && e.contains("alice:xxxxx@") && !e.contains("pw@"), "{e}");
        let var = with(&[("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://alice:pw@c:4318/v1/logs")]);
        assert!(OtlpArgs::default().endpoint(&var).unwrap_err().contains("https://"));
        let tls = OtlpArgs { endpoint: Some("https://alice:p%40w@c:4318/".into()), ..OtlpArgs::default() };
        let e = tls.endpoint(&with(&[])).unwrap().unwrap();
        assert_eq!(e.url, "https://c:4318/v1/logs", "the URL bbrtop logs holds no credentials");
        let basic = base64::engine::general_purpose::STANDARD.encode("alice:p@w");
        assert_eq!(e.headers, [("Authorization".into(), format!("Basic {basic}"))]);
        let given = OtlpArgs { headers: vec![("authorization".into(), "Bearer t".into())], ..tls };
        let e = given.endpoint(&with(&[])).unwrap().unwrap();
        assert_eq!(e.headers, [("authorization".into(), "Bearer t".into())], "a header given wins");
    }
}
