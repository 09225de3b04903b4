//! The per-cc figures, kept as sockets change rather than counted at every tick: each socket's
//! part (its role, inflation, alert, phase, ECN) is taken out when its entry is replaced and the
//! new one's put in. The figures over senders (RTT percentiles, rates) are worked out at the
//! tick from the senders alone, and a sender is a socket that moved in the last interval: the
//! cost is what moved. `bbrtop_core::snapshot::aggregate::by_cc` is the same computation over
//! every socket at once (the TUI's places, one-shot reads); a test holds the two together.

use bbrtop_core::model::derive;
use bbrtop_core::model::{Cookie, SocketRecord};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::entry::phase;
use bbrtop_core::snapshot::socket::role;
use bbrtop_core::snapshot::sockets::Map;
use bbrtop_core::snapshot::{CcAggregate, Entry, Role};
use bbrtop_core::stats::percentiles;
use std::collections::{BTreeMap, BTreeSet};

/// One socket's part in its cc's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Part {
    role: Role,
    inflated: bool,
    firing: bool,
    ecn: bool,
    phase: Option<&'static str>,
    /// Segments delivered CE-marked, and all.
    delivered: [u64; 2],
}

impl Part {
    fn of(e: &Entry, r: &SocketRecord, seen_once: bool, loopback: bool) -> Part {
        let f = &e.facts;
        let i = &r.tcp_info;
        Part {
            role: role(r, &f.rates(), seen_once, loopback),
            inflated: f.inflated_since_ms.is_some(),
            firing: f.alert_firing,
            ecn: bbrtop_core::model::Ecn::of(i).is_some_and(|e| e.negotiated),
            phase: phase(r, f.kernel.as_deref()).map(|(p, _)| p.mode_name()),
            delivered: [i.delivered_ce_segs().unwrap_or(0).into(), i.delivered_segs().unwrap_or(0).into()],
        }
    }
}

/// One cc's counts.
#[derive(Clone, Debug, Default)]
struct Counts {
    sockets: usize,
    by_role: [usize; 4],
    inflated: usize,
    firing: usize,
    ecn: usize,
    delivered: [u64; 2],
    phases: BTreeMap<&'static str, usize>,
}

impl Counts {
    fn apply(&mut self, p: &Part, sign: isize) {
        let add = |n: &mut usize, yes: bool| *n = n.wrapping_add_signed(sign * isize::from(yes));
        add(&mut self.sockets, true);
        add(&mut self.by_role[p.role as usize], true);
        add(&mut self.inflated, p.inflated);
        add(&mut self.firing, p.firing);
        add(&mut self.ecn, p.ecn);
        for (d, v) in self.delivered.iter_mut().zip(p.delivered) {
            *d = if sign > 0 { d.wrapping_add(v) } else { d.wrapping_sub(v) };
        }
        if let Some(ph) = p.phase {
            let n = self.phases.entry(ph).or_default();
            add(n, true);
            if *n == 0 {
                self.phases.remove(ph);
            }
        }
    }
}

/// One cc's senders at a tick: srtts, inflation ratios, delivery rates, and the sums of delivery
/// rate, goodput and retransmissions per second.
type Senders = (Vec<u32>, Vec<f64>, Vec<f64>, [f64; 3]);

#[derive(Default)]
pub(crate) struct Inventory {
    per_cc: BTreeMap<String, Counts>,
    /// In cookie order, so the sums come out as a pass over the snapshot's sockets makes them.
    senders: BTreeSet<Cookie>,
    /// Loopback sockets count as any other (`--loopback`).
    loopback: bool,
}

impl Inventory {
    pub(crate) fn new(loopback: bool) -> Inventory {
        Inventory { loopback, ..Inventory::default() }
    }

    /// Counts a published entry; `seen_once` when it has no interval yet.
    pub(crate) fn add(&mut self, e: &Entry, seen_once: bool) {
        self.apply(e, seen_once, 1);
    }

    /// Takes out what [`Inventory::add`] counted of an entry, with the same `seen_once`.
    pub(crate) fn remove(&mut self, e: &Entry, seen_once: bool) {
        self.apply(e, seen_once, -1);
    }

    fn apply(&mut self, e: &Entry, seen_once: bool, sign: isize) {
        let r = e.record();
        let p = Part::of(e, &r, seen_once, self.loopback);
        let cc = r.cc_name();
        if !self.per_cc.contains_key(cc) {
            self.per_cc.insert(cc.to_string(), Counts::default());
        }
        let c = self.per_cc.get_mut(cc).expect("inserted");
        c.apply(&p, sign);
        if c.sockets == 0 {
            self.per_cc.remove(cc);
        }
        if p.role == Role::Sender {
            let cookie = e.cookie;
            if sign > 0 {
                self.senders.insert(cookie)
            } else {
                self.senders.remove(&cookie)
            };
        }
    }

    /// The figures per cc, sorted by cc name: the counts kept, and the senders' RTT percentiles
    /// and rates worked out now.
    pub(crate) fn by_cc(&self, published: &Map, rule: &RuleConfig) -> Vec<CcAggregate> {
        // Keyed by the cc names kept (a record read back is a copy).
        let mut senders: BTreeMap<&str, Senders> = BTreeMap::new();
        for e in self.senders.iter().filter_map(|c| published.get(c)) {
            let (r, rates) = (e.record(), e.facts.rates());
            let Some((cc, _)) = self.per_cc.get_key_value(r.cc_name()) else { continue };
            let (rtts, ratios, delivery, sums) = senders.entry(cc.as_str()).or_default();
            let srtt = r.tcp_info.srtt_us();
            rtts.extend(srtt);
            ratios.extend(derive::inflation_ratio(srtt, e.facts.baseline(rule, &r)));
            let rate = r.tcp_info.delivery_rate_bytes_per_sec().unwrap_or(0) as f64;
            delivery.push(rate);
            sums[0] += rate;
            sums[1] += rates.goodput_bytes_per_sec.unwrap_or(0.0);
            sums[2] += rates.retrans_segs_per_sec.unwrap_or(0.0);
        }
        self.per_cc
            .iter()
            .map(|(cc, c)| {
                let mut a = CcAggregate {
                    cc: cc.clone(),
                    sockets: c.sockets,
                    senders: c.by_role[Role::Sender as usize],
                    receivers: c.by_role[Role::Receiver as usize],
                    idle: c.by_role[Role::Idle as usize],
                    loopback: c.by_role[Role::Loopback as usize],
                    inflated: c.inflated,
                    firing: c.firing,
                    ecn_sockets: c.ecn,
                    ce_marked_fraction: bbrtop_core::model::ecn::ce_fraction(c.delivered[0], c.delivered[1]),
                    phases: c.phases.clone(),
                    ..CcAggregate::default()
                };
                if let Some((rtts, ratios, delivery, sums)) = senders.get_mut(cc.as_str()) {
                    let r = percentiles(rtts, &[50.0, 95.0, 99.0], u32::cmp);
                    (a.srtt_p50_us, a.srtt_p95_us, a.srtt_p99_us) = (r[0], r[1], r[2]);
                    let r = percentiles(ratios, &[50.0, 95.0], f64::total_cmp);
                    (a.inflation_p50, a.inflation_p95) = (r[0], r[1]);
                    a.delivery_rate_p50_bytes_per_sec = percentiles(delivery, &[50.0], f64::total_cmp)[0];
                    [a.delivery_rate_bytes_per_sec, a.goodput_bytes_per_sec, a.retrans_segs_per_sec] = *sums;
                }
                a
            })
            .collect()
    }
}
