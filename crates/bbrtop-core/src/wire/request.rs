//! The dump request: one SOCK_DIAG_BY_FAMILY message per address family.

use crate::model::StateSet;
use netlink_packet_core::{NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::IPPROTO_TCP;
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};

/// The bytes of a TCP dump request for `family` (AF_INET or AF_INET6).
///
/// Extensions: INFO (tcp_info), CONG (the cc name), SKMEMINFO, and VEGASINFO, whose bit makes
/// the kernel send each socket's congestion-control info: `tcp_bbr_info` (INET_DIAG_BBRINFO) for
/// BBR sockets. BBRINFO (16) has no bit of its own in the u8 `idiag_ext`.
///
/// `storage_maps` are fds of socket-local storage maps whose values the kernel should send with
/// each socket (INET_DIAG_SK_BPF_STORAGES); asking needs CAP_BPF.
pub fn dump_request(family: u8, states: StateSet, seq: u32, storage_maps: &[i32]) -> Vec<u8> {
    let socket_id = if family == libc::AF_INET6 as u8 { SocketId::new_v6() } else { SocketId::new_v4() };
    let req = InetRequest {
        family,
        protocol: IPPROTO_TCP,
        extensions: ExtensionFlags::INFO
            | ExtensionFlags::VEGASINFO
            | ExtensionFlags::CONG
            | ExtensionFlags::SKMEMINFO,
        states: StateFlags::from_bits_retain(states.0),
        socket_id,
    };
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    hdr.sequence_number = seq;
    let mut msg = NetlinkMessage::new(hdr, SockDiagMessage::InetRequest(req).into());
    msg.finalize();
    let mut buf = vec![0; msg.buffer_len()];
    msg.serialize(&mut buf);
    if !storage_maps.is_empty() {
        // The crate has no request attributes: append the nested one and fix the length.
        let inner: Vec<u8> = storage_maps
            .iter()
            .flat_map(|fd| nla(SK_DIAG_BPF_STORAGE_REQ_MAP_FD, &fd.to_ne_bytes()))
            .collect();
        buf.extend(nla(INET_DIAG_REQ_SK_BPF_STORAGES | NLA_F_NESTED, &inner));
        let len = buf.len() as u32;
        buf[..4].copy_from_slice(&len.to_ne_bytes());
    }
    buf
}

/// `enum inet_diag_req_attrs` (include/uapi/linux/inet_diag.h).
const INET_DIAG_REQ_SK_BPF_STORAGES: u16 = 2;
/// include/uapi/linux/sock_diag.h.
const SK_DIAG_BPF_STORAGE_REQ_MAP_FD: u16 = 1;
const NLA_F_NESTED: u16 = 1 << 15;

/// One netlink attribute, padded to 4 bytes.
fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
    let len = 4 + value.len();
    let mut b = Vec::with_capacity(len.next_multiple_of(4));
    b.extend_from_slice(&(len as u16).to_ne_bytes());
    b.extend_from_slice(&kind.to_ne_bytes());
    b.extend_from_slice(value);
    b.resize(len.next_multiple_of(4), 0);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout() {
        let b = dump_request(libc::AF_INET6 as u8, StateSet(0b110), 7, &[]);
        // nlmsghdr (16) + inet_diag_req_v2 (56).
        assert_eq!(b.len(), 72);
        assert_eq!(u32::from_ne_bytes(b[0..4].try_into().unwrap()), 72);
        assert_eq!(u16::from_ne_bytes(b[4..6].try_into().unwrap()), 20, "SOCK_DIAG_BY_FAMILY");
        assert_eq!(u16::from_ne_bytes(b[6..8].try_into().unwrap()), NLM_F_REQUEST | NLM_F_DUMP);
        assert_eq!(u32::from_ne_bytes(b[8..12].try_into().unwrap()), 7);
        assert_eq!(b[16], libc::AF_INET6 as u8);
        assert_eq!(b[17], IPPROTO_TCP);
        // INFO (1<<1) | VEGASINFO (1<<2) | CONG (1<<3) | SKMEMINFO (1<<6).
        assert_eq!(b[18], 0b0100_1110);
        assert_eq!(u32::from_ne_bytes(b[20..24].try_into().unwrap()), 0b110);
    }

    #[test]
    fn request_with_storage_maps() {
        let b = dump_request(libc::AF_INET as u8, StateSet(0b110), 7, &[9, 11]);
        // 72, then a nested attribute (4) holding two fd attributes (8 each).
        assert_eq!(b.len(), 72 + 4 + 16);
        assert_eq!(u32::from_ne_bytes(b[0..4].try_into().unwrap()), 92, "nlmsg_len covers the attributes");
        let u16_at = |i: usize| u16::from_ne_bytes(b[i..i + 2].try_into().unwrap());
        let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
        assert_eq!((u16_at(72), u16_at(74)), (20, 2 | 0x8000));
        assert_eq!((u16_at(76), u16_at(78), u32_at(80)), (8, 1, 9));
        assert_eq!((u16_at(84), u16_at(86), u32_at(88)), (8, 1, 11));
    }
}
