//! `bbrtop_response_delivery_seconds`: the response times per (cc, peer group, size class), and
//! per AS and country where their databases are given, within a series budget.
//!
//! A classic histogram costs 132 series (129 bounds, +Inf, `_count`, `_sum`) and a native one a
//! single series, so one per (cc, peer group, AS, country, size) in classic buckets is what
//! multiplied a fleet's series by the AS and country labels. Hence:
//! - with native histograms (protobuf), a row per AS and country, native buckets only, classic
//!   ones beside them only where asked (`--metrics.response-histograms.classic`) or where the row
//!   has no AS or country label (then it is one of the few the dashboards read, as before);
//! - in the text formats, which have no native histograms, the rows summed over AS and country:
//!   one classic histogram per (cc, peer group, size, arm), the one the dashboards and rules read
//!   when no native histogram is there. A per-AS `_count` alone would be a histogram without
//!   buckets, which the text formats cannot carry, so nothing per AS is left; the counters keep
//!   their AS and country labels. With the flag, each AS and country's classic histogram, as
//!   before.

use super::live_hist::{LiveHist, RESPONSE};
use super::{Enc, catalog, live_histograms};
use bbrtop_core::snapshot::responses::SizeClass;
use bbrtop_core::snapshot::{CcTotals, GroupKey};
use std::collections::BTreeMap;

/// How a scrape carries the rows that have an AS or country label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Form {
    /// The scrape's format carries native histograms (protobuf).
    pub native: bool,
    /// `--metrics.response-histograms.classic`: classic buckets per AS and country too.
    pub classic_per_peer: bool,
}

/// The family, in the form `form` says: rows without a response are left out, as before.
pub(super) fn encode(enc: &mut Enc, totals: &[CcTotals], form: Form) -> std::fmt::Result {
    let summed;
    let shown = if form.native || form.classic_per_peer {
        totals
    } else {
        summed = summed_over_peers(totals);
        &summed
    };
    let rows: Vec<_> = shown
        .iter()
        .flat_map(|t| SizeClass::ALL.map(|c| (t, c)))
        .filter(|(t, c)| t.responses.get(*c).count() > 0)
        .map(|(t, c)| {
            let mut labels = t.key().labels();
            labels.push(("size", c.label()));
            let per_peer = t.asn.is_some() || t.country.is_some();
            let classic = !form.native || form.classic_per_peer || !per_peer;
            (labels, LiveHist::of(RESPONSE, t.responses.get(c)), classic)
        })
        .collect();
    live_histograms(
        enc,
        &catalog::RESPONSE_DELIVERY,
        rows.iter().map(|(l, h, classic)| (l.as_slice(), h, *classic)),
    )
}

/// The rows summed over AS and country: one per (cc, peer group, arm), in the totals' order.
fn summed_over_peers(totals: &[CcTotals]) -> Vec<CcTotals> {
    let mut out: BTreeMap<GroupKey, CcTotals> = BTreeMap::new();
    for t in totals {
        let key = t.key().without_peers();
        let sum = out.entry(key).or_insert_with(|| CcTotals::of(key));
        sum.responses.add(&t.responses);
    }
    out.into_values().collect()
}
