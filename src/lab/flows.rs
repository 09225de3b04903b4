//! Real TCP flows for the lab, with no iperf: a sink in the receiver namespace that reads and
//! discards, and senders in the sender namespace with a chosen congestion control. Every loop
//! checks a stop flag and every blocking call has a timeout, so stopping is always prompt.

use super::LabError;
use super::cc::set_congestion;
use bbrtop_collect::netns::{NetnsSpec, run_in};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a blocked read or write waits before checking the stop flag.
const TICK: Duration = Duration::from_millis(100);
const CHUNK: usize = 64 * 1024;

/// A timeout or interruption: check the stop flag and carry on.
fn transient(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// A named thread of the lab's.
pub(super) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, LabError> {
    Ok(std::thread::Builder::new().name(name.into()).spawn(f)?)
}

/// A listening socket whose accept blocks at most a [`TICK`] (so the stop flag is checked), with
/// a backlog deep enough for a churn of short connections: with the default 128, a burst
/// overflows it and each dropped SYN costs its client a second.
fn listen(bind: SocketAddr) -> std::io::Result<TcpListener> {
    let s = listening(bind, 4096)?;
    s.set_read_timeout(Some(TICK))?;
    Ok(s.into())
}

/// A socket listening on `bind` (the address reused at once) with `backlog` connections queued.
pub(super) fn listening(bind: SocketAddr, backlog: i32) -> std::io::Result<Socket> {
    let s = Socket::new(Domain::for_address(bind), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.bind(&bind.into())?;
    s.listen(backlog)?;
    Ok(s)
}

/// A listener in the receiver namespace; each connection is read to its end and discarded.
pub struct Sink {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Sink {
    pub fn start(ns: &NetnsSpec, bind: SocketAddr) -> Result<Sink, LabError> {
        let l = run_in(ns, move || listen(bind)).map_err(|e| LabError::Collect(e.to_string()))??;
        let addr = l.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let acceptor = spawn("bbrtop-lab-sink", move || {
            let mut readers: Vec<JoinHandle<()>> = Vec::new();
            while !s.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((c, _)) => {
                        let s = Arc::clone(&s);
                        if let Ok(h) = spawn("bbrtop-lab-read", move || drain(c, &s)) {
                            readers.push(h);
                        }
                        readers.retain(|h| !h.is_finished());
                    }
                    // The accept timed out: check the stop flag.
                    Err(e) if transient(&e) => {}
                    Err(_) => std::thread::sleep(TICK),
                }
            }
            for h in readers {
                let _ = h.join();
            }
        })?;
        Ok(Sink { addr, stop, acceptor: Some(acceptor) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }
}

fn drain(mut c: TcpStream, stop: &AtomicBool) {
    let _ = c.set_nonblocking(false);
    let _ = c.set_read_timeout(Some(TICK));
    let mut buf = vec![0u8; CHUNK];
    while !stop.load(Ordering::Relaxed) {
        match c.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if transient(&e) => {}
            Err(_) => return,
        }
    }
}

/// A connected socket in `ns` using congestion control `cc`, set before the handshake (as
/// iperf3 -C does), so the flow starts in the algorithm's own initial state.
fn connect_in(ns: &NetnsSpec, to: SocketAddr, cc: &str) -> Result<TcpStream, LabError> {
    let cc = cc.to_string();
    run_in(ns, move || connect(to, &cc, Duration::from_secs(5)))
        .map_err(|e| LabError::Collect(e.to_string()))?
}

/// A socket with congestion control `cc`, connected to `to` (from the calling thread's
/// namespace).
fn connect(to: SocketAddr, cc: &str, timeout: Duration) -> Result<TcpStream, LabError> {
    let s = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP))?;
    set_congestion(&s, cc).map_err(|e| match e.kind() {
        ErrorKind::NotFound => LabError::NoCc(cc.to_string()),
        _ => LabError::Io(e),
    })?;
    s.connect_timeout(&to.into(), timeout)?;
    Ok(s.into())
}

struct Running {
    id: u32,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// The bulk senders of one lab.
#[derive(Default)]
pub struct Flows {
    running: Vec<Running>,
    next: AtomicU32,
}

impl Flows {
    pub fn start(&mut self, ns: &NetnsSpec, to: SocketAddr, cc: &str) -> Result<super::Flow, LabError> {
        let s = connect_in(ns, to, cc)?;
        let flow = super::Flow {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            cc: cc.to_string(),
            local: s.local_addr()?,
            peer: to,
        };
        s.set_write_timeout(Some(TICK))?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = Arc::clone(&stop);
        let thread = spawn("bbrtop-lab-send", move || send(s, &st))?;
        self.running.push(Running { id: flow.id, stop, thread });
        Ok(flow)
    }

    pub fn stop(&mut self, id: u32) {
        if let Some(i) = self.running.iter().position(|r| r.id == id) {
            let r = self.running.remove(i);
            r.stop.store(true, Ordering::Relaxed);
            let _ = r.thread.join();
        }
    }

    pub fn stop_all(&mut self) {
        for r in &self.running {
            r.stop.store(true, Ordering::Relaxed);
        }
        for r in self.running.drain(..) {
            let _ = r.thread.join();
        }
    }
}

fn send(mut s: TcpStream, stop: &AtomicBool) {
    let buf = vec![0x5au8; CHUNK];
    while !stop.load(Ordering::Relaxed) {
        match s.write(&buf) {
            Ok(_) => {}
            Err(e) if transient(&e) => {}
            Err(_) => break,
        }
    }
    let _ = s.shutdown(Shutdown::Both);
}

/// `n` short connections, one after another: connect, send 4 KB, close. At most a minute.
pub fn short(ns: &NetnsSpec, to: SocketAddr, cc: &str, n: usize) -> Result<usize, LabError> {
    let cc = cc.to_string();
    run_in(ns, move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let payload = [0x42u8; 4096];
        let mut done = 0;
        for _ in 0..n {
            if Instant::now() > deadline {
                break;
            }
            let Ok(s) = Socket::new(Domain::for_address(to), Type::STREAM, Some(Protocol::TCP)) else {
                continue;
            };
            if set_congestion(&s, &cc).is_err()
                || s.connect_timeout(&to.into(), Duration::from_secs(2)).is_err()
            {
                continue;
            }
            let mut t: TcpStream = s.into();
            if t.write_all(&payload).is_ok() {
                done += 1;
            }
        }
        done
    })
    .map_err(|e| LabError::Collect(e.to_string()))
}
