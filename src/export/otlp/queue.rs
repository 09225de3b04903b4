//! The records waiting to be sent: a bounded queue between the thread that takes closed flows
//! from the snapshots (never blocked: a record that finds the queue full is dropped and counted)
//! and the sender, which takes them in batches. What is sent and what is dropped, and why, is
//! counted here, so every record taken from a snapshot is either delivered or counted.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Why records were not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    /// The queue was full (the collector slow or down for longer than the queue holds).
    QueueFull,
    /// Closed before the shipper read them: more closed between two of its reads than a
    /// snapshot keeps.
    Missed,
    /// Every attempt to send their batch failed (network errors, 408, 429 or 5xx, then out of
    /// tries).
    ExportFailed,
    /// The collector refused them: a 3xx (redirects are not followed), a 4xx other than 408 and
    /// 429, or a partial success's rejected records.
    Rejected,
    /// Still queued or in flight when bbrtop stopped, and not sent within the stop's grace.
    Shutdown,
}

impl Dropped {
    pub const ALL: [Dropped; 5] =
        [Dropped::QueueFull, Dropped::Missed, Dropped::ExportFailed, Dropped::Rejected, Dropped::Shutdown];

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Dropped::QueueFull => "queue_full",
            Dropped::Missed => "missed",
            Dropped::ExportFailed => "export_failed",
            Dropped::Rejected => "rejected",
            Dropped::Shutdown => "shutdown",
        }
    }
}

/// The shipper's counts, read by the metrics.
#[derive(Debug, Default)]
pub struct Stats {
    sent: AtomicU64,
    sent_bytes: AtomicU64,
    dropped: [AtomicU64; Dropped::ALL.len()],
    requests_failed: AtomicU64,
}

impl Stats {
    /// `n` records accepted, in a request body of `bytes` (as sent: compressed if asked).
    pub fn add_sent(&self, n: u64, bytes: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
        self.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn add_dropped(&self, why: Dropped, n: u64) {
        self.dropped[why as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn add_failed_request(&self) {
        self.requests_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the collector accepted.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Bytes of the request bodies the collector accepted.
    pub fn sent_bytes(&self) -> u64 {
        self.sent_bytes.load(Ordering::Relaxed)
    }

    pub fn dropped(&self) -> impl Iterator<Item = (Dropped, u64)> + '_ {
        Dropped::ALL.iter().map(|d| (*d, self.dropped[*d as usize].load(Ordering::Relaxed)))
    }

    /// Requests that failed, each retry counted (a batch retried and then sent counts too).
    pub fn failed_requests(&self) -> u64 {
        self.requests_failed.load(Ordering::Relaxed)
    }
}

/// A FIFO of `T` bounded in count and in bytes (each item weighed as it comes). A batch the
/// sender takes stays charged against both bounds until it is settled, so the bounds hold what
/// is in memory, in flight included, and [`Queue::len`] counts what is not yet sent or dropped.
#[derive(Debug)]
pub struct Queue<T> {
    state: Mutex<Held<T>>,
    ready: Condvar,
    capacity: usize,
    max_bytes: usize,
    weigh: fn(&T) -> usize,
}

#[derive(Debug)]
struct Held<T> {
    items: VecDeque<(T, usize)>,
    /// Items and bytes queued or out in a batch not yet settled.
    count: usize,
    bytes: usize,
    /// Set by [`Queue::abandon`]: nothing is taken in again, and batches out were counted.
    abandoned: bool,
}

/// Items taken by the sender; [`Queue::settle`] releases them.
#[derive(Debug)]
pub struct Taken<T> {
    pub items: Vec<T>,
    bytes: usize,
}

impl<T> Queue<T> {
    pub fn new(capacity: usize, max_bytes: usize, weigh: fn(&T) -> usize) -> Queue<T> {
        let held = Held { items: VecDeque::new(), count: 0, bytes: 0, abandoned: false };
        Queue { state: Mutex::new(held), ready: Condvar::new(), capacity, max_bytes, weigh }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `item` unless it would pass a bound (or the queue was abandoned); never waits.
    pub fn push(&self, item: T) -> bool {
        let w = (self.weigh)(&item);
        let mut q = self.held();
        if q.abandoned || q.count >= self.capacity || q.bytes + w > self.max_bytes {
            return false;
        }
        q.items.push_back((item, w));
        (q.count, q.bytes) = (q.count + 1, q.bytes + w);
        self.ready.notify_one();
        true
    }

    /// Items queued or in a batch not yet settled.
    pub fn len(&self) -> usize {
        self.held().count
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Their weight.
    pub fn bytes(&self) -> usize {
        self.held().bytes
    }

    /// Up to `max` queued items: at once if `max` wait, else what came within `linger` (none
    /// when nothing did). They stay counted until settled.
    pub fn batch(&self, max: usize, linger: Duration) -> Taken<T> {
        let until = Instant::now() + linger;
        let mut q = self.held();
        while q.items.len() < max && !q.abandoned {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            q = self.ready.wait_timeout(q, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        let n = q.items.len().min(max);
        let (items, bytes) = q.items.drain(..n).fold((Vec::with_capacity(n), 0), |(mut v, b), (t, w)| {
            v.push(t);
            (v, b + w)
        });
        Taken { items, bytes }
    }

    /// A batch taken is sent or dropped: true if it is the sender's to count, false if
    /// [`Queue::abandon`] counted it already.
    pub fn settle(&self, taken: Taken<T>) -> bool {
        let mut q = self.held();
        if q.abandoned {
            return false;
        }
        (q.count, q.bytes) = (q.count - taken.items.len(), q.bytes - taken.bytes);
        true
    }

    /// At a stop: empties the queue and returns how many items were held, queued or out in a
    /// batch (each counted here once: a batch settled after this counts nothing).
    pub fn abandon(&self) -> u64 {
        let mut q = self.held();
        let n = if q.abandoned { 0 } else { q.count as u64 };
        q.items.clear();
        (q.count, q.bytes, q.abandoned) = (0, 0, true);
        self.ready.notify_all();
        n
    }

    pub fn is_abandoned(&self) -> bool {
        self.held().abandoned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(_: &u32) -> usize {
        1
    }

    #[test]
    fn a_full_queue_refuses_and_batches_come_in_order() {
        let q = Queue::new(3, 100, one);
        assert!((1..=3).all(|i| q.push(i)));
        assert!(!q.push(4), "full");
        let b = q.batch(2, Duration::ZERO);
        assert_eq!(b.items, vec![1, 2]);
        assert!(!q.push(5), "a batch out is still held");
        assert!(q.settle(b));
        assert!(q.push(5));
        let b = q.batch(10, Duration::from_millis(10));
        assert_eq!(b.items, vec![3, 5], "what came within the linger");
        assert!(q.settle(b));
        assert!(q.batch(10, Duration::from_millis(1)).items.is_empty());
    }

    #[test]
    fn the_queue_is_bounded_in_bytes_too() {
        // A flow whose AS name is huge must not take what a thousand small ones would.
        let q = Queue::new(1_000, 1_000, |s: &String| s.len());
        assert!(q.push("a".repeat(600)));
        assert!(!q.push("b".repeat(600)), "past the bytes");
        assert!(q.push("c".repeat(400)));
        assert_eq!((q.len(), q.bytes()), (2, 1_000));
    }

    #[test]
    fn a_batch_in_flight_counts_until_settled_and_a_stop_counts_it_once() {
        let q = Queue::new(10, 100, one);
        (1..=5).for_each(|i| assert!(q.push(i)));
        let b = q.batch(3, Duration::ZERO);
        assert_eq!(q.len(), 5, "the 3 in flight are not sent yet");
        assert_eq!(q.abandon(), 5, "queued and in flight");
        assert!(!q.settle(b), "counted by the stop already");
        assert_eq!((q.len(), q.abandon()), (0, 0));
        assert!(!q.push(6), "nothing is taken in after a stop");
    }

    #[test]
    fn a_batch_returns_as_soon_as_it_is_full() {
        let q = std::sync::Arc::new(Queue::new(10, 100, one));
        let q2 = std::sync::Arc::clone(&q);
        let t = std::thread::spawn(move || q2.batch(2, Duration::from_secs(30)).items);
        q.push(1);
        q.push(2);
        assert_eq!(t.join().unwrap(), vec![1, 2]);
    }

    #[test]
    fn drops_are_counted_by_reason() {
        let s = Stats::default();
        s.add_dropped(Dropped::QueueFull, 3);
        s.add_dropped(Dropped::Missed, 1);
        s.add_sent(5, 900);
        let d: Vec<_> = s.dropped().filter(|(_, n)| *n > 0).map(|(d, n)| (d.label(), n)).collect();
        assert_eq!(d, [("queue_full", 3), ("missed", 1)]);
        assert_eq!((s.sent(), s.sent_bytes()), (5, 900));
    }
}
