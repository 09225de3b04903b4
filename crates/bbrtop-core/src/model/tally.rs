//! A socket's cumulative counters (bytes and segments sent, retransmitted, acknowledged...), as
//! tcp_info or the eBPF close record gives them, and the arithmetic that turns them into counters
//! that never fall: each poll adds only what a socket counted since it was last seen.

use super::TcpInfo;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::ops::{Index, IndexMut};

/// One cumulative count. The names are tcp_info's JSON names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Count {
    SegsOut,
    BytesSent,
    RetransSegs,
    BytesRetrans,
    BytesAcked,
    BytesReceived,
    /// Retransmission timeouts (tcpi_total_rto, Linux 6.7+).
    Rto,
    /// Retransmissions the peer reported as duplicates (DSACK): spurious ones.
    DsackDups,
    DeliveredSegs,
    DeliveredCeSegs,
}

impl Count {
    pub const ALL: [Count; 10] = [
        Count::SegsOut,
        Count::BytesSent,
        Count::RetransSegs,
        Count::BytesRetrans,
        Count::BytesAcked,
        Count::BytesReceived,
        Count::Rto,
        Count::DsackDups,
        Count::DeliveredSegs,
        Count::DeliveredCeSegs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Count::SegsOut => "segs_out",
            Count::BytesSent => "bytes_sent",
            Count::RetransSegs => "total_retrans_segs",
            Count::BytesRetrans => "bytes_retrans",
            Count::BytesAcked => "bytes_acked",
            Count::BytesReceived => "bytes_received",
            Count::Rto => "total_rto",
            Count::DsackDups => "dsack_dups",
            Count::DeliveredSegs => "delivered_segs",
            Count::DeliveredCeSegs => "delivered_ce_segs",
        }
    }

    /// Its value in tcp_info, where the kernel sent that far.
    fn of(self, i: &TcpInfo) -> Option<u64> {
        match self {
            Count::SegsOut => i.segs_out().map(u64::from),
            Count::BytesSent => i.bytes_sent(),
            Count::RetransSegs => i.total_retrans_segs().map(u64::from),
            Count::BytesRetrans => i.bytes_retrans(),
            Count::BytesAcked => i.bytes_acked(),
            Count::BytesReceived => i.bytes_received(),
            Count::Rto => i.total_rto().map(u64::from),
            Count::DsackDups => i.dsack_dups().map(u64::from),
            Count::DeliveredSegs => i.delivered_segs().map(u64::from),
            Count::DeliveredCeSegs => i.delivered_ce_segs().map(u64::from),
        }
    }
}

/// Every [`Count`] of one socket, or a sum over sockets. A count the kernel did not send is zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally([u64; Count::ALL.len()]);

impl Index<Count> for Tally {
    type Output = u64;
    fn index(&self, c: Count) -> &u64 {
        &self.0[c as usize]
    }
}

impl IndexMut<Count> for Tally {
    fn index_mut(&mut self, c: Count) -> &mut u64 {
        &mut self.0[c as usize]
    }
}

impl Tally {
    /// The given counts; the others zero.
    pub fn from_counts(counts: impl IntoIterator<Item = (Count, u64)>) -> Tally {
        let mut t = Tally::default();
        for (c, v) in counts {
            t[c] = v;
        }
        t
    }

    pub fn of(info: &TcpInfo) -> Tally {
        let mut t = Tally::default();
        for c in Count::ALL {
            t[c] = c.of(info).unwrap_or(0);
        }
        t
    }

    /// What `now` counted beyond `self`, a socket's counts when it was last seen; `self` becomes
    /// the larger of the two per count. A count that reads lower (a record taken before the one
    /// already seen) adds nothing, and is not counted twice when it catches up.
    pub fn advance(&mut self, now: &Tally) -> Tally {
        let mut d = Tally::default();
        for (i, (seen, now)) in self.0.iter_mut().zip(now.0).enumerate() {
            d.0[i] = now.saturating_sub(*seen);
            *seen = (*seen).max(now);
        }
        d
    }

    pub fn add(&mut self, d: &Tally) {
        for (a, b) in self.0.iter_mut().zip(d.0) {
            *a = a.saturating_add(b);
        }
    }

    /// The counts since `earlier` (of the same sum: counts only grow).
    pub fn since(&self, earlier: &Tally) -> Tally {
        let mut d = *self;
        for (a, b) in d.0.iter_mut().zip(earlier.0) {
            *a = a.saturating_sub(b);
        }
        d
    }

    /// Bytes retransmitted over bytes sent (retransmissions included, as tcp_info counts them, and
    /// as [`TcpInfo::retrans_ratio`] reads one socket's); `None` before anything was sent.
    pub fn retrans_ratio(&self) -> Option<f64> {
        ratio(self[Count::BytesRetrans], self[Count::BytesSent])
    }

    /// The share of retransmitted segments the peer reported as duplicates.
    pub fn spurious_share(&self) -> Option<f64> {
        ratio(self[Count::DsackDups], self[Count::RetransSegs])
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

impl<'de> serde::Deserialize<'de> for Tally {
    /// The map `Serialize` writes; keys it does not know are skipped (a newer writer's counts).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Tally, D::Error> {
        struct Counts;
        impl<'de> serde::de::Visitor<'de> for Counts {
            type Value = Tally;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of counts")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Tally, A::Error> {
                let mut t = Tally::default();
                while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    match Count::ALL.into_iter().find(|c| c.name() == k) {
                        Some(c) => t[c] = m.next_value()?,
                        None => {
                            m.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(t)
            }
        }
        d.deserialize_map(Counts)
    }
}

impl Serialize for Tally {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(Count::ALL.len()))?;
        for c in Count::ALL {
            m.serialize_entry(c.name(), &self[c])?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(sent: u64, retrans: u64) -> Tally {
        let mut t = Tally::default();
        t[Count::BytesSent] = sent;
        t[Count::BytesRetrans] = retrans;
        t
    }

    #[test]
    fn advance_adds_only_growth_and_never_twice() {
        let mut seen = Tally::default();
        assert_eq!(seen.advance(&tally(1000, 10)), tally(1000, 10));
        // An older record (the walk's, one ACK behind netlink's) adds nothing...
        assert_eq!(seen.advance(&tally(900, 10)), Tally::default());
        assert_eq!(seen, tally(1000, 10));
        // ...and the growth past what was seen is counted once.
        assert_eq!(seen.advance(&tally(1500, 12)), tally(500, 2));
    }

    #[test]
    fn ratios() {
        assert_eq!(tally(1000, 10).retrans_ratio(), Some(0.01));
        assert_eq!(tally(0, 0).retrans_ratio(), None);
        let mut t = Tally::default();
        (t[Count::RetransSegs], t[Count::DsackDups]) = (10, 4);
        assert_eq!(t.spurious_share(), Some(0.4));
        assert_eq!(tally(1500, 12).since(&tally(1000, 10)), tally(500, 2));
    }

    #[test]
    fn from_tcp_info_by_name() {
        let mut i = TcpInfo::default();
        i.set_bytes_sent(7);
        i.set_total_rto(3);
        let t = Tally::of(&i);
        assert_eq!((t[Count::BytesSent], t[Count::Rto], t[Count::BytesAcked]), (7, 3, 0));
        let j = serde_json::to_value(t).unwrap();
        assert_eq!((j["bytes_sent"].as_u64(), j["total_rto"].as_u64()), (Some(7), Some(3)));
    }
}
