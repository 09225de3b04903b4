//! The running pipeline: sources polled on one thread that owns the engine, and the latest
//! snapshot published for any number of readers. Readers never block the poller: they clone an
//! `Arc` under a lock held for nanoseconds, never across a syscall.

use crate::latest::Latest;
use crate::worker::Worker;
use bbrtop_core::seam::Now;
use bbrtop_core::seam::Source;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_engine::Engine;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

/// The latest snapshot, and a way to wait for the next one.
pub type Published = Latest<Snapshot>;

impl Latest<Snapshot> {
    pub fn new(first: Arc<Snapshot>) -> Arc<Published> {
        Arc::new(Latest::with(first))
    }

    /// Waits up to `timeout` for a snapshot newer than `seq`.
    pub fn wait_newer(&self, seq: u64, timeout: Duration) -> Option<Arc<Snapshot>> {
        self.wait_for(timeout, |s| s.seq > seq)
    }
}

/// The poller thread, on the one periodic worker. Dropping it stops the thread and waits for it.
pub struct Runtime {
    published: Arc<Published>,
    poller: Option<Worker>,
}

impl Runtime {
    /// Starts polling every `interval`. The first poll happens at once.
    pub fn start(
        mut engine: Engine,
        mut sources: Vec<Box<dyn Source>>,
        interval: Duration,
    ) -> std::io::Result<Runtime> {
        let first = Arc::new(Snapshot::empty(engine.config().rule));
        Runtime::every(first, interval, move |p| {
            poll_once(&mut engine, &mut sources, p);
        })
    }

    /// Runs `poll` every `interval` on the poller thread, from at once, publishing through the
    /// `Published` it is handed (which shows `first` until then).
    pub fn every(
        first: Arc<Snapshot>,
        interval: Duration,
        mut poll: impl FnMut(&Published) + Send + 'static,
    ) -> std::io::Result<Runtime> {
        let published = Published::new(first);
        let p = Arc::clone(&published);
        let poller = Worker::start("bbrtop-poller", interval, move |_| {
            poll(&p);
            ControlFlow::Continue(())
        })?;
        Ok(Runtime { published, poller: Some(poller) })
    }

    pub fn published(&self) -> Arc<Published> {
        Arc::clone(&self.published)
    }

    pub fn latest(&self) -> Arc<Snapshot> {
        self.published.latest()
    }

    /// Stops polling without waiting for a poll under way: for a process about to exit, whose
    /// poll may be a request to a slow remote (up to its 20 s timeout).
    pub fn abandon(mut self) {
        if let Some(p) = self.poller.take() {
            p.abandon();
        }
    }

    pub fn stop(&mut self) {
        if let Some(p) = self.poller.take() {
            p.join();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One poll of every source, then one tick. Used by the poller and by one-shot commands.
pub fn poll_once(engine: &mut Engine, sources: &mut [Box<dyn Source>], publish: &Published) -> Arc<Snapshot> {
    for src in sources.iter_mut() {
        src.poll(engine);
    }
    let snap = engine.tick(Now::system());
    publish.publish(Arc::clone(&snap));
    snap
}
