//! The CI-or-skip rule, written once. A privileged test that lacks a privilege or a tool fails
//! under `CI=true`: CI's machine has them all, so a skip there would hide a broken setup.
//! Anywhere else it skips, and says SKIP on stderr so that a pass is not mistaken for a run.
//! A test that calls `caps`, `lab`, `bpf` or `root`, or starts a real server, is named `root_...`
//! (tests/README.md).

use bbrtop_collect::caps::{Cap, CapSet, names};

/// What to do when the test cannot run for `why`: under `CI=true` panic with `why`, elsewhere
/// say SKIP and return false (the caller returns).
pub fn unavailable(why: &str) -> bool {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}");
    }
    eprintln!("SKIP (not under CI): {why}");
    false
}

/// Whether this process holds every one of `wanted`, else [`unavailable`] naming the missing.
pub fn caps(what: &str, wanted: &[Cap]) -> bool {
    let missing = CapSet::effective().missing(wanted);
    missing.is_empty() || unavailable(&format!("{what} needs {}", names(&missing)))
}

/// A lab: network namespaces, links and qdiscs.
pub fn lab(what: &str) -> bool {
    caps(what, &[Cap::NetAdmin, Cap::SysAdmin])
}

/// Loading and attaching BPF programs.
pub fn bpf(what: &str) -> bool {
    caps(what, &[Cap::Bpf, Cap::Perfmon])
}

/// Root itself: dropping to another uid with chosen capabilities needs CAP_SETUID, CAP_SETGID
/// and CAP_SETPCAP, which uid 0 with CAP_SYS_ADMIN is taken to have.
pub fn root(what: &str) -> bool {
    let uid0 = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .is_some_and(|v| v.split_whitespace().next() == Some("0"))
    });
    (uid0 && CapSet::effective().missing(&[Cap::SysAdmin]).is_empty())
        || unavailable(&format!("{what} needs root"))
}

/// tracefs at /sys/kernel/tracing, where bpftrace finds the tcp tracepoints.
pub fn tracefs(what: &str) -> bool {
    std::path::Path::new("/sys/kernel/tracing/events/tcp/tcp_probe/format").exists()
        || unavailable(&format!("{what} needs tracefs mounted at /sys/kernel/tracing"))
}
