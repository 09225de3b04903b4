//! The kernel's clock as BPF programs read it, and its timestamps as `Instant`s: a leaf both the
//! ring-buffer collector and the socket walk use.

use std::time::{Duration, Instant};

/// CLOCK_MONOTONIC in ns: the clock of `bpf_ktime_get_ns()`.
pub fn ktime_now_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A kernel timestamp as an `Instant`, given the same moment in both clocks.
pub fn instant_of(ktime_ns: u64, ktime_now: u64, now: Instant) -> Instant {
    now.checked_sub(Duration::from_nanos(ktime_now.saturating_sub(ktime_ns))).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ktime_to_instant() {
        let now = Instant::now();
        assert_eq!(instant_of(9_000_000_000, 10_000_000_000, now), now - Duration::from_secs(1));
        assert_eq!(instant_of(11_000_000_000, 10_000_000_000, now), now, "future clamps to now");
        assert!(ktime_now_ns() > 0);
    }
}
