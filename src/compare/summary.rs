//! Each socket summarised over the polls it was seen in: the unit `compare` counts is the
//! socket, not the poll, so a long-lived socket weighs as much as a short one and consecutive
//! polls of one socket (which are far from independent) are not counted as evidence many times.

use bbrtop_core::geo::Geo;
use bbrtop_core::model::{Cookie, Count, Tally};
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::stats::percentiles;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// One socket over its recorded life.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SocketSummary {
    pub cookie: Cookie,
    pub cc: String,
    pub peer_group: String,
    /// The host whose recording saw it (its recording's `host`, else the recording's name).
    pub host: String,
    /// Its peer's AS (`AS15169`, or `unknown`), with an AS database given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asn: Option<String>,
    /// Its peer's country (ISO 3166-1 alpha-2, or `unknown`), with a country database given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    pub polls: usize,
    /// Bytes it sent over its recorded life (what ranks the AS and country rows).
    #[serde(skip)]
    pub bytes_sent: u64,
    /// Seconds from the first poll that saw it to the last.
    pub seconds: f64,
    /// Bytes sent (retransmissions included) per second over its life, ×8; none for a socket
    /// seen in one poll.
    pub throughput_bits_per_sec: Option<f64>,
    /// Bytes acked per second over its life, ×8.
    pub goodput_bits_per_sec: Option<f64>,
    /// Its own srtt percentiles over its polls (up to [`MAX_SAMPLES`] of them), in ms.
    pub srtt_p50_ms: Option<f64>,
    pub srtt_p95_ms: Option<f64>,
    pub srtt_p99_ms: Option<f64>,
    /// Its median srtt / baseline over its polls.
    pub inflation: Option<f64>,
    /// Bytes retransmitted over bytes sent, over its life.
    pub retrans_ratio: Option<f64>,
    /// The srtts kept (every one, up to [`MAX_SAMPLES`]), in ms, sorted (for the CDF plot); not
    /// in the JSON.
    #[serde(skip)]
    pub srtt_samples_ms: Vec<f64>,
}

/// A socket's polls whose srtt and inflation are kept: all of them up to this many, then a
/// uniform sample of them (reservoir sampling), so that a day of polls of 10k sockets takes
/// 16 bytes x 1024 per socket, not per poll. Its percentiles are over these.
pub const MAX_SAMPLES: usize = 1024;

/// One poll's srtt (µs) and inflation ratio.
type Sample = (Option<u32>, Option<f32>);

/// One socket while polls are added.
struct Acc {
    cc: String,
    peer_group: String,
    asn: Option<String>,
    country: Option<String>,
    first: (SystemTime, Tally),
    last: (SystemTime, Tally),
    polls: usize,
    samples: Vec<Sample>,
}

/// Adds snapshots (in time order) and summarises every socket they saw.
pub struct Summarizer<'a> {
    groups: &'a PeerGroups,
    geo: &'a Geo,
    sockets: BTreeMap<Cookie, Acc>,
    /// Which polls a socket with more than [`MAX_SAMPLES`] keeps: seeded, so the same
    /// recording gives the same summaries.
    rng: fastrand::Rng,
}

impl<'a> Summarizer<'a> {
    pub fn new(groups: &'a PeerGroups, geo: &'a Geo) -> Summarizer<'a> {
        Summarizer {
            groups,
            geo,
            sockets: BTreeMap::new(),
            rng: fastrand::Rng::with_seed(bbrtop_core::stats::SEED),
        }
    }

    pub fn add(&mut self, snap: &Snapshot) {
        let at = snap.taken_at;
        for s in snap.sockets.iter() {
            let r = &s.record;
            let counts = Tally::of(&r.tcp_info);
            let (groups, geo) = (self.groups, self.geo);
            let acc = self.sockets.entry(r.cookie).or_insert_with(|| {
                // Looked up once, when the socket is first seen.
                let (asn, country) = geo.labels(r.peer.ip());
                Acc {
                    cc: r.cc_name().to_string(),
                    peer_group: groups.group(r.peer.ip()).to_string(),
                    asn,
                    country,
                    first: (at, counts),
                    last: (at, counts),
                    polls: 0,
                    samples: Vec::new(),
                }
            });
            let sample = (r.tcp_info.srtt_us(), s.derived.inflation_ratio.map(|v| v as f32));
            if acc.samples.len() < MAX_SAMPLES {
                acc.samples.push(sample);
            } else if let Some(slot) = acc.samples.get_mut(self.rng.usize(..=acc.polls)) {
                *slot = sample;
            }
            acc.polls += 1;
            acc.last = (at, counts);
        }
    }

    /// Every socket seen, by cookie.
    pub fn finish(self) -> Vec<SocketSummary> {
        self.sockets.into_iter().map(|(cookie, acc)| summarise(cookie, acc)).collect()
    }
}

fn summarise(cookie: Cookie, acc: Acc) -> SocketSummary {
    let seconds = acc.last.0.duration_since(acc.first.0).unwrap_or_default().as_secs_f64();
    let grown = acc.last.1.since(&acc.first.1);
    let per_sec = |c: Count| (seconds > 0.0).then(|| grown[c] as f64 * 8.0 / seconds);
    let ms = |v: Option<u32>| v.map(|us| f64::from(us) / 1000.0);
    let mut srtt_us: Vec<u32> = acc.samples.iter().filter_map(|s| s.0).collect();
    let mut inflation: Vec<f64> = acc.samples.iter().filter_map(|s| s.1.map(f64::from)).collect();
    let srtt = percentiles(&mut srtt_us, &[50.0, 95.0, 99.0], u32::cmp);
    let inflation = percentiles(&mut inflation, &[50.0], f64::total_cmp)[0];
    srtt_us.sort_unstable();
    SocketSummary {
        cookie,
        cc: acc.cc,
        peer_group: acc.peer_group,
        host: String::new(),
        asn: acc.asn,
        country: acc.country,
        polls: acc.polls,
        bytes_sent: grown[Count::BytesSent],
        seconds,
        throughput_bits_per_sec: per_sec(Count::BytesSent),
        goodput_bits_per_sec: per_sec(Count::BytesAcked),
        srtt_p50_ms: ms(srtt[0]),
        srtt_p95_ms: ms(srtt[1]),
        srtt_p99_ms: ms(srtt[2]),
        inflation,
        retrans_ratio: (acc.polls > 1).then(|| grown.retrans_ratio()).flatten(),
        srtt_samples_ms: srtt_us.iter().map(|us| f64::from(*us) / 1000.0).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::seam::{self as sink, Now};
    use bbrtop_core::testing::record;
    use bbrtop_core::wire::Dump;
    use bbrtop_engine::{Engine, EngineConfig};
    use std::time::Duration;

    fn sock(
        cookie: u64,
        cc: &str,
        peer: &str,
        srtt_us: u32,
        sent: u64,
        retrans: u64,
    ) -> bbrtop_core::model::SocketRecord {
        record(cookie, cc)
            .local(format!("10.0.0.1:{}", 40000 + cookie))
            .peer(peer)
            .srtt_us(srtt_us)
            .min_rtt_us(10_000)
            .last_ack_recv_ms(0)
            .bytes_sent(sent)
            .bytes_acked(sent - retrans)
            .bytes_retrans(retrans)
            .build()
    }

    /// Three polls a second apart through a real engine: socket 1 lives through all three,
    /// socket 2 only the first.
    fn snapshots() -> Vec<std::sync::Arc<Snapshot>> {
        let mut e = Engine::new(EngineConfig::default());
        let t0 = Now::system();
        let polls = [
            vec![
                sock(1, "cubic", "10.1.0.9:80", 30_000, 0, 0),
                sock(2, "bbr", "192.0.2.1:80", 12_000, 500, 0),
            ],
            vec![sock(1, "cubic", "10.1.0.9:80", 10_000, 1_000_000, 10_000)],
            vec![sock(1, "cubic", "10.1.0.9:80", 20_000, 2_000_000, 40_000)],
        ];
        polls
            .into_iter()
            .enumerate()
            .map(|(i, socks)| {
                let now = t0.after(Duration::from_secs(i as u64));
                sink::feed_dump(&mut e, Dump { sockets: socks, ..Dump::default() }, now);
                e.tick(now)
            })
            .collect()
    }

    #[test]
    fn a_socket_is_summarised_over_its_own_polls() {
        let groups = PeerGroups::parse("groups:\n  near: [10.1.0.0/16]\n").unwrap();
        let mut s = Summarizer::new(&groups, &Geo::NONE);
        for snap in snapshots() {
            s.add(&snap);
        }
        let got = s.finish();
        assert_eq!(got.len(), 2);
        let (a, b) = (&got[0], &got[1]);
        assert_eq!((a.cookie, a.cc.as_str(), a.peer_group.as_str(), a.polls), (1, "cubic", "near", 3));
        assert_eq!(a.seconds, 2.0);
        // 2 MB sent in 2 s; 1.96 MB acked.
        assert_eq!(a.throughput_bits_per_sec, Some(8_000_000.0));
        assert_eq!(a.goodput_bits_per_sec, Some(7_840_000.0));
        assert_eq!(a.retrans_ratio, Some(0.02));
        assert_eq!((a.srtt_p50_ms, a.srtt_p99_ms), (Some(20.0), Some(30.0)));
        assert_eq!(a.srtt_samples_ms, [10.0, 20.0, 30.0]);
        // srtt over the 10 ms min RTT, median of 3, 1 and 2.
        assert_eq!(a.inflation, Some(2.0));
        // One poll: no life to divide by, no growth to take a ratio of.
        assert_eq!((b.peer_group.as_str(), b.polls), ("other", 1));
        assert_eq!((b.goodput_bits_per_sec, b.retrans_ratio), (None, None));
        assert_eq!(b.srtt_p50_ms, Some(12.0));
    }

    /// With MaxMind's test databases each socket carries its peer's AS and country, `unknown`
    /// where the databases hold nothing (a private address); without them, neither.
    #[test]
    fn a_socket_carries_its_peers_as_and_country() {
        let mut e = Engine::new(EngineConfig::default());
        let now = Now::system();
        let socks = vec![
            sock(1, "bbr", "1.0.0.1:443", 20_000, 1_000, 0),
            sock(2, "bbr", "81.2.69.142:443", 20_000, 1_000, 0),
            sock(3, "cubic", "10.1.0.9:80", 20_000, 1_000, 0),
        ];
        sink::feed_dump(&mut e, Dump { sockets: socks, ..Dump::default() }, now);
        let snap = e.tick(now);
        let (groups, geo) = (PeerGroups::default(), bbrtop_core::testing::maxmind_test_geo());
        let mut s = Summarizer::new(&groups, &geo);
        s.add(&snap);
        let got: Vec<(Option<String>, Option<String>)> =
            s.finish().into_iter().map(|s| (s.asn, s.country)).collect();
        let l = |a: &str, c: &str| (Some(a.to_string()), Some(c.to_string()));
        assert_eq!(got, vec![l("AS15169", "unknown"), l("unknown", "GB"), l("unknown", "unknown")]);
        let mut s = Summarizer::new(&groups, &Geo::NONE);
        s.add(&snap);
        assert!(s.finish().iter().all(|s| s.asn.is_none() && s.country.is_none()));
    }

    /// A socket polled far more often than the samples kept: its percentiles come from a
    /// uniform sample of its polls, the same one each time.
    #[test]
    fn a_long_lived_socket_keeps_a_uniform_sample() {
        let mut e = Engine::new(EngineConfig::default());
        let t0 = Now::system();
        let n = 4 * MAX_SAMPLES as u64;
        let snaps: Vec<_> = (0..n)
            .map(|i| {
                let now = t0.after(Duration::from_secs(i));
                // srtt 1..=n ms: the median of a uniform sample is near n/2.
                let r = sock(1, "cubic", "10.1.0.9:80", (i as u32 + 1) * 1000, i * 1000, 0);
                sink::feed_dump(&mut e, Dump { sockets: vec![r], ..Dump::default() }, now);
                e.tick(now)
            })
            .collect();
        let summarise = || {
            let groups = PeerGroups::default();
            let mut s = Summarizer::new(&groups, &Geo::NONE);
            for snap in &snaps {
                s.add(snap);
            }
            s.finish().remove(0)
        };
        let a = summarise();
        assert_eq!((a.polls, a.srtt_samples_ms.len()), (n as usize, MAX_SAMPLES));
        let p50 = a.srtt_p50_ms.unwrap();
        assert!((p50 - n as f64 / 2.0).abs() < n as f64 * 0.1, "{p50} of 1..={n}");
        assert!(a.srtt_samples_ms.last().unwrap() > &(n as f64 * 0.9), "the sample reaches the end");
        assert_eq!(summarise(), a, "seeded: the same sample");
        // Throughput is from the counters, over every poll.
        assert_eq!(a.throughput_bits_per_sec, Some(8000.0));
    }
}
