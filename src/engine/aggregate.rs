//! Per-cc aggregates: the BBR-vs-CUBIC table of the BBR guides, computed from one snapshot.

use super::snapshot::SocketView;
use super::totals::Growth;
use bbrtop_core::model::{Count, Tally};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One congestion-control algorithm's sockets, summarised.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CcAggregate {
    pub cc: String,
    pub sockets: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srtt_p50_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srtt_p95_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srtt_p99_us: Option<u32>,
    /// Median srtt / baseline over sockets with both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflation_p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inflation_p95: Option<f64>,
    /// Sum of tcp_info delivery rates.
    pub delivery_rate_bytes_per_sec: f64,
    /// Sum of goodput (bytes acked per second between the last two polls).
    pub goodput_bytes_per_sec: f64,
    /// Sum of retransmitted segments per second between the last two polls.
    pub retrans_segs_per_sec: f64,
    /// Sockets inflated now.
    pub inflated: usize,
    /// Sockets whose alert is firing.
    pub firing: usize,
    /// Sockets that negotiated ECN.
    pub ecn_sockets: usize,
    /// CE-marked fraction of the segments the open sockets delivered (delivered_ce / delivered,
    /// each summed); absent while they delivered nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ce_marked_fraction: Option<f64>,
    /// Sockets per BBR mode (startup, drain, probe_bw, probe_rtt); empty for other algorithms.
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        default,
        deserialize_with = "bbrtop_core::units::interned::keys"
    )]
    pub phases: BTreeMap<&'static str, usize>,
    /// Counts since bbrtop started, closed sockets included (see `engine::totals`).
    pub counts: Tally,
    /// The same counts over the last minute, as ratios and rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recent: Option<Recent>,
}

/// One cc's last minute (less, just after start), from the counts' growth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Recent {
    pub seconds: f64,
    /// Bytes retransmitted over bytes sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrans_ratio: Option<f64>,
    /// Retransmitted segments the peer reported as duplicates (DSACK), over all retransmitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spurious_share: Option<f64>,
    pub rto_per_sec: f64,
    pub goodput_bytes_per_sec: f64,
    /// This cc's share of every cc's goodput.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_share: Option<f64>,
}

/// Adds the counts since start and their recent growth to the aggregates; a cc whose sockets all
/// closed gets an aggregate of no sockets, so its counts stay visible.
pub fn add_totals(by_cc: &mut Vec<CcAggregate>, sums: BTreeMap<String, Tally>, growth: Option<Growth>) {
    let acked_all: u64 = growth.iter().flat_map(|(_, g)| g.values()).map(|t| t[Count::BytesAcked]).sum();
    for (cc, counts) in sums {
        let i = match by_cc.iter().position(|a| a.cc == cc) {
            Some(i) => i,
            None if counts == Tally::default() => continue,
            None => {
                by_cc.push(CcAggregate { cc: cc.clone(), ..CcAggregate::default() });
                by_cc.len() - 1
            }
        };
        by_cc[i].counts = counts;
        by_cc[i].recent =
            growth.as_ref().and_then(|(secs, g)| g.get(&cc).map(|t| recent(*secs, t, acked_all)));
    }
    by_cc.sort_by(|a, b| a.cc.cmp(&b.cc));
}

fn recent(seconds: f64, t: &Tally, acked_all: u64) -> Recent {
    let acked = t[Count::BytesAcked];
    Recent {
        seconds,
        retrans_ratio: t.retrans_ratio(),
        spurious_share: t.spurious_share(),
        rto_per_sec: t[Count::Rto] as f64 / seconds,
        goodput_bytes_per_sec: acked as f64 / seconds,
        goodput_share: (acked_all > 0).then(|| acked as f64 / acked_all as f64),
    }
}

/// The nearest-rank percentile (0 < p <= 100) of sorted values.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    Some(sorted[rank(sorted.len(), p)?])
}

/// The index of the nearest-rank percentile `p` in `n` sorted values.
fn rank(n: usize, p: f64) -> Option<usize> {
    (n > 0).then(|| ((p / 100.0) * n as f64).ceil().clamp(1.0, n as f64) as usize - 1)
}

/// Nearest-rank percentiles of unsorted values, by selection: O(n) each, no full sort. `ps`
/// ascending.
pub fn percentiles<T: Copy>(
    v: &mut [T],
    ps: &[f64],
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Copy,
) -> Vec<Option<T>> {
    let mut lo = 0;
    ps.iter()
        .map(|&p| {
            let i = rank(v.len(), p)?;
            // Everything left of an earlier pick is no larger: select in the rest only.
            let start = lo.min(i);
            v[start..].select_nth_unstable_by(i - start, cmp);
            lo = i;
            Some(v[i])
        })
        .collect()
}

/// One cc's aggregate while sockets are added: srtts, inflation ratios, and delivered CE-marked
/// and all segments.
type Group = (CcAggregate, Vec<u32>, Vec<f64>, [u64; 2]);

/// Aggregates sockets by cc, sorted by cc name.
pub fn by_cc<'a>(sockets: impl IntoIterator<Item = &'a SocketView>) -> Vec<CcAggregate> {
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    for s in sockets {
        let cc = s.record.cc_name();
        let (agg, rtts, ratios, delivered) = groups.entry(cc).or_insert_with(|| {
            (CcAggregate { cc: cc.to_string(), ..CcAggregate::default() }, Vec::new(), Vec::new(), [0; 2])
        });
        agg.sockets += 1;
        let info = &s.record.tcp_info;
        if let Some(v) = info.srtt_us() {
            rtts.push(v);
        }
        if let Some(r) = s.derived.inflation_ratio {
            ratios.push(r);
        }
        agg.delivery_rate_bytes_per_sec += info.delivery_rate_bytes_per_sec().unwrap_or(0) as f64;
        agg.goodput_bytes_per_sec += s.derived.rates.goodput_bytes_per_sec.unwrap_or(0.0);
        agg.retrans_segs_per_sec += s.derived.rates.retrans_segs_per_sec.unwrap_or(0.0);
        agg.inflated += usize::from(s.derived.inflated);
        agg.firing += usize::from(s.derived.alert_firing);
        agg.ecn_sockets += usize::from(s.derived.ecn.is_some_and(|e| e.negotiated));
        delivered[0] += u64::from(info.delivered_ce_segs().unwrap_or(0));
        delivered[1] += u64::from(info.delivered_segs().unwrap_or(0));
        if let Some(p) = s.derived.phase {
            *agg.phases.entry(p.mode_name()).or_default() += 1;
        }
    }
    groups
        .into_values()
        .map(|(mut agg, mut rtts, mut ratios, [ce, all])| {
            agg.ce_marked_fraction = bbrtop_core::model::ecn::ce_fraction(ce, all);
            let r = percentiles(&mut rtts, &[50.0, 95.0, 99.0], u32::cmp);
            (agg.srtt_p50_us, agg.srtt_p95_us, agg.srtt_p99_us) = (r[0], r[1], r[2]);
            let r = percentiles(&mut ratios, &[50.0, 95.0], f64::total_cmp);
            (agg.inflation_p50, agg.inflation_p95) = (r[0], r[1]);
            agg
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ECN per cc: sockets that negotiated it, and the CE-marked fraction of all the cc's
    /// delivered segments (a socket without ECN delivers unmarked ones).
    #[test]
    fn ecn_sockets_and_ce_fraction_per_cc() {
        use crate::engine::snapshot::{Derived, RecordRef, SocketView};
        use bbrtop_core::testing::record;
        let view = |cookie, cc: &str, options, delivered, ce| {
            let r =
                record(cookie, cc).options(options).delivered_segs(delivered).delivered_ce_segs(ce).build();
            let derived = Derived { ecn: bbrtop_core::model::Ecn::of(&r.tcp_info), ..Derived::default() };
            SocketView {
                record: RecordRef::single(r),
                derived,
                history: crate::engine::history::HistoryView::none(),
            }
        };
        let socks = [view(1, "bbr", 8 | 16, 900, 90), view(2, "bbr", 0, 100, 0), view(3, "cubic", 8, 0, 0)];
        let aggs = by_cc(&socks);
        let bbr = &aggs[0];
        assert_eq!((bbr.cc.as_str(), bbr.ecn_sockets, bbr.ce_marked_fraction), ("bbr", 1, Some(0.09)));
        let cubic = &aggs[1];
        assert_eq!((cubic.ecn_sockets, cubic.ce_marked_fraction), (1, None), "nothing delivered yet");
        let json = serde_json::to_value(cubic).unwrap();
        assert!(json.get("ce_marked_fraction").is_none() && json["ecn_sockets"] == 1);
    }

    #[test]
    fn nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 95.0), Some(95));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&[7u32], 99.0), Some(7));
        assert_eq!(percentile::<u32>(&[], 50.0), None);
        assert_eq!(percentile(&[1u32, 2], 1.0), Some(1));
        // Selection agrees with sorting, on shuffled values.
        let mut shuffled: Vec<u32> = (1..=1000).map(|i| (i * 7919) % 1000 + 1).collect();
        let got = percentiles(&mut shuffled, &[50.0, 95.0, 99.0], u32::cmp);
        assert_eq!(got, vec![Some(500), Some(950), Some(990)]);
        assert_eq!(percentiles::<u32>(&mut [], &[50.0], u32::cmp), vec![None]);
    }
}
