//! Parsing `ss -tinH` output: the reference other tests compare bbrtop's figures with.
//!
//! Each socket is one line (`STATE RECV-Q SEND-Q LOCAL PEER`) followed by a tab-indented line of
//! `key:value` tokens, bare flags and the congestion control name. Rates come either as raw
//! numbers (`20178067bps`, iproute2 6.x) or scaled (`20.1Mbps`, older releases); both are read.

use std::net::SocketAddr;

/// One socket from `ss -tin`. Every figure is optional: ss prints only what the kernel gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SsSocket {
    pub state: String,
    pub recv_q: Option<u64>,
    pub send_q: Option<u64>,
    pub local: Option<SocketAddr>,
    pub peer: Option<SocketAddr>,
    pub cc: Option<String>,
    pub rtt_ms: Option<f64>,
    pub rttvar_ms: Option<f64>,
    pub minrtt_ms: Option<f64>,
    pub cwnd: Option<u32>,
    pub ssthresh: Option<u32>,
    pub mss: Option<u32>,
    pub bytes_acked: Option<u64>,
    pub send_bps: Option<u64>,
    pub pacing_rate_bps: Option<u64>,
    pub delivery_rate_bps: Option<u64>,
    pub bbr: Option<SsBbr>,
}

/// The `bbr:(bw:..,mrtt:..,pacing_gain:..,cwnd_gain:..)` group.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SsBbr {
    pub bw_bps: Option<u64>,
    pub mrtt_ms: Option<f64>,
    pub pacing_gain: Option<f64>,
    pub cwnd_gain: Option<f64>,
}

/// Bare words ss prints that are not a congestion control name.
const FLAGS: &[&str] =
    &["ts", "sack", "ecn", "ecnseen", "fastopen", "app_limited", "orphaned", "cong_alg", "tfo"];
/// Keys whose value is the next token.
const SPACED: &[&str] = &["send", "pacing_rate", "delivery_rate"];

/// Parses the whole output of `ss -tinH` (a header line, if present, is skipped).
pub fn parse_ss_tin(text: &str) -> Vec<SsSocket> {
    let mut out: Vec<SsSocket> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some(s) = out.last_mut() {
                parse_info(s, line);
            }
        } else if let Some(s) = parse_head(line) {
            out.push(s);
        }
    }
    out
}

fn parse_head(line: &str) -> Option<SsSocket> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 5 || f[0] == "State" {
        return None;
    }
    let mut s = SsSocket {
        state: f[0].to_string(),
        recv_q: f[1].parse().ok(),
        send_q: f[2].parse().ok(),
        local: parse_addr(f[3]),
        peer: parse_addr(f[4]),
        ..SsSocket::default()
    };
    // Without -H... or with extra columns (-p, -e) the info may follow on the same line.
    if f.len() > 5 {
        parse_info(&mut s, &f[5..].join(" "));
    }
    Some(s)
}

/// `10.0.0.1:80`, `[::1]:80`, `[fe80::1%eth0]:80`, `10.0.0.1%lo:80`.
fn parse_addr(s: &str) -> Option<SocketAddr> {
    if let Ok(a) = s.parse() {
        return Some(a);
    }
    let (host, port) = s.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = host.split('%').next()?;
    let ip: std::net::IpAddr = host.parse().ok()?;
    Some(SocketAddr::new(ip, port.parse().ok()?))
}

fn parse_info(s: &mut SsSocket, line: &str) {
    let mut toks = line.split_whitespace();
    while let Some(t) = toks.next() {
        if SPACED.contains(&t) {
            let v = toks.next().and_then(parse_rate);
            match t {
                "send" => s.send_bps = v,
                "pacing_rate" => s.pacing_rate_bps = v,
                _ => s.delivery_rate_bps = v,
            }
            continue;
        }
        let Some((k, v)) = t.split_once(':') else {
            if s.cc.is_none()
                && !FLAGS.contains(&t)
                && t.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
                && t.starts_with(|c: char| c.is_ascii_alphabetic())
            {
                s.cc = Some(t.to_string());
            }
            continue;
        };
        match k {
            "rtt" => {
                let (a, b) = v.split_once('/').unwrap_or((v, ""));
                s.rtt_ms = a.parse().ok();
                s.rttvar_ms = b.parse().ok();
            }
            "minrtt" => s.minrtt_ms = v.parse().ok(),
            "cwnd" => s.cwnd = v.parse().ok(),
            "ssthresh" => s.ssthresh = v.parse().ok(),
            "mss" => s.mss = v.parse().ok(),
            "bytes_acked" => s.bytes_acked = v.parse().ok(),
            "bbr" => s.bbr = Some(parse_bbr(v)),
            _ => {}
        }
    }
}

/// `(bw:19.6Mbps,mrtt:0.043,pacing_gain:1.25,cwnd_gain:2)`
fn parse_bbr(v: &str) -> SsBbr {
    let mut b = SsBbr::default();
    for kv in v.trim_start_matches('(').trim_end_matches(')').split(',') {
        let Some((k, v)) = kv.split_once(':') else { continue };
        match k {
            "bw" => b.bw_bps = parse_rate(v),
            "mrtt" => b.mrtt_ms = v.parse().ok(),
            "pacing_gain" => b.pacing_gain = v.parse().ok(),
            "cwnd_gain" => b.cwnd_gain = v.parse().ok(),
            _ => {}
        }
    }
    b
}

/// `20178067bps`, `20.1Mbps`, `2.1Gbps`, `512Kbps`, `800bps`; a `/max` part is ignored.
pub fn parse_rate(v: &str) -> Option<u64> {
    let v = v.split('/').next()?.strip_suffix("bps")?;
    let (num, mult) = match v.as_bytes().last()? {
        b'K' => (&v[..v.len() - 1], 1e3),
        b'M' => (&v[..v.len() - 1], 1e6),
        b'G' => (&v[..v.len() - 1], 1e9),
        b'T' => (&v[..v.len() - 1], 1e12),
        _ => (v, 1.0),
    };
    let x: f64 = num.parse().ok()?;
    (x.is_finite() && x >= 0.0).then(|| (x * mult).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from a lab flow (iproute2 6.1, 20 Mbit/s tbf, 1.5 MB queue, ~4 s in).
    const CUBIC: &str = include_str!("testdata/ss_tin_cubic.txt");
    const BBR: &str = include_str!("testdata/ss_tin_bbr.txt");

    #[test]
    fn real_cubic_line() {
        let v = parse_ss_tin(CUBIC);
        assert_eq!(v.len(), 1);
        let s = &v[0];
        assert_eq!(s.state, "ESTAB");
        assert_eq!(s.cc.as_deref(), Some("cubic"));
        assert!(s.local.unwrap().ip().to_string().starts_with("10."));
        assert!(s.peer.unwrap().port() > 0);
        // The values in the captured text, checked against the text itself.
        let info = CUBIC.lines().nth(1).unwrap();
        let rtt = info.split_whitespace().find_map(|t| t.strip_prefix("rtt:")).unwrap();
        assert_eq!(format!("{}/{}", s.rtt_ms.unwrap(), s.rttvar_ms.unwrap()), rtt);
        assert!(s.rtt_ms.unwrap() > 50.0 * s.minrtt_ms.unwrap(), "a cubic flow fills the deep queue");
        assert!(info.contains(&format!("cwnd:{} ", s.cwnd.unwrap())));
        assert!(info.contains(&format!("pacing_rate {}bps", s.pacing_rate_bps.unwrap())));
        assert!(info.contains(&format!("delivery_rate {}bps", s.delivery_rate_bps.unwrap())));
        assert!(info.contains(&format!("send {}bps", s.send_bps.unwrap())));
        assert!(s.bbr.is_none());
        assert_eq!(s.mss, Some(1448));
    }

    #[test]
    fn real_bbr_line() {
        let v = parse_ss_tin(BBR);
        assert_eq!(v.len(), 1);
        let s = &v[0];
        assert_eq!(s.cc.as_deref(), Some("bbr"));
        let b = s.bbr.as_ref().expect("bbr group");
        let info = BBR.lines().nth(1).unwrap();
        assert!(info.contains(&format!("bw:{}bps,", b.bw_bps.unwrap())));
        assert!(info.contains(&format!("mrtt:{},", b.mrtt_ms.unwrap())));
        assert!(b.pacing_gain.is_some() && b.cwnd_gain.is_some());
        // bw near the 20 Mbit/s bottleneck.
        assert!((10_000_000..=21_000_000).contains(&b.bw_bps.unwrap()), "{b:?}");
        assert!(s.minrtt_ms.is_some() && s.rtt_ms.is_some());
    }

    #[test]
    fn scaled_rates_and_older_format() {
        // The layout of older iproute2 releases (scaled rates), IPv6 peers, several sockets.
        let text = "ESTAB 0 0 [::1]:22 [::ffff:10.0.0.2]:5000\n\t ts sack bbr wscale:7,7 rto:204 \
                    rtt:0.05/0.025 mss:65483 cwnd:10 bbr:(bw:19.6Mbps,mrtt:0.043,pacing_gain:1.25,\
                    cwnd_gain:2) send 2.1Gbps pacing_rate 20.1Mbps delivery_rate 19.8Mbps minrtt:0.043\n\
                    ESTAB 0 0 [fe80::1%eth0]:80 10.0.0.1%lo:9\n\t reno cwnd:3 app_limited\n";
        let v = parse_ss_tin(text);
        assert_eq!(v.len(), 2);
        let s = &v[0];
        assert_eq!(s.cc.as_deref(), Some("bbr"));
        assert_eq!((s.rtt_ms, s.rttvar_ms, s.minrtt_ms), (Some(0.05), Some(0.025), Some(0.043)));
        assert_eq!(s.send_bps, Some(2_100_000_000));
        assert_eq!(s.pacing_rate_bps, Some(20_100_000));
        assert_eq!(s.delivery_rate_bps, Some(19_800_000));
        let b = s.bbr.as_ref().unwrap();
        assert_eq!(
            (b.bw_bps, b.mrtt_ms, b.pacing_gain, b.cwnd_gain),
            (Some(19_600_000), Some(0.043), Some(1.25), Some(2.0))
        );
        assert_eq!(s.local.unwrap().to_string(), "[::1]:22");
        assert_eq!(v[1].cc.as_deref(), Some("reno"));
        assert_eq!(v[1].cwnd, Some(3));
        assert_eq!(v[1].local.unwrap().port(), 80);
        assert_eq!(v[1].peer.unwrap().to_string(), "10.0.0.1:9");
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("800bps"), Some(800));
        assert_eq!(parse_rate("512Kbps"), Some(512_000));
        assert_eq!(parse_rate("1.5Gbps/4Gbps"), Some(1_500_000_000));
        for bad in ["", "bps", "Mbps", "12", "x1Mbps", "-1bps", "NaNbps"] {
            assert_eq!(parse_rate(bad), None, "{bad}");
        }
    }

    #[test]
    fn junk_does_not_panic() {
        assert!(parse_ss_tin("").is_empty());
        assert!(parse_ss_tin("\t cubic rtt:x/y\nState Recv-Q\n").is_empty());
        let v = parse_ss_tin("ESTAB a b c d\n\t rtt:1 cwnd:-3 bbr:(bw:,mrtt) send\n");
        assert_eq!(v[0].rtt_ms, Some(1.0));
        assert_eq!((v[0].rttvar_ms, v[0].cwnd, v[0].send_bps), (None, None, None));
    }
}
