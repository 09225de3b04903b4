//! The netlink collector against the real kernel, with `ss` as the reference.

mod support;

use bbrtop::lab::cc::set_congestion;
use bbrtop_collect::InetDiag;
use bbrtop_collect::caps::Cap;
use bbrtop_collect::netns::{NetnsSpec, run_in};
use bbrtop_core::model::{SocketRecord, StateSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use support::guard;
use support::lab::Netns;

/// A loopback connection whose client uses `cc`, with some data sent.
struct Conn {
    client: TcpStream,
    _server: TcpStream,
}

fn connect(cc: &str) -> Conn {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let s = socket2_like_connect(l.local_addr().unwrap(), cc);
    let (mut server, _) = l.accept().unwrap();
    let mut client = s;
    let chunk = vec![7u8; 256 * 1024];
    client.write_all(&chunk).unwrap();
    let mut got = vec![0u8; chunk.len()];
    server.read_exact(&mut got).unwrap();
    Conn { client, _server: server }
}

/// std has no way to set an option before connect, so connect then set: the kernel switches
/// the congestion control of a live socket (what `ss` shows changes at once).
fn socket2_like_connect(addr: SocketAddr, cc: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    set_congestion(&s, cc).unwrap();
    s
}

/// The record of a stream's socket. Both ends are matched: a closed socket of another test may
/// hold the same local port towards another peer.
fn find<'a>(socks: &'a [SocketRecord], s: &TcpStream) -> &'a SocketRecord {
    let (local, peer) = (s.local_addr().unwrap(), s.peer_addr().unwrap());
    socks
        .iter()
        .find(|r| r.local == local && r.peer == peer)
        .unwrap_or_else(|| panic!("{local} not in the dump"))
}

/// `ss -tinH` for one connection, by both ports.
fn ss_line(s: &TcpStream) -> String {
    let (sport, dport) = (s.local_addr().unwrap().port(), s.peer_addr().unwrap().port());
    let filter = format!("( sport = :{sport} and dport = :{dport} )");
    let o = Command::new("ss").args(["-tinH", "state", "established", &filter]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn field<'a>(ss: &'a str, key: &str) -> Option<&'a str> {
    ss.split_whitespace().find_map(|w| w.strip_prefix(key))
}

#[test]
fn root_dump_finds_bbr_and_cubic_sockets_as_ss_does() {
    let bbr = connect("bbr");
    let cubic = connect("cubic");
    let mut d = InetDiag::open(None, StateSet::default_filter()).unwrap();
    let dump = d.dump().unwrap();
    let (rb, rc) = (find(&dump.sockets, &bbr.client), find(&dump.sockets, &cubic.client));
    assert_eq!(rb.cc.as_deref(), Some("bbr"));
    assert_eq!(rc.cc.as_deref(), Some("cubic"));
    assert!(rb.bbr.is_some(), "a BBR socket carries tcp_bbr_info");
    assert!(rc.bbr.is_none(), "a CUBIC socket does not");
    assert!(rb.tcp_info.srtt_us().is_some() && rb.tcp_info.bytes_acked().unwrap() >= 256 * 1024);
    assert_ne!(rb.cookie, rc.cookie);
    assert!(rb.netns.is_some());
    // ss, a moment later: cc and cwnd agree (an idle socket's cwnd does not move).
    for (rec, stream) in [(rb, &bbr.client), (rc, &cubic.client)] {
        let line = ss_line(stream);
        assert!(line.contains(rec.cc.as_deref().unwrap()), "{line}");
        assert_eq!(
            field(&line, "cwnd:").map(str::to_string),
            rec.tcp_info.snd_cwnd_segs().map(|v| v.to_string()),
            "{line}"
        );
        let inode = line.split_whitespace().find_map(|w| w.strip_prefix("ino:"));
        if let Some(ino) = inode {
            assert_eq!(ino, rec.inode.to_string());
        }
    }
}

#[test]
fn state_filter_reaches_the_kernel() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let mut d = InetDiag::open(None, StateSet::default_filter()).unwrap();
    assert!(
        !d.dump().unwrap().sockets.iter().any(|s| s.local.port() == port),
        "LISTEN is excluded by default"
    );
    let mut d = InetDiag::open(None, StateSet::all()).unwrap();
    assert!(d.dump().unwrap().sockets.iter().any(|s| s.local.port() == port));
}

#[test]
fn root_raw_dump_reads_bytes() {
    let _c = connect("cubic");
    let mut d = InetDiag::open(None, StateSet::default_filter()).unwrap();
    assert!(d.dump_raw().unwrap() > 0);
    // The socket is still usable for a parsed dump afterwards.
    assert!(!d.dump().unwrap().sockets.is_empty());
}

#[test]
fn root_netns_dump_sees_only_that_namespace() {
    if !guard::caps("netns test", &[Cap::SysAdmin]) {
        return;
    }
    let ns = Netns::new(format!("bbrtop-t-{}", std::process::id()));
    let spec = NetnsSpec::parse(&ns.0);
    // A connection made by a thread inside the namespace, kept open while we dump.
    let (conn, local) = run_in(&spec, || {
        let c = connect("cubic");
        let local = c.client.local_addr().unwrap();
        (c, local)
    })
    .unwrap();
    let host_only = connect("bbr");
    let mut d = InetDiag::open(Some(&spec), StateSet::default_filter()).unwrap();
    let dump = d.dump().unwrap();
    assert!(dump.sockets.iter().any(|s| s.local == local), "the namespace's socket is seen");
    let host_local = host_only.client.local_addr().unwrap();
    assert!(!dump.sockets.iter().any(|s| s.local == host_local), "the host's socket is not");
    let host_ns =
        std::fs::metadata("/proc/self/ns/net").map(|m| std::os::unix::fs::MetadataExt::ino(&m)).unwrap();
    assert!(dump.sockets.iter().all(|s| s.netns.is_some() && s.netns != Some(host_ns)));
    drop(conn);
}
