//! `bbrtop experiment`: a congestion control per new connection of one cgroup, drawn by a seeded
//! hash of its unit (experiment.bpf.c, beside it). This file is pure: the arms and their parsing, the
//! unit, and the hash, the same function as the BPF program's, so an assignment can be predicted.
//! `attach.rs` holds the I/O: the checks made before anything is attached, and the link;
//! `watch.rs` the loop that watches a running experiment; `summary.rs` what it prints at the end.

pub mod attach;
pub mod guard;
pub mod overlap;
pub mod status;
pub mod summary;
pub mod verdict;
pub mod watch;

use std::fmt;
use std::net::IpAddr;

/// At most this many arms (the BPF program's MAX_ARMS).
pub const MAX_ARMS: usize = 4;
/// At most this many --port values (the BPF program's MAX_PORTS).
pub const MAX_PORTS: usize = 8;
/// A cc name's room, its NUL included (TCP_CA_NAME_MAX).
pub const CC_LEN: usize = 16;
/// Shares are in parts of this.
pub const PARTS: u32 = 10_000;

/// One arm: a congestion control and its share in parts per 10,000.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arm {
    pub cc: String,
    pub parts: u32,
}

impl std::str::FromStr for Arm {
    type Err = String;

    /// `CC=PERCENT`: `bbr=10%`, `cubic=90`, `bbr=12.5%` (to 0.01%).
    fn from_str(s: &str) -> Result<Arm, String> {
        let (cc, pct) = s.split_once('=').ok_or_else(|| format!("arm {s:?}: expected CC=PERCENT"))?;
        let cc = cc.trim();
        if cc.is_empty() || cc.len() >= CC_LEN || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(format!("arm {s:?}: a cc name is 1 to 15 letters, digits or underscores"));
        }
        // One `%` at most: `50%%` is a typo, not 50%.
        let pct = pct.trim().strip_suffix('%').unwrap_or(pct.trim());
        let v: f64 = pct.parse().map_err(|_| format!("arm {s:?}: {pct:?} is not a percent"))?;
        let parts = v * 100.0;
        if !(0.0..=100.0).contains(&v) || (parts - parts.round()).abs() > 1e-6 {
            return Err(format!("arm {s:?}: a percent from 0 to 100, to 0.01"));
        }
        if parts.round() == 0.0 {
            return Err(format!("arm {s:?}: an arm needs a share above 0%"));
        }
        Ok(Arm { cc: cc.to_string(), parts: parts.round() as u32 })
    }
}

/// The arms as a whole: 2 to 4, distinct ccs, shares summing to 100%. The first is the control,
/// which a closed arm's units get.
pub fn check_arms(arms: &[Arm]) -> Result<(), String> {
    if !(2..=MAX_ARMS).contains(&arms.len()) {
        return Err(format!("an experiment has 2 to {MAX_ARMS} --arm, not {}", arms.len()));
    }
    for (i, a) in arms.iter().enumerate() {
        if arms[..i].iter().any(|b| b.cc == a.cc) {
            return Err(format!("--arm {} is given twice: each arm's cc must differ", a.cc));
        }
    }
    let sum: u32 = arms.iter().map(|a| a.parts).sum();
    if sum != PARTS {
        return Err(format!("the arms' percents sum to {}%, not 100%", f64::from(sum) / 100.0));
    }
    Ok(())
}

/// Cumulative upper bounds per arm, as the BPF program reads them.
pub fn cumulative(arms: &[Arm]) -> Vec<u32> {
    arms.iter()
        .scan(0, |acc, a| {
            *acc += a.parts;
            Some(*acc)
        })
        .collect()
}

/// What one draw is made for: every connection alone, or a peer, or a peer's /24 (IPv4) or /64
/// (IPv6), so that a client stays in one arm. The peer is the default: a client's connections
/// share its bottleneck, and drawn apart one arm's traffic queues the other's
/// (docs/experiment.md). The order is the BPF program's code.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Connection,
    #[default]
    Peer,
    Prefix,
}

impl Unit {
    /// The warning an experiment drawn by this unit starts with, if any.
    pub fn warning(self) -> Option<&'static str> {
        (self == Unit::Connection).then_some(
            "--unit connection: a client's connections are drawn into different arms and share its \
             bottleneck, so one arm's traffic queues the other's and the difference is charged to \
             the wrong arm; --unit peer (the default) keeps a client in one arm",
        )
    }

    /// The BPF program's code for it.
    pub fn code(self) -> u32 {
        self as u32
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Connection => "connection",
            Unit::Peer => "peer",
            Unit::Prefix => "prefix",
        })
    }
}

/// splitmix64's finalizer, as experiment.bpf.c's `mix`.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// An address as the program's two words, and whether it is IPv4 (IPv4-mapped IPv6 is).
fn words(ip: IpAddr) -> (u64, u64, bool) {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => (0, u64::from(u32::from(v4)), true),
        IpAddr::V6(v6) => {
            let n = u128::from(v6);
            ((n >> 64) as u64, n as u64, false)
        }
    }
}

/// The bucket (0..10,000) of a connection seen from the cgroup's side: `local` is the socket's
/// own address and port, `remote` its peer's.
pub fn bucket(seed: u64, unit: Unit, local: (IpAddr, u16), remote: (IpAddr, u16)) -> u32 {
    let (mut lhi, mut llo, _) = words(local.0);
    let (rhi, mut rlo, v4) = words(remote.0);
    let mut w0 = (if v4 { 4u64 } else { 6 }) << 32;
    match unit {
        Unit::Connection => w0 |= (u64::from(local.1) << 16) | u64::from(remote.1),
        Unit::Peer | Unit::Prefix => {
            (lhi, llo) = (0, 0);
            if unit == Unit::Prefix {
                rlo = if v4 { rlo & 0xffff_ff00 } else { 0 };
            }
        }
    }
    let h = [w0, lhi, llo, rhi, rlo].into_iter().fold(seed, |h, w| mix(h ^ w));
    (h % u64::from(PARTS)) as u32
}

/// The arm a bucket falls in, with `open` as the program reads it (a closed arm's units get
/// arm 0).
pub fn arm_of(bucket: u32, cum: &[u32], open: &[bool]) -> usize {
    let arm = cum.iter().position(|&c| bucket < c).unwrap_or(0);
    if open.get(arm).copied().unwrap_or(true) { arm } else { 0 }
}

/// What the program counted per arm.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmCount {
    pub cc: String,
    pub percent: f64,
    /// Connections whose cc this run's program set to this arm's (in a dry run, that it would
    /// have); one the kernel refused is not counted here.
    pub assigned: u64,
    /// Connections drawn for this arm whose bpf_setsockopt(TCP_CONGESTION) the kernel refused:
    /// they keep the cc they had, and no arm.
    pub setsockopt_failures: u64,
    /// Units drawn for this arm while it was closed, given the control instead.
    pub redirected: u64,
}

/// Test data for the experiment's modules: one arm's totals in one group, with `segs`
/// (retransmitted, sent), `acked` bytes, and a 10 kB response delivered in each of `times`.
#[cfg(test)]
pub(crate) fn arm_totals(
    key: bbrtop_core::snapshot::GroupKey,
    segs: (u64, u64),
    acked: u64,
    times: impl IntoIterator<Item = f64>,
) -> bbrtop_core::snapshot::CcTotals {
    use bbrtop_core::model::{Count, Tally};
    let mut t = bbrtop_core::snapshot::CcTotals::of(key);
    t.counts = Tally::from_counts([
        (Count::RetransSegs, segs.0),
        (Count::SegsOut, segs.1),
        (Count::BytesAcked, acked),
    ]);
    for time in times {
        t.responses.observe(10_000, time);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(s: &str) -> Result<Arm, String> {
        s.parse()
    }

    #[test]
    fn arms_parse_and_check() {
        assert_eq!(arm("bbr=10%"), Ok(Arm { cc: "bbr".into(), parts: 1000 }));
        assert_eq!(arm("cubic=90"), Ok(Arm { cc: "cubic".into(), parts: 9000 }));
        assert_eq!(arm("bbr=12.5%"), Ok(Arm { cc: "bbr".into(), parts: 1250 }));
        for (bad, says) in [
            ("bbr", "CC=PERCENT"),
            ("=10%", "cc name"),
            ("averyveryverylongcc=10%", "cc name"),
            ("bbr=x%", "not a percent"),
            ("bbr=101%", "0 to 100"),
            ("bbr=0.001%", "0.01"),
            ("bbr=0%", "above 0%"),
            ("cubic=50%%", "not a percent"),
            ("cubic=%", "not a percent"),
        ] {
            let e = arm(bad).unwrap_err();
            assert!(e.contains(says) && e.lines().count() == 1, "{bad}: {e}");
        }
        let a = |v: &[&str]| v.iter().map(|s| arm(s).unwrap()).collect::<Vec<_>>();
        assert_eq!(check_arms(&a(&["bbr=30%", "cubic=70%"])), Ok(()));
        assert!(check_arms(&a(&["bbr=100%"])).unwrap_err().contains("2 to 4"));
        assert!(check_arms(&a(&["bbr=50%", "bbr=50%"])).unwrap_err().contains("twice"));
        assert!(check_arms(&a(&["bbr=30%", "cubic=60%"])).unwrap_err().contains("sum to 90%"));
        assert!(check_arms(&a(&["a=20", "b=20", "c=20", "d=20", "e=20"])).unwrap_err().contains("not 5"));
        assert_eq!(cumulative(&a(&["bbr=30%", "cubic=70%"])), vec![3000, 10000]);
    }

    /// Known values, the same constants as the BPF program's: the test against the kernel
    /// (tests/experiment.rs) checks that the program agrees.
    #[test]
    fn the_hash_is_splitmix64() {
        // splitmix64 seeded 0 gives 0xe220a8397b1dcdaf first: mix(0 + golden gamma).
        assert_eq!(mix(0x9e37_79b9_7f4a_7c15), 0xe220_a839_7b1d_cdaf);
        assert_eq!(mix(0), 0);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let peer: IpAddr = "192.0.2.77".parse().unwrap();
        let b = bucket(42, Unit::Connection, (lo, 8080), (peer, 40000));
        assert_eq!(b, bucket(42, Unit::Connection, (lo, 8080), (peer, 40000)));
        // Peer and prefix leave the ports and the local side out; prefix the last octet too.
        let p = bucket(42, Unit::Peer, (lo, 1), (peer, 2));
        assert_eq!(p, bucket(42, Unit::Peer, ("10.0.0.1".parse().unwrap(), 3), (peer, 4)));
        let q = bucket(42, Unit::Prefix, (lo, 1), (peer, 2));
        assert_eq!(q, bucket(42, Unit::Prefix, (lo, 5), ("192.0.2.200".parse().unwrap(), 6)));
        // IPv4-mapped IPv6 is IPv4.
        let mapped: IpAddr = "::ffff:192.0.2.77".parse().unwrap();
        assert_eq!(p, bucket(42, Unit::Peer, (lo, 1), (mapped, 2)));
        // A /64 is one unit.
        let (a6, b6): (IpAddr, IpAddr) =
            ("2001:db8::1".parse().unwrap(), "2001:db8::ffff:1".parse().unwrap());
        assert_eq!(bucket(7, Unit::Prefix, (lo, 1), (a6, 2)), bucket(7, Unit::Prefix, (lo, 1), (b6, 2)));
        // Pinned values, so a change to either side's hash shows.
        assert_eq!([b, p, q], PINNED);
    }

    const PINNED: [u32; 3] = [8708, 4658, 7445];

    /// The peer is the default, per connection warns, and the codes stay experiment.bpf.c's.
    #[test]
    fn the_default_unit_keeps_a_client_in_one_arm() {
        assert_eq!(Unit::default(), Unit::Peer);
        assert_eq!([Unit::Connection, Unit::Peer, Unit::Prefix].map(Unit::code), [0, 1, 2]);
        let w = Unit::Connection.warning().unwrap();
        assert!(w.contains("bottleneck") && w.contains("--unit peer") && !w.contains('\n'), "{w}");
        assert_eq!((Unit::Peer.warning(), Unit::Prefix.warning()), (None, None));
    }

    #[test]
    fn closed_arms_give_the_control() {
        let cum = [3000, 10000];
        assert_eq!(arm_of(2999, &cum, &[true, true]), 0);
        assert_eq!(arm_of(3000, &cum, &[true, true]), 1);
        assert_eq!(arm_of(3000, &cum, &[true, false]), 0);
    }

    /// Over many synthetic connections each arm's share is binomial: within 4 standard deviations
    /// of n p.
    #[test]
    fn shares_are_binomial() {
        let cum = [1000, 3500, 10000];
        let lo: IpAddr = "10.1.0.1".parse().unwrap();
        let n = 200_000u32;
        for unit in [Unit::Connection, Unit::Peer] {
            let mut k = [0u64; 3];
            for i in 0..n {
                let peer = IpAddr::V4(std::net::Ipv4Addr::from(0x0a02_0000 + i));
                k[arm_of(
                    bucket(9, unit, (lo, 443), (peer, 30000 + (i % 30000) as u16)),
                    &cum,
                    &[true; 3],
                )] += 1;
            }
            for (i, p) in [0.10, 0.25, 0.65].into_iter().enumerate() {
                let (np, sd) = (f64::from(n) * p, (f64::from(n) * p * (1.0 - p)).sqrt());
                let z = (k[i] as f64 - np) / sd;
                assert!(z.abs() <= 4.0, "{unit} arm {i}: {} of {n}, z {z:.2}", k[i]);
            }
        }
    }
}
