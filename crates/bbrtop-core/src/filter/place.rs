//! Where a socket lives: the `netns`, `pod` and `cgroup` words, matched against a record's origin
//! (the socket walk's attribution).

use crate::model::SocketRecord;

/// A word about where a socket lives: a namespace by name or inode, a pod by `namespace/name` (or
/// a part of it) or uid, a cgroup by a part of its path.
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
    pub fn matches(&self, r: &SocketRecord) -> bool {
        let o = r.origin.as_deref();
        match self {
            Place::Netns(n) => {
                r.netns.is_some_and(|i| self.is_inode(i))
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

    /// Whether this is `netns INODE` for namespace `inode`.
    pub fn is_inode(&self, inode: u64) -> bool {
        matches!(self, Place::Netns(n) if n.parse() == Ok(inode))
    }

    /// Whether a namespace known only by its inode (a closed flow's) can be judged by this word:
    /// `netns INODE` can, a name, a pod or a cgroup cannot.
    pub fn by_inode(&self) -> bool {
        matches!(self, Place::Netns(n) if n.parse::<u64>().is_ok())
    }
}
