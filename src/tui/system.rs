//! Host facts for the header, read once at start (they do not change while we watch).

use crate::collect::netns::{NetnsSpec, run_in};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemInfo {
    pub host: String,
    pub kernel: String,
    /// The watched namespace's default cc and qdisc (these sysctls are per namespace).
    pub default_cc: String,
    pub qdisc: String,
    /// The namespace watched, when not our own.
    pub netns: Option<String>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

fn net_sysctls() -> (String, String) {
    (read("/proc/sys/net/ipv4/tcp_congestion_control"), read("/proc/sys/net/core/default_qdisc"))
}

impl SystemInfo {
    /// Host facts, with the net sysctls read inside `netns` when given ("?" where unreadable).
    pub fn read(netns: Option<&NetnsSpec>) -> SystemInfo {
        let (default_cc, qdisc) = match netns {
            // /proc/sys/net read by a thread that entered the namespace is that namespace's.
            Some(ns) => run_in(ns, net_sysctls).unwrap_or_else(|_| ("?".into(), "?".into())),
            None => net_sysctls(),
        };
        SystemInfo {
            host: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            default_cc,
            qdisc,
            netns: netns.map(|ns| {
                let p = &ns.0;
                // `ip netns` names read better than /run/netns/NAME.
                match p.parent() {
                    Some(d) if d == std::path::Path::new("/run/netns") => {
                        p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
                    }
                    _ => p.display().to_string(),
                }
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_namespace_and_a_path_to_it() {
        let here = SystemInfo::read(None);
        assert_ne!(here.kernel, "?");
        assert_eq!(here.netns, None);
        // Entering our own namespace by path needs CAP_SYS_ADMIN; without it the values are "?".
        let there = SystemInfo::read(Some(&NetnsSpec("/proc/self/ns/net".into())));
        assert_eq!(there.netns.as_deref(), Some("/proc/self/ns/net"));
        assert!(there.default_cc == here.default_cc || there.default_cc == "?", "{there:?}");
    }
}
