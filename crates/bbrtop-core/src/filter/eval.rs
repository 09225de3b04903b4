//! Whether something matches an expression. Sockets, closed flows and alerts are all
//! [`Subject`]s; each says what it knows, and a word about what it does not know (a closed flow's
//! pod, a socket's srtt the kernel did not give) is neither true nor false. Such unknowns follow
//! three-valued logic (`not` unknown is unknown; false `and` unknown is false; true `or` unknown
//! is true), and what is still unknown at the top does not match: `srtt > 100ms` and
//! `not srtt > 100ms` both leave out a socket with no srtt.

use super::expr::{End, Expr, Process, Word};
use super::place::Place;
use crate::columns::{Column, Value};
use crate::model::{ClosedFlow, Count, SocketRecord, TcpState, is_loopback_peer};
use crate::snapshot::{AlertView, Role, SocketView};
use std::net::SocketAddr;

/// What the words are matched against. `None` is "unknown".
pub trait Subject {
    /// Its congestion control, local end and peer: what everything matched knows.
    fn ends(&self) -> (&str, SocketAddr, SocketAddr);
    fn state(&self) -> Option<TcpState>;
    fn place(&self, p: &Place) -> Option<bool>;
    /// Sent data in the last interval.
    fn sending(&self) -> Option<bool>;
    /// Whether process `p` holds it: unknown unless the caller read who holds what (the TUI's
    /// /proc scan).
    fn process(&self, p: &Process) -> Option<bool> {
        let _ = p;
        None
    }
    /// Column `c`'s value, in the column's unit.
    fn value(&self, c: &Column) -> Option<f64>;
}

impl Expr {
    pub fn matches(&self, s: &impl Subject) -> bool {
        self.eval(s) == Some(true)
    }

    fn eval(&self, s: &impl Subject) -> Option<bool> {
        match self {
            Expr::And(v) => kleene(v, s, false),
            Expr::Or(v) => kleene(v, s, true),
            Expr::Not(e) => e.eval(s).map(|b| !b),
            Expr::Word(w) => w.eval(s),
        }
    }
}

/// Kleene's `and` (`decides` false) or `or` (`decides` true): an operand that is `decides`
/// decides; else the result is unknown if any operand is, and `!decides` if none is.
fn kleene(v: &[Expr], s: &impl Subject, decides: bool) -> Option<bool> {
    let mut out = Some(!decides);
    for e in v {
        match e.eval(s) {
            Some(b) if b == decides => return Some(decides),
            None => out = None,
            Some(_) => {}
        }
    }
    out
}

impl Word {
    fn eval(&self, s: &impl Subject) -> Option<bool> {
        let (cc, local, peer) = s.ends();
        let at = |end: &End, on: &dyn Fn(SocketAddr) -> bool| match end {
            End::Local => on(local),
            End::Peer => on(peer),
            End::Either => on(local) || on(peer),
        };
        match self {
            Word::Cc(name) => Some(cc.eq_ignore_ascii_case(name)),
            Word::Port(end, cmp, p) => Some(at(end, &|a| cmp.holds(a.port(), *p))),
            // An IPv4 peer of a dual-stack socket shows as ::ffff:a.b.c.d.
            Word::Addr(end, net) => Some(at(end, &|a| net.contains(&a.ip().to_canonical()))),
            Word::State(st) => s.state().map(|x| x == *st),
            Word::Place(p) => s.place(p),
            Word::Loopback => Some(is_loopback_peer(peer)),
            Word::Sending => s.sending(),
            Word::Process(p) => s.process(p),
            Word::Value(c, cmp, v) => s.value(c).map(|x| cmp.holds(x, *v)),
        }
    }
}

/// A record as the engine sees it before deriving anything: what `--filter` is matched against.
/// Its per-poll values are unknown; `--filter` refuses words about them.
impl Subject for SocketRecord {
    fn ends(&self) -> (&str, SocketAddr, SocketAddr) {
        (self.cc_name(), self.local, self.peer)
    }
    fn state(&self) -> Option<TcpState> {
        Some(self.state)
    }
    fn place(&self, p: &Place) -> Option<bool> {
        Some(p.matches(self))
    }
    fn sending(&self) -> Option<bool> {
        None
    }
    fn value(&self, _: &Column) -> Option<f64> {
        None
    }
}

/// A socket in a snapshot: its record, what it did in the last interval, and the catalog's
/// values of it.
impl Subject for SocketView {
    fn ends(&self) -> (&str, SocketAddr, SocketAddr) {
        self.record.ends()
    }
    fn state(&self) -> Option<TcpState> {
        self.record.state()
    }
    fn place(&self, p: &Place) -> Option<bool> {
        self.record.place(p)
    }
    /// Loopback counted as any other socket: `lo` is its own word.
    fn sending(&self) -> Option<bool> {
        Some(self.role(true) == Role::Sender)
    }
    fn value(&self, c: &Column) -> Option<f64> {
        match c.value(self) {
            Value::Num(v) | Value::Pair(v, _) => Some(v),
            Value::Unknown | Value::Addr(_) | Value::Text(_) => None,
        }
    }
}

/// A closed flow: its cc, ends and namespace inode; its state is CLOSE, it sends nothing, and its
/// values are those it closed with (its inflation the peak it reached, as the closed-flows view
/// shows it). Pods, cgroups and namespace names are not known of it.
impl Subject for ClosedFlow {
    fn ends(&self) -> (&str, SocketAddr, SocketAddr) {
        (&self.cc, self.local, self.peer)
    }
    fn state(&self) -> Option<TcpState> {
        Some(TcpState::Close)
    }
    fn place(&self, p: &Place) -> Option<bool> {
        p.by_inode().then(|| p.is_inode(u64::from(self.netns)))
    }
    fn sending(&self) -> Option<bool> {
        Some(false)
    }
    fn value(&self, c: &Column) -> Option<f64> {
        let us = |v: u32| (v > 0).then_some(f64::from(v));
        match c.key {
            "srtt" => us(self.srtt_us),
            "min_rtt" => us(self.min_rtt_us),
            "delivery" => self.delivery_rate_bytes_per_sec.map(|v| v as f64),
            "retrans" => Some(self.counts[Count::RetransSegs] as f64),
            "retx" => self.counts.retrans_ratio(),
            "bbr_bw" => self.bbr.map(|b| b.bw_bytes_per_sec as f64),
            "bbr_min_rtt" => self.bbr.map(|b| f64::from(b.min_rtt_us)),
            "inflation" => Some(self.peak_inflation_ratio),
            _ => None,
        }
    }
}

/// An alert whose socket has left the snapshot (a socket still there is matched as itself): its
/// cc, ends, and the srtt, baseline and ratio of its last evaluation; it sends nothing now.
impl Subject for AlertView {
    fn ends(&self) -> (&str, SocketAddr, SocketAddr) {
        (&self.cc, self.local, self.peer)
    }
    fn state(&self) -> Option<TcpState> {
        None
    }
    fn place(&self, _: &Place) -> Option<bool> {
        None
    }
    fn sending(&self) -> Option<bool> {
        Some(false)
    }
    fn value(&self, c: &Column) -> Option<f64> {
        match c.key {
            "srtt" => Some(f64::from(self.srtt_us)),
            "base_rtt" => Some(f64::from(self.baseline_rtt_us)),
            "inflation" => Some(self.ratio),
            _ => None,
        }
    }
}
