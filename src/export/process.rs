//! The exporter's own `process_*` metrics, as Prometheus client libraries name them: CPU time,
//! memory, file descriptors and start time, read from /proc at scrape time. Parsing is pure; only
//! [`read`] touches /proc.

/// Linux reports /proc times in USER_HZ, which is 100 on every architecture bbrtop builds for
/// (the client libraries of Go and Python assume the same).
const USER_HZ: f64 = 100.0;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Process {
    pub cpu_seconds: f64,
    pub resident_memory_bytes: u64,
    pub virtual_memory_bytes: u64,
    pub open_fds: u64,
    /// The soft limit on open files; None when unlimited.
    pub max_fds: Option<u64>,
    pub start_time_seconds: f64,
}

/// This process, now; None where /proc is not readable.
pub fn read() -> Option<Process> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let s = parse_stat(&stat)?;
    Some(Process {
        cpu_seconds: s.cpu_ticks as f64 / USER_HZ,
        resident_memory_bytes: status_kib(&status, "VmRSS:")? * 1024,
        virtual_memory_bytes: status_kib(&status, "VmSize:")? * 1024,
        open_fds,
        max_fds: max_open_files(&limits),
        start_time_seconds: boot_time(&boot)? as f64 + s.start_ticks as f64 / USER_HZ,
    })
}

struct Stat {
    cpu_ticks: u64,
    start_ticks: u64,
}

/// `/proc/PID/stat`: utime + stime (fields 14 and 15) and starttime (22). The command name in
/// parentheses may hold spaces and parentheses itself, so fields count from the last ')'.
fn parse_stat(s: &str) -> Option<Stat> {
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    let field = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    Some(Stat { cpu_ticks: field(14)? + field(15)?, start_ticks: field(22)? })
}

/// A `Key:   1234 kB` line of /proc/PID/status, in KiB.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix(key))?.split_whitespace().next()?.parse().ok()
}

/// The soft limit of `Max open files` in /proc/PID/limits.
fn max_open_files(limits: &str) -> Option<u64> {
    let line = limits.lines().find_map(|l| l.strip_prefix("Max open files"))?;
    line.split_whitespace().next()?.parse().ok()
}

/// `btime` of /proc/stat: the boot time, in seconds since the epoch.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_procfs_text() {
        let stat = "4242 (bbr top) (x) S 1 4242 4242 0 -1 4194560 2617 0 0 0 150 50 0 0 20 0 9 0 \
                    123456 1016373248 3842 18446744073709551615";
        let s = parse_stat(stat).unwrap();
        assert_eq!((s.cpu_ticks, s.start_ticks), (200, 123456));
        assert!(parse_stat("4242 (cut").is_none());
        let status = "Name:\tbbrtop\nVmSize:\t  992552 kB\nVmRSS:\t   15368 kB\n";
        assert_eq!(
            (status_kib(status, "VmRSS:"), status_kib(status, "VmSize:")),
            (Some(15368), Some(992552))
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(max_open_files(limits), Some(1024));
        assert_eq!(max_open_files("Max open files            unlimited   unlimited  files\n"), None);
        assert_eq!(boot_time("cpu 1 2 3\nbtime 1763900000\nprocesses 9\n"), Some(1_763_900_000));
    }

    #[test]
    fn reads_this_process() {
        let p = read().expect("/proc is readable in tests");
        assert!(p.resident_memory_bytes > 0 && p.virtual_memory_bytes >= p.resident_memory_bytes);
        assert!(p.open_fds >= 3 && p.start_time_seconds > 1e9, "{p:?}");
    }
}
