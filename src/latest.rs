//! The latest of a value one thread publishes and any number read: a snapshot of the sockets, a
//! running experiment's status. Readers take an `Arc` under a lock held for that copy, never
//! across I/O, and draw, encode or send it with no lock held; a reader may wait for the next.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

pub struct Latest<T> {
    value: Mutex<Arc<T>>,
    changed: Condvar,
}

impl<T> Latest<T> {
    pub fn with(first: Arc<T>) -> Latest<T> {
        Latest { value: Mutex::new(first), changed: Condvar::new() }
    }

    pub fn latest(&self) -> Arc<T> {
        Arc::clone(&self.lock())
    }

    /// Puts `value` in place and wakes the waiting readers. The one it replaces is freed after
    /// the lock, where no reader holds it: freeing 100k sockets' views takes milliseconds.
    pub fn publish(&self, value: Arc<T>) {
        let old = std::mem::replace(&mut *self.lock(), value);
        self.changed.notify_all();
        drop(old);
    }

    /// Waits up to `timeout` for a value `wanted` accepts (the current one included).
    pub fn wait_for(&self, timeout: Duration, wanted: impl Fn(&T) -> bool) -> Option<Arc<T>> {
        let (guard, _) = self
            .changed
            .wait_timeout_while(self.lock(), timeout, |v| !wanted(v))
            .unwrap_or_else(|e| e.into_inner());
        wanted(&guard).then(|| Arc::clone(&guard))
    }

    fn lock(&self) -> MutexGuard<'_, Arc<T>> {
        self.value.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Default> Default for Latest<T> {
    fn default() -> Self {
        Latest::with(Arc::new(T::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a reader took does not change under it, and holding it blocks no publisher (were it
    /// a lock's guard, the publish would deadlock here).
    #[test]
    fn a_reader_keeps_what_it_took_while_a_new_value_is_published() {
        let latest = Latest::with(Arc::new(1));
        let held = latest.latest();
        latest.publish(Arc::new(2));
        assert_eq!((*held, *latest.latest()), (1, 2));
    }

    /// A waiter wakes for the value it wants, published by another thread, or gives up.
    #[test]
    fn a_reader_waits_for_the_value_it_wants() {
        let latest = Arc::new(Latest::with(Arc::new(0u64)));
        assert_eq!(latest.wait_for(Duration::from_millis(10), |v| *v > 0), None, "nothing newer came");
        let publisher = Arc::clone(&latest);
        let t = std::thread::spawn(move || {
            for v in 1..=3 {
                publisher.publish(Arc::new(v));
            }
        });
        let got = latest.wait_for(Duration::from_secs(30), |v| *v >= 3);
        t.join().unwrap();
        assert_eq!(got.as_deref(), Some(&3));
    }
}
