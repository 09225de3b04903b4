//! A tiny HTTP/1.1 client for loopback servers, and free ports for them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A plain HTTP/1.1 GET: (status, body).
pub fn get(port: u16, path: &str, accept: Option<&str>) -> std::io::Result<(u16, String)> {
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    get_with(port, path, &accept)
}

/// A GET as `user:password` with basic auth.
pub fn get_as(port: u16, path: &str, user: &str, password: &str) -> std::io::Result<(u16, String)> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    get_with(port, path, &format!("Authorization: Basic {b64}\r\n"))
}

/// A GET with these extra header lines (each ending in CRLF): (status, body).
pub fn get_with(port: u16, path: &str, headers: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n")?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let status = resp.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let chunked = head.lines().any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    Ok((status, if chunked { dechunk(body) } else { body.to_string() }))
}

/// Decodes a chunked HTTP/1.1 body (the servers under test send large answers that way).
fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// A free loopback port (bound then released; the caller binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
