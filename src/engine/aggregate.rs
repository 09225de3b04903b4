//! Per-cc aggregates: the BBR-vs-CUBIC table of the BBR guides, computed from one snapshot.

use super::snapshot::SocketView;
use serde::Serialize;
use std::collections::BTreeMap;

/// One congestion-control algorithm's sockets, summarised.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    /// Sockets per BBR mode (startup, drain, probe_bw, probe_rtt); empty for other algorithms.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub phases: BTreeMap<&'static str, usize>,
}

/// The nearest-rank percentile (0 < p <= 100) of sorted values.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Aggregates sockets by cc, sorted by cc name.
pub fn by_cc(sockets: &[SocketView]) -> Vec<CcAggregate> {
    let mut groups: BTreeMap<&str, (CcAggregate, Vec<u32>, Vec<f64>)> = BTreeMap::new();
    for s in sockets {
        let cc = s.record.cc_name();
        let (agg, rtts, ratios) = groups.entry(cc).or_insert_with(|| {
            (CcAggregate { cc: cc.to_string(), ..CcAggregate::default() }, Vec::new(), Vec::new())
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
        if let Some(p) = s.derived.phase {
            *agg.phases.entry(p.mode_name()).or_default() += 1;
        }
    }
    groups
        .into_values()
        .map(|(mut agg, mut rtts, mut ratios)| {
            rtts.sort_unstable();
            ratios.sort_unstable_by(f64::total_cmp);
            agg.srtt_p50_us = percentile(&rtts, 50.0);
            agg.srtt_p95_us = percentile(&rtts, 95.0);
            agg.srtt_p99_us = percentile(&rtts, 99.0);
            agg.inflation_p50 = percentile(&ratios, 50.0);
            agg.inflation_p95 = percentile(&ratios, 95.0);
            agg
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 95.0), Some(95));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&[7u32], 99.0), Some(7));
        assert_eq!(percentile::<u32>(&[], 50.0), None);
        assert_eq!(percentile(&[1u32, 2], 1.0), Some(1));
    }
}
