//! `--peer-groups.file FILE`: named CIDR groups that become the `peer_group` label, so an A/B by
//! network (one ASN against another) works in PromQL.
//!
//! The file is YAML:
//! ```yaml
//! groups:
//!   edge-as1: [10.0.0.0/8, "2001:db8::/32"]
//!   transit-as2: [192.0.2.0/24]
//! ```
//! A peer in several groups gets the one with the longest prefix. A peer in none gets
//! [`UNMATCHED`] ("other"), never an empty label, so `sum by (peer_group)` keeps every socket.

use ipnet::IpNet;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

/// The `peer_group` of a peer no group contains (and of every peer without `--peer-groups.file`).
pub const UNMATCHED: &str = "other";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    groups: BTreeMap<String, Vec<String>>,
}

/// Groups sorted by prefix length, longest first, so the first match is the most specific.
#[derive(Clone, Debug, Default)]
pub struct PeerGroups {
    /// (network, index into `names`).
    nets: Vec<(IpNet, usize)>,
    names: Vec<String>,
}

impl PeerGroups {
    pub fn load(path: &Path) -> Result<PeerGroups, String> {
        let text = crate::files::read_to_string("--peer-groups.file", path, crate::files::Kind::Config)?;
        PeerGroups::parse(&text).map_err(|e| format!("peer groups {}: {e}", path.display()))
    }

    /// Parses the YAML text. Errors are one line.
    pub fn parse(text: &str) -> Result<PeerGroups, String> {
        let f: File = serde_norway::from_str(text).map_err(|e| e.to_string().replace('\n', " "))?;
        let (mut nets, mut names) = (Vec::new(), Vec::new());
        for (name, cidrs) in f.groups {
            let valid = !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
            if !valid {
                return Err(format!("group name {name:?}: use letters, digits, '-', '_' or '.'"));
            }
            if name == UNMATCHED {
                return Err(format!("group name {UNMATCHED:?} is reserved for unmatched peers"));
            }
            if cidrs.is_empty() {
                return Err(format!("group {name:?} has no networks"));
            }
            for c in cidrs {
                let net = crate::filter::parse_cidr(&c).map_err(|e| format!("group {name:?}: {e}"))?;
                nets.push((net, names.len()));
            }
            names.push(name);
        }
        nets.sort_by_key(|n| std::cmp::Reverse(n.0.prefix_len()));
        Ok(PeerGroups { nets, names })
    }

    /// The group of a peer address (IPv4-mapped IPv6 peers match IPv4 networks).
    pub fn group(&self, ip: IpAddr) -> &str {
        self.name(self.index(ip))
    }

    /// The group's index: 0..len() for a named group, len() for [`UNMATCHED`].
    pub fn index(&self, ip: IpAddr) -> usize {
        let ip = ip.to_canonical();
        self.nets.iter().find(|(n, _)| n.contains(&ip)).map_or(self.names.len(), |(_, g)| *g)
    }

    pub fn name(&self, index: usize) -> &str {
        self.names.get(index).map_or(UNMATCHED, String::as_str)
    }

    /// Named groups (not counting [`UNMATCHED`]).
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_unmatched_is_other() {
        let g =
            PeerGroups::parse("groups:\n  wide: [10.0.0.0/8]\n  narrow: [10.1.0.0/16, '2001:db8::/32']\n")
                .unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(g.group(ip("10.1.2.3")), "narrow");
        assert_eq!(g.group(ip("10.2.2.3")), "wide");
        assert_eq!(g.group(ip("::ffff:10.9.0.1")), "wide");
        assert_eq!(g.group(ip("2001:db8::1")), "narrow");
        assert_eq!(g.group(ip("192.0.2.1")), UNMATCHED);
        assert_eq!(PeerGroups::default().group(ip("10.1.2.3")), UNMATCHED);
    }

    #[test]
    fn bad_files_are_one_line_errors() {
        for bad in [
            "groups: {a: [10.0.0.0/33]}",
            "groups: {a: []}",
            "groups: {other: [10.0.0.0/8]}",
            "groups: {'a b': [10.0.0.0/8]}",
            "groups: {a: [10.0.0.0/8]}\nextra: 1",
            "group: {a: [10.0.0.0/8]}",
            "groups: [",
        ] {
            let e = PeerGroups::parse(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad:?} -> {e:?}");
        }
    }
}
