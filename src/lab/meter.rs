//! The lab's path measured while a run uses it, passively enough not to change the run: a small
//! UDP probe every 20 ms on the return path (receiver to sender: the delay line and the router,
//! and none of the flows' queue, which is on the way out), stamped on send and by the kernel on
//! arrival, and the bottleneck's counters read with `tc` every second. [`super::path_check`]
//! judges what it gathered.

use super::fidelity::{Arrival, realtime_ns, recv_stamped, stamp_arrivals};
use super::path_check::{Measured, QdiscSample, parse_tbf};
use super::{Lab, LabError};
use bbrtop_collect::netns::{NetnsSpec, run_in};
use std::net::{SocketAddr, UdpSocket};
use std::ops::ControlFlow;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const PROBE_EVERY: Duration = Duration::from_millis(20);
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// How often a waiting thread checks its stop flag.
const TICK: Duration = Duration::from_millis(100);
const HEADERS: u32 = 28;

/// A running meter; [`Meter::finish`] stops it and hands over what it gathered. Dropped
/// unfinished (a run that failed), it stops its threads and waits for them.
pub struct Meter {
    stop: Arc<AtomicBool>,
    threads: Option<Threads>,
    /// Probes sent within this long before the stop may still be on their way: left out.
    in_flight: Duration,
}

struct Threads {
    /// The probes' send times (ns of CLOCK_REALTIME).
    sender: JoinHandle<Vec<u64>>,
    receiver: JoinHandle<Vec<Arrival>>,
    sampler: JoinHandle<Vec<QdiscSample>>,
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.stop();
        if let Some(t) = self.threads.take() {
            let _ = (t.sender.join(), t.receiver.join(), t.sampler.join());
        }
    }
}

fn collect(e: impl std::fmt::Display) -> LabError {
    LabError::Collect(e.to_string())
}

impl Meter {
    pub fn start(lab: &Lab) -> Result<Meter, LabError> {
        let stop = Arc::new(AtomicBool::new(false));
        let to_ip = lab.sender_addr();
        let rx = run_in(&NetnsSpec(lab.sender_netns().to_path_buf()), move || {
            UdpSocket::bind(SocketAddr::new(to_ip, 0))
        })
        .map_err(collect)??;
        rx.set_read_timeout(Some(TICK))?;
        stamp_arrivals(&rx)?;
        let to = rx.local_addr()?;
        let from = SocketAddr::new(lab.receiver_addr(), 0);
        let tx = run_in(&NetnsSpec(lab.receiver_netns().to_path_buf()), move || UdpSocket::bind(from))
            .map_err(collect)??;
        let spawn = |name: &str| std::thread::Builder::new().name(name.into());
        let s = Arc::clone(&stop);
        let sender = spawn("bbrtop-meter-tx").spawn(move || send(&tx, to, &s))?;
        let s = Arc::clone(&stop);
        let receiver = spawn("bbrtop-meter-rx").spawn(move || receive(&rx, &s))?;
        let (s, router) = (Arc::clone(&stop), lab.router_name().to_string());
        let sampler = spawn("bbrtop-meter-tc").spawn(move || sample(&router, &s))?;
        let in_flight = lab.return_delay() + Duration::from_millis(200);
        Ok(Meter { stop, threads: Some(Threads { sender, receiver, sampler }), in_flight })
    }

    /// Stops probing and sampling (several meters stop together, then each is finished).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Stops the meter; the probes still in flight when it stopped are left out of both counts.
    pub fn finish(mut self, lab: &Lab) -> Measured {
        self.stop();
        let Some(t) = self.threads.take() else { return Measured::default() };
        let sent = t.sender.join().unwrap_or_default();
        let mut arrivals = t.receiver.join().unwrap_or_default();
        // The receiver stopped no earlier than the last probe was sent.
        let cutoff = sent.last().map_or(0, |t| t.saturating_sub(self.in_flight.as_nanos() as u64));
        arrivals.retain(|a| a.sent_ns <= cutoff);
        arrivals.sort_by_key(|a| a.recv_ns);
        Measured {
            sent: sent.iter().filter(|t| **t <= cutoff).count() as u64,
            arrivals,
            samples: t.sampler.join().unwrap_or_default(),
            line_dropped: lab.line_dropped(),
        }
    }
}

/// A probe every [`PROBE_EVERY`] until stopped: its sequence number and send time.
fn send(s: &UdpSocket, to: SocketAddr, stop: &AtomicBool) -> Vec<u64> {
    let mut sent = Vec::new();
    let mut p = [0u8; 64];
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let due = start + PROBE_EVERY * sent.len() as u32;
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let now = realtime_ns();
        p[..8].copy_from_slice(&(sent.len() as u64).to_le_bytes());
        p[8..16].copy_from_slice(&now.to_le_bytes());
        if s.send_to(&p, to).is_ok() {
            sent.push(now);
        }
    }
    sent
}

/// The probes' arrivals, stamped by the kernel, until stopped.
fn receive(s: &UdpSocket, stop: &AtomicBool) -> Vec<Arrival> {
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !stop.load(Ordering::Relaxed) {
        if let Ok((n, recv_ns)) = recv_stamped(s, &mut buf)
            && n >= 16
        {
            let sent_ns = u64::from_le_bytes(buf[8..16].try_into().unwrap_or_default());
            got.push(Arrival { sent_ns, recv_ns, ip_bytes: n as u32 + HEADERS });
        }
    }
    got
}

/// The bottleneck's counters every [`SAMPLE_EVERY`] until stopped (a failed read is a gap).
fn sample(router: &str, stop: &AtomicBool) -> Vec<QdiscSample> {
    let mut out = Vec::new();
    let start = Instant::now();
    crate::worker::run(
        SAMPLE_EVERY,
        || stop.load(Ordering::Relaxed),
        |_| {
            let before = start.elapsed().as_secs_f64();
            let o =
                Command::new("tc").args(["-n", router, "-s", "-j", "qdisc", "show", "dev", "lan0"]).output();
            // tc read the counters some time between its start and its end: the midpoint.
            let at = (before + start.elapsed().as_secs_f64()) / 2.0;
            if let Some(s) = o.ok().and_then(|o| parse_tbf(&String::from_utf8_lossy(&o.stdout), at)) {
                out.push(s);
            }
            ControlFlow::Continue(())
        },
    );
    out
}
