//! The refill pass (`refill` in crates/bbrtop-collect/bpf/bbrtop.bpf.c): before a read, an
//! iterator over the sockets' storage fills again the walk record of each socket whose moves the
//! hooks skipped since its record was filled, and sends each socket's batch of responses not yet
//! sent, spaced so that it takes at most 1/400 of the time. The walk runs it before its reads;
//! without the walk, the BPF collector before its polls.

use super::counts::percpu_sum;
use libbpf_rs::{Iter, Link, MapHandle};
use std::io::Read as _;
use std::sync::Arc;
use std::time::Instant;

/// The pass (the iterator's link) and when the next is due.
pub struct Refill {
    link: Arc<Link>,
    /// Per CPU: [0] marks (records behind, batches of responses begun), [1] records refilled.
    counts: MapHandle,
    marks_seen: u64,
    /// No pass before this: the last one's duration times [`PASS_SPACING`] after it.
    not_before: Option<Instant>,
}

/// A pass takes at most this fraction of the time, 1/400 (0.25% of a core): after a pass of d,
/// the next waits 400 d. It looks at every socket with storage, about 19 ms at 100k here, so at
/// 100k a record behind waits up to 8 s; at 10k, a read's interval.
const PASS_SPACING: u32 = 400;

/// Whether a pass is due at `now`: records fell behind or responses wait since the last pass
/// (`marks`, the kernel's count of them, moved), and the last pass's spacing is over.
fn pass_due(marks: u64, marks_seen: u64, now: Instant, not_before: Option<Instant>) -> bool {
    marks != marks_seen && not_before.is_none_or(|t| now >= t)
}

/// Reads of the pass's iterator before giving up: it writes nothing, so one read walks it all,
/// unless the kernel stops it early (a million objects, or a signal).
const MAX_ITER_READS: usize = 64;

impl Refill {
    pub fn new(link: Arc<Link>, counts: MapHandle) -> Refill {
        Refill { link, counts, marks_seen: 0, not_before: None }
    }

    /// Runs the pass if a record fell behind or responses wait since the last pass, and its
    /// spacing allows.
    pub(super) fn run_if_behind(&mut self) -> Result<(), String> {
        let (marks, started) = (percpu_sum(&self.counts, 0), Instant::now());
        if !pass_due(marks, self.marks_seen, started, self.not_before) {
            return Ok(());
        }
        self.marks_seen = marks;
        let ran = self.run();
        self.not_before = Some(started + started.elapsed() * PASS_SPACING);
        ran
    }

    /// One pass: a look at every socket with storage, a fill for each behind, its responses sent.
    pub fn run(&mut self) -> Result<(), String> {
        let failed = |e: &dyn std::fmt::Display| format!("the refill pass: {e}");
        let mut iter = Iter::new(&self.link).map_err(|e| failed(&e))?;
        let mut buf = [0u8; 64];
        for _ in 0..MAX_ITER_READS {
            match iter.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => {}
                Err(e) => return Err(failed(&e)),
            }
        }
        Err(failed(&"the iterator did not end"))
    }

    pub(super) fn refilled_total(&self) -> u64 {
        percpu_sum(&self.counts, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_pass_is_due_after_new_marks_once_its_spacing_is_over() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert!(!pass_due(5, 5, now, None), "nothing fell behind since the last pass");
        assert!(pass_due(6, 5, now, None), "the first pass");
        assert!(!pass_due(6, 5, now, Some(later)), "within the last pass's spacing");
        assert!(pass_due(6, 5, later, Some(later)));
    }
}
