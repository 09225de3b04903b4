//! Host facts: the TUI's header, read once at start (they do not change while we watch), and
//! carried by recordings and remote frames so that a replay or a remote TUI names the host it
//! shows.

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
