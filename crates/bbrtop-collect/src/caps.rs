//! Capabilities: checked, never the uid. Read from /proc/self/status and named when missing.

use std::fmt;

/// The capabilities bbrtop asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cap {
    NetAdmin = 12,
    SysAdmin = 21,
    Perfmon = 38,
    Bpf = 39,
}

impl Cap {
    /// Its bit in a capability set.
    pub fn bit(self) -> u64 {
        1 << self as u64
    }

    pub fn name(self) -> &'static str {
        match self {
            Cap::NetAdmin => "CAP_NET_ADMIN",
            Cap::SysAdmin => "CAP_SYS_ADMIN",
            Cap::Perfmon => "CAP_PERFMON",
            Cap::Bpf => "CAP_BPF",
        }
    }
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An effective capability set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapSet(pub u64);

impl CapSet {
    /// The effective set of this process (empty if /proc cannot be read).
    pub fn effective() -> CapSet {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| CapSet::parse_status(&s))
            .unwrap_or(CapSet(0))
    }

    /// Parses the `CapEff:` line of a /proc/PID/status text.
    pub fn parse_status(status: &str) -> Option<CapSet> {
        let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim();
        u64::from_str_radix(hex, 16).ok().map(CapSet)
    }

    pub fn has(self, c: Cap) -> bool {
        self.0 & c.bit() != 0
    }

    /// The ones of `wanted` this set lacks.
    pub fn missing(self, wanted: &[Cap]) -> Vec<Cap> {
        wanted.iter().copied().filter(|&c| !self.has(c)).collect()
    }
}

/// "CAP_BPF and CAP_PERFMON", for messages.
pub fn names(caps: &[Cap]) -> String {
    let n: Vec<&str> = caps.iter().map(|c| c.name()).collect();
    match n.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Removes `caps` from this thread's effective and permitted sets, for good: once the eBPF
/// programs are attached, the links, ring buffer and maps are open file descriptors, and using
/// them needs no capability. Threads started later inherit
/// the reduced sets; call it before starting them.
pub fn drop(caps: &[Cap]) -> std::io::Result<()> {
    use rustix::thread::{CapabilitySet, capabilities, set_capabilities};
    let mut sets = capabilities(None)?;
    for &c in caps {
        let bit = CapabilitySet::from_bits_retain(c.bit());
        sets.effective.remove(bit);
        sets.permitted.remove(bit);
    }
    Ok(set_capabilities(None, sets)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cap_eff() {
        let s = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000000c000201000\n";
        let c = CapSet::parse_status(s).unwrap();
        assert!(c.has(Cap::NetAdmin) && c.has(Cap::SysAdmin) && c.has(Cap::Bpf) && c.has(Cap::Perfmon));
        assert_eq!(CapSet(1 << 39).missing(&[Cap::Bpf, Cap::Perfmon]), vec![Cap::Perfmon]);
        assert_eq!(CapSet::parse_status("CapEff:\tzz"), None);
        assert_eq!(names(&[Cap::Bpf, Cap::Perfmon]), "CAP_BPF and CAP_PERFMON");
    }
}
