//! Pure parsing of an inet_diag dump: netlink bytes in, [`SocketRecord`]s out. No sockets, no
//! I/O. The framing uses netlink-packet-core and netlink-packet-sock-diag; `tcp_info`,
//! `tcp_bbr_info` and skmeminfo are decoded here because the crate hands them back as raw bytes.

pub mod dump;
#[cfg(any(test, feature = "test-support"))]
pub mod fixtures;
pub mod record;
pub mod request;
pub mod walk;

use crate::model::{BbrInfo, Cookie, DctcpInfo, InfoSize, MemInfo, RttWindow, SocketRecord, TcpState};
pub use dump::{Dump, DumpStats};
use netlink_packet_core::{
    NLM_F_DUMP_INTR, NLMSG_DONE, NLMSG_ERROR, NLMSG_NOOP, NetlinkBuffer, NlaBuffer, NlasIterator, Parseable,
};
use netlink_packet_sock_diag::constants::{
    INET_DIAG_BBRINFO, INET_DIAG_CONG, INET_DIAG_DCTCPINFO, INET_DIAG_INFO, INET_DIAG_SKMEMINFO,
    SOCK_DIAG_BY_FAMILY,
};
use netlink_packet_sock_diag::inet::InetResponseHeader;
use rustc_hash::FxHashSet;
use std::net::SocketAddr;
use std::sync::Arc;

/// `struct inet_diag_msg`: the fixed part before the attributes.
const INET_DIAG_MSG_LEN: usize = 72;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("truncated or malformed netlink message: {0}")]
    Malformed(String),
    #[error("the kernel answered the dump with error {errno} ({})", std::io::Error::from_raw_os_error(*errno))]
    Kernel { errno: i32 },
    #[error("unexpected netlink message type {0}")]
    UnexpectedType(u16),
}

/// Where a dump stands after a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// More buffers follow (a multi-part reply).
    More,
    /// NLMSG_DONE arrived. `interrupted` when the kernel flagged the dump inconsistent
    /// (NLM_F_DUMP_INTR): its sockets changed while it was read, so it should be restarted.
    Done { interrupted: bool },
}

/// Accumulates one dump across the buffers of a multi-part reply, and across families: records
/// land in one vector, so a whole poll is a single allocation. A streaming parser
/// ([`DumpParser::stream`]) drops each record once handed over instead, keeping its cookie. A
/// collector keeps its parser, so the interned names and the duplicate set's capacity carry over
/// from poll to poll.
#[derive(Default)]
pub struct DumpParser {
    sockets: Vec<SocketRecord>,
    /// The place in the dump of `sockets[0]`: the records before it were handed over and dropped.
    base: usize,
    /// The cookies of those dropped records, by place, for a rewind to forget.
    dropped: Vec<Cookie>,
    streaming: bool,
    seen: FxHashSet<Cookie>,
    stats: DumpStats,
    interrupted: bool,
    names: CcNames,
    netns: Option<u64>,
    /// The read epoch the eBPF RTT windows are read at (see [`RttWindow`]).
    epoch: u32,
    /// Records handed over so far by [`DumpParser::fresh`].
    handed: usize,
}

/// Where a family's part of the dump began, to take it back if the kernel interrupts it.
#[derive(Clone, Copy, Debug)]
pub struct Mark(usize);

/// Congestion-control names seen so far, shared by every record that uses them.
#[derive(Default)]
pub struct CcNames(Vec<Arc<str>>);

impl CcNames {
    pub fn intern(&mut self, name: &[u8]) -> Arc<str> {
        if let Some(n) = self.0.iter().find(|n| n.as_bytes() == name) {
            return Arc::clone(n);
        }
        let n: Arc<str> = String::from_utf8_lossy(name).into();
        self.0.push(Arc::clone(&n));
        n
    }
}

impl DumpParser {
    pub fn new() -> DumpParser {
        DumpParser::default()
    }

    /// Every record is tagged with `netns`, the inode of the namespace the dump came from.
    pub fn with_netns(netns: Option<u64>) -> DumpParser {
        DumpParser { netns, ..DumpParser::default() }
    }

    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Sets the read epoch of the eBPF RTT windows in the dumps that follow.
    pub fn set_epoch(&mut self, epoch: u32) {
        self.epoch = epoch;
    }

    /// Whether each record handed over by [`DumpParser::fresh`] is dropped at its next call, and
    /// [`DumpParser::finish`] hands over none (set before a dump begins): a collector that feeds
    /// a sink then holds a buffer's records at a time, not the whole dump's.
    pub fn stream(&mut self, on: bool) {
        self.streaming = on;
    }

    /// The records parsed so far in this dump, dropped ones included.
    fn len(&self) -> usize {
        self.base + self.sockets.len()
    }

    /// Starts a family's dump, expecting about `sockets` more records (the last dump's count),
    /// so the vector is not regrown and copied as it fills (a streaming one holds no more than
    /// a buffer's).
    pub fn begin(&mut self, sockets: usize) -> Mark {
        if !self.streaming {
            self.sockets.reserve(sockets);
        }
        self.interrupted = false;
        Mark(self.len())
    }

    /// Forgets what was parsed since `m`: the kernel interrupted that part, and it is read again.
    pub fn rewind(&mut self, m: Mark) {
        let kept = m.0.saturating_sub(self.base);
        for r in self.sockets.drain(kept.min(self.sockets.len())..) {
            self.seen.remove(&r.cookie);
        }
        for c in self.dropped.drain(m.0.min(self.base)..) {
            self.seen.remove(&c);
        }
        self.base = self.base.min(m.0);
        self.handed = self.handed.min(m.0);
    }

    /// The records parsed since the last call, and the place of the first: a collector hands
    /// them over as they come. After a rewind they come again from the mark.
    pub fn fresh(&mut self) -> (usize, &[SocketRecord]) {
        if self.streaming {
            let handed = self.handed.saturating_sub(self.base).min(self.sockets.len());
            self.dropped.extend(self.sockets.drain(..handed).map(|r| r.cookie));
            self.base += handed;
        }
        let from = self.handed.clamp(self.base, self.len());
        self.handed = self.len();
        (from, &self.sockets[from - self.base..])
    }

    /// The records of the dump so far (a streaming parser's not yet dropped).
    pub fn records(&self) -> &[SocketRecord] {
        &self.sockets
    }

    /// Records parsed since `m`.
    pub fn since(&self, m: Mark) -> usize {
        self.len() - m.0
    }

    /// Parses every message in one receive buffer. Never panics on any input.
    pub fn feed(&mut self, buf: &[u8]) -> Result<Progress, WireError> {
        let mut off = 0;
        while off < buf.len() {
            let rest = &buf[off..];
            let msg = NetlinkBuffer::new_checked(rest).map_err(|e| WireError::Malformed(e.to_string()))?;
            let len = msg.length() as usize;
            if msg.flags() & NLM_F_DUMP_INTR != 0 {
                self.interrupted = true;
            }
            self.stats.messages += 1;
            match msg.message_type() {
                NLMSG_DONE => return Ok(Progress::Done { interrupted: self.interrupted }),
                NLMSG_ERROR => {
                    let p = msg.payload();
                    let code = p.get(..4).map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    match code {
                        Some(0) => {}
                        Some(c) => return Err(WireError::Kernel { errno: c.saturating_neg() }),
                        None => return Err(WireError::Malformed("short NLMSG_ERROR".into())),
                    }
                }
                NLMSG_NOOP => {}
                SOCK_DIAG_BY_FAMILY => {
                    let mut rec = parse_socket(msg.payload(), &mut self.stats, &mut self.names, self.epoch)?;
                    rec.netns = self.netns;
                    if self.seen.insert(rec.cookie) {
                        self.sockets.push(rec);
                    } else {
                        self.stats.duplicates += 1;
                    }
                }
                t => return Err(WireError::UnexpectedType(t)),
            }
            // Messages are 4-byte aligned; the last one in a buffer may lack its padding.
            off += len.div_ceil(4) * 4;
        }
        Ok(Progress::More)
    }

    /// Hands over the dump so far and starts afresh. `stats.duration` is left for the caller.
    /// A streaming parser hands over no records: they went through [`DumpParser::fresh`].
    pub fn finish(&mut self) -> Dump {
        self.seen.clear();
        (self.handed, self.base) = (0, 0);
        self.dropped.clear();
        let sockets = if self.streaming {
            // Its vector holds a buffer's records: kept, with its capacity, for the next dump.
            self.sockets.clear();
            Vec::new()
        } else {
            std::mem::take(&mut self.sockets)
        };
        Dump { sockets, stats: std::mem::take(&mut self.stats), netns: self.netns }
    }
}

/// Parses one SOCK_DIAG_BY_FAMILY payload: `inet_diag_msg` then attributes.
pub fn parse_socket(
    payload: &[u8],
    stats: &mut DumpStats,
    names: &mut CcNames,
    epoch: u32,
) -> Result<SocketRecord, WireError> {
    let hdr = InetResponseHeader::parse(payload).map_err(|e| WireError::Malformed(e.to_string()))?;
    let id = &hdr.socket_id;
    let c = id.cookie;
    let cookie = u64::from(u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        | u64::from(u32::from_ne_bytes([c[4], c[5], c[6], c[7]])) << 32;
    let state = TcpState::from_kernel(hdr.state)
        .ok_or_else(|| WireError::Malformed(format!("unknown TCP state {}", hdr.state)))?;
    let mut rec = SocketRecord::new(
        cookie,
        SocketAddr::new(id.source_address, id.source_port),
        SocketAddr::new(id.destination_address, id.destination_port),
        state,
    );
    rec.uid = hdr.uid;
    rec.inode = hdr.inode;
    let attrs = payload.get(INET_DIAG_MSG_LEN..).unwrap_or_default();
    let mut cc_info = None;
    for nla in NlasIterator::new(attrs) {
        let (kind, v) = nla_of(nla)?;
        match kind {
            INET_DIAG_INFO => match rec.tcp_info.fill(v) {
                InfoSize::Short => stats.info_short += 1,
                InfoSize::Long => stats.info_long += 1,
                InfoSize::Exact => {}
            },
            INET_DIAG_BBRINFO | INET_DIAG_DCTCPINFO => cc_info = Some((kind, v)),
            INET_DIAG_CONG => {
                let name = v.split(|&b| b == 0).next().unwrap_or_default();
                rec.cc = Some(names.intern(name));
            }
            INET_DIAG_SKMEMINFO => rec.skmem = MemInfo::parse(v),
            INET_DIAG_SK_BPF_STORAGES => {
                rec.kernel_rtt = storage_value(v)?.and_then(|b| RttWindow::parse_stored(b, epoch))
            }
            // Everything else (and anything a newer kernel adds) is skipped.
            _ => {}
        }
    }
    if let Some((kind, v)) = cc_info {
        decode_cc_info(&mut rec, kind, v);
    }
    Ok(rec)
}

/// The congestion control's own info, read once the cc name is known (whichever order the
/// attributes came in): BBR's layout depends on which BBR, and only a BBR socket's info is read
/// as BBR's, so DCTCP's (or a future algorithm's) bytes are never misread.
fn decode_cc_info(rec: &mut SocketRecord, kind: u16, v: &[u8]) {
    let cc = rec.cc.as_deref();
    if kind == INET_DIAG_DCTCPINFO || cc == Some("dctcp") {
        rec.dctcp = DctcpInfo::parse(v);
    } else if cc.is_none_or(crate::model::bbr::is_bbr) {
        rec.bbr = BbrInfo::parse(v, cc);
    }
}

/// `INET_DIAG_SK_BPF_STORAGES` (include/uapi/linux/inet_diag.h); the crate does not name it.
const INET_DIAG_SK_BPF_STORAGES: u16 = 20;
/// Nested in it (include/uapi/linux/sock_diag.h).
const SK_DIAG_BPF_STORAGE: u16 = 1;
const SK_DIAG_BPF_STORAGE_MAP_VALUE: u16 = 3;

/// The value of the first socket-local storage in an `INET_DIAG_SK_BPF_STORAGES` attribute: the
/// collector asks for one map only.
fn storage_value(v: &[u8]) -> Result<Option<&[u8]>, WireError> {
    for stg in NlasIterator::new(v) {
        let (kind, stg) = nla_of(stg)?;
        if kind != SK_DIAG_BPF_STORAGE {
            continue;
        }
        for a in NlasIterator::new(stg) {
            let (kind, value) = nla_of(a)?;
            if kind == SK_DIAG_BPF_STORAGE_MAP_VALUE {
                return Ok(Some(value));
            }
        }
    }
    Ok(None)
}

/// An attribute's kind and value, the value borrowed from the message (not the attribute).
fn nla_of<E: std::fmt::Display>(nla: Result<NlaBuffer<&[u8]>, E>) -> Result<(u16, &[u8]), WireError> {
    let nla = nla.map_err(|e| WireError::Malformed(e.to_string()))?;
    let (kind, len) = (nla.kind(), nla.length() as usize);
    let value = nla.into_inner().get(4..len).ok_or_else(|| WireError::Malformed("short attribute".into()))?;
    Ok((kind, value))
}

/// Whether a buffer holds the message that ends a dump (NLMSG_DONE or an error), reading only
/// headers: the raw benchmark's floor, which must not pay for parsing.
pub fn ends_dump(buf: &[u8]) -> bool {
    let mut off = 0;
    while let Some(h) = buf.get(off..off + 16) {
        let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let ty = u16::from_ne_bytes([h[4], h[5]]);
        if ty == NLMSG_DONE || ty == NLMSG_ERROR {
            return true;
        }
        if len < 16 {
            return true;
        }
        off += len.div_ceil(4) * 4;
    }
    false
}

#[cfg(test)]
mod tests;
