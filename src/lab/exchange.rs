//! Request/response traffic on one keep-alive connection, the guides' edge workload (an API
//! answering 15 KB JSON): a server in the sender namespace answers each request with as many
//! bytes as it asks for, and a client in the receiver namespace asks every `interval` (or at
//! random moments `interval` apart on average, as users do) and measures each response from its
//! request to its last byte. The responses cross the lab's
//! bottleneck; the client acks them as any receiver does, with delayed ACKs on.
//!
//! A request is the response's size, 8 bytes big-endian. Every loop checks a stop flag and every
//! blocking call has a timeout, so stopping is always prompt.

use super::LabError;
use super::cc::set_congestion;
use super::flows::{listening, spawn};
use bbrtop_collect::netns::{NetnsSpec, run_in};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a blocked call waits before checking the stop flag.
const TICK: Duration = Duration::from_millis(100);
/// The largest response a request may ask for.
const MAX_RESPONSE: u64 = 64 << 20;

/// What to exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExchangeConfig {
    /// Bytes per response.
    pub response_bytes: u64,
    /// Sizes asked for in turn instead, when not empty (a mix, as `lab rollout` asks).
    pub mix: &'static [u64],
    /// From one request to the next (on average, for [`Arrivals::Random`]).
    pub interval: Duration,
    /// When the client asks.
    pub arrivals: Arrivals,
    /// How long the server works on a request before it answers, as an API does. Longer than
    /// the delayed-ACK timer (40 ms), the request's ACK leaves alone, late: the client's RTT
    /// sample then holds the server's work.
    pub think: Duration,
}

impl Default for ExchangeConfig {
    /// The edge guide's average: 15 KB, once a second, after 50 ms of work.
    fn default() -> Self {
        ExchangeConfig {
            response_bytes: 15_000,
            mix: &[],
            interval: Duration::from_secs(1),
            arrivals: Arrivals::Clock,
            think: Duration::from_millis(50),
        }
    }
}

/// When a client asks for its next response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// Every `interval`, on a clock: a poller's or a test's requests.
    Clock,
    /// At random, the gaps exponential with `interval` as their mean (a Poisson process): the
    /// requests of users, who act when they act. Connections never ask in step, some ask twice
    /// in quick succession, and some sit idle for several intervals.
    Random,
}

impl Arrivals {
    /// The gap before the next request; `uniform` is drawn from [0, 1).
    fn gap(self, interval: Duration, uniform: f64) -> Duration {
        match self {
            Arrivals::Clock => interval,
            Arrivals::Random => interval.mul_f64(-(1.0 - uniform).ln()),
        }
    }
}

/// A running exchange; dropping it stops both ends.
pub struct Exchange {
    /// The server's end of the connection: its local address is the server's, its peer the
    /// client's (as bbrtop, watching the sender namespace, lists it; the client's end, in the
    /// receiver namespace, is the other way round).
    pub server_local: SocketAddr,
    pub server_peer: SocketAddr,
    stop: Arc<AtomicBool>,
    times: Arc<Mutex<Vec<Timed>>>,
    threads: Vec<JoinHandle<()>>,
}

impl Exchange {
    /// Starts the server in `server_ns` on `server_addr` (port 0: any) with congestion control
    /// `cc`, connects the client from `client_ns`, and starts asking.
    pub fn start(
        server_ns: &NetnsSpec,
        server_addr: SocketAddr,
        client_ns: &NetnsSpec,
        cc: &str,
        cfg: ExchangeConfig,
    ) -> Result<Exchange, LabError> {
        let listener = run_in(server_ns, move || listening(server_addr, 1).map(TcpListener::from))
            .map_err(collect)??;
        let to = listener.local_addr()?;
        let client = run_in(client_ns, move || TcpStream::connect_timeout(&to, Duration::from_secs(5)))
            .map_err(collect)??;
        let (server, _) = accept(&listener)?;
        set_congestion(&server, cc).map_err(|e| match e.kind() {
            ErrorKind::NotFound => LabError::NoCc(cc.to_string()),
            _ => LabError::Io(e),
        })?;
        let (server_local, server_peer) = (server.local_addr()?, server.peer_addr()?);
        let stop = Arc::new(AtomicBool::new(false));
        let times = Arc::new(Mutex::new(Vec::new()));
        let (s1, s2, t) = (Arc::clone(&stop), Arc::clone(&stop), Arc::clone(&times));
        let threads = vec![
            spawn("bbrtop-lab-serve", move || serve(server, cfg.think, &s1))?,
            spawn("bbrtop-lab-ask", move || ask(client, cfg, &s2, &t))?,
        ];
        Ok(Exchange { server_local, server_peer, stop, times, threads })
    }

    /// Each response's time so far, as the client measured it: from writing its request to
    /// reading its last byte.
    pub fn times(&self) -> Vec<Duration> {
        self.times.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|t| t.took).collect()
    }

    /// The times of the responses whose last byte came in `from..until`: a window another clock
    /// (the kernel's, counting what ended between two polls) can count alike.
    pub fn times_between(&self, from: Instant, until: Instant) -> Vec<Duration> {
        let times = self.times.lock().unwrap_or_else(|e| e.into_inner());
        times.iter().filter(|t| (from..until).contains(&t.ended)).map(|t| t.took).collect()
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn collect(e: impl std::fmt::Display) -> LabError {
    LabError::Collect(e.to_string())
}

/// The client's connection, accepted within five seconds.
fn accept(l: &TcpListener) -> Result<(TcpStream, SocketAddr), LabError> {
    l.set_nonblocking(true)?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match l.accept() {
            Ok((s, a)) => {
                s.set_nonblocking(false)?;
                return Ok((s, a));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn transient(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// Reads exactly `buf.len()` bytes, checking the stop flag at every timeout; false if stopped
/// or the connection ended.
fn read_all(s: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> bool {
    let mut got = 0;
    while got < buf.len() {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        match s.read(&mut buf[got..]) {
            Ok(0) => return false,
            Ok(n) => got += n,
            Err(e) if transient(&e) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Writes all of `buf`, checking the stop flag at every timeout; false if stopped or failed.
fn write_all(s: &mut TcpStream, mut buf: &[u8], stop: &AtomicBool) -> bool {
    while !buf.is_empty() {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        match s.write(buf) {
            Ok(0) => return false,
            Ok(n) => buf = &buf[n..],
            Err(e) if transient(&e) => {}
            Err(_) => return false,
        }
    }
    true
}

/// The server: each request's size in bytes, answered after `think`.
fn serve(mut s: TcpStream, think: Duration, stop: &AtomicBool) {
    let _ = s.set_read_timeout(Some(TICK));
    let _ = s.set_write_timeout(Some(TICK));
    let body = vec![0x7bu8; 256 * 1024];
    let mut req = [0u8; 8];
    while read_all(&mut s, &mut req, stop) {
        std::thread::sleep(think);
        let mut left = u64::from_be_bytes(req).min(MAX_RESPONSE);
        while left > 0 {
            let n = left.min(body.len() as u64) as usize;
            if !write_all(&mut s, &body[..n], stop) {
                return;
            }
            left -= n as u64;
        }
    }
}

/// One response as the client timed it.
#[derive(Clone, Copy, Debug)]
struct Timed {
    ended: Instant,
    took: Duration,
}

/// The client: a request every `interval` or at random (or as soon as the last response is in,
/// if that took longer), each response timed.
fn ask(mut s: TcpStream, cfg: ExchangeConfig, stop: &AtomicBool, times: &Mutex<Vec<Timed>>) {
    let _ = s.set_read_timeout(Some(TICK));
    let _ = s.set_write_timeout(Some(TICK));
    let sizes: &[u64] = if cfg.mix.is_empty() { std::slice::from_ref(&cfg.response_bytes) } else { cfg.mix };
    let largest = sizes.iter().copied().max().unwrap_or(0).min(MAX_RESPONSE);
    let mut buf = vec![0u8; largest as usize];
    let mut turn = sizes.iter().copied().cycle();
    let mut rng = fastrand::Rng::new();
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(TICK));
            continue;
        }
        next = now + cfg.arrivals.gap(cfg.interval, rng.f64());
        let size = turn.next().unwrap_or(0).min(largest);
        let asked = Instant::now();
        if !write_all(&mut s, &size.to_be_bytes(), stop) || !read_all(&mut s, &mut buf[..size as usize], stop)
        {
            return;
        }
        let ended = Instant::now();
        times.lock().unwrap_or_else(|e| e.into_inner()).push(Timed { ended, took: ended - asked });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random gaps are exponential with the interval as their mean: their mean and the share
    /// past the mean (e^-1) come out, and the clock's gap is the interval itself.
    #[test]
    fn random_arrivals_are_exponential_around_the_interval() {
        let interval = Duration::from_millis(250);
        let mut rng = fastrand::Rng::with_seed(7);
        let gaps: Vec<f64> =
            (0..20_000).map(|_| Arrivals::Random.gap(interval, rng.f64()).as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let past = gaps.iter().filter(|g| **g > 0.25).count() as f64 / gaps.len() as f64;
        assert!((mean - 0.25).abs() < 0.01, "{mean}");
        assert!((past - (-1f64).exp()).abs() < 0.01, "{past}");
        assert_eq!(Arrivals::Clock.gap(interval, 0.9), interval);
        assert_eq!(Arrivals::Random.gap(interval, 0.0), Duration::ZERO);
    }
}
