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
    /// Every attempt to send their batch failed (network errors, 429 or 5xx, then out of tries).
    ExportFailed,
    /// The collector refused them: a 4xx, or a partial success's rejected records.
    Rejected,
    /// Still queued when bbrtop stopped and not sent within the shutdown's grace.
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

/// A bounded FIFO of `T`.
#[derive(Debug)]
pub struct Queue<T> {
    items: Mutex<VecDeque<T>>,
    ready: Condvar,
    capacity: usize,
}

impl<T> Queue<T> {
    pub fn new(capacity: usize) -> Queue<T> {
        Queue { items: Mutex::new(VecDeque::new()), ready: Condvar::new(), capacity }
    }

    /// Adds `item` unless the queue is full; never waits.
    pub fn push(&self, item: T) -> bool {
        let mut q = self.items.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= self.capacity {
            return false;
        }
        q.push_back(item);
        self.ready.notify_one();
        true
    }

    pub fn len(&self) -> usize {
        self.items.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Up to `max` items: at once if `max` wait, else what came within `linger` (an empty batch
    /// when nothing did).
    pub fn batch(&self, max: usize, linger: Duration) -> Vec<T> {
        let until = Instant::now() + linger;
        let mut q = self.items.lock().unwrap_or_else(|e| e.into_inner());
        while q.len() < max {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            q = self.ready.wait_timeout(q, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        let n = q.len().min(max);
        q.drain(..n).collect()
    }

    /// Everything left.
    pub fn drain(&self) -> Vec<T> {
        self.items.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_refuses_and_batches_come_in_order() {
        let q = Queue::new(3);
        assert!((1..=3).all(|i| q.push(i)));
        assert!(!q.push(4), "full");
        assert_eq!(q.batch(2, Duration::ZERO), vec![1, 2]);
        assert!(q.push(5));
        assert_eq!(q.batch(10, Duration::from_millis(10)), vec![3, 5], "what came within the linger");
        assert!(q.batch(10, Duration::from_millis(1)).is_empty());
    }

    #[test]
    fn a_batch_returns_as_soon_as_it_is_full() {
        let q = std::sync::Arc::new(Queue::new(10));
        let q2 = std::sync::Arc::clone(&q);
        let t = std::thread::spawn(move || q2.batch(2, Duration::from_secs(30)));
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
