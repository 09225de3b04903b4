//! Socket filters: a small language in `ss`'s terms, for the TUI's `/` and `--filter`, and the
//! `--cc`, `--port`, `--peer` and `--state` flags, which become words of it.
//!
//! Words: `cc NAME`; `port N` (either end), `sport N` (local), `dport N` (peer), each with a
//! comparison if wanted (`dport = 443`, `sport >= 1024`, `:443` as `ss` writes ports); `src
//! ADDR[/LEN]` (local), `dst ADDR[/LEN]` and `peer ADDR[/LEN]` (peer), or a bare address or
//! network (the peer); `state STATE`; `netns NAME|INODE`, `pod NS/NAME|UID`, `cgroup PART`;
//! `process PID|NAME` (the process holding it, in the TUI); `lo` (the peer is this host);
//! `sending` (sent data in the last interval); and a comparison on
//! any number of the column catalog, `KEY OP VALUE` (`srtt > 100ms`, `retx > 1%`, `delivery <
//! 10Mbit/s`, `inflation >= 2x`, `cwnd < 10`), the value in the column's unit. `=` and `!=` go
//! with every keyword. Words join with `and` (`&&`, `&`, or nothing: `cc bbr port 443`), `or`
//! (`||`, `|`) and `not` (`!`), tightest first: not, and, or; parentheses group.
//!
//! Files: `lexer.rs` (text into tokens), `parser.rs` (tokens into an [`Expr`]; its [`Scope`]
//! says which words a use takes), `values.rs` (ports, addresses, numbers and their units),
//! `expr.rs` (the tree), `eval.rs` (matching sockets, closed flows and alerts), `place.rs`
//! (where a socket lives), `error.rs`.

pub mod error;
pub mod eval;
pub mod expr;
mod lexer;
pub mod parser;
pub mod place;
pub mod values;

pub use error::FilterError;
pub use eval::Subject;
pub use expr::{Cmp, End, Expr, Process, Word};
pub use parser::Scope;
pub use place::Place;
pub use values::{parse_cidr, parse_port, parse_state};

use crate::model::{SocketRecord, StateSet, TcpState};
use ipnet::IpNet;

impl Expr {
    /// The whole language, as the TUI's `/` takes it. An empty string is the empty filter.
    pub fn parse(s: &str) -> Result<Expr, FilterError> {
        parser::parse(s, Scope::Shown)
    }

    /// The words `--filter` takes: all but those whose truth changes from poll to poll.
    pub fn parse_tracked(s: &str) -> Result<Expr, FilterError> {
        parser::parse(s, Scope::Tracked)
    }
}

/// Which sockets the engine tracks at all: the states asked of the kernel, and an expression
/// over each record (the flags and `--filter`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    /// States to dump (`--state`); `None` means every state but LISTEN and TIME-WAIT, or every
    /// state when the expression names one (then it decides).
    pub states: Option<StateSet>,
    pub expr: Expr,
}

impl Filter {
    /// The flags' filter: the values of one flag OR-ed, the flags and `expr` (`--filter`) AND-ed.
    pub fn from_flags(
        cc: &[String],
        ports: &[u16],
        peers: &[IpNet],
        states: &[TcpState],
        expr: Expr,
    ) -> Filter {
        let expr = Expr::all([
            Expr::any(cc.iter().map(|c| Word::Cc(c.clone()))),
            Expr::any(ports.iter().map(|&p| Word::Port(End::Either, Cmp::Eq, p))),
            Expr::any(peers.iter().map(|&n| Word::Addr(End::Peer, n))),
            expr,
        ]);
        Filter { states: (!states.is_empty()).then(|| StateSet::from_states(states)), expr }
    }

    /// A filter of `--filter`'s words alone.
    pub fn parse_words(s: &str) -> Result<Filter, FilterError> {
        Ok(Filter { states: None, expr: Expr::parse_tracked(s)? })
    }

    /// The state mask to ask the kernel for.
    pub fn state_set(&self) -> StateSet {
        self.states.unwrap_or_else(|| {
            if self.expr.names_a_state() { StateSet::all() } else { StateSet::default_filter() }
        })
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_none() && self.expr.is_everything()
    }

    pub fn matches(&self, r: &SocketRecord) -> bool {
        self.state_set().contains(r.state) && self.expr.matches(r)
    }
}

#[cfg(test)]
mod tests;
