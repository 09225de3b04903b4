//! Tokens into an [`Expr`], by recursive descent. Precedence, tightest first: `not`, then `and`
//! (also two words side by side: `cc bbr port 443`), then `or`; parentheses group.
//!
//! ```text
//! or    := and ( OR and )*
//! and   := unary ( [AND] unary )*
//! unary := NOT unary | '(' or ')' | word
//! word  := KEYWORD [CMP] VALUE | KEY CMP VALUE | lo | sending | ADDRESS
//! ```

use super::error::{self, FilterError};
use super::expr::{Cmp, End, Expr, Process, Word};
use super::lexer::{Kind, Token, cmp_word, tokens};
use super::place::Place;
use super::values::{parse_cidr, parse_port, parse_state, parse_value};
use crate::columns::{self, Unit};
use crate::model::TcpState;

/// What the words of an expression may be about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// What is shown (the TUI's `/`): every word.
    Shown,
    /// Which sockets are tracked at all (`--filter`): only what stays true of a socket from poll
    /// to poll, so no value comparison and no `sending`.
    Tracked,
}

pub fn parse(s: &str, scope: Scope) -> Result<Expr, FilterError> {
    let toks = tokens(s);
    if toks.is_empty() {
        return Ok(Expr::everything());
    }
    let mut p = Parser { toks, at: 0, scope, depth: 0 };
    let e = p.or()?;
    match p.peek() {
        None => Ok(e),
        // `or` only stops before `)` or the end.
        Some(_) => Err(FilterError::Unopened),
    }
}

/// How deep `not`s and parentheses may nest: the parser and the evaluator recurse once per level,
/// and a pasted line of ten thousand `(` must be an error, not an overflowed stack.
pub const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    at: usize,
    scope: Scope,
    /// `not`s and parentheses open around the token at `at`.
    depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&Token<'a>> {
        self.toks.get(self.at)
    }

    fn next(&mut self) -> Option<Token<'a>> {
        let t = self.toks.get(self.at).cloned();
        self.at += usize::from(t.is_some());
        t
    }

    /// Whether the next token can start a word or group (what an operand begins with).
    fn operand_next(&self) -> bool {
        self.peek().is_some_and(|t| matches!(t.kind, Kind::Word | Kind::Open | Kind::Not))
    }

    fn or(&mut self) -> Result<Expr, FilterError> {
        let mut parts = vec![self.and()?];
        while let Some(t) = self.peek().filter(|t| t.kind == Kind::Or) {
            let op = t.text.to_string();
            self.at += 1;
            if !self.operand_next() {
                return Err(FilterError::Dangling(op));
            }
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 { parts.remove(0) } else { Expr::Or(parts) })
    }

    fn and(&mut self) -> Result<Expr, FilterError> {
        let mut parts = vec![self.unary()?];
        loop {
            match self.peek().map(|t| t.kind) {
                Some(Kind::And) => {
                    let op = self.next().map(|t| t.text.to_string()).unwrap_or_default();
                    if !self.operand_next() {
                        return Err(FilterError::Dangling(op));
                    }
                }
                // Side by side: and.
                Some(Kind::Word | Kind::Open | Kind::Not) => {}
                _ => break,
            }
            parts.push(self.unary()?);
        }
        Ok(Expr::all(parts))
    }

    fn unary(&mut self) -> Result<Expr, FilterError> {
        let Some(t) = self.next() else {
            // Callers look before they call; the start of an empty group is handled below.
            return Err(FilterError::EmptyGroup);
        };
        if matches!(t.kind, Kind::Not | Kind::Open) {
            if self.depth == MAX_DEPTH {
                return Err(FilterError::TooDeep(MAX_DEPTH));
            }
            self.depth += 1;
            let e = self.nested(t.kind);
            self.depth -= 1;
            return e;
        }
        match t.kind {
            Kind::Close => Err(FilterError::Unopened),
            Kind::And | Kind::Or | Kind::Cmp(_) => Err(FilterError::Dangling(t.text.to_string())),
            _ => self.word(t.text),
        }
    }

    /// What follows a `not` or a `(`, one level deeper.
    fn nested(&mut self, kind: Kind) -> Result<Expr, FilterError> {
        if kind == Kind::Not {
            if !self.operand_next() {
                return Err(FilterError::NotAtEnd);
            }
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        match self.peek().map(|t| t.kind) {
            Some(Kind::Close) => return Err(FilterError::EmptyGroup),
            None => return Err(FilterError::Unclosed),
            _ => {}
        }
        let e = self.or()?;
        match self.next() {
            Some(t) if t.kind == Kind::Close => Ok(e),
            _ => Err(FilterError::Unclosed),
        }
    }

    /// An optional comparison after a keyword: a symbol, or one of `ss`'s words (`eq`, `ge`).
    fn cmp(&mut self) -> Option<(Cmp, String)> {
        let t = self.peek()?;
        let c = match t.kind {
            Kind::Cmp(c) => c,
            Kind::Word => cmp_word(t.text)?,
            _ => return None,
        };
        let text = t.text.to_string();
        self.at += 1;
        Some((c, text))
    }

    /// The value after `word` (and its comparison, if any).
    fn value(&mut self, word: &str, expected: &'static str) -> Result<&'a str, FilterError> {
        match self.peek() {
            Some(t) if t.kind == Kind::Word => {
                let v = t.text;
                self.at += 1;
                Ok(v)
            }
            _ => Err(FilterError::MissingValue { word: word.to_string(), expected }),
        }
    }

    /// A word that only matches or does not: `=` (or nothing) and `!=` go with it.
    fn matching(
        &mut self,
        word: &str,
        expected: &'static str,
        make: impl FnOnce(&str) -> Result<Word, FilterError>,
    ) -> Result<Expr, FilterError> {
        let negate = match self.cmp() {
            None | Some((Cmp::Eq, _)) => false,
            Some((Cmp::Ne, _)) => true,
            Some((_, op)) => return Err(FilterError::Operator { word: word.to_string(), op }),
        };
        let w = Expr::Word(make(self.value(word, expected)?)?);
        Ok(if negate { Expr::Not(Box::new(w)) } else { w })
    }

    fn word(&mut self, text: &'a str) -> Result<Expr, FilterError> {
        let end = |t: &str| match t {
            "src" | "sport" => End::Local,
            "dst" | "peer" | "dport" => End::Peer,
            _ => End::Either,
        };
        let lower = text.to_ascii_lowercase();
        match lower.as_str() {
            "cc" => self.matching(text, error::CC, |v| Ok(Word::Cc(v.to_string()))),
            "src" | "dst" | "peer" => {
                self.matching(text, error::ADDRESS, |v| Ok(Word::Addr(end(&lower), parse_cidr(v)?)))
            }
            "state" => self.matching(text, error::STATE, |v| Ok(Word::State(parse_state(v)?))),
            "netns" => self.matching(text, error::NETNS, |v| Ok(Word::Place(Place::Netns(v.into())))),
            "pod" => self.matching(text, error::POD, |v| Ok(Word::Place(Place::Pod(v.into())))),
            "cgroup" => self.matching(text, error::CGROUP, |v| Ok(Word::Place(Place::Cgroup(v.into())))),
            "port" | "sport" | "dport" => {
                let cmp = self.cmp().map_or(Cmp::Eq, |(c, _)| c);
                let p = parse_port(self.value(text, error::PORT)?)?;
                // `port != 22` is neither end 22, not "an end other than 22".
                Ok(match cmp {
                    Cmp::Ne => Expr::Not(Box::new(Expr::Word(Word::Port(end(&lower), Cmp::Eq, p)))),
                    _ => Expr::Word(Word::Port(end(&lower), cmp, p)),
                })
            }
            "lo" => Ok(Expr::Word(Word::Loopback)),
            "sending" => self.per_poll(text).map(|()| Expr::Word(Word::Sending)),
            "process" => {
                self.shown_only(text)?;
                self.matching(text, error::PROCESS, |v| Ok(Word::Process(Process::parse(v))))
            }
            key => match columns::by_key(key) {
                Some(c) if matches!(c.unit, Unit::Text | Unit::Addr) => {
                    Err(FilterError::NotANumber(text.into()))
                }
                Some(c) => {
                    let Some((cmp, op)) = self.cmp() else {
                        return Err(FilterError::NoComparison(text.into()));
                    };
                    let v = self.value(&format!("{text} {op}"), "VALUE")?;
                    let n = parse_value(c, v)?;
                    self.per_poll(&format!("{text} {op} {v}"))?;
                    Ok(Expr::Word(Word::Value(c, cmp, n)))
                }
                None => bare(text),
            },
        }
    }

    /// Refuses a word only the TUI can tell where sockets are tracked.
    fn shown_only(&self, said: &str) -> Result<(), FilterError> {
        match self.scope {
            Scope::Shown => Ok(()),
            Scope::Tracked => Err(FilterError::TuiOnly(said.to_string())),
        }
    }

    /// Refuses a word whose truth changes from poll to poll where sockets are tracked.
    fn per_poll(&self, said: &str) -> Result<(), FilterError> {
        match self.scope {
            Scope::Shown => Ok(()),
            Scope::Tracked => Err(FilterError::PerPoll(said.to_string())),
        }
    }
}

/// A word with no keyword before it: an address or network (the peer's, as `ss` takes a bare
/// host), or an error that says what it would need.
fn bare(text: &str) -> Result<Expr, FilterError> {
    if text.contains(['.', ':', '/']) {
        return Ok(Expr::Word(Word::Addr(End::Peer, parse_cidr(text)?)));
    }
    let hint = if text.bytes().all(|b| b.is_ascii_digit()) {
        format!("a port is \"port {text}\" (either end), \"sport {text}\" or \"dport {text}\"")
    } else if text.parse::<TcpState>().is_ok() {
        format!("a state is \"state {text}\"")
    } else {
        return Err(FilterError::Unknown(text.to_string()));
    };
    Err(FilterError::Alone { word: text.to_string(), hint })
}
