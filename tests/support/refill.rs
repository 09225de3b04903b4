//! The socket walk's refill pass against `ss`, on this host (tests/walk.rs) and on every kernel
//! of the matrix (tests/kernel_matrix.rs).

use bbrtop_collect::bpf::loader::{self, LoadConfig};
use bbrtop_core::model::StateSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

/// The walk's refresh for the test: long enough that the burst below falls within it even under
/// emulation.
const REFRESH: Duration = Duration::from_secs(1);
const CHUNK: usize = 64 * 1024;
const CHUNKS: usize = 8;

/// A loopback sender writes a burst shorter than the refresh, then stays open and quiet. The
/// burst's first ACK fills its walk record; the hooks skip the rest, within the refresh of that
/// fill. Without the refill pass the read after the burst hands over that first fill (its bytes
/// acked 1, the SYN), and no later read brings anything until the socket moves again. With it,
/// a read whose pass ran (the first after the burst, or a later one if the last pass's spacing,
/// which other sockets' marks may have started, is not over) hands the sender's record over
/// again, its bytes acked equal to `ss`'s, taken once the connection is quiet.
pub fn a_quiet_senders_record_agrees_with_ss() {
    let cfg = LoadConfig { walk: true, walk_refresh: REFRESH, ..LoadConfig::from_rule(&Default::default()) };
    let loaded = loader::load(&cfg).expect("load");
    let mut walker = loaded
        .walker(StateSet::default_filter(), bbrtop_collect::attrib::Resolver::new(None))
        .expect("the walk");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let mut sender = TcpStream::connect(server).unwrap();
    let (mut receiver, _) = listener.accept().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        let mut got = 0;
        while got < CHUNK * CHUNKS {
            got += receiver.read(&mut buf).unwrap();
        }
        receiver // kept open: the connection stays established and quiet
    });
    // A new epoch: the burst's first ACK fills the sender's record.
    let before = walker.walk().unwrap().stats.refilled_total;
    let started = Instant::now();
    for _ in 0..CHUNKS {
        sender.write_all(&[7u8; CHUNK]).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let _receiver = reader.join().unwrap();
    let burst = started.elapsed();
    assert!(burst < REFRESH, "the burst took {burst:?}, longer than the refresh: it proves nothing");
    std::thread::sleep(Duration::from_millis(100));
    let local = sender.local_addr().unwrap();
    let out = Command::new("ss")
        .args(["-tinH", "state", "established", "src", &local.to_string()])
        .output()
        .unwrap();
    let ss = bbrtop::lab::ss::parse_ss_tin(&String::from_utf8_lossy(&out.stdout));
    let reference = ss.iter().find(|s| s.local == Some(local)).expect("ss shows the sender").bytes_acked;
    // Reads 200 ms apart, for up to 10 s: the sender's latest record, and whether a pass ran.
    let (mut latest, mut refilled, deadline) = (None, before, Instant::now() + Duration::from_secs(10));
    while refilled == before && Instant::now() < deadline {
        let read = walker.walk().unwrap();
        refilled = read.stats.refilled_total;
        if let Some(r) = read.sockets.iter().find(|r| r.local == local && r.peer == server) {
            latest = Some(r.tcp_info.bytes_acked());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let latest = latest.expect("the sender moved since the first walk");
    assert_eq!(
        latest,
        reference,
        "the sender's latest record after its burst of {} bytes (refilled since start: {before} before, {refilled} after)",
        CHUNK * CHUNKS
    );
    assert!(refilled > before, "no pass ran in 10 s");
}
