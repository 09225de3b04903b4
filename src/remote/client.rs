//! One GET of a remote exporter's frame: TLS verified against the system's CA store or a given
//! CA file, basic auth, bounded in time and size, and every way it can fail said in one line.

use super::FRAME_PATH;
use super::target::{Credentials, Target};
use crate::record::frame::CONTENT_TYPE as FRAME_TYPE;
use base64::Engine as _;
use std::path::Path;
use std::time::Duration;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// A remote that takes longer to accept is down for this poll.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A whole exchange: a frame of 100k sockets is megabytes, which a slow link takes seconds for.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The largest frame read: far above 100k sockets' frame, and a bound on what a hostile or
/// confused server can make this process hold.
const MAX_FRAME_BYTES: u64 = 256 << 20;

/// Where the TLS roots come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roots<'a> {
    /// The system's CA store (SSL_CERT_FILE, SSL_CERT_DIR, or the distribution's bundle).
    System,
    /// Only the certificates in this PEM file (`--connect.ca.file`, for a self-signed exporter).
    File(&'a Path),
}

/// Why a poll of the remote gave no frame.
#[derive(Debug, PartialEq, Eq)]
pub enum FetchError {
    /// 401: no credentials, or wrong ones.
    Unauthorized { sent: bool },
    /// 404: no frame endpoint (the API is off, or an exporter from before `--connect`).
    NoEndpoint(String),
    /// Any other status: the code and the first line of the body.
    Status(u16, String),
    /// No HTTP answer: connection refused, timeout, TLS, not HTTP.
    Transport(String),
    /// An answer that is not a frame.
    NotAFrame(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Unauthorized { sent: true } => {
                f.write_str("unauthorized (401): the exporter refused this user and password")
            }
            FetchError::Unauthorized { sent: false } => f.write_str(
                "unauthorized (401): the exporter asks for a user and password (--connect.username, \
                 --connect.password.file)",
            ),
            FetchError::NoEndpoint(line) => {
                write!(f, "no frame endpoint (404: {line}): run the export with --web.enable-api")
            }
            FetchError::Status(code, line) => write!(f, "HTTP {code}: {line}"),
            FetchError::Transport(why) => f.write_str(why),
            FetchError::NotAFrame(why) => write!(f, "not a bbrtop frame: {why}"),
        }
    }
}

/// What a poll of the remote got.
#[derive(Debug, PartialEq, Eq)]
pub enum Fetched {
    /// A frame's bytes: a keyframe, or the changes since the poll asked about.
    Frame(Vec<u8>),
    /// 304: the poll asked about is still the remote's latest.
    Held,
}

/// A client of one remote exporter.
pub struct Client {
    agent: ureq::Agent,
    target: Target,
    authorization: Option<String>,
}

impl Client {
    /// The client, with its TLS roots loaded (a one-line error when there are none).
    pub fn new(target: Target, creds: Option<Credentials>, roots: Roots) -> Result<Client, String> {
        let mut config = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(REQUEST_TIMEOUT))
            // A status is an answer to report, not an error.
            .http_status_as_error(false)
            // A redirect would carry the password elsewhere: report it instead.
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(concat!("bbrtop/", env!("CARGO_PKG_VERSION")));
        if target.tls {
            let tls = TlsConfig::builder().root_certs(root_certs(&roots, "--connect.ca.file")?).build();
            config = config.tls_config(tls);
        }
        let authorization = creds.map(|c| {
            let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", c.user, c.password));
            format!("Basic {b64}")
        });
        Ok(Client { agent: config.build().into(), target, authorization })
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The remote's latest poll: the changes since poll `since` (one this client decoded), or a
    /// keyframe without it (or where the remote no longer holds that poll).
    pub fn fetch(&self, since: Option<u64>) -> Result<Fetched, FetchError> {
        let url = match since {
            Some(seq) => format!("{}?since={seq}", self.target.frame),
            None => self.target.frame.clone(),
        };
        let mut req = self.agent.get(&url).header("Accept", FRAME_TYPE);
        if let Some(a) = &self.authorization {
            req = req.header("Authorization", a);
        }
        let mut resp = req.call().map_err(|e| FetchError::Transport(transport(&e, self.target.tls)))?;
        let status = resp.status().as_u16();
        if status == 304 && since.is_some() {
            return Ok(Fetched::Held);
        }
        if (300..400).contains(&status) {
            let to = resp.headers().get("location").and_then(|v| v.to_str().ok());
            return Err(FetchError::Status(status, unfollowed(resp.status(), to)));
        }
        if status != 200 {
            // The body says why (the exporter's answers are one line); bounded, like a frame.
            let body = resp.body_mut().with_config().limit(4096).read_to_string().unwrap_or_default();
            let line = body.lines().next().unwrap_or_default().trim().to_string();
            return Err(match status {
                401 => FetchError::Unauthorized { sent: self.authorization.is_some() },
                404 => FetchError::NoEndpoint(line),
                _ => FetchError::Status(status, line),
            });
        }
        let kind = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        if kind != FRAME_TYPE {
            return Err(FetchError::NotAFrame(format!("{} answered with content-type {kind:?}", FRAME_PATH)));
        }
        resp.body_mut()
            .with_config()
            .limit(MAX_FRAME_BYTES)
            .read_to_vec()
            .map(Fetched::Frame)
            .map_err(|e| FetchError::Transport(transport(&e, self.target.tls)))
    }
}

/// A 3xx this client does not follow, in words: where it points, when it says (following it
/// would carry the password elsewhere), else what it is, by its status.
fn unfollowed(status: ureq::http::StatusCode, location: Option<&str>) -> String {
    match location {
        Some(to) => format!("redirected to {to}: give --connect that URL"),
        // A 304 here answers a request for a whole frame (one naming a poll is `Held`).
        None if status == ureq::http::StatusCode::NOT_MODIFIED => {
            "Not Modified, to a request for a whole frame: not a bbrtop exporter's answer".into()
        }
        None => {
            let reason = status.canonical_reason().unwrap_or("a redirect");
            format!("{reason}, with no Location: not a bbrtop exporter's answer")
        }
    }
}

/// The CA certificates to trust; `flag` names the CA file's flag in errors.
pub(crate) fn root_certs(roots: &Roots, flag: &str) -> Result<RootCerts, String> {
    let certs: Vec<Certificate<'static>> = match roots {
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            if found.certs.is_empty() {
                let why = found.errors.first().map(|e| format!(": {e}")).unwrap_or_default();
                return Err(format!("no CA certificates in the system store{why}; give {flag} FILE"));
            }
            found.certs.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect()
        }
        Roots::File(path) => {
            let err = |e: String| format!("{flag} {}: {e}", path.display());
            let pem = bbrtop_collect::files::read(flag, path, bbrtop_collect::files::Kind::Pem)?;
            let certs = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(c)) => Some(Ok(c)),
                    Ok(_) => None,
                    Err(e) => Some(Err(err(e.to_string()))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if certs.is_empty() {
                return Err(err("no PEM certificate in it".into()));
            }
            certs
        }
    };
    Ok(RootCerts::new_with_certs(&certs))
}

/// A failure below HTTP, in words, with a hint where the likely cause is a flag away.
fn transport(e: &ureq::Error, tls: bool) -> String {
    use std::io::ErrorKind as K;
    // Plain HTTP to a TLS port gets no HTTP back: a reset, an early close, or TLS bytes.
    let not_http = |what: String| {
        if tls { what } else { format!("{what} (a TLS port? try https://)") }
    };
    // A handshake's failure comes as ureq's own error or inside an I/O one.
    let tls_failure = match e {
        ureq::Error::Rustls(r) => Some(r),
        ureq::Error::Io(io) => io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    if let Some(r) = tls_failure {
        return tls_words(r);
    }
    match e {
        ureq::Error::Io(io) => match io.kind() {
            K::ConnectionRefused => "connection refused".into(),
            K::TimedOut | K::WouldBlock => "timed out".into(),
            K::ConnectionReset | K::UnexpectedEof | K::ConnectionAborted | K::BrokenPipe => {
                not_http(format!("the connection closed: {io}"))
            }
            _ => format!("{io}"),
        },
        ureq::Error::Timeout(t) => format!("timed out ({t})"),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::Protocol(p) => not_http(format!("no HTTP answer: {p}")),
        ureq::Error::BodyExceedsLimit(n) => format!("a frame larger than {n} bytes"),
        other => other.to_string().replace('\n', " "),
    }
}

/// A TLS failure in one line: rustls' words without the fields of its structs (OIDs as bytes),
/// and for an untrusted certificate, what to give.
fn tls_words(r: &rustls::Error) -> String {
    let text = r.to_string();
    let text = text.split(" {").next().unwrap_or_default();
    match r {
        // `openssl req -x509` makes a certificate that says it is a CA unless told otherwise, and
        // webpki takes a certificate as a CA's or a server's, never both.
        rustls::Error::InvalidCertificate(_) => format!(
            "TLS: {text} (a self-signed exporter? give its certificate as --connect.ca.file FILE, made \
             with -addext basicConstraints=critical,CA:FALSE; or give its CA's)"
        ),
        // TLS record bytes are not what came back: the port speaks plain HTTP.
        rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
            "TLS: the answer is not TLS: this looks like plain HTTP (try http://)".into()
        }
        _ => format!("TLS: {text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// https:// to a plain HTTP port: rustls reads "HTTP/1.1 ..." as a TLS record of an unknown
    /// type; say what that means (main said "received corrupt message of type InvalidContentType").
    #[test]
    fn plain_http_under_tls_is_named() {
        let e = tls_words(&rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType));
        assert!(e.contains("this looks like plain HTTP (try http://)"), "{e}");
    }

    #[test]
    fn a_ca_file_must_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ca.pem");
        let t = super::super::target::parse("https://127.0.0.1:1").unwrap();
        let e = Client::new(t.clone(), None, Roots::File(&p)).err().unwrap();
        assert!(e.contains("--connect.ca.file") && e.contains("ca.pem"), "{e}");
        std::fs::write(&p, "not a certificate\n").unwrap();
        let e = Client::new(t, None, Roots::File(&p)).err().unwrap();
        assert!(e.contains("no PEM certificate"), "{e}");
    }

    #[test]
    fn failures_read_as_one_line_that_says_what_to_do() {
        assert!(FetchError::Unauthorized { sent: false }.to_string().contains("--connect.password.file"));
        assert!(FetchError::Unauthorized { sent: true }.to_string().starts_with("unauthorized (401)"));
        let e = FetchError::NoEndpoint("Not Found: the JSON API is off (--web.enable-api)".into());
        assert!(e.to_string().contains("--web.enable-api"), "{e}");
        let refused = ureq::Error::Io(std::io::ErrorKind::ConnectionRefused.into());
        assert_eq!(transport(&refused, true), "connection refused");
        let reset = ureq::Error::Io(std::io::ErrorKind::ConnectionReset.into());
        assert!(transport(&reset, false).contains("try https://"));
        assert!(!transport(&reset, true).contains("https://"));
    }

    /// "redirected to" only where the answer says where; else its status's name.
    #[test]
    fn a_redirect_says_where_only_when_it_knows() {
        use ureq::http::StatusCode;
        let e = FetchError::Status(304, unfollowed(StatusCode::NOT_MODIFIED, None)).to_string();
        assert!(e.starts_with("HTTP 304: Not Modified, to a request for a whole frame"), "{e}");
        let e = FetchError::Status(307, unfollowed(StatusCode::TEMPORARY_REDIRECT, None)).to_string();
        assert_eq!(e, "HTTP 307: Temporary Redirect, with no Location: not a bbrtop exporter's answer");
        let e = FetchError::Status(302, unfollowed(StatusCode::FOUND, Some("https://b:1/"))).to_string();
        assert_eq!(e, "HTTP 302: redirected to https://b:1/: give --connect that URL");
    }

    /// Nothing listens on a port just released: the fetch fails, at once, as refused.
    #[test]
    fn a_closed_port_is_refused() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let t = super::super::target::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let c = Client::new(t, None, Roots::System).unwrap();
        assert_eq!(c.fetch(None), Err(FetchError::Transport("connection refused".into())));
    }
}
