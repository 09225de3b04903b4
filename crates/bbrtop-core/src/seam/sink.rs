//! The one way in for sockets. Two collectors feed it:
//!
//! - the netlink dump of one namespace (`collect::inet_diag`) hands each socket to a
//!   [`DumpSink`] as soon as it is parsed, while the kernel is still dumping the rest, by its
//!   place in the vector that [`DumpSink::end`] then delivers whole; a socket of that namespace
//!   the dump does not list has closed;
//! - the kernel walk (`bpf::walk`) hands over the sockets that moved since its last read, in
//!   every namespace, with [`DumpSink::walked`]: a partial dump, whose missing sockets did not
//!   move.
//!
//! The engine is one sink, the streaming one-shot `snapshot --json` another. [`Feed`] adds what
//! else a collector learns (kernel events, closes, its own health), and [`Source`] is a collector
//! as the poller sees it.

use super::{Now, Update, Walk, WalkFailed};
use crate::model::{Cookie, SocketRecord};
use crate::wire::Dump;
use std::time::Duration;

/// Why a dump ended before its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Aborted {
    /// The collector failed midway; the error is the collector's status until the next dump.
    Failed { error: String, duration: Duration },
    /// The reader went away without ending it (an early return, a panic unwinding).
    Dropped,
}

/// What receives a dump of sockets while it is read.
pub trait DumpSink {
    /// A dump begins; its records were read at `now`.
    fn begin(&mut self, now: Now);
    /// One socket; `idx` is its place in the dump, counted from 0 with no gap. After the kernel
    /// restarts a family (NLM_F_DUMP_INTR), that family's records come again from the restart's
    /// first place: a socket may then be seen twice, the last time at its final place.
    fn record(&mut self, idx: u32, rec: &SocketRecord);
    /// The dump is complete: its stats, and its records if the collector kept them (a dump in
    /// hand); a collector that streams keeps none, so a sink keeps what it needs of each record.
    fn end(&mut self, dump: Dump);
    /// The dump is dropped; places handed over since [`DumpSink::begin`] point nowhere.
    fn abort(&mut self, why: Aborted);
    /// Part of the kernel walk's read, handed over while the kernel hands over the rest: sockets
    /// that moved, and those it saw enter CLOSE, read as of `now` (the read's start). The read
    /// ends with [`DumpSink::walked`], whose own sockets are its last part; a read that fails
    /// midway keeps the parts handed over.
    fn walk_part(&mut self, now: Now, sockets: Vec<SocketRecord>, gone: Vec<Cookie>);
    /// The kernel walk's read: the sockets that moved since the last one (the others did not),
    /// or why it could not be read.
    fn walked(&mut self, walk: Result<Walk, WalkFailed>);
}

/// A dump being read into a sink: begun on creation, aborted on drop unless ended, so a
/// collector that returns early never leaves a sink half-fed.
pub struct Dumping<'a, S: DumpSink + ?Sized> {
    sink: &'a mut S,
    open: bool,
}

impl<'a, S: DumpSink + ?Sized> Dumping<'a, S> {
    pub fn begin(sink: &'a mut S, now: Now) -> Self {
        sink.begin(now);
        Dumping { sink, open: true }
    }

    pub fn record(&mut self, idx: u32, rec: &SocketRecord) {
        self.sink.record(idx, rec);
    }

    pub fn end(mut self, dump: Dump) {
        self.open = false;
        self.sink.end(dump);
    }

    pub fn fail(mut self, error: String, duration: Duration) {
        self.open = false;
        self.sink.abort(Aborted::Failed { error, duration });
    }
}

impl<S: DumpSink + ?Sized> Drop for Dumping<'_, S> {
    fn drop(&mut self) {
        if self.open {
            self.sink.abort(Aborted::Dropped);
        }
    }
}

/// A whole dump already in hand, through the same seam (tests, benchmarks, fixtures).
pub fn feed_dump<S: DumpSink + ?Sized>(sink: &mut S, dump: Dump, now: Now) {
    let mut d = Dumping::begin(sink, now);
    for (i, r) in dump.sockets.iter().enumerate() {
        d.record(i as u32, r);
    }
    d.end(dump);
}

/// What a collector feeds: dumps of sockets, and everything else it learned.
pub trait Feed: DumpSink {
    fn apply(&mut self, update: Update);
}

/// A collector as the poller sees it. A poll never panics and never fails: a failure is fed as
/// an aborted dump or a status update.
pub trait Source: Send {
    fn poll(&mut self, feed: &mut dyn Feed);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes down what it is told.
    #[derive(Default)]
    struct Tape(Vec<String>);

    impl DumpSink for Tape {
        fn begin(&mut self, _: Now) {
            self.0.push("begin".into());
        }
        fn record(&mut self, idx: u32, rec: &SocketRecord) {
            self.0.push(format!("{idx}:{}", rec.cookie));
        }
        fn end(&mut self, dump: Dump) {
            self.0.push(format!("end {}", dump.sockets.len()));
        }
        fn abort(&mut self, why: Aborted) {
            self.0.push(format!("abort {why:?}"));
        }
        fn walk_part(&mut self, _: Now, sockets: Vec<SocketRecord>, _: Vec<Cookie>) {
            self.0.push(format!("part {}", sockets.len()));
        }
        fn walked(&mut self, _: Result<Walk, WalkFailed>) {
            self.0.push("walked".into());
        }
    }

    fn rec(cookie: u64) -> SocketRecord {
        crate::testing::record(cookie, "cubic").build()
    }

    #[test]
    fn a_dropped_dump_aborts_and_an_ended_one_does_not() {
        let mut tape = Tape::default();
        {
            let mut d = Dumping::begin(&mut tape, Now::system());
            d.record(0, &rec(7));
        }
        feed_dump(&mut tape, Dump { sockets: vec![rec(8), rec(9)], ..Dump::default() }, Now::system());
        Dumping::begin(&mut tape, Now::system()).fail("boom".into(), Duration::ZERO);
        assert_eq!(
            tape.0,
            [
                "begin",
                "0:7",
                "abort Dropped",
                "begin",
                "0:8",
                "1:9",
                "end 2",
                "begin",
                "abort Failed { error: \"boom\", duration: 0ns }"
            ]
        );
    }
}
