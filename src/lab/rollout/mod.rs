//! `bbrtop lab rollout`: the edge guide's rollout, reproduced. Four server boxes (`edge-1` runs
//! BBR, the canary; `edge-2` to `edge-4` CUBIC) answer request/response traffic on keep-alive
//! connections, in the guide's sizes, to three client populations, each in an address block of
//! its own that a MaxMind-format database (written by a real MMDB writer, `testdata/rollout-*`)
//! maps to an AS and a country:
//!
//! | population | AS | path |
//! | --- | --- | --- |
//! | mobile | AS64501, BR | 70 ms round trip, 0.5% loss, 20 Mbit/s, a 250 kB buffer |
//! | distant | AS64502, AU | 150 ms round trip, 20 Mbit/s, a 3 MB buffer (1.2 s of queue), and a download beside the responses |
//! | local | AS64503, DE | 1 ms round trip, 100 Mbit/s, clean |
//!
//! Each connection's requests come at random moments, 250 ms apart on average, as a user's
//! do, not on a clock.
//!
//! Each (box, population) pair is a lab of its own (its own router and bottleneck): a box's
//! queue is its own traffic's, as on the real paths, where a client reaches one box. Each box
//! also sends one long download to the distant clients, as an edge box serves files beside its
//! API: the deep buffer fills with what the box's own congestion control lets queue, and its
//! responses wait behind it. The
//! responses are timed in the kernel by bbrtop's eBPF programs
//! (`crates/bbrtop-collect/bpf/bbrtop.bpf.c`), as the exporter times them; the clients time them
//! too, as a check. [`report`] turns them into the
//! guide's table (p50/p95/p99 per box) and who got the win per AS. Each path is measured while
//! it runs ([`super::meter`]), and the report says where it fell behind its target.
//!
//! These are the defaults: a user shapes the run ([`shape`]) with populations of their own (an
//! API fleet's, with or without cross traffic) and their own response mix.

pub mod plot;
pub mod report;
pub mod shape;

use super::exchange::{Arrivals, Exchange, ExchangeConfig};
use super::meter::Meter;
use super::path_check::{Measured, PathCheck};
use super::{Lab, LabConfig, LabError, PACKET_BYTES};
use bbrtop_core::geo::{Db, Geo, Kind};
use bbrtop_core::model::{Cookie, SocketRecord};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::seam::{Aborted, DumpSink, Feed, Now, Update, Walk, WalkFailed};
use bbrtop_core::snapshot::loghist::LogHist;
use bbrtop_core::wire::Dump;
use report::{Collected, PopulationRun, Report};
use shape::Shape;
use std::ops::ControlFlow;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The AS and country databases of the populations' blocks, as `scripts/mmdb_write.py` wrote
/// them from `testdata/rollout-*.json` (`tests/lab_rollout.rs` writes them again and compares).
pub const ASN_DB: &[u8] = include_bytes!("../testdata/rollout-asn.mmdb");
pub const COUNTRY_DB: &[u8] = include_bytes!("../testdata/rollout-country.mmdb");

/// A client population and its path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Population {
    pub name: &'static str,
    /// Its block is 10.NET.0.0/16.
    pub net: u8,
    pub rtt: Duration,
    pub loss: f64,
    pub rate_bit_per_sec: u64,
    pub queue_bytes: u32,
    /// Whether each box also sends it one bulk download beside the responses, as an edge box
    /// serves files beside its API.
    pub cross_traffic: bool,
    /// Its AS, as the report labels it; None: what the populations' database says of its block.
    pub asn: Option<u32>,
}

/// The guide's populations, the default.
pub const POPULATIONS: [Population; 3] = [
    Population {
        name: "mobile",
        net: 61,
        rtt: Duration::from_millis(70),
        loss: 0.005,
        rate_bit_per_sec: 20_000_000,
        queue_bytes: 250_000,
        cross_traffic: false,
        asn: None,
    },
    Population {
        name: "distant",
        net: 62,
        rtt: Duration::from_millis(150),
        loss: 0.0,
        rate_bit_per_sec: 20_000_000,
        queue_bytes: 3_000_000,
        cross_traffic: true,
        asn: None,
    },
    Population {
        name: "local",
        net: 63,
        rtt: Duration::from_millis(1),
        loss: 0.0,
        rate_bit_per_sec: 100_000_000,
        queue_bytes: 1_000 * PACKET_BYTES,
        cross_traffic: false,
        asn: None,
    },
];

/// A server box: its name and congestion control.
pub const BOXES: [(&str, &str); 4] =
    [("edge-1", "bbr"), ("edge-2", "cubic"), ("edge-3", "cubic"), ("edge-4", "cubic")];

/// How a run goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RolloutConfig {
    pub duration: Duration,
    /// Keep-alive connections per (box, population).
    pub clients: usize,
    /// From one request to the next on a connection, on average: the requests come at random
    /// (exponential gaps), as the guide's users' do.
    pub interval: Duration,
    /// Responses that end in the first this long of the run are left out, on both clocks: the
    /// guide's figures are a week's, not a connection's first round trips.
    pub warmup: Duration,
}

impl RolloutConfig {
    pub fn full() -> RolloutConfig {
        RolloutConfig {
            duration: Duration::from_secs(120),
            clients: 4,
            interval: Duration::from_millis(250),
            warmup: Duration::from_secs(3),
        }
    }

    /// Half the run: enough responses (some 850 per box and population) for the directions
    /// and their intervals, not for the p99's.
    pub fn quick() -> RolloutConfig {
        RolloutConfig { duration: Duration::from_secs(60), ..RolloutConfig::full() }
    }
}

/// The databases of [`ASN_DB`] and [`COUNTRY_DB`].
pub fn geo() -> Geo {
    let db = |kind, bytes: &[u8]| Db::new(kind, bytes.to_vec()).ok();
    Geo { asn: db(Kind::Asn, ASN_DB), country: db(Kind::Country, COUNTRY_DB) }
}

/// The lab of one (box, population) pair.
fn lab_for(p: &Population) -> Result<Lab, LabError> {
    Lab::new(LabConfig {
        rate_bit_per_sec: p.rate_bit_per_sec,
        queue_bytes: p.queue_bytes,
        burst_bytes: super::burst_for(p.rate_bit_per_sec),
        delay: Some(p.rtt / 2),
        loss: p.loss,
        net: p.net,
        ..LabConfig::default()
    })
}

/// Takes the kernel's response records, each to its (box, population) by the namespace its
/// server runs in; everything else the eBPF collector says is left alone.
struct Responses<'a> {
    /// Each sender namespace's inode, with its (box, population).
    paths: &'a [(u32, usize, usize)],
    /// Per box, per population.
    hists: &'a mut [Vec<LogHist>],
    geo: &'a Geo,
    /// AS label by population, as the database says of the responses' peers.
    labels: &'a mut [Option<String>],
    counting: bool,
}

impl DumpSink for Responses<'_> {
    fn begin(&mut self, _: Now) {}
    fn record(&mut self, _: u32, _: &SocketRecord) {}
    fn end(&mut self, _: Dump) {}
    fn abort(&mut self, _: Aborted) {}
    fn walk_part(&mut self, _: Now, _: Vec<SocketRecord>, _: Vec<Cookie>) {}
    fn walked(&mut self, _: Result<Walk, WalkFailed>) {}
}

impl Feed for Responses<'_> {
    fn apply(&mut self, update: Update) {
        let Update::Response(r) = update else { return };
        let Some(&(_, b, p)) = self.paths.iter().find(|(ns, ..)| *ns == r.netns) else { return };
        if !r.served || !self.counting {
            return;
        }
        self.hists[b][p].observe(r.took.as_secs_f64());
        if self.labels[p].is_none() {
            self.labels[p] = self.geo.labels(r.peer).0;
        }
    }
}

/// One (box, population) lab as it runs (the meter first: fields drop in order).
struct Path {
    meter: Option<Meter>,
    b: usize,
    p: usize,
    lab: Lab,
}

/// Runs the rollout: builds a path per box and population, starts the traffic, times the
/// responses with the eBPF programs for `cfg.duration` while each path is measured, and
/// reports. `stop` ends it early (the report covers what ran); `progress` sees the seconds run
/// at each poll.
pub fn run(
    cfg: RolloutConfig,
    shape: &Shape,
    stop: &AtomicBool,
    mut progress: impl FnMut(Duration),
) -> Result<Report, LabError> {
    let loading = bbrtop_collect::bpf::load(&RuleConfig::default(), None);
    if loading.status.attached.is_empty() {
        let why = loading.status.reason.map_or_else(|| "no program attached".into(), |r| r.detail);
        return Err(LabError::Unsupported(format!("lab rollout times responses with eBPF: {why}")));
    }
    let pops = &shape.populations;
    let mut sources = loading.sources;
    let mut labs = Vec::new();
    let mut inodes = Vec::new();
    for (b, (_, cc)) in BOXES.iter().enumerate() {
        for (p, pop) in pops.iter().enumerate() {
            let mut lab = lab_for(pop)?;
            inodes.push((std::fs::metadata(lab.sender_netns())?.ino() as u32, b, p));
            if pop.cross_traffic {
                lab.start_flow(cc)?;
            }
            labs.push(Path { b, p, lab, meter: None });
        }
    }
    // The exchange's config is Copy and shared with the tests, so its mix is a static slice:
    // this run's, leaked once (a few hundred bytes at most).
    let mix: &'static [u64] = Box::leak(shape.mix.cycle().into_boxed_slice());
    let exchange = ExchangeConfig {
        mix,
        interval: cfg.interval,
        arrivals: Arrivals::Random,
        think: Duration::ZERO,
        ..ExchangeConfig::default()
    };
    let mut exchanges: Vec<(usize, usize, Exchange)> = Vec::new();
    for path in &mut labs {
        for _ in 0..cfg.clients {
            exchanges.push((path.b, path.p, path.lab.start_exchange(BOXES[path.b].1, exchange)?));
        }
        path.meter = Some(Meter::start(&path.lab)?);
    }
    let geo = geo();
    let mut hists: Vec<Vec<LogHist>> = vec![vec![LogHist::default(); pops.len()]; BOXES.len()];
    let mut labels: Vec<Option<String>> = vec![None; pops.len()];
    let started = Instant::now();
    let mut ran = Duration::ZERO;
    // The kernel counts the responses that ended after the last poll of the warm-up, up to
    // the last poll; the clients' clocks count the same window (not the same number of
    // responses per connection: a distant one answers in seconds, a local one in milliseconds).
    let (mut counted_from, mut counted_until) = (started, started);
    crate::worker::run(
        Duration::from_millis(250),
        || stop.load(Ordering::Relaxed),
        |_| {
            ran = started.elapsed();
            let counting = ran >= cfg.warmup;
            let mut feed =
                Responses { paths: &inodes, hists: &mut hists, geo: &geo, labels: &mut labels, counting };
            for s in &mut sources {
                s.poll(&mut feed);
            }
            if counting {
                counted_until = Instant::now();
            } else {
                counted_from = Instant::now();
            }
            progress(ran);
            if ran < cfg.duration { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
        },
    );
    labs.iter().filter_map(|l| l.meter.as_ref()).for_each(Meter::stop);
    let mut client: Vec<Vec<Vec<Duration>>> = vec![vec![Vec::new(); pops.len()]; BOXES.len()];
    for (b, p, ex) in &exchanges {
        client[*b][*p].extend(ex.times_between(counted_from, counted_until));
    }
    drop(exchanges);
    let mut measured: Vec<Vec<Measured>> = vec![Vec::new(); pops.len()];
    for path in &mut labs {
        if let Some(m) = path.meter.take() {
            measured[path.p].push(m.finish(&path.lab));
        }
    }
    let populations = pops
        .iter()
        .enumerate()
        .map(|(p, pop)| {
            let lab = &labs[p].lab;
            let label = pop.asn.map(|n| format!("AS{n}")).or_else(|| labels[p].take());
            PopulationRun {
                population: *pop,
                label,
                path: lab.path_description(),
                check: PathCheck::of(lab.target(), &measured[p]),
            }
        })
        .collect();
    drop(labs);
    let interrupted = (ran < cfg.duration).then_some(ran.as_secs_f64());
    Ok(report::build(Collected { cfg, mix: shape.mix.clone(), populations, hists, client, interrupted }))
}
