//! The BPF collector as a poller [`Source`]: each poll drains the ring buffer without blocking
//! (as its drain thread does between polls, `drain.rs`) and turns events into engine updates.
//! Dropping it drops the links, which detaches.

use super::BpfStatus;
use super::clock::{instant_of, ktime_now_ns};
use super::drain::Drain;
use super::event::{Close, Event};
use super::loader::Loaded;
use super::refill::Refill;
use crate::every::Reconcile;
use bbrtop_core::model::Phase;
use bbrtop_core::model::derive::rtt_sample;
use bbrtop_core::seam::{BpfPoll, Cause, Reason};
use bbrtop_core::seam::{Feed, Source};
use bbrtop_core::seam::{Response, Update};
use bbrtop_core::{
    model::{ClosedBbr, ClosedFlow},
    seam::KernelUpdate,
};
use std::time::{Duration, Instant, SystemTime};

pub struct Collector {
    loaded: Loaded,
    /// Ring-buffer records that did not decode, since start.
    undecodable_total: u64,
    /// Why the walk does not run, if it does not (its own source reads it).
    walk_off: Option<Reason>,
    /// Why reloading for tcp_bbr failed, once it did (it is not tried again).
    reload_failed: Option<Reason>,
    /// Events the ring had no room for may be closes, and a close run the kernel skipped is a
    /// close record that never was: netlink then reconciles at once.
    reconcile: Reconcile,
    lost_seen: u64,
    closes_skipped_seen: u64,
    /// Drains the ring between polls; `Err`: why it could not start (the polls alone drain it).
    drain: Result<Drain, String>,
    /// Without the walk (whose reads run it), the refill pass that sends the responses quiet
    /// sockets hold, run before each poll's drain; `Err`: why it could not be had (each poll
    /// says so: those responses then wait for their socket's next response or close).
    pass: Result<Option<Refill>, String>,
}

impl Collector {
    pub fn new(loaded: Loaded, walk_off: Option<Reason>, reconcile: Reconcile) -> Collector {
        let drain = start_drain(&loaded);
        let pass = own_pass(&loaded, walk_off.is_some());
        Collector {
            drain,
            pass,
            loaded,
            undecodable_total: 0,
            walk_off,
            reload_failed: None,
            reconcile,
            lost_seen: 0,
            closes_skipped_seen: 0,
        }
    }

    /// tcp_bbr loaded after the programs: load them again against its BTF, once.
    fn follow_bbr_module(&mut self) {
        if self.reload_failed.is_some()
            || !self.loaded.awaits_bbr_module()
            || !crate::host::bbr_module_loaded()
        {
            return;
        }
        // The drain reads the old programs' reader of the ring: it stops before they go, and
        // starts again on the new one's (the same map).
        self.drain = Err("reloading".into());
        let reloaded = self.loaded.reload();
        self.drain = start_drain(&self.loaded);
        self.pass = own_pass(&self.loaded, self.walk_off.is_some());
        if let Err(e) = reloaded {
            self.reload_failed = Some(Reason::new(
                Cause::BbrStateOff,
                format!(
                    "BBR state off: tcp_bbr loaded after bbrtop, and loading the programs again failed: {e}"
                ),
            ));
        }
    }

    /// The status as of now: what the programs read of `struct bbr` moves as BBR sockets come.
    fn status(&self) -> (BpfStatus, Option<Reason>) {
        let mut status = self.loaded.status();
        let bbr = self.reload_failed.clone().or_else(|| self.loaded.bbr_limit());
        status.judge(bbr.as_ref(), self.walk_off.as_ref());
        // One limit carries the first cause; the line names them all.
        let limit = status.limits.first().map(|first| {
            let detail = status.limits.iter().map(|r| r.detail.as_str()).collect::<Vec<_>>().join("; ");
            Reason::new(first.cause, detail)
        });
        (status, limit)
    }
}

/// Hands the engine what one record says: one update, or one for each response of a batch.
fn apply(feed: &mut dyn Feed, e: Event, ktime_now: u64, now: Instant, wall: SystemTime) {
    let update = match e {
        Event::InflationStarted(i) => Update::Kernel(KernelUpdate::Inflation {
            cookie: i.h.cookie,
            netns: i.h.netns,
            onset: Some(instant_of(i.onset_ns, ktime_now, now)),
            peak_ratio: i.peak_ratio,
        }),
        Event::InflationEnded(i) => Update::Kernel(KernelUpdate::Inflation {
            cookie: i.h.cookie,
            netns: i.h.netns,
            onset: None,
            peak_ratio: i.peak_ratio,
        }),
        Event::Phase(p) => Update::Kernel(KernelUpdate::Phase {
            cookie: p.h.cookie,
            netns: p.h.netns,
            bbr: p.bbr,
            entered: p.entered,
        }),
        Event::Close(c) => Update::Closed(Box::new(closed_flow(*c, ktime_now, wall))),
        Event::Responses(rs) => {
            for r in rs {
                feed.apply(Update::Response(Response {
                    served: r.served(),
                    cookie: r.h.cookie,
                    netns: r.h.netns,
                    cc: r.cc,
                    peer: r.peer,
                    bytes: u64::from(r.bytes),
                    took: Duration::from_nanos(r.h.ts_ns.saturating_sub(r.start_ns)),
                }));
            }
            return;
        }
    };
    feed.apply(update);
}

fn closed_flow(c: Close, ktime_now: u64, wall: SystemTime) -> ClosedFlow {
    ClosedFlow {
        seq: 0,
        cookie: c.h.cookie,
        netns: c.h.netns,
        closed_at: wall - Duration::from_nanos(ktime_now.saturating_sub(c.h.ts_ns)),
        lifetime_seconds: (c.lifetime_ns > 0).then(|| c.lifetime_ns as f64 / 1e9),
        bbr: c.bbr.map(|(mode, min_rtt_us, bw)| ClosedBbr {
            mode: Phase::from_kernel(mode, 0, false).map_or("unknown", |p| p.mode_name()),
            min_rtt_us: rtt_sample(min_rtt_us).unwrap_or(0),
            bw_bytes_per_sec: bw,
        }),
        cc: c.cc,
        local: c.local,
        peer: c.peer,
        counts: c.counts,
        srtt_us: c.srtt_us,
        // A socket closed before its first RTT sample (a listener) keeps the minimum's ~0.
        min_rtt_us: rtt_sample(c.min_rtt_us).unwrap_or(0),
        delivery_rate_bytes_per_sec: c.delivery_rate,
        peak_inflation_ratio: c.peak_ratio,
    }
}

impl Source for Collector {
    fn poll(&mut self, feed: &mut dyn Feed) {
        self.follow_bbr_module();
        let passed = match &mut self.pass {
            Ok(pass) => pass.as_mut().map_or(Ok(()), Refill::run_if_behind),
            Err(e) => Err(e.clone()),
        };
        let consumed = passed.and(self.loaded.consume());
        let (now, wall, know) = (Instant::now(), SystemTime::now(), ktime_now_ns());
        let events = self.loaded.take_events();
        let mut undecodable = 0;
        for e in events {
            match e {
                Ok(e) => apply(feed, e, know, now, wall),
                Err(_) => undecodable += 1,
            }
        }
        self.undecodable_total += undecodable;
        let lost = self.loaded.lost_total();
        self.reconcile.on_growth(&mut self.lost_seen, lost);
        let misses = self.loaded.recursion_misses();
        let closes_skipped = misses.get("tcp_destroy_sock").copied().unwrap_or(0);
        self.reconcile.on_growth(&mut self.closes_skipped_seen, closes_skipped);
        let (status, limit) = self.status();
        feed.apply(Update::BpfStatus(BpfPoll {
            at: Some(wall),
            programs_attached: self.loaded.links.len() as u32,
            judges_inflation: self.loaded.links.iter().any(|(name, _)| *name == "tcp_probe"),
            ringbuf_lost_total: lost,
            undecodable_events_total: self.undecodable_total,
            recursion_misses_total: misses,
            failure: poll_failure(consumed, undecodable, self.drain.as_ref().err()),
            limit,
            features: status.features,
        }));
    }
}

/// The refill pass the collector runs itself: where no walk runs it, and it loaded.
fn own_pass(loaded: &Loaded, walk_off: bool) -> Result<Option<Refill>, String> {
    match walk_off {
        true => {
            loaded.refill_pass().map_err(|e| format!("no refill pass, quiet sockets' responses wait: {e}"))
        }
        false => Ok(None),
    }
}

/// The drain thread for the programs' ring, or why it could not start.
fn start_drain(loaded: &Loaded) -> Result<Drain, String> {
    Drain::start(std::sync::Arc::clone(&loaded.ringbuf)).map_err(|e| format!("no drain thread: {e}"))
}

/// What went wrong in one poll, if anything: the count of bad records goes in a counter, and a
/// later clean poll clears the verdict.
fn poll_failure(
    consumed: Result<(), String>,
    undecodable: u64,
    drain_off: Option<&String>,
) -> Option<Reason> {
    let ring = |what: String| Some(Reason::new(Cause::RingBuffer, format!("ring buffer: {what}")));
    match (consumed, drain_off) {
        (Err(e), _) => ring(e),
        (Ok(()), Some(e)) => ring(format!("drained only at polls: {e}")),
        (Ok(()), None) if undecodable > 0 => Some(Reason::new(
            Cause::UndecodableEvents,
            format!("{undecodable} undecodable events in the last poll"),
        )),
        (Ok(()), None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bad_record_degrades_one_poll_not_the_rest() {
        let bad = poll_failure(Ok(()), 1, None).expect("a poll with a bad record is degraded");
        assert_eq!(bad.cause, Cause::UndecodableEvents);
        assert_eq!(poll_failure(Ok(()), 0, None), None, "the next clean poll recovers");
        assert_eq!(poll_failure(Err("EIO".into()), 0, None).map(|r| r.cause), Some(Cause::RingBuffer));
        let undrained = poll_failure(Ok(()), 0, Some(&"EMFILE".to_string()));
        assert_eq!(undrained.map(|r| r.cause), Some(Cause::RingBuffer), "a ring left to the polls alone");
    }

    /// A listener closes with its minimums at ~0, never sampled: the record says 0 (none), not
    /// 4294.97 s, and a sampled minimum passes as it is.
    #[test]
    fn a_closed_listener_has_no_min_rtt() {
        let close = |min_rtt_us| Close {
            h: super::super::event::Header { netns: 1, cookie: 7, ts_ns: 10 },
            local: "10.0.0.1:80".parse().unwrap(),
            peer: "0.0.0.0:0".parse().unwrap(),
            cc: "bbr".into(),
            lifetime_ns: 0,
            counts: Default::default(),
            srtt_us: 0,
            min_rtt_us,
            delivery_rate: None,
            mss: 536,
            bbr: Some((0, min_rtt_us, 0)),
            peak_ratio: 0.0,
            rtt_samples: 0,
            inflations: 0,
        };
        let f = closed_flow(close(u32::MAX), 10, SystemTime::UNIX_EPOCH);
        assert_eq!((f.min_rtt_us, f.bbr.map(|b| b.min_rtt_us)), (0, Some(0)));
        let f = closed_flow(close(40_000), 10, SystemTime::UNIX_EPOCH);
        assert_eq!((f.min_rtt_us, f.bbr.map(|b| b.min_rtt_us)), (40_000, Some(40_000)));
    }
}
