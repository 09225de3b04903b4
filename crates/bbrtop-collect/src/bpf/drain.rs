//! The ring buffer drained between polls, so it need only hold what arrives in [`DRAIN_EVERY`]
//! rather than in a poll interval: a smaller ring, whose pages (mapped twice, so a record never
//! wraps) count twice in the process's RSS.
//!
//! A thread sleeps until the ring has data (the kernel wakes its epoll set as the first record
//! after a drain is committed), lets [`DRAIN_EVERY`] pass so records are taken in batches, then
//! consumes into the inbox, which the poll takes. An idle host wakes it at most once per poll of
//! its own, never per record.

use libbpf_rs::RingBuffer;
use rustix::event::{EventfdFlags, PollFd, PollFlags, eventfd, poll};
use rustix::time::Timespec;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a busy ring is drained: the ring holds what arrives in this time.
pub const DRAIN_EVERY: Duration = Duration::from_millis(50);

/// The ring, shared by the drain thread and the poll, which consumes it too (so a poll sees
/// every record committed before it). libbpf's consumer is not for two threads at once.
pub type SharedRing = Arc<Mutex<RingBuffer<'static>>>;

pub fn lock(ring: &SharedRing) -> MutexGuard<'_, RingBuffer<'static>> {
    ring.lock().unwrap_or_else(|e| e.into_inner())
}

/// The drain thread; dropping it stops the thread and waits for it.
pub struct Drain {
    stop: Arc<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl Drain {
    pub fn start(ring: SharedRing) -> std::io::Result<Drain> {
        let stop = Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?);
        let stopped = Arc::clone(&stop);
        let thread =
            std::thread::Builder::new().name("bpf-drain".into()).spawn(move || run(&ring, &stopped))?;
        Ok(Drain { stop, thread: Some(thread) })
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        let _ = rustix::io::write(&*self.stop, &1u64.to_ne_bytes());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The epoll set libbpf made for the ring, which the kernel wakes as data comes.
#[allow(unsafe_code)]
fn epoll_of(ring: &SharedRing) -> BorrowedFd<'_> {
    let fd = lock(ring).epoll_fd();
    // SAFETY: the ring owns its epoll fd and closes it only when dropped, and the borrow cannot
    // outlive this share of the ring.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

fn run(ring: &SharedRing, stop: &OwnedFd) {
    let epoll = epoll_of(ring);
    let batch = Timespec { tv_sec: 0, tv_nsec: DRAIN_EVERY.as_nanos() as i64 };
    loop {
        let mut fds = [PollFd::new(&epoll, PollFlags::IN), PollFd::new(stop, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(_) if !fds[1].revents().is_empty() => return,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let mut waiting = [PollFd::new(stop, PollFlags::IN)];
        match poll(&mut waiting, Some(&batch)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => {}
            _ => return,
        }
        // An error here is the poll's to report: it consumes the same ring.
        let _ = lock(ring).consume();
    }
}
