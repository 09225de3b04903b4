//! Peers' AS and country as labels of bounded number for the counters: the top N of each by
//! bytes sent (`--peer-groups.top`), every other one `other`. A label once shown stays shown, so
//! labels do not flap; what a peer's sockets sent before its label was shown stays in `other`, so
//! no counter falls. Without a database a dimension has no label at all.
//!
//! The databases are looked up when a socket is first seen (and for each response), never per
//! poll: a socket keeps the entry of its (AS, country) pair, and the pair's bytes rank the labels.
//! A reload of the databases applies to the sockets seen after it.

use bbrtop_core::geo::GeoCell;
use bbrtop_core::peer_groups::UNMATCHED;
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Labels of each dimension shown by default.
pub const DEFAULT_TOP: usize = 20;
/// Distinct (AS, country) pairs kept; past this, new pairs share the first entry's fate: no
/// label of their own (a host talking to 65k networks at once shows the top ones and `other`).
const MAX_PAIRS: usize = 65_536;
/// How often the labels are ranked while either dimension has room.
const RANK_EVERY: Duration = Duration::from_secs(10);

/// An AS label and a country label, each `None` where its database is not given.
pub type Pair = (Option<String>, Option<String>);

struct Seen {
    raw: Pair,
    /// Bytes its sockets sent since bbrtop started.
    bytes: u64,
    /// The labels it shows, an index into `shown`.
    shown: u32,
}

pub struct PeerLabels {
    geo: Arc<GeoCell>,
    /// The databases' version this was last looked up with, and whether any is given.
    version: u64,
    on: bool,
    top: usize,
    /// Entry 0 is the pair of no labels.
    pairs: Vec<Seen>,
    index: FxHashMap<Pair, u32>,
    /// The labels shown, per dimension (AS, country).
    kept: [BTreeSet<String>; 2],
    shown: Vec<Pair>,
    shown_index: FxHashMap<Pair, u32>,
    ranked_at: Option<Instant>,
}

impl PeerLabels {
    pub fn new(geo: Arc<GeoCell>, top: usize) -> PeerLabels {
        let none: Pair = (None, None);
        let mut l = PeerLabels {
            version: geo.version(),
            on: geo.is_on(),
            geo,
            top,
            pairs: vec![Seen { raw: none.clone(), bytes: 0, shown: 0 }],
            index: FxHashMap::default(),
            kept: Default::default(),
            shown: vec![none.clone()],
            shown_index: FxHashMap::default(),
            ranked_at: None,
        };
        l.index.insert(none.clone(), 0);
        l.shown_index.insert(none, 0);
        l
    }

    /// The entry of `ip`'s (AS, country) pair.
    pub fn pair(&mut self, ip: IpAddr) -> u32 {
        let version = self.geo.version();
        if version != self.version {
            (self.version, self.on) = (version, self.geo.is_on());
        }
        if !self.on {
            return 0;
        }
        let raw = self.geo.get().labels(ip);
        if let Some(&i) = self.index.get(&raw) {
            return i;
        }
        if self.pairs.len() >= MAX_PAIRS {
            return 0;
        }
        let shown = self.shown_of(&raw);
        let i = self.pairs.len() as u32;
        self.pairs.push(Seen { raw: raw.clone(), bytes: 0, shown });
        self.index.insert(raw, i);
        i
    }

    /// What the pair shows now, an index for [`PeerLabels::labels`].
    pub fn shown(&self, pair: u32) -> u32 {
        self.pairs.get(pair as usize).map_or(0, |p| p.shown)
    }

    pub fn labels(&self, shown: u32) -> &Pair {
        &self.shown[shown as usize]
    }

    /// Bytes the sockets of `pair` sent.
    pub fn sent(&mut self, pair: u32, bytes: u64) {
        if let Some(p) = self.pairs.get_mut(pair as usize) {
            p.bytes += bytes;
        }
    }

    fn shown_of(&mut self, raw: &Pair) -> u32 {
        let show = |l: &Option<String>, kept: &BTreeSet<String>| {
            l.as_ref().map(|l| if kept.contains(l) { l.clone() } else { UNMATCHED.to_string() })
        };
        let pair = (show(&raw.0, &self.kept[0]), show(&raw.1, &self.kept[1]));
        if let Some(&i) = self.shown_index.get(&pair) {
            return i;
        }
        let i = self.shown.len() as u32;
        self.shown.push(pair.clone());
        self.shown_index.insert(pair, i);
        i
    }

    /// Shows the labels with the most bytes while a dimension has room for more, every
    /// [`RANK_EVERY`]; true if any label came to be shown (sockets' buckets change then).
    pub fn rank(&mut self, now: Instant) -> bool {
        let full = self.kept.iter().all(|k| k.len() >= self.top);
        if !self.on || full || self.ranked_at.is_some_and(|t| now.duration_since(t) < RANK_EVERY) {
            return false;
        }
        self.ranked_at = Some(now);
        let mut changed = false;
        for dim in 0..2 {
            let mut bytes: FxHashMap<&str, u64> = FxHashMap::default();
            for p in &self.pairs {
                let label = if dim == 0 { &p.raw.0 } else { &p.raw.1 };
                if let Some(l) = label.as_deref().filter(|l| !self.kept[dim].contains(*l)) {
                    *bytes.entry(l).or_default() += p.bytes;
                }
            }
            let mut ranked: Vec<(&str, u64)> = bytes.into_iter().filter(|(_, b)| *b > 0).collect();
            ranked.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(y.0)));
            let room = self.top.saturating_sub(self.kept[dim].len());
            let promoted: Vec<String> = ranked.into_iter().take(room).map(|(l, _)| l.to_string()).collect();
            changed |= !promoted.is_empty();
            self.kept[dim].extend(promoted);
        }
        if changed {
            for i in 0..self.pairs.len() {
                let raw = self.pairs[i].raw.clone();
                self.pairs[i].shown = self.shown_of(&raw);
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::testing::maxmind_test_geo;

    fn labels(top: usize) -> PeerLabels {
        PeerLabels::new(Arc::new(GeoCell::new(maxmind_test_geo())), top)
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_top_by_bytes_are_shown_and_stay() {
        let mut l = labels(1);
        let t0 = Instant::now();
        // AS15169 (1.0.0.1) and AS7018 (12.81.96.7); Sweden's 89.160.20.113.
        let (google, att, se) =
            (l.pair(ip("1.0.0.1")), l.pair(ip("12.81.96.7")), l.pair(ip("89.160.20.113")));
        assert_eq!(
            l.labels(l.shown(google)),
            &(Some("other".into()), Some("other".into())),
            "nothing ranked yet"
        );
        l.sent(google, 100);
        l.sent(att, 5_000);
        l.sent(se, 10);
        assert!(l.rank(t0));
        assert_eq!(l.labels(l.shown(att)).0.as_deref(), Some("AS7018"), "the most bytes");
        assert_eq!(l.labels(l.shown(google)).0.as_deref(), Some("other"));
        // AS7018 and 'unknown' (google's and att's country) are shown; more bytes elsewhere
        // later change nothing: the one slot is taken, and labels do not flap.
        l.sent(google, 1_000_000);
        assert!(!l.rank(t0 + RANK_EVERY * 2));
        assert_eq!(l.labels(l.shown(att)).0.as_deref(), Some("AS7018"));
        assert_eq!(l.labels(l.shown(google)).0.as_deref(), Some("other"));
    }

    #[test]
    fn ranking_waits_and_needs_a_database() {
        let mut l = labels(20);
        let t0 = Instant::now();
        let g = l.pair(ip("1.0.0.1"));
        l.sent(g, 1);
        assert!(l.rank(t0));
        let att = l.pair(ip("12.81.96.7"));
        l.sent(att, 1);
        assert!(!l.rank(t0 + Duration::from_secs(1)), "ranked a second ago");
        assert!(l.rank(t0 + RANK_EVERY));
        assert_eq!(l.labels(l.shown(att)).0.as_deref(), Some("AS7018"));

        let mut none = PeerLabels::new(Arc::default(), 20);
        assert_eq!(none.pair(ip("1.0.0.1")), 0);
        assert_eq!(none.labels(0), &(None, None));
        assert!(!none.rank(t0));
    }

    #[test]
    fn a_reload_applies_to_what_is_seen_after_it() {
        let cell = Arc::new(GeoCell::default());
        let mut l = PeerLabels::new(Arc::clone(&cell), 20);
        assert_eq!(l.pair(ip("1.0.0.1")), 0, "no database yet");
        cell.set(maxmind_test_geo());
        let g = l.pair(ip("1.0.0.1"));
        assert_ne!(g, 0);
        l.sent(g, 1);
        l.rank(Instant::now());
        assert_eq!(l.labels(l.shown(g)), &(Some("AS15169".into()), Some("unknown".into())));
    }
}
