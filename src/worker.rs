//! The one periodic worker: a job run at once and then every period, on a thread of its own
//! ([`Worker`]: stopped and joined when dropped) or on the caller's ([`run`], for a job that
//! borrows what the caller holds), until a stop flag is set or the job says it is done.
//!
//! The wait looks at the stop flag every [`STEP`] rather than waiting on a condition variable:
//! the flag may be one a signal handler sets (SIGTERM), which can wake nothing.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a stop waits to be seen between ticks.
pub const STEP: Duration = Duration::from_millis(50);

/// Runs `tick` at once and then every `every` until `stopped()` or `tick` breaks. A tick is
/// handed the time it starts at. After a stall longer than a period (a slow tick, a suspended
/// host), one tick catches up and the schedule goes on from then, not with a burst.
pub fn run(every: Duration, stopped: impl Fn() -> bool, mut tick: impl FnMut(Instant) -> ControlFlow<()>) {
    let mut next = Instant::now();
    while !stopped() {
        if tick(Instant::now()).is_break() {
            return;
        }
        next += every;
        if !wait_until(next, &stopped) {
            return;
        }
        // (Within `every` of boot there is nothing earlier to catch up from.)
        if let Some(floor) = Instant::now().checked_sub(every) {
            next = next.max(floor);
        }
    }
}

/// Waits until `deadline` unless `stopped()` comes first (false then), looking every [`STEP`]:
/// the wait between ticks, and a retry's backoff that a stop cuts short.
pub fn wait_until(deadline: Instant, stopped: impl Fn() -> bool) -> bool {
    loop {
        if stopped() {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(STEP));
    }
}

/// [`run`] on a thread of its own. Dropping it stops the thread and waits for it.
pub struct Worker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts `tick` on a thread named `name`, at once and then every `every`, until stopped or
    /// `tick` breaks.
    pub fn start(
        name: &str,
        every: Duration,
        tick: impl FnMut(Instant) -> ControlFlow<()> + Send + 'static,
    ) -> std::io::Result<Worker> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(every, || s.load(Ordering::Relaxed), tick))?;
        Ok(Worker { stop, thread: Some(thread) })
    }

    /// Asks the thread to stop, without waiting for a tick under way.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether the thread ended (stopped, or `tick` broke).
    #[cfg(test)]
    fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the thread and waits for it; false if the job panicked.
    pub fn join(mut self) -> bool {
        self.stop_and_join()
    }

    /// Stops the thread without waiting for it: for a process about to exit, whose tick under
    /// way may be a request to a slow remote. The thread ends after that tick.
    pub fn abandon(mut self) {
        self.stop();
        drop(self.thread.take());
    }

    fn stop_and_join(&mut self) -> bool {
        self.stop();
        self.thread.take().is_none_or(|t| t.join().is_ok())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;

    const HOUR: Duration = Duration::from_secs(3600);

    /// A worker whose period is an hour ticks once at start, and stop ends it long before its
    /// next tick: the bound is a hundredth of the period, far above any scheduling delay.
    #[test]
    fn ticks_at_once_and_stops_within_a_step_of_the_stop() {
        let (tx, rx) = mpsc::channel();
        let w = Worker::start("bbrtop-test", HOUR, move |at| {
            tx.send(at).unwrap();
            ControlFlow::Continue(())
        })
        .unwrap();
        rx.recv_timeout(Duration::from_secs(30)).expect("the first tick runs at once");
        assert!(!w.finished(), "the worker waits for its next tick");
        let asked = Instant::now();
        assert!(w.join(), "the job did not panic");
        assert!(asked.elapsed() < HOUR / 100, "stopped {:?} after the stop", asked.elapsed());
        assert!(rx.try_recv().is_err(), "no tick after the first: the period is an hour");
    }

    #[test]
    fn dropping_the_worker_joins_its_thread() {
        let ticks = Arc::new(AtomicUsize::new(0));
        // The thread holds a clone until it ends: the count of owners says it ended.
        let (t, seen) = (Arc::clone(&ticks), Arc::clone(&ticks));
        let w = Worker::start("bbrtop-test", HOUR, move |_| {
            t.fetch_add(1, Ordering::Relaxed);
            ControlFlow::Continue(())
        })
        .unwrap();
        while seen.load(Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        drop(w);
        assert_eq!(Arc::strong_count(&seen), 2, "the job's closure is gone: the thread was joined");
        assert_eq!(seen.load(Ordering::Relaxed), 1);
    }

    /// Abandoning returns while a tick is still under way; that tick is the last.
    #[test]
    fn an_abandoned_worker_ends_after_its_tick_under_way() {
        let (release, held) = mpsc::channel::<()>();
        let (started, ticking) = mpsc::channel();
        let ticks = Arc::new(AtomicUsize::new(0));
        let (t, seen) = (Arc::clone(&ticks), Arc::clone(&ticks));
        let w = Worker::start("bbrtop-test", Duration::from_millis(1), move |_| {
            t.fetch_add(1, Ordering::Relaxed);
            let _ = started.send(());
            let _ = held.recv();
            ControlFlow::Continue(())
        })
        .unwrap();
        ticking.recv_timeout(Duration::from_secs(30)).expect("the first tick runs at once");
        let (done, abandoned) = mpsc::channel();
        std::thread::spawn(move || {
            w.abandon();
            let _ = done.send(());
        });
        abandoned.recv_timeout(Duration::from_secs(30)).expect("abandon does not wait for the tick");
        release.send(()).unwrap();
        // The thread holds a clone until it ends: the count of owners says it ended.
        let waited = Instant::now();
        while Arc::strong_count(&seen) > 2 && waited.elapsed() < Duration::from_secs(30) {
            std::thread::yield_now();
        }
        assert_eq!(Arc::strong_count(&seen), 2, "the thread ended after its tick");
        assert_eq!(seen.load(Ordering::Relaxed), 1, "no tick after the abandon, though the period is 1 ms");
    }

    #[test]
    fn ticks_repeat_until_the_job_breaks() {
        let mut at = Vec::new();
        run(
            Duration::from_millis(1),
            || false,
            |t| {
                at.push(t);
                if at.len() == 3 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
            },
        );
        assert_eq!(at.len(), 3);
        assert!(at.windows(2).all(|w| w[1] > w[0]), "each tick is handed the time it starts at");
    }

    #[test]
    fn a_wait_ends_at_its_deadline_or_at_a_stop_first() {
        assert!(wait_until(Instant::now(), || false), "a deadline passed");
        assert!(!wait_until(Instant::now() + HOUR, || true), "a stop before an hour's deadline");
        let looks = std::cell::Cell::new(0);
        let stopped = || {
            looks.set(looks.get() + 1);
            looks.get() > 2
        };
        assert!(!wait_until(Instant::now() + HOUR, stopped), "a stop seen while waiting");
        assert_eq!(looks.get(), 3, "the stop is looked at again after each step");
    }

    #[test]
    fn a_stop_set_before_the_start_runs_no_tick() {
        let mut ticks = 0;
        run(
            HOUR,
            || true,
            |_| {
                ticks += 1;
                ControlFlow::Continue(())
            },
        );
        assert_eq!(ticks, 0);
    }

    #[test]
    fn a_worker_whose_job_breaks_finishes_by_itself() {
        let w = Worker::start("bbrtop-test", HOUR, |_| ControlFlow::Break(())).unwrap();
        while !w.finished() {
            std::thread::yield_now();
        }
        assert!(w.join());
    }
}
