//! The inet_diag collector: the netlink I/O around [`bbrtop_core::wire`]. One SOCK_DIAG_BY_FAMILY dump
//! per family; a dump the kernel flags inconsistent is restarted, a bounded number of times.

use super::socket::{self, DiagSocket};
use crate::error::CollectError;
use crate::netns::{self, NetnsSpec};
use bbrtop_core::model::SocketRecord;
use bbrtop_core::model::StateSet;
use bbrtop_core::seam::Now;
use bbrtop_core::seam::{DumpSink, Dumping, Feed, Source};
use bbrtop_core::wire::Dump;
use bbrtop_core::wire::{DumpParser, Progress, WireError, ends_dump, request};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::mpsc;
use std::time::Instant;

/// Attempts at one family's dump before giving up on a run of NLM_F_DUMP_INTR.
const MAX_DUMP_TRIES: u32 = 5;
/// A buffer handed from the receiving thread to the parser: many datagrams, about 1,000 sockets.
const RECV_BUF: usize = 512 << 10;
/// The most one netlink datagram holds: the kernel fills dump replies up to 32 KiB.
const DATAGRAM_MAX: usize = 32 << 10;
/// Received buffers waiting for the parser; with one being filled and one parsed, the most a
/// collector holds.
const IN_FLIGHT: usize = 2;

/// Where bbrtop's eBPF programs keep each socket's RTT window, for the collector to read with
/// each dump: the socket-local storage map, and a way to start the next windows.
pub struct WindowStorage {
    pub map: OwnedFd,
    /// Sets the programs' read epoch.
    pub set_epoch: Box<dyn FnMut(u32) -> std::io::Result<()> + Send>,
}

/// A NETLINK_SOCK_DIAG socket, bound to one network namespace for its life.
pub struct InetDiag {
    sock: Box<dyn DiagSocket>,
    states: StateSet,
    buf: Vec<u8>,
    seq: u32,
    parser: DumpParser,
    storage: Option<WindowStorage>,
    /// Receive buffers kept from dump to dump.
    pool: Vec<Vec<u8>>,
    /// Sockets per family in the last dump, to size the next one.
    last_count: [usize; 2],
}

impl InetDiag {
    /// Opens the socket, inside `netns` if given (the socket keeps that namespace).
    pub fn open(ns: Option<&NetnsSpec>, states: StateSet) -> Result<InetDiag, CollectError> {
        let sock = match ns {
            Some(spec) => netns::run_in(spec, socket::open)??,
            None => socket::open()?,
        };
        let ino = ns.map_or_else(|| std::path::PathBuf::from("/proc/self/ns/net"), |s| s.0.clone());
        let netns = std::fs::metadata(ino).ok().map(|m| std::os::unix::fs::MetadataExt::ino(&m));
        Ok(InetDiag::over(Box::new(sock), states, netns))
    }

    /// A collector over any [`DiagSocket`]; records are tagged with the namespace inode `netns`.
    pub fn over(sock: Box<dyn DiagSocket>, states: StateSet, netns: Option<u64>) -> InetDiag {
        InetDiag {
            sock,
            states,
            buf: Vec::new(),
            seq: 0,
            parser: DumpParser::with_netns(netns),
            pool: Vec::new(),
            storage: None,
            last_count: [0; 2],
        }
    }

    /// One full dump of IPv4 and IPv6 TCP sockets, whole (for commands that feed no engine).
    pub fn dump(&mut self) -> Result<Dump, CollectError> {
        self.parser.stream(false);
        self.dump_observed(&mut |_, _| {})
    }

    /// One full dump into `sink`, each record handed over as soon as it is parsed, while the
    /// kernel still dumps the rest, and dropped then: the collector holds a buffer's records,
    /// not the dump's (at 100k sockets those were 83 MB of the first seed's 144 MB heap peak).
    /// A failure aborts the dump in the sink, with the error, and is returned too.
    pub fn dump_into<S: DumpSink + ?Sized>(&mut self, sink: &mut S, now: Now) -> Result<(), CollectError> {
        let start = Instant::now();
        self.parser.stream(true);
        let mut d = Dumping::begin(sink, now);
        match self.dump_observed(&mut |i, r| d.record(i, r)) {
            Ok(dump) => {
                d.end(dump);
                Ok(())
            }
            Err(e) => {
                d.fail(e.to_string(), start.elapsed());
                Err(e)
            }
        }
    }

    /// One full dump, handing each record to `observe` (with its place in the dump) as soon as
    /// it is parsed. A family the kernel interrupts is read again, and its records handed over
    /// again from the restart's first place.
    fn dump_observed(&mut self, observe: &mut dyn FnMut(u32, &SocketRecord)) -> Result<Dump, CollectError> {
        let next = self.next_windows();
        let d = match self.dump_once(observe) {
            // The kernel checks CAP_BPF before it hands storage over, at the dump's start.
            Err(CollectError::Wire(WireError::Kernel { errno: libc::EPERM })) if self.storage.is_some() => {
                self.storage = None;
                self.dump_once(observe)
            }
            d => d,
        };
        if let Some(next) = next {
            self.parser.set_epoch(next);
        }
        d
    }

    /// Reads bbrtop's eBPF RTT windows with every dump from now on
    /// ([`bbrtop_core::model::RttWindow`]). Without CAP_BPF the kernel refuses; the dumps then go
    /// on without them.
    pub fn read_windows(&mut self, storage: WindowStorage) {
        self.storage = Some(storage);
    }

    /// Starts the next epoch's windows before a dump: the programs begin one at each socket's
    /// next ACK, so the dump reads the current epoch's whole, written by no hook any more
    /// (crates/bbrtop-collect/bpf/sock_state.h). The next epoch, which the parser reads from the
    /// next dump on.
    fn next_windows(&mut self) -> Option<u32> {
        let s = self.storage.as_mut()?;
        let next = self.parser.epoch().wrapping_add(1);
        match (s.set_epoch)(next) {
            Ok(()) => Some(next),
            // Windows that never end would claim samples since a read long past: drop them.
            Err(_) => {
                self.storage = None;
                None
            }
        }
    }

    fn dump_once(&mut self, observe: &mut dyn FnMut(u32, &SocketRecord)) -> Result<Dump, CollectError> {
        let start = Instant::now();
        // Room for both families at once: a whole dump's vector is allocated once, never regrown.
        let [v4, v6] = self.last_count;
        let mut observed = |p: &mut DumpParser| {
            let (from, fresh) = p.fresh();
            for (i, r) in fresh.iter().enumerate() {
                observe((from + i) as u32, r);
            }
        };
        self.parser.begin((v4 + v6) + (v4 + v6) / 64);
        let retries = self.dump_families(&mut observed)?;
        let mut d = self.parser.finish();
        d.stats.intr_retries = retries;
        d.stats.duration = start.elapsed();
        Ok(d)
    }

    /// Reads a full dump without parsing sockets: the kernel's cost alone, for benchmarks.
    /// Returns the bytes read.
    pub fn dump_raw(&mut self) -> Result<usize, CollectError> {
        let mut total = 0;
        for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
            self.send_request(family)?;
            loop {
                let n = self.recv()?;
                total += n;
                if ends_dump(&self.buf[..n]) {
                    break;
                }
            }
        }
        Ok(total)
    }

    /// Both families into the parser; returns the DUMP_INTR restarts it took. On error the parser
    /// is reset, so the next dump starts clean.
    fn dump_families(&mut self, after_buffer: &mut dyn FnMut(&mut DumpParser)) -> Result<u32, CollectError> {
        let mut retries = 0;
        for (i, family) in [libc::AF_INET as u8, libc::AF_INET6 as u8].into_iter().enumerate() {
            match self.dump_family(family, i, after_buffer) {
                Ok(r) => retries += r,
                Err(e) => {
                    self.parser.finish();
                    return Err(e);
                }
            }
        }
        Ok(retries)
    }

    /// Appends one family's sockets to the parser's dump; returns the DUMP_INTR restarts it took.
    /// An interrupted family is taken back and read again.
    fn dump_family(
        &mut self,
        family: u8,
        idx: usize,
        after_buffer: &mut dyn FnMut(&mut DumpParser),
    ) -> Result<u32, CollectError> {
        for attempt in 0..MAX_DUMP_TRIES {
            let mark = self.parser.begin(0);
            if !self.read_family(family, after_buffer)? {
                self.last_count[idx] = self.parser.since(mark);
                return Ok(attempt);
            }
            self.parser.rewind(mark);
        }
        Err(CollectError::Interrupted(MAX_DUMP_TRIES))
    }

    /// Sends one family's dump request and parses the reply, calling `after_buffer` after each
    /// receive buffer. Returns whether the kernel flagged the dump interrupted.
    ///
    /// A second thread receives while this one parses: the kernel's half of a dump (walking the
    /// socket table, filling tcp_info) and ours overlap, so a poll takes little longer than the
    /// kernel alone. The receiver always reads to the end of the dump, so an error here leaves
    /// nothing unread for the next one.
    fn read_family(
        &mut self,
        family: u8,
        after_buffer: &mut dyn FnMut(&mut DumpParser),
    ) -> Result<bool, CollectError> {
        self.send_request(family)?;
        let (sock, parser, pool) = (&*self.sock, &mut self.parser, &mut self.pool);
        std::thread::scope(|s| {
            let (full_tx, full) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(IN_FLIGHT);
            let (empty, empty_rx) = mpsc::channel::<Vec<u8>>();
            for b in pool.drain(..) {
                let _ = empty.send(b);
            }
            let receiver = s.spawn(move || {
                loop {
                    let mut buf = empty_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(RECV_BUF));
                    let (got, last) = match fill(sock, &mut buf) {
                        Ok(last) => (Ok(buf), last),
                        Err(e) => (Err(e), true),
                    };
                    if full_tx.send(got).is_err() || last {
                        break;
                    }
                }
                drop(full_tx);
                // The buffers come back once the parser is done with them: keep them for the next dump.
                empty_rx.iter().collect::<Vec<_>>()
            });
            let mut outcome = None;
            for got in &full {
                let buf = match got {
                    Ok(b) => b,
                    Err(e) => {
                        outcome.get_or_insert(Err(e.into()));
                        continue;
                    }
                };
                if outcome.is_none() {
                    let res = parser.feed(&buf);
                    after_buffer(parser);
                    match res {
                        Ok(Progress::More) => {}
                        Ok(Progress::Done { interrupted }) => outcome = Some(Ok(interrupted)),
                        Err(WireError::Kernel { errno })
                            if errno == libc::ENOENT
                                || errno == libc::EPROTONOSUPPORT
                                || errno == libc::EINVAL =>
                        {
                            let e = std::io::Error::from_raw_os_error(errno);
                            outcome = Some(Err(CollectError::Unsupported(e.to_string())));
                        }
                        Err(e) => outcome = Some(Err(e.into())),
                    }
                }
                let _ = empty.send(buf);
            }
            drop(empty);
            *pool = receiver.join().unwrap_or_default();
            outcome.unwrap_or_else(|| {
                Err(CollectError::Wire(WireError::Malformed("the dump ended early".into())))
            })
        })
    }

    fn send_request(&mut self, family: u8) -> Result<(), CollectError> {
        self.seq = self.seq.wrapping_add(1);
        let maps: Vec<i32> = self.storage.iter().map(|s| s.map.as_raw_fd()).collect();
        let req = request::dump_request(family, self.states, self.seq, &maps);
        self.sock.send(&req)?;
        Ok(())
    }

    fn recv(&mut self) -> Result<usize, CollectError> {
        self.buf.reserve(DATAGRAM_MAX);
        self.buf.clear();
        self.sock.recv_append(&mut self.buf)?;
        Ok(self.buf.len())
    }
}

/// Fills `buf` (cleared first) with whole datagrams while another surely fits, and says whether
/// the dump ended. The kernel sends a dump 32 KiB at a time; handing the parser a megabyte at a
/// time spares a thread wake-up per datagram.
fn fill(sock: &dyn DiagSocket, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    buf.clear();
    while buf.capacity() - buf.len() >= DATAGRAM_MAX {
        let start = buf.len();
        sock.recv_append(buf)?;
        if ends_dump(&buf[start..]) {
            return Ok(true);
        }
        // The next datagram's first message must start 4-byte aligned, as in its own buffer.
        buf.resize(buf.len().next_multiple_of(4), 0);
    }
    Ok(false)
}

impl Source for InetDiag {
    /// The engine observes each record as it is parsed: its work overlaps the kernel's. A
    /// failure is fed as an aborted dump.
    fn poll(&mut self, feed: &mut dyn Feed) {
        let _ = self.dump_into(feed, Now::system());
    }
}
