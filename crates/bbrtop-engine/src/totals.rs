//! Counters per congestion control and peer group that never fall, as Prometheus counters must.
//!
//! tcp_info's counts die with their socket, so a sum over live sockets drops whenever one closes.
//! Instead each socket has an [`Account`]: what was already counted of it. Every record the engine
//! takes adds the socket's growth since its last record; the eBPF close record adds what it sent
//! between its last poll and its close, and counts in full a socket that lived and died between
//! two polls. The one loss: without eBPF, a socket that opens and closes between two polls is never
//! seen.

use crate::labels::PeerLabels;
use bbrtop_core::model::{ClosedFlow, Cookie, Count, Tally};
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::seam::Arms;
use bbrtop_core::snapshot::{CcTotals, GroupKey};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where one socket's counts go, and how much of it was counted already. What was counted is
/// almost always the tally of the record the socket's entry holds: then it is left out (`None`,
/// see [`Account::held`]), and an idle socket's account costs a bucket number.
#[derive(Clone, Debug, Default)]
pub struct Account {
    bucket: u32,
    /// Its peer's (AS, country) pair (`labels.rs`), which said what its bucket shows.
    pair: u32,
    seen: Option<Box<Tally>>,
}

impl Account {
    /// The socket's entry now holds a record whose tally is `held`: what was counted need not
    /// be kept if it is that.
    pub fn held(&mut self, held: &Tally) {
        if self.seen.as_deref() == Some(held) {
            self.seen = None;
        }
    }

    /// Keeps what was counted, `held` standing for it where it was left out.
    pub fn keep(&mut self, held: Option<&Tally>) {
        if self.seen.is_none() {
            self.seen = held.map(|t| Box::new(*t));
        }
    }
}

/// Sockets that left the engine without a close record (their state left the filter, or netlink
/// stopped listing them) are remembered this long, at most, so a close record that comes later
/// adds only what they sent since.
const RETIRED_KEEP: usize = 16_384;

/// How far back the recent figures (retransmit ratio, goodput share) look.
pub const RECENT: Duration = Duration::from_secs(60);

/// Per-cc growth over some seconds.
pub type Growth = (f64, BTreeMap<String, Tally>);

pub struct Totals {
    groups: Arc<PeerGroups>,
    labels: PeerLabels,
    /// Each with its peer group's index, the AS and country labels it shows and its arm.
    buckets: Vec<(CcTotals, usize, u32, Option<u8>)>,
    /// A running experiment's arms: its sockets count apart, per arm.
    arms: Option<Arms>,
    retired: FxHashMap<Cookie, Account>,
    retired_order: VecDeque<Cookie>,
    /// Per-cc sums at each tick of the last [`RECENT`], oldest first.
    past: VecDeque<(Instant, BTreeMap<String, Tally>)>,
}

impl Totals {
    pub fn new(groups: Arc<PeerGroups>, labels: PeerLabels, arms: Option<Arms>) -> Totals {
        Totals {
            groups,
            labels,
            buckets: Vec::new(),
            arms,
            retired: FxHashMap::default(),
            retired_order: VecDeque::new(),
            past: VecDeque::new(),
        }
    }

    /// A socket's account as the engine starts tracking it: the one it had if the engine tracked
    /// it before (a dump that failed midway, a state that left the filter and came back), else
    /// nothing counted yet, so that its first record counts its life so far.
    pub fn open(&mut self, cookie: Cookie, cc: &str, peer: IpAddr) -> Account {
        match self.retired.remove(&cookie) {
            Some(a) => a,
            None => {
                let pair = self.labels.pair(peer);
                let arm = self.arm_of(cookie);
                Account { bucket: self.bucket(cc, peer, pair, arm), pair, seen: Some(Box::default()) }
            }
        }
    }

    /// The experiment arm of a socket: a lookup in the experiment's map, made only while one runs.
    fn arm_of(&self, cookie: Cookie) -> Option<u8> {
        self.arms.as_ref().and_then(|a| a.0.arm_of(cookie))
    }

    fn bucket(&mut self, cc: &str, peer: IpAddr, pair: u32, arm: Option<u8>) -> u32 {
        let group = self.groups.index(peer);
        let shown = self.labels.shown(pair);
        // A few ccs times a few groups, labels and arms: a scan, only when a socket is first seen
        // or its bucket changed.
        let found = self
            .buckets
            .iter()
            .position(|(b, g, l, a)| *g == group && *l == shown && *a == arm && b.cc == cc);
        found.unwrap_or_else(|| {
            let (asn, country) = self.labels.labels(shown);
            let names = self.arms.as_ref().map(|a| a.0.names());
            let t = CcTotals::of(GroupKey {
                cc,
                peer_group: self.groups.name(group),
                asn: asn.as_deref(),
                country: country.as_deref(),
                arm: arm.and_then(|i| names?.get(usize::from(i))).map(String::as_str),
            });
            self.buckets.push((t, group, shown, arm));
            self.buckets.len() - 1
        }) as u32
    }

    /// Adds what the socket counted since `acct` last saw it (`held`: the tally of the record
    /// its entry holds, which stands for what was counted where that was left out). A socket that
    /// changed its cc (TCP_CONGESTION on an open socket) counts towards the new one from now on.
    /// A socket whose peer's label came to be shown counts towards it from now on.
    pub fn count(&mut self, acct: &mut Account, cc: &str, peer: IpAddr, now: &Tally, held: Option<&Tally>) {
        let (b, _, shown, arm) = &self.buckets[acct.bucket as usize];
        if b.cc != cc || *shown != self.labels.shown(acct.pair) {
            acct.bucket = self.bucket(cc, peer, acct.pair, *arm);
        }
        acct.keep(held);
        let seen = acct.seen.get_or_insert_with(Box::default);
        let d = seen.advance(now);
        self.labels.sent(acct.pair, d[Count::BytesSent]);
        self.buckets[acct.bucket as usize].0.counts.add(&d);
    }

    /// A socket the engine stopped tracking with no close record yet (`held` as for `count`).
    pub fn retire(&mut self, cookie: Cookie, mut acct: Account, held: Option<&Tally>) {
        acct.keep(held);
        if self.retired.insert(cookie, acct).is_none() {
            self.retired_order.push_back(cookie);
        }
        while self.retired_order.len() > RETIRED_KEEP {
            if let Some(old) = self.retired_order.pop_front() {
                self.retired.remove(&old);
            }
        }
    }

    /// One response socket `cookie` of `cc` delivered to `peer`: `bytes` in `secs`. `tracked` is
    /// the socket's account when the engine counts it: its arm is known from its bucket, so the
    /// experiment's map is asked only for a socket not counted yet.
    pub fn response(
        &mut self,
        tracked: Option<&Account>,
        cookie: Cookie,
        cc: &str,
        peer: IpAddr,
        bytes: u64,
        secs: f64,
    ) {
        let pair = self.labels.pair(peer);
        let arm = match tracked {
            Some(a) => self.buckets[a.bucket as usize].3,
            None => self.arm_of(cookie),
        };
        let b = self.bucket(cc, peer, pair, arm) as usize;
        self.buckets[b].0.responses.observe(bytes, secs);
    }

    /// The close record of a socket the engine does not track: one it retired, or one that lived
    /// and died between two polls, which counts in full.
    pub fn closed_untracked(&mut self, c: &ClosedFlow) {
        let mut acct = self.open(c.cookie, &c.cc, c.peer.ip());
        self.count(&mut acct, &c.cc, c.peer.ip(), &c.counts, None);
    }

    pub fn snapshot(&self) -> Vec<CcTotals> {
        let mut v: Vec<CcTotals> = self.buckets.iter().map(|(b, ..)| b.clone()).collect();
        v.sort_by(|a, b| a.key().cmp(&b.key()));
        v
    }

    /// The sums per cc now, and their growth over the last [`RECENT`] (less until that much has
    /// passed) with the seconds it spans; no growth at the first tick.
    pub fn tick(&mut self, now: Instant) -> (BTreeMap<String, Tally>, Option<Growth>) {
        self.labels.rank(now);
        let mut sums: BTreeMap<String, Tally> = BTreeMap::new();
        for (b, ..) in &self.buckets {
            sums.entry(b.cc.clone()).or_default().add(&b.counts);
        }
        while self.past.len() > 1 && self.past.get(1).is_some_and(|(t, _)| now.duration_since(*t) >= RECENT) {
            self.past.pop_front();
        }
        let recent = self.past.front().map(|(t, old)| {
            let growth =
                sums.iter().map(|(cc, s)| (cc.clone(), old.get(cc).map_or(*s, |o| s.since(o)))).collect();
            (now.saturating_duration_since(*t).as_secs_f64(), growth)
        });
        self.past.push_back((now, sums.clone()));
        (sums, recent.filter(|(secs, _)| *secs > 0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(bytes: u64, retrans: u64) -> Tally {
        Tally::from_counts([(Count::BytesSent, bytes), (Count::BytesRetrans, retrans)])
    }

    fn groups() -> Arc<PeerGroups> {
        Arc::new(PeerGroups::parse("groups: {lab: [10.0.0.0/8]}").unwrap())
    }

    #[test]
    fn per_cc_and_group_and_never_twice() {
        let mut t = Totals::new(groups(), PeerLabels::new(Arc::default(), 20), None);
        let (lab, far): (IpAddr, IpAddr) = ("10.1.1.1".parse().unwrap(), "192.0.2.1".parse().unwrap());
        let mut a = t.open(1, "bbr", lab);
        let mut b = t.open(2, "bbr", far);
        t.count(&mut a, "bbr", lab, &sent(1000, 10), None);
        t.count(&mut a, "bbr", lab, &sent(1500, 10), None);
        t.count(&mut b, "bbr", far, &sent(300, 0), None);
        // b switches to cubic: its later growth is cubic's.
        t.count(&mut b, "cubic", far, &sent(400, 0), None);
        // What was counted left out where the entry's record stands for it.
        b.held(&sent(400, 0));
        assert!(b.seen.is_none());
        t.count(&mut b, "cubic", far, &sent(450, 0), Some(&sent(400, 0)));
        let s = t.snapshot();
        let get = |cc: &str, g: &str| s.iter().find(|x| x.cc == cc && x.peer_group == g).unwrap().counts;
        assert_eq!(get("bbr", "lab"), sent(1500, 10));
        assert_eq!(get("bbr", "other"), sent(300, 0));
        assert_eq!(get("cubic", "other"), sent(150, 0));
    }

    /// A peer's AS comes to be shown once its bytes rank it: its socket's later growth counts
    /// there, and `other` keeps what it had (no counter falls).
    #[test]
    fn labels_come_in_without_any_counter_falling() {
        let geo = Arc::new(bbrtop_core::geo::GeoCell::new(bbrtop_core::testing::maxmind_test_geo()));
        let mut t = Totals::new(groups(), PeerLabels::new(geo, 20), None);
        let google: IpAddr = "1.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        let mut a = t.open(1, "bbr", google);
        t.count(&mut a, "bbr", google, &sent(1000, 0), None);
        let at = |t: &Totals, asn: &str| {
            t.snapshot()
                .iter()
                .filter(|x| x.asn.as_deref() == Some(asn))
                .map(|x| x.counts[Count::BytesSent])
                .sum::<u64>()
        };
        assert_eq!((at(&t, "other"), at(&t, "AS15169")), (1000, 0), "not ranked yet");
        t.tick(t0);
        t.count(&mut a, "bbr", google, &sent(1500, 0), None);
        assert_eq!((at(&t, "other"), at(&t, "AS15169")), (1000, 500));
        let s = t.snapshot();
        assert!(
            s.iter().all(|x| x.country.as_deref().is_some_and(|c| c == "unknown" || c == "other")),
            "{s:?}"
        );
        // Responses take the labels shown at their time.
        t.response(None, 1, "bbr", google, 10_000, 0.03);
        let shown = t.snapshot().into_iter().find(|x| x.asn.as_deref() == Some("AS15169")).unwrap();
        assert_eq!(shown.responses.count(), 1);
    }

    /// Cookies below 100 in arm 0, from 100 in arm 1, none from 200; it counts what it was asked.
    struct ByCookie(Vec<String>, std::sync::atomic::AtomicUsize);

    impl bbrtop_core::seam::ArmOf for ByCookie {
        fn arm_of(&self, cookie: Cookie) -> Option<u8> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            (cookie < 200).then_some(u8::from(cookie >= 100))
        }
        fn names(&self) -> &[String] {
            &self.0
        }
    }

    /// An experiment's sockets count per arm, apart from the same cc's sockets outside it, and
    /// keep their arm when their cc changes (the sock_ops program sets it after the socket opened).
    #[test]
    fn experiment_sockets_count_per_arm() {
        let map = Arc::new(ByCookie(vec!["cubic".into(), "bbr".into()], Default::default()));
        let mut t = Totals::new(groups(), PeerLabels::new(Arc::default(), 20), Some(Arms(map.clone())));
        let peer: IpAddr = "10.1.1.1".parse().unwrap();
        let mut control = t.open(1, "cubic", peer);
        let mut test = t.open(100, "cubic", peer);
        let mut outside = t.open(300, "bbr", peer);
        t.count(&mut control, "cubic", peer, &sent(1000, 1), None);
        t.count(&mut test, "bbr", peer, &sent(2000, 2), None);
        t.count(&mut outside, "bbr", peer, &sent(4000, 4), None);
        t.response(Some(&test), 100, "bbr", peer, 10_000, 0.02);
        t.response(None, 300, "bbr", peer, 10_000, 0.5);
        // Asked once per socket opened and once for the response of a socket not counted: a
        // counted socket's response takes its bucket's arm.
        assert_eq!(map.1.load(std::sync::atomic::Ordering::Relaxed), 4);
        let s = t.snapshot();
        let get =
            |arm: Option<&str>, cc: &str| s.iter().find(|x| x.arm.as_deref() == arm && x.cc == cc).unwrap();
        assert_eq!(get(Some("cubic"), "cubic").counts, sent(1000, 1));
        assert_eq!(get(Some("bbr"), "bbr").counts, sent(2000, 2));
        assert_eq!(get(Some("bbr"), "bbr").responses.count(), 1);
        assert_eq!(get(None, "bbr").counts, sent(4000, 4));
        assert_eq!(get(None, "bbr").responses.all().quantile(0.5).map(|q| q > 0.4), Some(true));
    }

    #[test]
    fn close_records_add_the_rest_or_the_whole_life() {
        let mut t = Totals::new(groups(), PeerLabels::new(Arc::default(), 20), None);
        let peer: IpAddr = "10.1.1.1".parse().unwrap();
        let mut a = t.open(7, "cubic", peer);
        t.count(&mut a, "cubic", peer, &sent(1000, 0), None);
        a.held(&sent(1000, 0));
        t.retire(7, a, Some(&sent(1000, 0)));
        let mut c = ClosedFlow::example("cubic", 1000, None);
        c.peer = "10.1.1.1:80".parse().unwrap();
        (c.cookie, c.counts) = (7, sent(1200, 5));
        t.closed_untracked(&c);
        // One never seen counts in full.
        (c.cookie, c.counts) = (8, sent(50, 0));
        t.closed_untracked(&c);
        assert_eq!(t.snapshot()[0].counts, sent(1250, 5));
    }

    #[test]
    fn recent_growth_spans_the_window() {
        let mut t = Totals::new(groups(), PeerLabels::new(Arc::default(), 20), None);
        let peer: IpAddr = "10.1.1.1".parse().unwrap();
        let mut a = t.open(1, "bbr", peer);
        let t0 = Instant::now();
        assert!(t.tick(t0).1.is_none(), "one tick: no growth yet");
        for s in 1..=90u64 {
            t.count(&mut a, "bbr", peer, &sent(s * 100, s), None);
            let (sums, recent) = t.tick(t0 + Duration::from_secs(s));
            assert_eq!(sums["bbr"], sent(s * 100, s));
            let (secs, growth) = recent.unwrap();
            let span = s.min(RECENT.as_secs());
            assert_eq!((secs, growth["bbr"]), (span as f64, sent(span * 100, span)), "tick {s}");
        }
    }
}
