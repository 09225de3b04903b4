//! What `--connect` is given: the exporter's URL and the credentials to reach it, checked before
//! anything starts. Pure: the password file is read by the caller.

use super::FRAME_PATH;
use percent_encoding::percent_decode_str;
use ureq::http::Uri;

/// The exporter to read, parsed from `--connect URL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The URL as shown to people: scheme, host, port and path, without credentials.
    pub shown: String,
    /// The frame endpoint, without credentials.
    pub frame: String,
    /// `host:port` (the default port for the scheme when none is given).
    pub host_port: String,
    pub tls: bool,
    /// Whether the host is this machine (a password over plain HTTP stays on it).
    loopback: bool,
    /// The URL's userinfo, percent-decoded.
    pub user: Option<String>,
    pub password: Option<String>,
}

/// Parses `--connect URL`: `https://[user[:password]@]host[:port][/prefix]`, or `http://`. A path
/// is a prefix the exporter is served under (a reverse proxy's), unless it already names the
/// frame endpoint.
pub fn parse(s: &str) -> Result<Target, String> {
    let bad = |why: &str| format!("invalid URL {s:?}: {why} (expected https://host:port)");
    let uri: Uri = s.parse().map_err(|e| bad(&format!("{e}")))?;
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        Some(other) => return Err(bad(&format!("scheme {other}:// is not http:// or https://"))),
        None => return Err(bad("no scheme")),
    };
    let authority = uri.authority().ok_or_else(|| bad("no host"))?;
    if authority.host().is_empty() {
        return Err(bad("no host"));
    }
    if uri.query().is_some() || s.contains('#') {
        return Err(bad("no query or fragment"));
    }
    let decode = |part: &str| {
        percent_decode_str(part)
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| bad("userinfo is not UTF-8"))
    };
    // The authority is `[userinfo@]host[:port]`: the last @ ends the userinfo.
    let (user, password) = match authority.as_str().rsplit_once('@') {
        Some((info, _)) => match info.split_once(':') {
            Some((u, p)) => (Some(decode(u)?), Some(decode(p)?)),
            None => (Some(decode(info)?), None),
        },
        None => (None, None),
    };
    let host = authority.host();
    // `host:99999` parses, as a host with no port: the text after the host says otherwise.
    let after_host = authority.as_str().rsplit_once('@').map_or(authority.as_str(), |(_, h)| h);
    let port = match (after_host[host.len()..].strip_prefix(':'), authority.port_u16()) {
        (Some(_), None) => return Err(bad("bad port")),
        (_, p) => p.unwrap_or(if tls { 443 } else { 80 }),
    };
    let host_port = format!("{host}:{port}");
    let scheme = if tls { "https" } else { "http" };
    let prefix = uri.path().trim_end_matches('/');
    let shown = format!("{scheme}://{host_port}{prefix}");
    let frame = if prefix.ends_with(FRAME_PATH) { shown.clone() } else { format!("{shown}{FRAME_PATH}") };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare == "localhost" || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    Ok(Target { shown, frame, host_port, tls, loopback, user, password })
}

/// A user and password for basic auth.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, <password>)", self.user)
    }
}

/// The credentials from the URL's userinfo, `--connect.username` and the text of
/// `--connect.password.file` (its trailing newline dropped), each said in one place only; none
/// when none is given. A password crosses the network in clear over http://, so that needs
/// https:// or a loopback host.
pub fn credentials(
    t: &Target,
    flag_user: Option<&str>,
    password_file: Option<&str>,
) -> Result<Option<Credentials>, String> {
    let user = match (t.user.as_deref(), flag_user) {
        (Some(_), Some(_)) => return Err("a user in the URL and --connect.username: give one".into()),
        (u, f) => u.or(f),
    };
    let password = match (t.password.as_deref(), password_file) {
        (Some(_), Some(_)) => {
            return Err("a password in the URL and --connect.password.file: give one".into());
        }
        (p, f) => p.map(str::to_string).or_else(|| f.map(|f| f.trim_end_matches(['\n', '\r']).to_string())),
    };
    let creds = match (user, password) {
        (None, None) => return Ok(None),
        (Some(u), Some(p)) if !u.contains(':') => Credentials { user: u.to_string(), password: p },
        (Some(u), Some(_)) => return Err(format!("user {u:?}: basic auth allows no ':' in a user name")),
        (Some(u), None) => {
            return Err(format!("user {u:?} has no password: give --connect.password.file FILE"));
        }
        (None, Some(_)) => return Err("a password without a user: give --connect.username NAME".into()),
    };
    if !t.tls && !t.loopback {
        return Err(format!(
            "a password to {} would cross the network in clear: use https:// (the exporter's \
             --web.config.file TLS)",
            t.shown
        ));
    }
    Ok(Some(creds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_frame_endpoint_and_lose_their_credentials() {
        let t = parse("https://alice:p%40ss%3Aw@edge-1.example:9100").unwrap();
        assert_eq!(t.shown, "https://edge-1.example:9100");
        assert_eq!(t.frame, "https://edge-1.example:9100/api/v1/frame");
        assert_eq!((t.user.as_deref(), t.password.as_deref()), (Some("alice"), Some("p@ss:w")));
        assert!(t.tls && !t.loopback);
        let t = parse("http://127.0.0.1:10027/").unwrap();
        assert_eq!(t.frame, "http://127.0.0.1:10027/api/v1/frame");
        assert!(!t.tls && t.loopback && t.user.is_none());
        // A reverse proxy's prefix is kept; a URL that names the endpoint is taken as it is.
        assert_eq!(
            parse("https://proxy/bbrtop/edge-1/").unwrap().frame,
            "https://proxy:443/bbrtop/edge-1/api/v1/frame"
        );
        assert_eq!(parse("https://h:1/api/v1/frame").unwrap().frame, "https://h:1/api/v1/frame");
        assert_eq!(parse("https://[::1]:9100").unwrap().host_port, "[::1]:9100");
        assert!(parse("https://[::1]:9100").unwrap().loopback);
        assert_eq!(parse("https://bob@h:1").unwrap().password, None);
    }

    #[test]
    fn bad_urls_are_one_line_errors_that_say_why() {
        for (url, says) in [
            ("ftp://h:21", "scheme ftp://"),
            ("h:9100", "scheme"),
            ("edge-1", "no scheme"),
            ("https://", "https://host:port"),
            ("https://h:1/?x=1", "no query"),
            ("https://h:1/#top", "no query or fragment"),
            ("https://h:99999", "bad port"),
            ("https://h:", "bad port"),
            ("https://a%FF@h:1", "not UTF-8"),
        ] {
            let e = parse(url).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{url}: {e}");
        }
    }

    #[test]
    fn credentials_come_from_one_place_each() {
        let https = parse("https://h:1").unwrap();
        let creds = |t: &Target, u, f| credentials(t, u, f).map(|c| c.map(|c| (c.user, c.password)));
        assert_eq!(creds(&https, None, None), Ok(None));
        let pair = |u: &str, p: &str| Ok(Some((u.to_string(), p.to_string())));
        assert_eq!(creds(&https, Some("bob"), Some("s3cret\n")), pair("bob", "s3cret"));
        // Only the line ending goes: spaces may be part of a password.
        assert_eq!(creds(&https, Some("bob"), Some(" s3 \r\n")), pair("bob", " s3 "));
        let in_url = parse("https://bob:pw@h:1").unwrap();
        assert_eq!(creds(&in_url, None, None), pair("bob", "pw"));
        let user_only = parse("https://bob@h:1").unwrap();
        assert_eq!(creds(&user_only, None, Some("pw")), pair("bob", "pw"));
        for (t, u, f, says) in [
            (&in_url, Some("carol"), None, "--connect.username: give one"),
            (&in_url, None, Some("pw"), "--connect.password.file: give one"),
            (&user_only, None, None, "--connect.password.file FILE"),
            (&https, None, Some("pw"), "--connect.username NAME"),
            (&https, Some("a:b"), Some("pw"), "no ':'"),
        ] {
            let e = creds(t, u, f).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_password_goes_over_plain_http_only_to_this_machine() {
        let far = parse("http://edge-1:10027").unwrap();
        let e = credentials(&far, Some("bob"), Some("pw")).unwrap_err();
        assert!(e.contains("in clear") && e.contains("https://"), "{e}");
        assert_eq!(credentials(&far, None, None), Ok(None), "no password, nothing to leak");
        let near = parse("http://localhost:10027").unwrap();
        assert!(credentials(&near, Some("bob"), Some("pw")).unwrap().is_some());
    }
}
