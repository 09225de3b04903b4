//! One export request over OTLP/HTTP with protobuf bodies, and what its answer means: sent (with
//! the records a partial success rejected), worth retrying (the specification's retryable
//! statuses and any failure below HTTP), or refused.

use opentelemetry_proto::tonic::collector::logs::v1::{ExportLogsServiceRequest, ExportLogsServiceResponse};
use prost::Message;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Where and how requests go.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    /// The logs URL, path included (`.../v1/logs`).
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub gzip: bool,
    pub timeout: Duration,
    /// Trust only these CA certificates (PEM) for an https endpoint; else the system's.
    pub ca_file: Option<PathBuf>,
}

/// What became of one request.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted; the collector rejected this many of its records (a partial success). `bytes`:
    /// the body's size, as sent.
    Sent { rejected: u64, bytes: u64 },
    /// Try again later: a network failure, 429, 502, 503 or 504.
    Retry(String),
    /// Refused for good (any other status).
    Refused(String),
}

/// The answer to an HTTP status and body.
pub fn outcome(status: u16, body: &[u8]) -> Outcome {
    match status {
        200..=299 => {
            let rejected = ExportLogsServiceResponse::decode(body)
                .ok()
                .and_then(|r| r.partial_success)
                .map_or(0, |p| u64::try_from(p.rejected_log_records).unwrap_or(0));
            Outcome::Sent { rejected, bytes: 0 }
        }
        429 | 502 | 503 | 504 => Outcome::Retry(format!("HTTP {status}")),
        _ => {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
            let first = text.lines().next().unwrap_or("").trim();
            Outcome::Refused(format!("HTTP {status}: {first}"))
        }
    }
}

/// The request's body as sent: protobuf, gzipped if asked.
pub fn body(req: &ExportLogsServiceRequest, gzip: bool) -> Vec<u8> {
    let raw = req.encode_to_vec();
    if !gzip {
        return raw;
    }
    let mut z = flate2::write::GzEncoder::new(Vec::with_capacity(raw.len() / 4), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = z.write_all(&raw);
    z.finish().unwrap_or(raw)
}

/// A client for one endpoint.
pub struct Client {
    agent: ureq::Agent,
    endpoint: Endpoint,
}

impl Client {
    /// The client, its TLS roots loaded (a one-line error when there are none).
    pub fn new(endpoint: Endpoint) -> Result<Client, String> {
        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(endpoint.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("bbrtop/", env!("CARGO_PKG_VERSION")));
        if endpoint.url.starts_with("https://") {
            let roots = match &endpoint.ca_file {
                Some(p) => crate::remote::client::Roots::File(p),
                None => crate::remote::client::Roots::System,
            };
            let certs = crate::remote::client::root_certs(&roots, "--otlp.ca.file")?;
            config = config.tls_config(ureq::tls::TlsConfig::builder().root_certs(certs).build());
        }
        Ok(Client { agent: config.build().into(), endpoint })
    }

    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    /// Sends one request.
    pub fn post(&self, req: &ExportLogsServiceRequest) -> Outcome {
        let mut r = self.agent.post(&self.endpoint.url).header("Content-Type", "application/x-protobuf");
        if self.endpoint.gzip {
            r = r.header("Content-Encoding", "gzip");
        }
        for (k, v) in &self.endpoint.headers {
            r = r.header(k, v);
        }
        let body = body(req, self.endpoint.gzip);
        match r.send(&body[..]) {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                let answer = resp.body_mut().with_config().limit(1 << 20).read_to_vec().unwrap_or_default();
                match outcome(status, &answer) {
                    Outcome::Sent { rejected, .. } => Outcome::Sent { rejected, bytes: body.len() as u64 },
                    o => o,
                }
            }
            Err(e) => Outcome::Retry(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsPartialSuccess;

    #[test]
    fn answers_are_sent_retried_or_refused_as_the_specification_says() {
        assert_eq!(outcome(200, b""), Outcome::Sent { rejected: 0, bytes: 0 });
        let partial = ExportLogsServiceResponse {
            partial_success: Some(ExportLogsPartialSuccess {
                rejected_log_records: 3,
                error_message: "bad".into(),
            }),
        };
        assert_eq!(outcome(200, &partial.encode_to_vec()), Outcome::Sent { rejected: 3, bytes: 0 });
        for s in [429, 502, 503, 504] {
            assert!(matches!(outcome(s, b""), Outcome::Retry(_)), "{s}");
        }
        assert_eq!(outcome(400, b"bad request\nmore"), Outcome::Refused("HTTP 400: bad request".into()));
        assert!(matches!(outcome(500, b""), Outcome::Refused(_)), "500 is not retryable in OTLP/HTTP");
    }

    #[test]
    fn a_gzipped_body_unzips_to_the_request() {
        use std::io::Read;
        let req = super::super::record::request(
            &super::super::record::Source { host: "h".into(), bbr: "v1".into() },
            vec![Default::default(); 100],
        );
        let z = body(&req, true);
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&z[..]).read_to_end(&mut raw).unwrap();
        assert_eq!(raw, body(&req, false));
        assert!(z.len() < raw.len(), "{} against {}", z.len(), raw.len());
    }
}
