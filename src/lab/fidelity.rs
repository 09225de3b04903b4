//! How faithfully the lab emulates its path, measured with UDP probes through it: the one-way
//! delay against the configured delay, the bottleneck's rate over 10 ms windows, and the size of
//! the bursts that leave the bottleneck back to back. BBR's bandwidth estimate is the max of its
//! delivery-rate samples, so any burst the emulator adds inflates it (ARCHITECTURE.md, the lab).
//! The figures are pure functions of the arrivals; [`probe`] is the I/O edge.

use super::{Lab, LabError};
use bbrtop_collect::netns::{NetnsSpec, run_in};
use bbrtop_core::stats::percentile;
use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// One probe packet: when it was sent and when the kernel received it (ns of CLOCK_REALTIME, the
/// clock the kernel stamps with; a receiving thread's own clock reading would add its scheduling
/// delay, and turn packets it reads together into false trains) and its IP length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub sent_ns: u64,
    pub recv_ns: u64,
    pub ip_bytes: u32,
}

/// Nearest-rank percentiles of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(mut v: Vec<f64>) -> Option<Spread> {
        v.sort_by(f64::total_cmp);
        Some(Spread {
            p50: percentile(&v, 50.0)?,
            p95: percentile(&v, 95.0)?,
            p99: percentile(&v, 99.0)?,
            max: *v.last()?,
        })
    }
}

/// One-way delay less the configured delay, in ms, per packet.
pub fn delay_errors(arrivals: &[Arrival], one_way: Duration) -> Vec<f64> {
    let d = one_way.as_nanos() as f64;
    arrivals.iter().map(|a| (a.recv_ns.saturating_sub(a.sent_ns) as f64 - d) / 1e6).collect()
}

/// Busy periods: runs of arrivals with no gap longer than `gap_ns`.
fn periods(arrivals: &[Arrival], gap_ns: u64) -> Vec<&[Arrival]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=arrivals.len() {
        if i == arrivals.len() || arrivals[i].recv_ns.saturating_sub(arrivals[i - 1].recv_ns) > gap_ns {
            out.push(&arrivals[start..i]);
            start = i;
        }
    }
    out.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The rate delivered in each whole `window` inside each busy period, in bits per second, from
/// arrivals sorted by receive time. A period's first window is left out (it holds the burst the
/// bucket saved, counted by [`bursts`]) and so is its partial last one.
pub fn window_rates(arrivals: &[Arrival], window: Duration) -> Vec<f64> {
    let w = window.as_nanos() as u64;
    let mut out = Vec::new();
    for p in periods(arrivals, w) {
        let t0 = p[0].recv_ns;
        let n = (p[p.len() - 1].recv_ns - t0) / w;
        let mut bytes = vec![0u64; n as usize];
        for a in p {
            if let Some(b) = bytes.get_mut(((a.recv_ns - t0) / w) as usize) {
                *b += u64::from(a.ip_bytes);
            }
        }
        out.extend(bytes.iter().skip(1).map(|b| *b as f64 * 8.0 / window.as_secs_f64()));
    }
    out
}

/// Packets per train that left the bottleneck back to back: arrivals closer together than half
/// a packet's time at `rate` (sorted by receive time).
pub fn bursts(arrivals: &[Arrival], rate_bits_per_sec: u64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut run = 1u32;
    for pair in arrivals.windows(2) {
        let half_packet_ns = f64::from(pair[1].ip_bytes) * 8.0 / rate_bits_per_sec as f64 * 1e9 / 2.0;
        if ((pair[1].recv_ns.saturating_sub(pair[0].recv_ns)) as f64) < half_packet_ns {
            run += 1;
        } else {
            out.push(f64::from(run));
            run = 1;
        }
    }
    if !arrivals.is_empty() {
        out.push(f64::from(run));
    }
    out
}

/// The lab's path, measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Fidelity {
    pub rate_bits_per_sec: u64,
    pub one_way_ms: f64,
    pub tbf_burst_bytes: u32,
    /// Light load (no queue): one-way delay less the configured delay, ms.
    pub delay_error_ms: Option<Spread>,
    /// Overload in bursts: the bottleneck's rate over 10 ms windows, as a fraction of its rate.
    pub window_rate: Option<Spread>,
    /// Packets per back-to-back train leaving the bottleneck.
    pub burst_packets: Option<Spread>,
    /// Probes sent and received.
    pub sent: u64,
    pub received: u64,
}

/// UDP payload bytes for a 1500-byte IP packet.
const FULL: usize = 1472;
const HEADERS: u32 = 28;

/// Sends `count` probes of `payload` bytes from the lab's sender to its receiver: `burst`
/// back to back every `every`. Returns the arrivals, sorted by receive time.
fn send_probes(
    lab: &Lab,
    payload: usize,
    count: u64,
    burst: u64,
    every: Duration,
) -> Result<Vec<Arrival>, LabError> {
    let rx_ns = NetnsSpec(lab.receiver_netns().to_path_buf());
    let to_ip = lab.receiver_addr();
    let rx = run_in(&rx_ns, move || UdpSocket::bind(SocketAddr::new(to_ip, 0)))
        .map_err(|e| LabError::Collect(e.to_string()))??;
    rx.set_read_timeout(Some(Duration::from_millis(200)))?;
    stamp_arrivals(&rx)?;
    let to = rx.local_addr()?;
    let receiver = std::thread::Builder::new().name("bbrtop-fidelity-rx".into()).spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        // Until 200 ms pass with nothing (the sender has finished and the line emptied).
        while let Ok((n, recv_ns)) = recv_stamped(&rx, &mut buf) {
            if n >= 16 {
                let sent_ns = u64::from_le_bytes(buf[8..16].try_into().unwrap_or_default());
                got.push(Arrival { sent_ns, recv_ns, ip_bytes: n as u32 + HEADERS });
            }
        }
        got
    })?;
    let tx_ns = NetnsSpec(lab.sender_netns().to_path_buf());
    let from = SocketAddr::new(lab.sender_addr(), 0);
    let sent = run_in(&tx_ns, move || -> std::io::Result<u64> {
        let s = UdpSocket::bind(from)?;
        let mut p = vec![0u8; payload.max(16)];
        let mut sent = 0;
        let start = Instant::now();
        for seq in 0..count {
            if seq % burst == 0 {
                let due = start + every * (seq / burst) as u32;
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            p[..8].copy_from_slice(&seq.to_le_bytes());
            p[8..16].copy_from_slice(&realtime_ns().to_le_bytes());
            sent += u64::from(s.send_to(&p, to).is_ok());
        }
        Ok(sent)
    })
    .map_err(|e| LabError::Collect(e.to_string()))??;
    let mut got = receiver.join().map_err(|_| LabError::Collect("the probe receiver panicked".into()))?;
    if got.len() as u64 > sent {
        return Err(LabError::Collect("more probes received than sent".into()));
    }
    got.sort_by_key(|a| a.recv_ns);
    Ok(got)
}

pub(super) fn realtime_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Asks the kernel to stamp each datagram with its arrival time (SO_TIMESTAMPNS).
pub(super) fn stamp_arrivals(s: &UdpSocket) -> std::io::Result<()> {
    let on: libc::c_int = 1;
    #[allow(unsafe_code)]
    // SAFETY: an int option, its size given; the fd is owned by `s` for the call.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

/// One datagram and the kernel's arrival stamp (ns of CLOCK_REALTIME).
pub(super) fn recv_stamped(s: &UdpSocket, buf: &mut [u8]) -> std::io::Result<(usize, u64)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one SCM_TIMESTAMPNS (a timespec) with its header, aligned.
    let mut control = [0u64; 8];
    #[allow(unsafe_code)]
    // SAFETY: msghdr is plain data; all-zero is a valid empty one, filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    #[allow(unsafe_code)]
    // SAFETY: msg points at `iov` (into `buf`) and `control`, which outlive the call.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut stamp = None;
    #[allow(unsafe_code)]
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within msg_controllen;
    // a timestamp's data is one timespec, read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp.unwrap_or_else(realtime_ns)))
}

/// Measures the lab's path: light probes for the delay, then 1.5x the rate for 400 ms, four
/// times, with the line left to empty in between (so the queue builds and drains and the bucket
/// refills, as it does under BBR's probing).
pub fn probe(
    lab: &Lab,
    rate_bits_per_sec: u64,
    one_way: Duration,
    tbf_burst: u32,
) -> Result<Fidelity, LabError> {
    let light = send_probes(lab, 64, 400, 1, Duration::from_millis(5))?;
    // Packets per 10 ms at 1.5x the rate, sent 10 ms apart for 400 ms; each round ends when
    // nothing has arrived for 200 ms.
    let per_10ms = (rate_bits_per_sec as f64 * 1.5 / 8.0 / 1500.0 / 100.0).ceil().max(1.0) as u64;
    let mut heavy = Vec::new();
    let mut sent = 400;
    for _ in 0..4 {
        let a = send_probes(lab, FULL, per_10ms * 40, per_10ms, Duration::from_millis(10))?;
        sent += per_10ms * 40;
        heavy.push(a);
    }
    let received = light.len() as u64 + heavy.iter().map(|a| a.len() as u64).sum::<u64>();
    let rate = rate_bits_per_sec as f64;
    Ok(Fidelity {
        rate_bits_per_sec,
        one_way_ms: one_way.as_secs_f64() * 1e3,
        tbf_burst_bytes: tbf_burst,
        delay_error_ms: Spread::of(delay_errors(&light, one_way)),
        window_rate: Spread::of(
            heavy.iter().flat_map(|a| window_rates(a, Duration::from_millis(10))).map(|r| r / rate).collect(),
        ),
        burst_packets: Spread::of(heavy.iter().flat_map(|a| bursts(a, rate_bits_per_sec)).collect()),
        sent,
        received,
    })
}

/// The delay error (ms) with the path loaded at `load` of its rate for `secs`: full-size probes in
/// batches every millisecond, so the queue stays short and what is left is the emulator's error.
pub fn delay_under_load(
    lab: &Lab,
    rate_bits_per_sec: u64,
    one_way: Duration,
    load: f64,
    secs: u64,
) -> Result<(Option<Spread>, f64), LabError> {
    let per_ms = (rate_bits_per_sec as f64 * load / 8.0 / 1500.0 / 1000.0).max(1.0) as u64;
    let count = per_ms * 1000 * secs;
    let a = send_probes(lab, FULL, count, per_ms, Duration::from_millis(1))?;
    let delivered = a.len() as f64 / count as f64;
    Ok((Spread::of(delay_errors(&a, one_way)), delivered))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(sent_us: u64, recv_us: u64) -> Arrival {
        Arrival { sent_ns: sent_us * 1000, recv_ns: recv_us * 1000, ip_bytes: 1500 }
    }

    #[test]
    fn delay_error_is_against_the_configured_delay() {
        let a = [at(0, 20_100), at(1000, 21_000), at(2000, 23_000)];
        let e = delay_errors(&a, Duration::from_millis(20));
        assert_eq!(e, [0.1, 0.0, 1.0]);
        assert_eq!(Spread::of(e), Some(Spread { p50: 0.1, p95: 1.0, p99: 1.0, max: 1.0 }));
        assert_eq!(Spread::of(vec![]), None);
    }

    #[test]
    fn back_to_back_trains() {
        // 10 Mbit/s: a 1500-byte packet takes 1.2 ms; three arrive together, then paced ones.
        let a = [at(0, 0), at(0, 10), at(0, 20), at(0, 1220), at(0, 2420)];
        assert_eq!(bursts(&a, 10_000_000), [3.0, 1.0, 1.0]);
        assert!(bursts(&[], 10_000_000).is_empty());
    }

    #[test]
    fn rates_over_windows_inside_busy_periods() {
        // 1500 bytes every 1.2 ms is 10 Mbit/s, for 100 ms; then a pause; then 50 ms more.
        let mut a: Vec<Arrival> = (0..84).map(|i| at(0, i * 1200)).collect();
        a.extend((0..42).map(|i| at(0, 400_000 + i * 1200)));
        let r = window_rates(&a, Duration::from_millis(10));
        // 100 ms → 9 whole windows, the first left out → 8; 50 ms → 4 whole, less the first → 3.
        assert_eq!(r.len(), 8 + 3, "{r:?}");
        for v in r {
            assert!((9.0e6..=11.0e6).contains(&v), "{v}");
        }
    }
}
