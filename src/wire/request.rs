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
pub fn dump_request(family: u8, states: StateSet, seq: u32) -> Vec<u8> {
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
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout() {
        let b = dump_request(libc::AF_INET6 as u8, StateSet(0b110), 7);
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
}
