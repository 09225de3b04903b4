//! One export request over OTLP/HTTP with protobuf bodies, and what its answer means: sent (with
//! the records a partial success rejected), worth retrying (408, 429, any 5xx, and any failure
//! below HTTP, as the OpenTelemetry Collector's otlphttp exporter retries them), or refused (any
//! other 4xx, and a redirect: following one would turn the POST into a bodiless GET, so like the
//! Collector's exporters and exporter-toolkit's clients it is refused, never counted as sent).

use crate::export::url_redact::redacted;
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
    /// Try again later: a network failure, 408, 429 or a 5xx.
    Retry(String),
    /// Refused for good (a redirect, or any other 4xx).
    Refused(String),
}

/// The answer to an HTTP status, its `Location` (for a redirect) and its body.
pub fn outcome(status: u16, location: Option<&str>, body: &[u8]) -> Outcome {
    match status {
        200..=299 => {
            let rejected = ExportLogsServiceResponse::decode(body)
                .ok()
                .and_then(|r| r.partial_success)
                .map_or(0, |p| u64::try_from(p.rejected_log_records).unwrap_or(0));
            Outcome::Sent { rejected, bytes: 0 }
        }
        300..=399 => Outcome::Refused(format!(
            "HTTP {status} redirect to {} (not followed: give the URL it names)",
            location.map_or_else(|| "nowhere".to_string(), |l| format!("{:?}", redacted(l)))
        )),
        408 | 429 | 500..=599 => Outcome::Retry(format!("HTTP {status}")),
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
    /// The URL as logs show it.
    shown: String,
}

impl Client {
    /// The client, its TLS roots loaded (a one-line error when there are none).
    pub fn new(endpoint: Endpoint) -> Result<Client, String> {
        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(endpoint.timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("bbrtop/", env!("CARGO_PKG_VERSION")));
        if endpoint.url.starts_with("https://") {
            let roots = match &endpoint.ca_file {
                Some(p) => crate::remote::client::Roots::File(p),
                None => crate::remote::client::Roots::System,
            };
            let certs = crate::remote::client::root_certs(&roots, "--otlp.ca.file")?;
            config = config.tls_config(ureq::tls::TlsConfig::builder().root_certs(certs).build());
        }
        let shown = redacted(&endpoint.url);
        Ok(Client { agent: config.build().into(), endpoint, shown })
    }

    /// The URL, credentials redacted.
    pub fn url(&self) -> &str {
        &self.shown
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
                let location = resp
                    .headers()
                    .get("location")
                    .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
                let answer = resp.body_mut().with_config().limit(1 << 20).read_to_vec().unwrap_or_default();
                match outcome(status, location.as_deref(), &answer) {
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
        assert_eq!(outcome(200, None, b""), Outcome::Sent { rejected: 0, bytes: 0 });
        let partial = ExportLogsServiceResponse {
            partial_success: Some(ExportLogsPartialSuccess {
                rejected_log_records: 3,
                error_message: "bad".into(),
            }),
        };
        assert_eq!(outcome(200, None, &partial.encode_to_vec()), Outcome::Sent { rejected: 3, bytes: 0 });
        for s in [408, 429, 500, 502, 503, 504, 599] {
            assert!(
                matches!(outcome(s, None, b""), Outcome::Retry(_)),
                "{s}: retried, as the Collector does"
            );
        }
        assert_eq!(
            outcome(400, None, b"bad request\nmore"),
            Outcome::Refused("HTTP 400: bad request".into())
        );
        for s in [401, 403, 404, 413] {
            assert!(matches!(outcome(s, None, b""), Outcome::Refused(_)), "{s}");
        }
        let Outcome::Refused(why) = outcome(302, Some("http://u:pw@other/v1/logs"), b"") else {
            panic!("a redirect is refused")
        };
        assert!(why.contains("302") && why.contains("http://u:xxxxx@other/v1/logs"), "{why}");
    }

    /// A receiver on loopback that answers each request with `answer`, and the request lines it
    /// got (method and path) with their bodies' lengths.
    fn receiver(answer: String) -> (String, std::thread::JoinHandle<Vec<(String, usize)>>) {
        use std::io::{BufRead, BufReader, Read};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/logs", l.local_addr().unwrap());
        let t = std::thread::spawn(move || {
            let mut got = Vec::new();
            // One connection is all a client that does not follow makes; a follower would come
            // back on another, which the short accept timeout below still catches.
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            l.set_nonblocking(true).unwrap();
            while std::time::Instant::now() < deadline {
                let Ok((s, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                s.set_nonblocking(false).unwrap();
                let mut r = BufReader::new(s);
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                let mut len = 0;
                loop {
                    let mut h = String::new();
                    r.read_line(&mut h).unwrap();
                    if h.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                got.push((line.split(' ').take(2).collect::<Vec<_>>().join(" "), len));
                r.get_mut().write_all(answer.as_bytes()).unwrap();
            }
            got
        });
        (url, t)
    }

    #[test]
    fn a_redirect_is_refused_not_followed_as_a_get() {
        let (target, target_got) = receiver("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".into());
        let redirect = format!("HTTP/1.1 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\n\r\n");
        let (url, got) = receiver(redirect);
        let endpoint =
            Endpoint { url, headers: vec![], gzip: false, timeout: Duration::from_secs(5), ca_file: None };
        let req = super::super::record::request(
            &super::super::record::Source { host: "h".into(), bbr: "v1".into() },
            vec![Default::default(); 3],
        );
        let o = Client::new(endpoint).unwrap().post(&req);
        let Outcome::Refused(why) = o else { panic!("{o:?}") };
        assert!(why.contains("302") && why.contains(&target), "{why}");
        let got = got.join().unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].0.starts_with("POST /v1/logs") && got[0].1 > 0, "{got:?}");
        assert_eq!(target_got.join().unwrap(), vec![], "the redirect's target got nothing");
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
