//! The filter as a tree: words joined by and, or, not. Built by the parser from the language, or
//! by the CLI from the `--cc`, `--port` and `--peer` flags, so both match through one evaluator.

use super::place::Place;
use crate::columns::Column;
use crate::model::TcpState;
use ipnet::IpNet;

/// A filter expression. `And(vec![])` is true of everything: the empty filter.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Word(Word),
}

/// Which end of a socket a port or address word is about, in `ss`'s terms: `src`/`sport` the
/// local end, `dst`/`dport` the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Local,
    Peer,
    /// `port N`: either end.
    Either,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Cmp {
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
        }
    }
}

/// One word of the language.
#[derive(Clone, Debug, PartialEq)]
pub enum Word {
    /// `cc NAME`, matched without regard to case.
    Cc(String),
    /// `port`, `sport`, `dport`.
    Port(End, Cmp, u16),
    /// `src`, `dst` (and `peer`, or a bare address: the peer).
    Addr(End, IpNet),
    State(TcpState),
    Place(Place),
    /// `lo`: the peer is this host.
    Loopback,
    /// `sending`: sent data in the last interval.
    Sending,
    /// `process PID|NAME`: the process holding the socket.
    Process(Process),
    /// `KEY OP VALUE`: a per-socket value of the catalog, `VALUE` in the column's own unit
    /// (microseconds, bytes per second, a fraction, a ratio, a count).
    Value(&'static Column, Cmp, f64),
}

/// Which process `process` asks for: by pid, or by a part of its command name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Process {
    Pid(u32),
    Name(String),
}

impl Process {
    /// A number is a pid; anything else a part of the command (`/proc/PID/comm`, 15 bytes at most).
    pub fn parse(v: &str) -> Process {
        v.parse().map_or_else(|_| Process::Name(v.to_string()), Process::Pid)
    }

    /// Whether process `pid` running `comm` is the one asked for.
    pub fn is(&self, pid: u32, comm: &str) -> bool {
        match self {
            Process::Pid(p) => *p == pid,
            Process::Name(n) => comm.contains(n.as_str()),
        }
    }
}

impl Default for Expr {
    fn default() -> Self {
        Expr::everything()
    }
}

impl Expr {
    /// The empty filter: true of every socket.
    pub fn everything() -> Expr {
        Expr::And(Vec::new())
    }

    pub fn is_everything(&self) -> bool {
        matches!(self, Expr::And(v) if v.is_empty())
    }

    /// `a and b and ...`, flattening nested ands and dropping empty filters.
    pub fn all(parts: impl IntoIterator<Item = Expr>) -> Expr {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Expr::And(v) => out.extend(v),
                e => out.push(e),
            }
        }
        if out.len() == 1 { out.remove(0) } else { Expr::And(out) }
    }

    /// `a or b or ...` of words; no words is the empty filter (a flag not given).
    pub fn any(words: impl IntoIterator<Item = Word>) -> Expr {
        let mut v: Vec<Expr> = words.into_iter().map(Expr::Word).collect();
        match v.len() {
            0 => Expr::everything(),
            1 => v.remove(0),
            _ => Expr::Or(v),
        }
    }

    /// Whether a `state` word is in it: then the expression, not the default state mask, says
    /// which states to ask the kernel for.
    pub fn names_a_state(&self) -> bool {
        match self {
            Expr::And(v) | Expr::Or(v) => v.iter().any(Expr::names_a_state),
            Expr::Not(e) => e.names_a_state(),
            Expr::Word(w) => matches!(w, Word::State(_)),
        }
    }
}
