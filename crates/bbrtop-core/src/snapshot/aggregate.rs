//! Per-cc aggregates: the BBR-vs-CUBIC table of the BBR guides, as a snapshot carries it, and
//! how it is computed from sockets' views (the engine at each tick, the TUI per place).
//!
//! The figures a comparison rests on (RTT percentiles, inflation, delivery rate, goodput) are
//! over the sockets that sent data in the last interval, loopback left out: a receiver's RTT
//! is its handshake's or a rare sample's, and on a host whose default cc is BBR every receiver is
//! a BBR socket; an idle socket's delivery rate is its last, however old. The others are counted
//! apart, by [`Role`].

use super::SocketView;
use super::socket::Role;
use crate::model::Tally;
use crate::stats::percentiles;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One congestion-control algorithm's sockets, summarised.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CcAggregate {
    pub cc: String,
    /// Every open socket of this cc.
    pub sockets: usize,
    /// Of those, the ones the figures below are over: they sent data in the last interval.
    #[serde(default)]
    pub senders: usize,
    /// Received data and sent none.
    #[serde(default)]
    pub receivers: usize,
    /// Moved nothing.
    #[serde(default)]
    pub idle: usize,
    /// Loopback sockets, left out of the figures (unless `--loopback`).
    #[serde(default)]
    pub loopback: usize,
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
    /// Sum of the senders' tcp_info delivery rates (each fresh: they delivered in the interval).
    /// No throughput: each is one socket's latest sample, often taken while it had the path to
    /// itself, so senders sharing a link sum past its rate. Goodput is the throughput.
    pub delivery_rate_bytes_per_sec: f64,
    /// The senders' median delivery rate: what one sender's samples say the path carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_p50_bytes_per_sec: Option<f64>,
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
        deserialize_with = "crate::units::interned::keys"
    )]
    pub phases: BTreeMap<&'static str, usize>,
    /// Counts since bbrtop started, closed sockets included (the engine keeps them; see [`crate::snapshot::totals`]).
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

/// One cc's aggregate while sockets are added: srtts, inflation ratios, delivery rates, and
/// delivered CE-marked and all segments.
type Group = (CcAggregate, Vec<u32>, Vec<f64>, Vec<f64>, [u64; 2]);

/// Aggregates sockets by cc, sorted by cc name: the figures over each cc's senders, loopback
/// counted as any other socket when `loopback`.
pub fn by_cc<'a>(sockets: impl IntoIterator<Item = &'a SocketView>, loopback: bool) -> Vec<CcAggregate> {
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    for s in sockets {
        let cc = s.record.cc_name();
        let (agg, rtts, ratios, rates, delivered) = groups.entry(cc).or_insert_with(|| {
            (
                CcAggregate { cc: cc.to_string(), ..CcAggregate::default() },
                Vec::new(),
                Vec::new(),
                Vec::new(),
                [0; 2],
            )
        });
        agg.sockets += 1;
        agg.inflated += usize::from(s.derived.inflated);
        agg.firing += usize::from(s.derived.alert_firing);
        if let Some(p) = s.derived.phase {
            *agg.phases.entry(p.mode_name()).or_default() += 1;
        }
        // ECN's counts are over each socket's life: every socket's, not the interval's senders'.
        let info = &s.record.tcp_info;
        agg.ecn_sockets += usize::from(s.derived.ecn.is_some_and(|e| e.negotiated));
        delivered[0] += u64::from(info.delivered_ce_segs().unwrap_or(0));
        delivered[1] += u64::from(info.delivered_segs().unwrap_or(0));
        let count = match s.role(loopback) {
            Role::Sender => &mut agg.senders,
            Role::Receiver => &mut agg.receivers,
            Role::Idle => &mut agg.idle,
            Role::Loopback => &mut agg.loopback,
        };
        *count += 1;
        if s.role(loopback) != Role::Sender {
            continue;
        }
        if let Some(v) = info.srtt_us() {
            rtts.push(v);
        }
        if let Some(r) = s.derived.inflation_ratio {
            ratios.push(r);
        }
        let rate = info.delivery_rate_bytes_per_sec().unwrap_or(0) as f64;
        agg.delivery_rate_bytes_per_sec += rate;
        rates.push(rate);
        agg.goodput_bytes_per_sec += s.derived.rates.goodput_bytes_per_sec.unwrap_or(0.0);
        agg.retrans_segs_per_sec += s.derived.rates.retrans_segs_per_sec.unwrap_or(0.0);
    }
    groups
        .into_values()
        .map(|(mut agg, mut rtts, mut ratios, mut rates, [ce, all])| {
            agg.ce_marked_fraction = crate::model::ecn::ce_fraction(ce, all);
            let r = percentiles(&mut rtts, &[50.0, 95.0, 99.0], u32::cmp);
            (agg.srtt_p50_us, agg.srtt_p95_us, agg.srtt_p99_us) = (r[0], r[1], r[2]);
            let r = percentiles(&mut ratios, &[50.0, 95.0], f64::total_cmp);
            (agg.inflation_p50, agg.inflation_p95) = (r[0], r[1]);
            agg.delivery_rate_p50_bytes_per_sec = percentiles(&mut rates, &[50.0], f64::total_cmp)[0];
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
        use crate::snapshot::{Derived, HistoryView, RecordRef};
        use crate::testing::record;
        let view = |cookie, cc: &str, options, delivered, ce| {
            let r =
                record(cookie, cc).options(options).delivered_segs(delivered).delivered_ce_segs(ce).build();
            let derived = Derived { ecn: crate::model::Ecn::of(&r.tcp_info), ..Derived::default() };
            SocketView { record: RecordRef::single(r), derived, history: HistoryView::none() }
        };
        let socks = [view(1, "bbr", 8 | 16, 900, 90), view(2, "bbr", 0, 100, 0), view(3, "cubic", 8, 0, 0)];
        let aggs = by_cc(&socks, false);
        let bbr = &aggs[0];
        assert_eq!((bbr.cc.as_str(), bbr.ecn_sockets, bbr.ce_marked_fraction), ("bbr", 1, Some(0.09)));
        let cubic = &aggs[1];
        assert_eq!((cubic.ecn_sockets, cubic.ce_marked_fraction), (1, None), "nothing delivered yet");
        let json = serde_json::to_value(cubic).unwrap();
        assert!(json.get("ce_marked_fraction").is_none() && json["ecn_sockets"] == 1);
    }

    /// Request/response on keep-alive connections, both ends on this host: the servers send
    /// responses and read requests, the clients the reverse. Only the servers are senders, and
    /// the clients' delivery rates (a request's sample, huge on a short path) stay out of the
    /// figures.
    #[test]
    fn clients_asking_for_responses_are_receivers() {
        use crate::model::derive::Rates;
        use crate::snapshot::{Derived, HistoryView, RecordRef};
        use crate::testing::record;
        let view = |cookie, out: f64, inn: f64, delivery: u64| {
            let r = record(cookie, "bbr").delivery_rate_bytes_per_sec(delivery).build();
            let rates = Rates {
                goodput_bytes_per_sec: Some(out),
                recv_bytes_per_sec: Some(inn),
                retrans_segs_per_sec: Some(0.0),
            };
            let derived = Derived { rates, ..Derived::default() };
            SocketView { record: RecordRef::single(r), derived, history: HistoryView::none() }
        };
        let servers = (1..=3).map(|c| view(c, 25_000.0, 1_000.0, 2_500_000 + c * 1000));
        let clients = (10..15).map(|c| view(c, 1_000.0, 25_000.0, 2_000_000_000));
        let socks: Vec<SocketView> = servers.chain(clients).collect();
        let bbr = &by_cc(&socks, true)[0];
        assert_eq!((bbr.senders, bbr.receivers), (3, 5));
        assert_eq!(bbr.delivery_rate_bytes_per_sec, 7_506_000.0, "the servers' only");
        assert_eq!(bbr.delivery_rate_p50_bytes_per_sec, Some(2_502_000.0));
        // An upload's receiver that also sent a little is still a receiver; equal both ways sends.
        assert_eq!(view(20, 0.0, 5.0, 0).role(true), Role::Receiver);
        assert_eq!(view(21, 5.0, 5.0, 0).role(true), Role::Sender);
        assert_eq!(view(22, 0.0, 0.0, 0).role(true), Role::Idle);
    }
}
