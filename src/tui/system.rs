//! Host facts for the header, read once at start (they do not change while we watch).

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemInfo {
    pub host: String,
    pub kernel: String,
    pub default_cc: String,
    pub qdisc: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

impl SystemInfo {
    pub fn read() -> SystemInfo {
        SystemInfo {
            host: read("/proc/sys/kernel/hostname"),
            kernel: read("/proc/sys/kernel/osrelease"),
            default_cc: read("/proc/sys/net/ipv4/tcp_congestion_control"),
            qdisc: read("/proc/sys/net/core/default_qdisc"),
        }
    }
}
