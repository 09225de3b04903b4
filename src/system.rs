//! Host facts: the TUI's header, read once at start (they do not change while we watch), and
//! carried by recordings and remote frames so that a replay or a remote TUI names the host it
//! shows.

use crate::netns::{NetnsSpec, run_in};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemInfo {
    pub host: String,
    pub kernel: String,
    /// The watched namespace's default cc (a per-namespace sysctl), and the host's default qdisc
    /// (a global one: namespaces other than the first have no such file).
    pub default_cc: String,
    pub qdisc: String,
    /// The namespace watched, when not our own.
    pub netns: Option<String>,
    /// The watched namespace's inode number, as eBPF records carry it.
    pub netns_inode: Option<u32>,
    /// Which BBR runs as "bbr", and what told (`HostBbr`'s line).
    pub bbr: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

fn default_cc() -> String {
    read("/proc/sys/net/ipv4/tcp_congestion_control")
}

impl SystemInfo {
    /// Host facts, with the net sysctls read inside `netns` when given ("?" where unreadable).
    pub fn read(netns: Option<&NetnsSpec>) -> SystemInfo {
        let default_cc = match netns {
            // /proc/sys/net read by a thread that entered the namespace is that namespace's.
            Some(ns) => run_in(ns, default_cc).unwrap_or_else(|_| "?".into()),
            None => default_cc(),
        };
        let ns_path = netns.map_or_else(|| std::path::PathBuf::from("/proc/self/ns/net"), |n| n.0.clone());
        let netns_inode =
            std::fs::metadata(ns_path).ok().map(|m| std::os::unix::fs::MetadataExt::ino(&m) as u32);
        SystemInfo {
            host: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            default_cc,
            qdisc: read("/proc/sys/net/core/default_qdisc"),
            bbr: crate::collect::host::host_bbr().to_string(),
            netns_inode,
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

impl SystemInfo {
    /// The host facts the TUI's screen tests show in the header.
    #[cfg(any(test, feature = "test-support"))]
    pub fn example() -> SystemInfo {
        SystemInfo {
            host: "edge-1".into(),
            kernel: "6.18.44".into(),
            default_cc: "bbr".into(),
            qdisc: "fq".into(),
            netns: None,
            netns_inode: Some(4026531840),
            bbr: "bbr v1 (BTF: struct bbr v1 layout)".into(),
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
        assert_ne!(here.qdisc, "?");
        let ino = std::fs::metadata("/proc/self/ns/net").map(|m| std::os::unix::fs::MetadataExt::ino(&m));
        assert_eq!(here.netns_inode.map(u64::from), ino.ok());
        // Entering our own namespace by path needs CAP_SYS_ADMIN; without it the values are "?".
        let there = SystemInfo::read(Some(&NetnsSpec("/proc/self/ns/net".into())));
        assert_eq!(there.netns.as_deref(), Some("/proc/self/ns/net"));
        assert!(there.default_cc == here.default_cc || there.default_cc == "?", "{there:?}");
    }
}
