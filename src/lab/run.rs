//! Running a scenario: build the path, run its flows, sample them with bbrtop's own pipeline, and
//! report. Everything is torn down when the lab drops, on error and on interrupt too.

use super::meter::Meter;
use super::path_check::PathCheck;
use super::scenario::{self, FlowResult, Plan, Report, Scenario};
use super::{Lab, LabConfig, LabError, PACKET_BYTES};
use bbrtop_collect::InetDiag;
use bbrtop_collect::netns::NetnsSpec;
use bbrtop_core::model::{Count, StateSet, Tally};
use bbrtop_core::seam::Now;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_engine::{Engine, EngineConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often flows are sampled: often enough for percentiles, cheap on a handful of sockets.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The lab settings for a plan.
pub fn lab_config(plan: &Plan) -> LabConfig {
    LabConfig {
        rate_bit_per_sec: plan.rate_bits_per_sec,
        queue_bytes: plan.buffer_packets * PACKET_BYTES,
        delay: (!plan.rtt.is_zero()).then_some(plan.rtt / 2),
        loss: plan.loss,
        burst_bytes: super::burst_for(plan.rate_bits_per_sec),
        ..LabConfig::default()
    }
}

/// One flow as the last sample saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveFlow {
    pub cc: String,
    /// tcp_info's delivery rate.
    pub rate_bits_per_sec: Option<f64>,
    pub rtt_ms: Option<f64>,
}

/// What the runner shows at every sample (for `--tui` and the progress line).
pub struct Tick<'a> {
    pub snap: &'a Arc<Snapshot>,
    /// The flows running now.
    pub flows: &'a [LiveFlow],
    /// Which group of flows runs (1-based), of how many (one per flow when they take turns).
    pub group: (usize, usize),
    pub elapsed: Duration,
    pub total: Duration,
}

/// The groups of flows that run together, in turn: each flow of the plan alone (sequential) or
/// all at once, with `per_cc` parallel connections of each flow's cc in its group.
pub fn groups(plan: &Plan, per_cc: usize) -> Vec<Vec<&'static str>> {
    let times = |ccs: &[&'static str]| ccs.iter().flat_map(|cc| std::iter::repeat_n(*cc, per_cc)).collect();
    if plan.sequential { plan.flows.iter().map(|f| times(&[*f])).collect() } else { vec![times(&plan.flows)] }
}

/// A group's name: its ccs, each once, in order, joined by "+" ("cubic", "bbr+cubic").
pub fn group_name(group: &[&str]) -> String {
    let mut ccs: Vec<&str> = Vec::new();
    for cc in group {
        if !ccs.contains(cc) {
            ccs.push(cc);
        }
    }
    ccs.join("+")
}

/// Runs `scenario` for `duration` per flow (or for all flows together), each flow as `per_cc`
/// parallel connections (1: the guide's run). `stop` ends it early; `on_tick` sees every sample.
pub fn run(
    scenario: Scenario,
    duration: Duration,
    per_cc: usize,
    stop: &AtomicBool,
    mut on_tick: impl FnMut(&Tick),
) -> Result<Report, LabError> {
    let plan = scenario.plan();
    let mut path = String::new();
    let groups = groups(&plan, per_cc);
    let mut results = Vec::new();
    let n = groups.len();
    let mut last = std::time::Instant::now();
    let (mut measured, mut target) = (Vec::new(), None);
    for (i, group) in groups.into_iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        // Each group on a path of its own, as the guides ran each test: nothing left in the
        // queue, and no route metrics cached from the flow before (tcp_metrics).
        let mut lab = Lab::new(lab_config(&plan))?;
        path = lab.path_description();
        target = Some(lab.target());
        last = std::time::Instant::now();
        let meter = Meter::start(&lab)?;
        results.extend(run_group(&mut lab, &group, (i + 1, n), duration, stop, &mut on_tick)?);
        measured.push(meter.finish(&lab));
    }
    let mut report = Report::new(scenario, plan, path, duration, results);
    report.path_check = target.map(|t| PathCheck::of(t, &measured));
    // Stopped before the end: the report is partial, and says how far the last flows got.
    if stop.load(Ordering::Relaxed) {
        report.interrupted_after_seconds = Some(last.elapsed().min(duration).as_secs_f64());
    }
    Ok(report)
}

/// Runs flows together and measures each from bbrtop's snapshots of the sender namespace.
fn run_group(
    lab: &mut Lab,
    ccs: &[&str],
    group: (usize, usize),
    duration: Duration,
    stop: &AtomicBool,
    on_tick: &mut impl FnMut(&Tick),
) -> Result<Vec<FlowResult>, LabError> {
    let ns = NetnsSpec(lab.sender_netns().to_path_buf());
    let mut diag = InetDiag::open(Some(&ns), StateSet::default_filter())
        .map_err(|e| LabError::Collect(e.to_string()))?;
    let flows = ccs.iter().map(|cc| lab.start_flow(cc)).collect::<Result<Vec<_>, _>>()?;
    let mut engine = Engine::new(EngineConfig::default());
    let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); flows.len()];
    let mut live: Vec<LiveFlow> =
        flows.iter().map(|f| LiveFlow { cc: f.cc.clone(), ..LiveFlow::default() }).collect();
    // Each flow's first and latest sample: when, and its counts.
    let mut seen: Vec<Option<[(Instant, Tally); 2]>> = vec![None; flows.len()];
    let start = Instant::now();
    while start.elapsed() < duration && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(SAMPLE_EVERY);
        let now = Now::system();
        // A failed dump is the netlink collector's status in the snapshot; sampling goes on.
        let _ = diag.dump_into(&mut engine, now);
        let snap = engine.tick(now);
        for (i, f) in flows.iter().enumerate() {
            let Some(s) = snap.sockets.iter().find(|s| s.record.local == f.local && s.record.peer == f.peer)
            else {
                continue;
            };
            let info = &s.record.tcp_info;
            let latest = (now.mono, Tally::of(info));
            seen[i] = Some([seen[i].map_or(latest, |[first, _]| first), latest]);
            let rtt_ms = info.srtt_us().map(|v| f64::from(v) / 1000.0);
            if let Some(ms) = rtt_ms {
                series[i].push((now.mono.saturating_duration_since(start).as_secs_f64(), ms));
            }
            live[i].rtt_ms = rtt_ms;
            live[i].rate_bits_per_sec = info.delivery_rate_bytes_per_sec().map(|b| b as f64 * 8.0);
        }
        on_tick(&Tick { snap: &snap, flows: &live, group, elapsed: start.elapsed(), total: duration });
    }
    for f in &flows {
        lab.stop_flow(f);
    }
    let mut results: Vec<FlowResult> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (elapsed, run, retrans) = match seen[i] {
                Some([(t0, a), (t1, b)]) => {
                    (t1.saturating_duration_since(t0), b.since(&a), b[Count::RetransSegs])
                }
                None => (Duration::ZERO, Tally::default(), 0),
            };
            let bytes = run[Count::BytesAcked];
            let r = FlowResult::from_series(&f.cc, std::mem::take(&mut series[i]), bytes, elapsed, retrans);
            FlowResult { retrans_ratio: run.retrans_ratio(), ..r }
        })
        .collect();
    scenario::set_shares(&mut results);
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_per_cc_multiply_each_group() {
        let bloat = Scenario::Bufferbloat.plan();
        assert_eq!(groups(&bloat, 1), [vec!["cubic"], vec!["bbr"]]);
        assert_eq!(groups(&bloat, 3), [vec!["cubic"; 3], vec!["bbr"; 3]]);
        let ab = groups(&Scenario::Ab.plan(), 2);
        assert_eq!(ab, [vec!["bbr", "bbr", "cubic", "cubic"]]);
        assert_eq!(group_name(&ab[0]), "bbr+cubic");
        assert_eq!(group_name(&groups(&bloat, 3)[0]), "cubic");
    }
}
