//! Per-cc aggregates: the counts since start and their last minute added to each tick's
//! (`bbrtop_core::snapshot::aggregate::by_cc`).

use crate::totals::Growth;
use bbrtop_core::model::{Count, Tally};
use bbrtop_core::snapshot::{CcAggregate, Recent};
use std::collections::BTreeMap;

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
