//! Loopback sockets held by child processes: the test binary runs itself as the child (its
//! `#[ignore]`d `holder` test, which calls [`hold_if_asked`]), so no process of the test passes
//! the file limit.

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};

const HOLD_ENV: &str = "BBRTOP_TEST_HOLD";

/// Connections per holder: two sockets each, well under a 20,000-file limit.
pub const CONNS_PER_HOLDER: usize = 8_000;

/// In a holder child (the test binary's `holder` test, run by [`Holder::start`]): opens the
/// connections asked for and keeps them until stdin closes. Elsewhere returns at once.
pub fn hold_if_asked() {
    let Some(n) = std::env::var(HOLD_ENV).ok().and_then(|v| v.parse::<usize>().ok()) else { return };
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut keep = Vec::with_capacity(2 * n);
    for _ in 0..n {
        let c = TcpStream::connect(addr).unwrap();
        keep.push(l.accept().unwrap().0);
        keep.push(c);
    }
    println!("ready {}", addr.port());
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

/// A child holding `n` connections (2n sockets), killed on drop, and its listener's port.
pub struct Holder(Child, pub u16, Out);

/// The child's stdout, kept open past "ready" and unread: the test harness in the child writes
/// to it later (its notice that a test has run for 60 s), and a closed pipe would end the child,
/// and its sockets, there.
type Out = std::io::Lines<BufReader<std::process::ChildStdout>>;

impl Holder {
    pub fn start(n: usize) -> Holder {
        let mut c = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "holder", "--ignored", "--nocapture"])
            .env(HOLD_ENV, n.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(c.stdout.take().unwrap()).lines();
        // Made first, so that a child that never gets ready is killed.
        let mut holder = Holder(c, 0, out);
        let ready = (holder.2.by_ref().map_while(Result::ok))
            .find_map(|l| l.split_once("ready ").and_then(|(_, port)| port.trim().parse().ok()));
        holder.1 = ready.expect("the holder did not open its connections");
        holder
    }

    /// Holders of `sockets` loopback sockets between them (`sockets / 2` connections).
    pub fn many(sockets: usize) -> Vec<Holder> {
        let conns = sockets / 2;
        (0..conns.div_ceil(CONNS_PER_HOLDER))
            .map(|i| Holder::start(CONNS_PER_HOLDER.min(conns - i * CONNS_PER_HOLDER)))
            .collect()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
