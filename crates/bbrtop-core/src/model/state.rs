//! TCP socket states, named as `ss` names them.

use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A TCP state as the kernel numbers it (`include/net/tcp_states.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TcpState {
    Established = 1,
    SynSent = 2,
    SynRecv = 3,
    FinWait1 = 4,
    FinWait2 = 5,
    TimeWait = 6,
    Close = 7,
    CloseWait = 8,
    LastAck = 9,
    Listen = 10,
    Closing = 11,
    NewSynRecv = 12,
}

impl TcpState {
    pub const ALL: [TcpState; 12] = [
        TcpState::Established,
        TcpState::SynSent,
        TcpState::SynRecv,
        TcpState::FinWait1,
        TcpState::FinWait2,
        TcpState::TimeWait,
        TcpState::Close,
        TcpState::CloseWait,
        TcpState::LastAck,
        TcpState::Listen,
        TcpState::Closing,
        TcpState::NewSynRecv,
    ];

    pub fn from_kernel(v: u8) -> Option<TcpState> {
        TcpState::ALL.into_iter().find(|s| *s as u8 == v)
    }

    /// The name `ss` prints for this state.
    pub fn name(self) -> &'static str {
        match self {
            TcpState::Established => "ESTAB",
            TcpState::SynSent => "SYN-SENT",
            TcpState::SynRecv => "SYN-RECV",
            TcpState::FinWait1 => "FIN-WAIT-1",
            TcpState::FinWait2 => "FIN-WAIT-2",
            TcpState::TimeWait => "TIME-WAIT",
            TcpState::Close => "UNCONN",
            TcpState::CloseWait => "CLOSE-WAIT",
            TcpState::LastAck => "LAST-ACK",
            TcpState::Listen => "LISTEN",
            TcpState::Closing => "CLOSING",
            TcpState::NewSynRecv => "NEW-SYN-RECV",
        }
    }

    /// The word node_exporter's tcpstat collector gives this state in its `state` label
    /// (`established`, `fin_wait1`), which the exporter's labels use too, so that queries join
    /// and read alike. node_exporter has no word for NEW-SYN-RECV (a request socket, which
    /// /proc/net/tcp lists as SYN-RECV); it is `new_syn_recv` here.
    pub fn label(self) -> &'static str {
        match self {
            TcpState::Established => "established",
            TcpState::SynSent => "syn_sent",
            TcpState::SynRecv => "syn_recv",
            TcpState::FinWait1 => "fin_wait1",
            TcpState::FinWait2 => "fin_wait2",
            TcpState::TimeWait => "time_wait",
            TcpState::Close => "close",
            TcpState::CloseWait => "close_wait",
            TcpState::LastAck => "last_ack",
            TcpState::Listen => "listen",
            TcpState::Closing => "closing",
            TcpState::NewSynRecv => "new_syn_recv",
        }
    }

    /// The bit for this state in an inet_diag `idiag_states` mask.
    pub fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// A set of states, as the kernel's `idiag_states` bitmask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateSet(pub u32);

impl StateSet {
    /// Every state except LISTEN and TIME-WAIT: the sockets that carry data.
    pub fn default_filter() -> StateSet {
        let all = TcpState::ALL.iter().fold(0, |m, s| m | s.bit());
        StateSet(all & !TcpState::Listen.bit() & !TcpState::TimeWait.bit())
    }

    pub fn all() -> StateSet {
        StateSet(TcpState::ALL.iter().fold(0, |m, s| m | s.bit()))
    }

    pub fn contains(self, s: TcpState) -> bool {
        self.0 & s.bit() != 0
    }

    pub fn from_states(states: &[TcpState]) -> StateSet {
        StateSet(states.iter().fold(0, |m, s| m | s.bit()))
    }
}

impl fmt::Display for TcpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for TcpState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
#[error(
    "unknown TCP state {0:?} (try established, syn-sent, syn-recv, fin-wait-1, fin-wait-2, time-wait, close-wait, last-ack, listen, closing)"
)]
pub struct UnknownState(pub String);

impl FromStr for TcpState {
    type Err = UnknownState;

    /// Accepts `ss` names (`ESTAB`, `SYN-SENT`), `ss` filter words (`established`, `syn_sent`)
    /// and the metrics' label values, node_exporter's (`fin_wait1`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.to_ascii_lowercase().replace('_', "-");
        let st = match norm.as_str() {
            "estab" | "established" => TcpState::Established,
            "syn-sent" => TcpState::SynSent,
            "syn-recv" => TcpState::SynRecv,
            "fin-wait-1" | "fin-wait1" => TcpState::FinWait1,
            "fin-wait-2" | "fin-wait2" => TcpState::FinWait2,
            "time-wait" => TcpState::TimeWait,
            "close" | "closed" | "unconn" => TcpState::Close,
            "close-wait" => TcpState::CloseWait,
            "last-ack" => TcpState::LastAck,
            "listen" | "listening" => TcpState::Listen,
            "closing" => TcpState::Closing,
            "new-syn-recv" => TcpState::NewSynRecv,
            _ => return Err(UnknownState(s.to_string())),
        };
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in TcpState::ALL {
            assert_eq!(s.name().parse::<TcpState>().unwrap(), s);
            // `--state` takes what the metrics' `state` label says.
            assert_eq!(s.label().parse::<TcpState>().unwrap(), s, "{}", s.label());
            assert_eq!(TcpState::from_kernel(s as u8), Some(s));
        }
        // node_exporter's tcpstat words, which its users' queries already spell.
        assert_eq!(TcpState::Established.label(), "established");
        assert_eq!(TcpState::CloseWait.label(), "close_wait");
        assert_eq!(TcpState::FinWait1.label(), "fin_wait1");
        assert_eq!(TcpState::from_kernel(0), None);
        assert_eq!(TcpState::from_kernel(13), None);
        assert!("bogus".parse::<TcpState>().is_err());
    }

    #[test]
    fn default_filter_excludes_listen_and_timewait() {
        let f = StateSet::default_filter();
        assert!(f.contains(TcpState::Established));
        assert!(f.contains(TcpState::CloseWait));
        assert!(!f.contains(TcpState::Listen));
        assert!(!f.contains(TcpState::TimeWait));
    }
}
