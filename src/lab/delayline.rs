//! A userspace delay line: propagation delay for kernels without netem.
//!
//! Two TUN devices, one in each namespace, carry IP packets to this process; each packet is held
//! for the one-way delay and written out of the other device. The shaping (tbf) and loss (tc BPF)
//! stay in the kernel, on the sender's TUN device, where netem's would be.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Packets held at once per direction before the line drops (a line that is never the bottleneck).
const MAX_HELD: usize = 200_000;
const MTU: usize = 65_536;

/// A running delay line. Dropping it stops the threads and closes the devices (the kernel then
/// removes them).
pub struct DelayLine {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    dropped: Arc<AtomicU64>,
}

impl DelayLine {
    /// Creates TUN `tun_a` in the namespace at `ns_a` and `tun_b` in `ns_b` (the caller assigns
    /// addresses and routes), and forwards between them after `one_way` in each direction.
    pub fn start(
        ns_a: &Path,
        tun_a: &str,
        ns_b: &Path,
        tun_b: &str,
        one_way: Duration,
    ) -> std::io::Result<DelayLine> {
        let a = open_tun_in(ns_a, tun_a)?;
        let b = open_tun_in(ns_b, tun_b)?;
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for (from, to, name) in
            [(a.try_clone()?, b.try_clone()?, "bbrtop-delay-ab"), (b, a, "bbrtop-delay-ba")]
        {
            let (s, d) = (Arc::clone(&stop), Arc::clone(&dropped));
            threads.push(
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn(move || forward(from, to, one_way, &s, &d))?,
            );
        }
        Ok(DelayLine { stop, threads, dropped })
    }

    /// Packets the line itself dropped because it held too many.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Reads packets from `from`, and writes each to `to` once it is `delay` old, one at a time at
/// its own due time: a line that released what fell due in the last millisecond together would
/// send bursts (ACK compression, on the return path) that BBR reads as bandwidth.
fn forward(mut from: File, mut to: File, delay: Duration, stop: &AtomicBool, dropped: &AtomicU64) {
    precise_timers();
    let mut held: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buf = vec![0u8; MTU];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while held.front().is_some_and(|(due, _)| *due <= now) {
            if let Some((_, p)) = held.pop_front() {
                // A full or vanished device drops the packet, as a wire would.
                let _ = to.write(&p);
            }
        }
        // Wait for a packet, or until the next one is due; 20 ms at most so that stop is prompt.
        let wait =
            held.front().map_or(Duration::from_millis(20), |(due, _)| due.saturating_duration_since(now));
        if !readable(&from, wait.min(Duration::from_millis(20))) {
            continue;
        }
        match from.read(&mut buf) {
            Ok(n) if n > 0 => {
                if held.len() >= MAX_HELD {
                    dropped.fetch_add(1, Ordering::Relaxed);
                } else {
                    held.push_back((Instant::now() + delay, buf[..n].to_vec()));
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// This thread's timers fire when asked, not up to the default 50 µs later (its timer slack).
fn precise_timers() {
    #[allow(unsafe_code)]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches only this thread.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Whether `f` has data within `timeout`, to the nanosecond (ppoll: poll's milliseconds would
/// hold a packet due in 0.2 ms for a whole millisecond).
fn readable(f: &File, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    #[allow(unsafe_code)]
    // SAFETY: one valid pollfd and a timespec on the stack, count 1, no signal mask; the fd is
    // owned by `f` for the call.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    rc > 0 && pfd.revents & libc::POLLIN != 0
}

/// `struct ifreq` as TUNSETIFF reads it: a name and the flags.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Opens a TUN device named `name` inside the namespace at `ns` (a device belongs to the
/// namespace of the thread that creates it).
fn open_tun_in(ns: &Path, name: &str) -> std::io::Result<File> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(std::io::Error::other(format!("bad interface name {name:?}")));
    }
    let spec = bbrtop_collect::netns::NetnsSpec(ns.to_path_buf());
    let name = name.to_string();
    bbrtop_collect::netns::run_in(&spec, move || open_tun(&name)).map_err(std::io::Error::other)?
}

fn open_tun(name: &str) -> std::io::Result<File> {
    let f = std::fs::OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    #[allow(unsafe_code)]
    // SAFETY: TUNSETIFF reads an ifreq-sized struct that lives on the stack for the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), libc::TUNSETIFF, &mut req) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(f)
}
