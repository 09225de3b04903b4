//! The OTLP flags of `bbrtop export`, and the standard `OTEL_EXPORTER_OTLP_*` variables they
//! stand beside: either turns the export of closed flows on. A flag wins over the logs-specific
//! variable, which wins over the general one, as the OpenTelemetry specification orders them.

use crate::export::otlp::send::Endpoint;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Closed flows as OpenTelemetry log records, over OTLP/HTTP with protobuf.
#[derive(Args, Clone, Debug, Default)]
pub struct OtlpArgs {
    /// Push each closed flow (eBPF's close records, of every namespace; loopback peers only with
    /// --loopback) as an OTLP log record to this collector's base URL (http:// or https://;
    /// /v1/logs is added), as OTEL_EXPORTER_OTLP_ENDPOINT does.
    /// OTEL_EXPORTER_OTLP_LOGS_ENDPOINT gives the full URL instead. Default: off.
    #[arg(long = "otlp.endpoint", value_name = "URL")]
    pub endpoint: Option<String>,
    /// A header sent with every request, e.g. for auth (repeat for more). Beside
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
    /// A request's timeout (OTEL_EXPORTER_OTLP_TIMEOUT, in ms; default 10s).
    #[arg(long = "otlp.timeout", value_name = "DURATION", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// Trust only the CA certificates in this PEM file for an https endpoint
    /// (OTEL_EXPORTER_OTLP_CERTIFICATE); default: the system's.
    #[arg(long = "otlp.ca.file", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Records held while the collector is slow or down; past it they are dropped and counted
    /// (bbrtop_otlp_log_records_dropped_total{reason="queue_full"}). About 400 bytes each: the
    /// default holds some 3 MiB.
    #[arg(long = "otlp.queue-size", value_name = "N", default_value_t = 8192, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub queue: u64,
    /// Records per request (sent at once when full, else each second).
    #[arg(long = "otlp.batch-size", value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub batch: u64,
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("{s:?}: expected NAME=VALUE"))?;
    let k = k.trim();
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
        return Err(format!("{k:?}: not a header name"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

fn parse_compression(s: &str) -> Result<bool, String> {
    match s.trim() {
        "gzip" => Ok(true),
        "none" => Ok(false),
        _ => Err(format!("{s:?}: expected gzip or none")),
    }
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    super::args::parse_duration_in(s, "timeout", Duration::from_millis(100), Duration::from_secs(300))
}

/// `name=value,...` with percent-encoded values, as OTEL_EXPORTER_OTLP_HEADERS holds them.
fn env_headers(s: &str) -> Result<Vec<(String, String)>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (k, v) = parse_header(p)?;
            let v = percent_encoding::percent_decode_str(&v).decode_utf8_lossy().into_owned();
            Ok((k, v))
        })
        .collect()
}

/// The logs URL: a base URL gets /v1/logs.
fn logs_url(base: &str) -> String {
    format!("{}/v1/logs", base.trim_end_matches('/'))
}

fn check_url(what: &str, url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("{what} {url:?}: expected http:// or https://"))?;
    match url.parse::<hyper::Uri>() {
        Ok(u) if u.authority().is_some_and(|a| !a.host().is_empty()) && !rest.starts_with('/') => Ok(()),
        _ => Err(format!("{what} {url:?}: not a URL with a host")),
    }
}

impl OtlpArgs {
    /// Where closed flows go, if anywhere: from the flags, else the variables `env` reads.
    pub fn endpoint(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Endpoint>, String> {
        // The logs-specific variable, else the general one.
        let var = |name: &str| {
            let get = |n: String| env(&n).filter(|v| !v.trim().is_empty());
            get(format!("OTEL_EXPORTER_OTLP_LOGS_{name}"))
                .or_else(|| get(format!("OTEL_EXPORTER_OTLP_{name}")))
        };
        let url = match (&self.endpoint, env("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT").filter(|v| !v.is_empty())) {
            (Some(base), _) => {
                check_url("--otlp.endpoint", base)?;
                logs_url(base)
            }
            (None, Some(full)) => {
                check_url("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", &full)?;
                full
            }
            (None, None) => match env("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|v| !v.is_empty()) {
                Some(base) => {
                    check_url("OTEL_EXPORTER_OTLP_ENDPOINT", &base)?;
                    logs_url(&base)
                }
                None => return Ok(None),
            },
        };
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            && self.endpoint.is_none()
        {
            return Ok(None);
        }
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
            None => match var("TIMEOUT") {
                Some(ms) => Duration::from_millis(
                    ms.trim()
                        .parse()
                        .map_err(|_| format!("OTEL_EXPORTER_OTLP_TIMEOUT {ms:?}: not milliseconds"))?,
                ),
                None => Duration::from_secs(10),
            },
        };
        let mut headers = var("HEADERS").map(|h| env_headers(&h)).transpose()?.unwrap_or_default();
        // A flag's header replaces the variable's of the same name.
        headers.retain(|(k, _)| !self.headers.iter().any(|(f, _)| f.eq_ignore_ascii_case(k)));
        headers.extend(self.headers.iter().cloned());
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
}
