//! Byte fixtures in the kernel's layouts, built by hand, for the parser's tests and for tests
//! that feed a whole dump through the collectors' seam.

use super::INET_DIAG_MSG_LEN;
use crate::model::tcp_info::TCP_INFO_KNOWN_LEN;
use netlink_packet_core::NLMSG_DONE;
use netlink_packet_sock_diag::constants::{
    INET_DIAG_BBRINFO, INET_DIAG_CONG, INET_DIAG_INFO, INET_DIAG_SKMEMINFO, SOCK_DIAG_BY_FAMILY,
};
use std::net::IpAddr;

pub const AF_INET: u8 = 2;
pub const AF_INET6: u8 = 10;

pub fn nlmsg(ty: u16, flags: u16, payload: &[u8]) -> Vec<u8> {
    let len = 16 + payload.len();
    let mut b = Vec::new();
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&ty.to_ne_bytes());
    b.extend_from_slice(&flags.to_ne_bytes());
    b.extend_from_slice(&1u32.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(payload);
    b.resize(len.div_ceil(4) * 4, 0);
    b
}

pub fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
    let len = 4 + value.len();
    let mut b = Vec::new();
    b.extend_from_slice(&(len as u16).to_ne_bytes());
    b.extend_from_slice(&kind.to_ne_bytes());
    b.extend_from_slice(value);
    b.resize(len.div_ceil(4) * 4, 0);
    b
}

/// A tcp_info of `len` bytes with srtt, cwnd and pacing rate set where they fit.
pub fn tcp_info(len: usize, srtt: u32) -> Vec<u8> {
    let mut b = vec![0u8; len.max(112)];
    b[68..72].copy_from_slice(&srtt.to_ne_bytes());
    b[80..84].copy_from_slice(&10u32.to_ne_bytes());
    b[104..112].copy_from_slice(&2_500_000u64.to_ne_bytes());
    b.truncate(len);
    b
}

pub fn bbr_info() -> Vec<u8> {
    [2_500_000u32, 0, 40_000, 320, 512].iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// One SOCK_DIAG_BY_FAMILY message: inet_diag_msg then the given attributes.
pub fn sock_msg(
    family: u8,
    src: IpAddr,
    sport: u16,
    dst: IpAddr,
    dport: u16,
    cookie: u64,
    attrs: &[Vec<u8>],
) -> Vec<u8> {
    let mut p = vec![family, 1 /* ESTABLISHED */, 0, 0];
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    for a in [src, dst] {
        let mut raw = [0u8; 16];
        match a {
            IpAddr::V4(v) => raw[..4].copy_from_slice(&v.octets()),
            IpAddr::V6(v) => raw.copy_from_slice(&v.octets()),
        }
        p.extend_from_slice(&raw);
    }
    p.extend_from_slice(&0u32.to_ne_bytes()); // interface
    p.extend_from_slice(&((cookie & 0xffff_ffff) as u32).to_ne_bytes());
    p.extend_from_slice(&((cookie >> 32) as u32).to_ne_bytes());
    for v in [0u32, 0, 0, 1000 /* uid */, 4242 /* inode */] {
        p.extend_from_slice(&v.to_ne_bytes());
    }
    assert_eq!(p.len(), INET_DIAG_MSG_LEN);
    for a in attrs {
        p.extend_from_slice(a);
    }
    nlmsg(SOCK_DIAG_BY_FAMILY, 2 /* MULTI */, &p)
}

pub fn v4(cookie: u64, attrs: &[Vec<u8>]) -> Vec<u8> {
    sock_msg(AF_INET, "10.0.0.1".parse().unwrap(), 40000, "10.0.0.2".parse().unwrap(), 5201, cookie, attrs)
}

pub fn done(flags: u16) -> Vec<u8> {
    nlmsg(NLMSG_DONE, flags, &0i32.to_ne_bytes())
}

pub fn full_attrs(srtt: u32) -> Vec<Vec<u8>> {
    vec![
        nla(INET_DIAG_INFO, &tcp_info(TCP_INFO_KNOWN_LEN, srtt)),
        nla(INET_DIAG_CONG, b"bbr\0"),
        nla(INET_DIAG_BBRINFO, &bbr_info()),
    ]
}

/// A dump of both families' kinds of socket: BBR with its info, CUBIC, a deep-queued CUBIC
/// (inflated), IPv6, and one with socket memory; then NLMSG_DONE.
pub fn mixed_dump() -> Vec<u8> {
    let cubic = |srtt: u32| {
        vec![nla(INET_DIAG_INFO, &tcp_info(TCP_INFO_KNOWN_LEN, srtt)), nla(INET_DIAG_CONG, b"cubic\0")]
    };
    let skmem: Vec<u8> = (1u32..=9).flat_map(|v| (v * 1000).to_ne_bytes()).collect();
    let mut with_mem = full_attrs(12_000);
    with_mem.push(nla(INET_DIAG_SKMEMINFO, &skmem));
    let (a, b): (IpAddr, IpAddr) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
    let mut out = Vec::new();
    out.extend(v4(1, &full_attrs(41_000)));
    out.extend(v4(2, &cubic(44_000)));
    out.extend(v4(3, &cubic(900_000)));
    out.extend(sock_msg(AF_INET6, a, 443, b, 50_000, 4, &full_attrs(20_000)));
    out.extend(v4(5, &with_mem));
    out.extend(done(0));
    out
}
