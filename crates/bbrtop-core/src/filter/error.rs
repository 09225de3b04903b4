//! Why a filter does not parse: one line each, naming the word and what was expected, since the
//! TUI shows it in its footer and `--filter` as a usage error.

/// What a value-taking word expects after it, for [`FilterError::MissingValue`].
pub const CC: &str = "NAME";
pub const PORT: &str = "N (443, or :443 as ss writes it)";
pub const ADDRESS: &str = "ADDR[/LEN]";
pub const STATE: &str = "STATE (established, syn-sent, listen, ...)";
pub const NETNS: &str = "NAME|INODE";
pub const POD: &str = "NAMESPACE/NAME|UID (a part will do)";
pub const CGROUP: &str = "PART (of the cgroup's path)";
pub const PROCESS: &str = "PID|NAME (a part of the command will do)";

#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum FilterError {
    #[error(
        "unknown word {0:?} (expected cc NAME, port N, sport/dport N, src/dst ADDR, state S, netns, pod, cgroup, process, lo, sending, an address, or a value such as srtt > 100ms)"
    )]
    Unknown(String),
    /// A word that means something only after a keyword: a state, a port number.
    #[error("{word:?} alone means nothing: {hint}")]
    Alone { word: String, hint: String },
    #[error("{word:?} needs a value: {word} {expected}")]
    MissingValue { word: String, expected: &'static str },
    #[error("invalid CIDR or address {0:?}")]
    Cidr(String),
    #[error("invalid port {0:?} (expected 1-65535)")]
    Port(String),
    #[error("{0}")]
    State(String),
    /// A value's key with no comparison after it.
    #[error("{0:?} needs a comparison: {0} > VALUE, e.g. srtt > 100ms (operators: < <= > >= = !=)")]
    NoComparison(String),
    /// A catalog key whose values are words or addresses.
    #[error(
        "{0:?} is not a number to compare (numbers: srtt, min_rtt, base_rtt, inflation, retx, cwnd, delivery, pacing, bbr_bw, ...)"
    )]
    NotANumber(String),
    /// A number in the wrong unit, with no unit, or no number at all.
    #[error("{key} {value:?}: expected {expected}")]
    Value { key: String, value: String, expected: &'static str },
    /// An order (`<`, `>`) after a word that only matches or does not (`cc`, `src`, `state`).
    #[error("{op:?} does not go with {word:?} (only = and !=)")]
    Operator { word: String, op: String },
    /// An operator with no word on one side.
    #[error("{0:?} needs a word on each side")]
    Dangling(String),
    #[error("\"not\" needs a word after it")]
    NotAtEnd,
    #[error("unbalanced \"(\": no \")\" closes it")]
    Unclosed,
    #[error("unbalanced \")\": no \"(\" opens it")]
    Unopened,
    #[error("\"()\" holds nothing")]
    EmptyGroup,
    #[error("more than {0} nots and parentheses nested")]
    TooDeep(usize),
    /// In `--filter`, a word whose truth changes from poll to poll.
    #[error(
        "{0:?} changes from poll to poll, and --filter decides which sockets are tracked at all (one that left would lose its history and counters): use it in the TUI's / filter"
    )]
    PerPoll(String),
    /// In `--filter`, a word only the TUI knows the truth of.
    #[error(
        "{0:?} is known only to the TUI, which reads /proc for the process holding each socket it shows: use it in the TUI's / filter"
    )]
    TuiOnly(String),
}
