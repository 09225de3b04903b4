//! A collector polled less often than the poller ticks, and at once when asked.

use bbrtop_core::seam::{Feed, Source};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A collector polled at its first poll and every `every` polls after: netlink, when the kernel
/// walk reads the sockets that move, seeds the sockets that predate bbrtop and reconciles. A
/// [`Reconcile`] asks for the next poll too.
pub struct Every<S> {
    inner: S,
    every: u64,
    polls: u64,
    reconcile: Reconcile,
}

impl<S: Source> Every<S> {
    pub fn new(inner: S, every: u64) -> Every<S> {
        Every { inner, every: every.max(1), polls: 0, reconcile: Reconcile::default() }
    }

    /// Polls at the next poll, too, after `reconcile` is asked.
    pub fn or_when(self, reconcile: Reconcile) -> Every<S> {
        Every { reconcile, ..self }
    }
}

impl<S: Source> Source for Every<S> {
    fn poll(&mut self, feed: &mut dyn Feed) {
        if self.reconcile.take() || self.polls.is_multiple_of(self.every) {
            self.inner.poll(feed);
        }
        self.polls += 1;
    }
}

/// A request for a reconciling dump at the next poll, shared by the sources that lose events (a
/// ring buffer full, a map full: a socket's close may be among what was lost) and the one that
/// reconciles. Without it a socket whose close was lost would stay listed until the next
/// scheduled dump.
#[derive(Clone, Debug, Default)]
pub struct Reconcile(Arc<AtomicBool>);

impl Reconcile {
    /// Asks for a reconcile when a loss counter rose past what was seen of it.
    pub fn on_growth(&self, seen: &mut u64, total: u64) {
        if total > *seen {
            self.0.store(true, Ordering::Relaxed);
        }
        *seen = total;
    }

    fn take(&self) -> bool {
        self.0.swap(false, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_engine::{Engine, EngineConfig};

    /// Counts its polls.
    #[derive(Default)]
    struct Count(Arc<std::sync::atomic::AtomicU64>);

    impl Source for Count {
        fn poll(&mut self, _: &mut dyn Feed) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Polled at the first poll and every third, and at the poll after a loss counter rose,
    /// once: a counter that stays put asks nothing more.
    #[test]
    fn a_loss_brings_the_next_poll_forward() {
        let (count, reconcile) = (Count::default(), Reconcile::default());
        let polls = count.0.clone();
        let mut every = Every::new(count, 3).or_when(reconcile.clone());
        let mut seen = 0;
        let mut engine = Engine::new(EngineConfig::default());
        let mut after = |every: &mut Every<Count>| {
            every.poll(&mut engine);
            polls.load(Ordering::Relaxed)
        };
        assert_eq!(after(&mut every), 1, "the first poll");
        assert_eq!(after(&mut every), 1);
        reconcile.on_growth(&mut seen, 5);
        assert_eq!(after(&mut every), 2, "at once after the loss");
        reconcile.on_growth(&mut seen, 5);
        assert_eq!(after(&mut every), 3, "the third poll, as scheduled");
        assert_eq!(after(&mut every), 3, "no new loss");
        reconcile.on_growth(&mut seen, 4);
        assert_eq!((after(&mut every), seen), (3, 4), "a counter that fell (a reload) is no loss");
    }
}
