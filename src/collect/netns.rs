//! Network namespaces: `--netns NAME|PATH`.

use std::path::PathBuf;

/// A network namespace named as `ip netns` names it, or by a path such as /proc/PID/ns/net.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetnsSpec(pub PathBuf);

impl NetnsSpec {
    /// A bare name is looked up under /run/netns (where `ip netns add` puts it); anything with a
    /// slash is a path.
    pub fn parse(s: &str) -> NetnsSpec {
        if s.contains('/') {
            NetnsSpec(PathBuf::from(s))
        } else {
            NetnsSpec(PathBuf::from("/run/netns").join(s))
        }
    }
}
