//! A collector polled less often than the poller ticks.

use bbrtop_core::seam::{Feed, Source};

/// A collector polled at its first poll and every `every` polls after: netlink, when the kernel
/// walk reads the sockets that move, seeds the sockets that predate bbrtop and reconciles.
pub struct Every<S> {
    inner: S,
    every: u64,
    polls: u64,
}

impl<S: Source> Every<S> {
    pub fn new(inner: S, every: u64) -> Every<S> {
        Every { inner, every: every.max(1), polls: 0 }
    }
}

impl<S: Source> Source for Every<S> {
    fn poll(&mut self, feed: &mut dyn Feed) {
        if self.polls.is_multiple_of(self.every) {
            self.inner.poll(feed);
        }
        self.polls += 1;
    }
}
