//! The inet_diag collector: the netlink I/O around [`crate::wire`]. One SOCK_DIAG_BY_FAMILY dump
//! per family; a dump the kernel flags inconsistent is restarted, a bounded number of times.

use super::netns::{self, NetnsSpec};
use crate::engine::{Dump, Update};
use crate::model::StateSet;
use crate::runtime::Source;
use crate::wire::{DumpParser, Progress, WireError, ends_dump, request};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_SOCK_DIAG};
use std::time::Instant;

/// Attempts at one family's dump before giving up on a run of NLM_F_DUMP_INTR.
const MAX_DUMP_TRIES: u32 = 5;
/// Receive buffer: the kernel fills up to this much per recv (it caps a message batch near 32 KiB
/// by default, more when the buffer allows).
const RECV_BUF: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// A capability is missing, e.g. CAP_SYS_ADMIN to enter another namespace.
    #[error("{0}")]
    Privilege(String),
    /// The namespace could not be opened or entered.
    #[error("network namespace {path}: {source}")]
    Netns { path: String, source: std::io::Error },
    /// The kernel has no inet_diag for TCP.
    #[error("inet_diag unavailable: {0} (is tcp_diag built in or loaded? try `modprobe tcp_diag`)")]
    Unsupported(String),
    #[error("netlink: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Wire(#[from] WireError),
    #[error("the dump was interrupted {0} times in a row (sockets changing too fast); giving up")]
    Interrupted(u32),
}

/// A NETLINK_SOCK_DIAG socket, bound to one network namespace for its life.
pub struct InetDiag {
    sock: Socket,
    states: StateSet,
    buf: Vec<u8>,
    seq: u32,
    parser: DumpParser,
    /// Sockets per family in the last dump, to size the next one.
    last_count: [usize; 2],
}

impl InetDiag {
    /// Opens the socket, inside `netns` if given (the socket keeps that namespace).
    pub fn open(ns: Option<&NetnsSpec>, states: StateSet) -> Result<InetDiag, CollectError> {
        let sock = match ns {
            Some(spec) => netns::run_in(spec, open_socket)??,
            None => open_socket()?,
        };
        let ino = ns.map_or_else(|| std::path::PathBuf::from("/proc/self/ns/net"), |s| s.0.clone());
        let netns = std::fs::metadata(ino).ok().map(|m| std::os::unix::fs::MetadataExt::ino(&m));
        Ok(InetDiag {
            sock,
            states,
            buf: Vec::with_capacity(RECV_BUF),
            seq: 0,
            parser: DumpParser::with_netns(netns),
            last_count: [0; 2],
        })
    }

    /// One full dump of IPv4 and IPv6 TCP sockets.
    pub fn dump(&mut self) -> Result<Dump, CollectError> {
        let start = Instant::now();
        // Room for both families at once: the vector is allocated once and never regrown.
        let [v4, v6] = self.last_count;
        self.parser.begin((v4 + v6) + (v4 + v6) / 64);
        let mut retries = 0;
        for (i, family) in [libc::AF_INET as u8, libc::AF_INET6 as u8].into_iter().enumerate() {
            match self.dump_family(family, i) {
                Ok(r) => retries += r,
                Err(e) => {
                    // Start the next dump clean.
                    self.parser.finish();
                    return Err(e);
                }
            }
        }
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

    /// Appends one family's sockets to the parser's dump; returns the DUMP_INTR retries it took.
    fn dump_family(&mut self, family: u8, idx: usize) -> Result<u32, CollectError> {
        for attempt in 0..MAX_DUMP_TRIES {
            self.send_request(family)?;
            let mark = self.parser.begin(0);
            let interrupted = loop {
                let n = self.recv()?;
                match self.parser.feed(&self.buf[..n]) {
                    Ok(Progress::More) => continue,
                    Ok(Progress::Done { interrupted }) => break interrupted,
                    Err(WireError::Kernel { errno })
                        if errno == libc::ENOENT
                            || errno == libc::EPROTONOSUPPORT
                            || errno == libc::EINVAL =>
                    {
                        return Err(CollectError::Unsupported(
                            std::io::Error::from_raw_os_error(errno).to_string(),
                        ));
                    }
                    Err(e) => {
                        self.drain();
                        return Err(e.into());
                    }
                }
            };
            if !interrupted {
                self.last_count[idx] = self.parser.since(mark);
                return Ok(attempt);
            }
            self.parser.rewind(mark);
        }
        Err(CollectError::Interrupted(MAX_DUMP_TRIES))
    }

    fn send_request(&mut self, family: u8) -> Result<(), CollectError> {
        self.seq = self.seq.wrapping_add(1);
        let req = request::dump_request(family, self.states, self.seq);
        self.sock.send(&req, 0)?;
        Ok(())
    }

    fn recv(&mut self) -> Result<usize, CollectError> {
        self.buf.clear();
        loop {
            match self.sock.recv(&mut self.buf, 0) {
                Ok(n) => return Ok(n.min(self.buf.len())),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// After a parse error mid-dump, read what is left of it so the next dump starts clean.
    fn drain(&mut self) {
        let _ = self.sock.set_non_blocking(true);
        for _ in 0..10_000 {
            match self.recv() {
                Ok(n) if n > 0 && !ends_dump(&self.buf[..n]) => continue,
                _ => break,
            }
        }
        let _ = self.sock.set_non_blocking(false);
    }
}

fn open_socket() -> Result<Socket, CollectError> {
    let mut sock = Socket::new(NETLINK_SOCK_DIAG).map_err(|e| match e.raw_os_error() {
        Some(libc::EPROTONOSUPPORT) => CollectError::Unsupported(e.to_string()),
        _ => CollectError::Io(e),
    })?;
    sock.bind_auto()?;
    sock.connect(&SocketAddr::new(0, 0))?;
    // A bigger socket buffer lets the kernel batch more sockets per recv; best effort.
    let _ = sock.set_rx_buf_sz(RECV_BUF);
    Ok(sock)
}

impl Source for InetDiag {
    fn poll(&mut self, out: &mut Vec<Update>) {
        let start = Instant::now();
        out.push(match self.dump() {
            Ok(d) => Update::Dump(d),
            Err(e) => Update::DumpFailed { error: e.to_string(), duration: start.elapsed() },
        });
    }
}
