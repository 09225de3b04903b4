//! Socket filters: the `--cc/--port/--peer/--state` flags and the TUI's `ss`-like filter words.

use crate::model::{SocketRecord, StateSet, TcpState};
use ipnet::IpNet;
use std::net::IpAddr;

/// Which sockets to keep. Empty lists match everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// Congestion-control names, e.g. "bbr".
    pub cc: Vec<String>,
    /// A port on either end.
    pub ports: Vec<u16>,
    /// Networks the peer address is in.
    pub peers: Vec<IpNet>,
    /// States to dump; `None` means every state but LISTEN and TIME-WAIT.
    pub states: Option<StateSet>,
    /// Where sockets live (the TUI's `netns`, `pod` and `cgroup` words): see [`Place`].
    pub places: Vec<Place>,
}

/// A word about where a socket lives, matched against its origin (the socket walk's
/// attribution): a namespace by name or inode, a pod by `namespace/name` (or a part of it) or uid,
/// a cgroup by a part of its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    Netns(String),
    Pod(String),
    Cgroup(String),
}

/// Whether `part` is in `ns/name`, without building it per socket: Kubernetes names have no
/// '/', so a part with one spans it.
fn within_ns_name(part: &str, ns: &str, name: &str) -> bool {
    match part.split_once('/') {
        Some((a, b)) => ns.ends_with(a) && name.starts_with(b),
        None => ns.contains(part) || name.contains(part),
    }
}

impl Place {
    fn matches(&self, r: &SocketRecord) -> bool {
        let o = r.origin.as_deref();
        match self {
            Place::Netns(n) => {
                r.netns.is_some_and(|i| i.to_string() == *n)
                    || o.and_then(|o| o.netns_name.as_deref()).is_some_and(|name| name == n)
            }
            Place::Pod(p) => o.and_then(|o| o.pod.as_ref()).is_some_and(|pod| {
                let named = pod.namespace.as_deref().zip(pod.name.as_deref());
                named.is_some_and(|(ns, name)| within_ns_name(p, ns, name)) || pod.uid.starts_with(p.as_str())
            }),
            Place::Cgroup(c) => {
                o.and_then(|o| o.cgroup.as_deref()).is_some_and(|path| path.contains(c.as_str()))
            }
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FilterError {
    #[error("invalid CIDR or address {0:?}")]
    Cidr(String),
    #[error("invalid port {0:?} (expected 1-65535)")]
    Port(String),
    #[error("{0}")]
    State(String),
    #[error("{0:?} needs a value")]
    MissingValue(String),
}

/// Parses `10.0.0.0/8`, `2001:db8::/32` or a bare address (a /32 or /128).
pub fn parse_cidr(s: &str) -> Result<IpNet, FilterError> {
    if let Ok(n) = s.parse::<IpNet>() {
        return Ok(n.trunc());
    }
    s.parse::<IpAddr>().map(IpNet::from).map_err(|_| FilterError::Cidr(s.to_string()))
}

pub fn parse_port(s: &str) -> Result<u16, FilterError> {
    match s.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(FilterError::Port(s.to_string())),
    }
}

pub fn parse_state(s: &str) -> Result<TcpState, FilterError> {
    s.parse::<TcpState>().map_err(|e| FilterError::State(e.to_string()))
}

impl Filter {
    /// The state mask to ask the kernel for.
    pub fn state_set(&self) -> StateSet {
        self.states.unwrap_or_else(StateSet::default_filter)
    }

    pub fn is_empty(&self) -> bool {
        self.cc.is_empty()
            && self.ports.is_empty()
            && self.peers.is_empty()
            && self.states.is_none()
            && self.places.is_empty()
    }

    pub fn matches(&self, r: &SocketRecord) -> bool {
        let peer_ip = r.peer.ip().to_canonical();
        (self.cc.is_empty() || self.cc.iter().any(|c| c.eq_ignore_ascii_case(r.cc_name())))
            && (self.ports.is_empty()
                || self.ports.iter().any(|&p| p == r.local.port() || p == r.peer.port()))
            && (self.peers.is_empty() || self.peers.iter().any(|n| n.contains(&peer_ip)))
            && self.state_set().contains(r.state)
            && (self.places.is_empty() || self.places.iter().any(|p| p.matches(r)))
    }

    /// Parses `ss`-like words: `cc bbr`, `port 5201`, `state established`, `peer 10.0.0.0/8`,
    /// `netns NAME|INODE`, `pod NS/NAME|UID`, `cgroup PART`, or a bare CIDR, address, port
    /// number, state or cc name. Words of one kind are OR-ed, kinds
    /// are AND-ed. An empty string is the empty filter.
    pub fn parse_words(s: &str) -> Result<Filter, FilterError> {
        let mut f = Filter::default();
        let mut states = Vec::new();
        let mut words = s.split_whitespace();
        while let Some(w) = words.next() {
            let mut value = |key: &str| {
                words.next().map(str::to_string).ok_or_else(|| FilterError::MissingValue(key.to_string()))
            };
            match w {
                "cc" => f.cc.push(value(w)?),
                "port" | "sport" | "dport" => f.ports.push(parse_port(&value(w)?)?),
                "peer" | "dst" | "src" => f.peers.push(parse_cidr(&value(w)?)?),
                "state" => states.push(parse_state(&value(w)?)?),
                "netns" => f.places.push(Place::Netns(value(w)?)),
                "pod" => f.places.push(Place::Pod(value(w)?)),
                "cgroup" => f.places.push(Place::Cgroup(value(w)?)),
                _ => {
                    if w.bytes().all(|b| b.is_ascii_digit()) {
                        f.ports.push(parse_port(w)?);
                    } else if w.contains('.') || w.contains(':') || w.contains('/') {
                        f.peers.push(parse_cidr(w)?);
                    } else if let Ok(st) = w.parse::<TcpState>() {
                        states.push(st);
                    } else {
                        f.cc.push(w.to_string());
                    }
                }
            }
        }
        if !states.is_empty() {
            f.states = Some(StateSet::from_states(&states));
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(local: &str, peer: &str, cc: &str, st: TcpState) -> SocketRecord {
        let mut r = SocketRecord::new(1, local.parse().unwrap(), peer.parse().unwrap(), st);
        r.cc = Some(cc.into());
        r
    }

    #[test]
    fn place_words_match_the_origin() {
        use crate::model::{Origin, Pod};
        let mut r = rec("10.0.0.1:1", "10.0.0.2:2", "bbr", TcpState::Established);
        r.netns = Some(4026532000);
        let pod = Pod {
            uid: "0f5b1c2e-6a7d".into(),
            namespace: Some("shop".into()),
            name: Some("frontend-1".into()),
            ..Pod::default()
        };
        let origin = Origin {
            netns_name: Some("blue".into()),
            cgroup: Some("/kubepods/pod0f5b/abc".into()),
            pod: Some(pod),
        };
        r.origin = Some(std::sync::Arc::new(origin));
        let m = |words: &str| Filter::parse_words(words).unwrap().matches(&r);
        assert!(m("netns blue") && m("netns 4026532000") && !m("netns red"));
        assert!(m("pod shop/frontend") && m("pod 0f5b1c2e") && !m("pod kube-system/"));
        assert!(m("cgroup kubepods") && !m("cgroup system.slice"));
        assert!(m("netns red netns blue"), "words of one kind are OR-ed");
        assert!(!m("pod shop/ cc cubic"), "kinds are AND-ed");
        assert_eq!(Filter::parse_words("pod"), Err(FilterError::MissingValue("pod".into())));
        let mut bare = r.clone();
        bare.origin = None;
        assert!(!Filter::parse_words("cgroup kubepods").unwrap().matches(&bare), "no origin, no match");
    }

    #[test]
    fn matching_table() {
        let bbr = rec("10.1.0.1:40000", "10.2.0.1:5201", "bbr", TcpState::Established);
        let v6 = rec("[::1]:5000", "[::ffff:10.2.0.9]:80", "cubic", TcpState::Established);
        let listen = rec("0.0.0.0:22", "0.0.0.0:0", "cubic", TcpState::Listen);
        let cases: &[(&str, &SocketRecord, bool)] = &[
            ("", &bbr, true),
            ("", &listen, false),
            ("state listen", &listen, true),
            ("cc bbr", &bbr, true),
            ("cc BBR", &bbr, true),
            ("cubic", &bbr, false),
            ("port 5201", &bbr, true),
            ("40000", &bbr, true),
            ("port 22", &bbr, false),
            ("10.2.0.0/16", &bbr, true),
            ("peer 10.3.0.0/16", &bbr, false),
            ("10.2.0.9", &v6, true),
            ("cc cubic port 80 10.0.0.0/8", &v6, true),
            ("cc cubic port 81", &v6, false),
        ];
        for &(words, r, want) in cases {
            let f = Filter::parse_words(words).unwrap();
            assert_eq!(f.matches(r), want, "{words:?} vs {}", r.peer);
        }
    }

    #[test]
    fn bad_words() {
        assert_eq!(Filter::parse_words("port"), Err(FilterError::MissingValue("port".into())));
        assert_eq!(Filter::parse_words("port 0"), Err(FilterError::Port("0".into())));
        assert_eq!(Filter::parse_words("port 70000"), Err(FilterError::Port("70000".into())));
        assert_eq!(Filter::parse_words("10.0.0.0/33"), Err(FilterError::Cidr("10.0.0.0/33".into())));
        assert!(matches!(Filter::parse_words("state nope"), Err(FilterError::State(_))));
    }
}
