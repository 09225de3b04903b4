//! Real TCP flows through the lab, without iperf: a reader in the receiver namespace, a writer in
//! the sender namespace with the congestion control set before connect. Every loop is bounded
//! and watches a stop flag.

use super::net::{Lab, LabError, in_netns};
use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a connect or an accept may take (a veth link answers in well under a millisecond).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often blocked reads and writes look at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// A running bulk flow, as seen by its owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flow {
    pub cc: String,
    /// The sender's end.
    pub local: SocketAddr,
    /// The receiver's end.
    pub peer: SocketAddr,
    id: u64,
}

/// The lab's side of a flow: its threads and counters.
pub(super) struct FlowRun {
    id: u64,
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl FlowRun {
    /// Stops and joins the threads (each notices the flag within [`POLL`]); the sockets close.
    pub(super) fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

impl Lab {
    /// Starts a bulk TCP flow sender -> receiver using congestion control `cc`. It runs until
    /// [`Lab::stop_flow`] or until the lab drops.
    pub fn start_flow(&mut self, cc: &str) -> Result<Flow, LabError> {
        let listener = self.listen()?;
        let peer = listener.local_addr()?;
        let sock = self.sender_socket(cc)?;
        let stop = Arc::new(AtomicBool::new(false));
        let received = Arc::new(AtomicU64::new(0));
        let (s, r) = (Arc::clone(&stop), Arc::clone(&received));
        let reader = std::thread::Builder::new().name("bbrtop-lab-rcv".into()).spawn(move || {
            if let Some(conn) = accept_one(&listener, &s) {
                drain(conn, &s, &r);
            }
        })?;
        let stream = match connect(sock, peer) {
            Ok(st) => st,
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                let _ = reader.join();
                return Err(e);
            }
        };
        let local = stream.local_addr()?;
        let s = Arc::clone(&stop);
        let writer =
            std::thread::Builder::new().name("bbrtop-lab-snd".into()).spawn(move || fill(stream, &s))?;
        let id = self.next_flow;
        self.next_flow += 1;
        self.flows.push(FlowRun { id, stop, received, threads: vec![reader, writer] });
        Ok(Flow { cc: cc.to_string(), local, peer, id })
    }

    /// Stops a flow started by [`Lab::start_flow`]; a flow already stopped is ignored.
    pub fn stop_flow(&mut self, flow: &Flow) {
        if let Some(i) = self.flows.iter().position(|f| f.id == flow.id) {
            self.flows.swap_remove(i).stop();
        }
    }

    /// Bytes the receiver has read from `flow` so far (None once it is stopped).
    pub fn received_bytes(&self, flow: &Flow) -> Option<u64> {
        self.flows.iter().find(|f| f.id == flow.id).map(|f| f.received.load(Ordering::Relaxed))
    }

    /// Opens `n` short connections one after another (connect, send 4 KB, close) and returns how
    /// many the receiver read in full. Bounded: each step times out.
    pub fn short_flows(&self, cc: &str, n: usize) -> Result<usize, LabError> {
        const SIZE: usize = 4096;
        let listener = self.listen()?;
        let peer = listener.local_addr()?;
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| -> Result<usize, LabError> {
            let reader = scope.spawn(|| {
                let mut done = 0;
                for _ in 0..n {
                    let Some(mut conn) = accept_one(&listener, &stop) else { break };
                    let _ = conn.set_read_timeout(Some(CONNECT_TIMEOUT));
                    let mut buf = [0u8; SIZE];
                    let mut got = 0;
                    while let Ok(k) = conn.read(&mut buf) {
                        if k == 0 {
                            break;
                        }
                        got += k;
                    }
                    done += usize::from(got == SIZE);
                }
                done
            });
            let sent = (|| {
                for _ in 0..n {
                    let mut st = connect(self.sender_socket(cc)?, peer)?;
                    st.write_all(&[0x5a; SIZE])?;
                }
                Ok(())
            })();
            if sent.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            let done = reader.join().unwrap_or(0);
            sent.map(|()| done)
        })
    }

    /// A listener on the receiver's address, port chosen by the kernel.
    fn listen(&self) -> Result<TcpListener, LabError> {
        let addr = SocketAddr::new(self.receiver_addr(), 0);
        let l = in_netns(self.receiver_netns(), || TcpListener::bind(addr))??;
        l.set_nonblocking(true)?;
        Ok(l)
    }

    /// A TCP socket in the sender namespace with TCP_CONGESTION = `cc`, not yet connected.
    fn sender_socket(&self, cc: &str) -> Result<Socket, LabError> {
        let sock = in_netns(self.sender_netns(), || Socket::new(Domain::IPV4, Type::STREAM, None))??;
        if let Err(e) = super::cc::set_congestion(&sock, cc) {
            let available = in_netns(self.sender_netns(), || {
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            })?
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
            // set_congestion keeps the kind of the kernel's ENOENT (unknown) or EPERM (not allowed).
            return Err(match e.kind() {
                ErrorKind::NotFound | ErrorKind::PermissionDenied => {
                    LabError::CcUnavailable { cc: cc.into(), available }
                }
                _ => LabError::Io(e),
            });
        }
        Ok(sock)
    }
}

fn connect(sock: Socket, peer: SocketAddr) -> Result<TcpStream, LabError> {
    sock.connect_timeout(&peer.into(), CONNECT_TIMEOUT)
        .map_err(|e| LabError::Flow(format!("connect to {peer}: {e}")))?;
    Ok(sock.into())
}

/// Accepts one connection from a non-blocking listener, polling until `stop` or the timeout.
fn accept_one(l: &TcpListener, stop: &AtomicBool) -> Option<TcpStream> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match l.accept() {
            Ok((c, _)) => {
                c.set_nonblocking(false).ok()?;
                return Some(c);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => return None,
        }
    }
    None
}

/// Reads and discards until EOF, an error or `stop`.
fn drain(mut c: TcpStream, stop: &AtomicBool, received: &AtomicU64) {
    let _ = c.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; 256 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match c.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                received.fetch_add(k as u64, Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Writes until `stop` or an error.
fn fill(mut c: TcpStream, stop: &AtomicBool) {
    let _ = c.set_write_timeout(Some(POLL));
    let buf = vec![0x5au8; 256 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match c.write(&buf) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
}
