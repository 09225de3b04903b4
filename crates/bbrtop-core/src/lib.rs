//! bbrtop's pure core: what the kernel says about a TCP socket, decoded, and the rules bbrtop
//! judges it by. Nothing here opens a socket, reads a file or starts a thread, so the decoders
//! serve any Rust tool that reads TCP sockets:
//!
//! - [`wire`]: an inet_diag (`ss`) dump, netlink bytes in, [`model::SocketRecord`]s out, and the
//!   request that asks for one;
//! - [`model`]: `struct tcp_info` of any kernel's length (a field the kernel did not send is
//!   unknown, never zero), `tcp_bbr_info` in BBR v1's, v2alpha's and v3's layouts, DCTCP's info,
//!   skmeminfo, and what follows from them (BBR's phase, the inflation baseline, what limits the
//!   sender);
//! - [`rule`]: the queue-delay alert rule; [`filter`]: a filter language in `ss`'s terms;
//! - [`seam`] and [`snapshot`]: the two contracts of bbrtop's engine, what collectors hand in and
//!   what consumers read; [`columns`]: the per-socket values consumers show.
//!
//! Decoding what the kernel sends for one BBR socket:
//!
//! ```
//! use bbrtop_core::model::{BbrInfo, TcpInfo};
//!
//! // tcp_bbr_info (INET_DIAG_BBRINFO): bandwidth as two u32s in bytes per second, min RTT in µs,
//! // the pacing and cwnd gains x256.
//! let bytes: Vec<u8> = [2_500_000u32, 0, 20_000, 320, 512].iter().flat_map(|v| v.to_ne_bytes()).collect();
//! let bbr = BbrInfo::parse(&bytes, Some("bbr")).expect("v1's 20 bytes");
//! assert_eq!((bbr.bw_bytes_per_sec, bbr.min_rtt_us), (2_500_000, 20_000));
//! assert_eq!((bbr.pacing_gain, bbr.cwnd_gain), (1.25, 2.0));
//!
//! // An older kernel's 104-byte tcp_info: srtt is there, the delivery rate (offset 160) is not.
//! let mut raw = vec![0u8; 104];
//! raw[68..72].copy_from_slice(&30_000u32.to_ne_bytes());
//! let (info, _size) = TcpInfo::parse(&raw);
//! assert_eq!(info.srtt_us(), Some(30_000));
//! assert_eq!(info.delivery_rate_bytes_per_sec(), None);
//! ```
//!
//! Reading a whole dump: send [`wire::request::dump_request`] on a `NETLINK_SOCK_DIAG` socket,
//! and feed each datagram of the reply to a [`wire::DumpParser`]:
//!
//! ```
//! use bbrtop_core::model::StateSet;
//! use bbrtop_core::wire::{DumpParser, Progress, WireError, request::dump_request};
//!
//! /// The reply's datagrams, as a netlink socket hands them over, become the dump's sockets.
//! fn read(datagrams: &[Vec<u8>]) -> Result<Vec<bbrtop_core::model::SocketRecord>, WireError> {
//!     let mut parser = DumpParser::new();
//!     parser.begin(0);
//!     for d in datagrams {
//!         if let Progress::Done { .. } = parser.feed(d)? {
//!             break;
//!         }
//!     }
//!     Ok(parser.finish().sockets)
//! }
//!
//! let request = dump_request(libc::AF_INET as u8, StateSet::all(), 1, &[]);
//! assert!(request.len() > 16, "a netlink header and an inet_diag_req_v2");
//! assert!(read(&[]).unwrap().is_empty());
//! ```

pub mod btf;
pub mod columns;
pub mod filter;
#[cfg(test)]
mod fuzz;
pub mod geo;
pub mod model;
pub mod peer_groups;
pub mod rule;
pub mod seam;
pub mod sequential;
pub mod snapshot;
pub mod stats;
pub mod system;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod time_input;
pub mod units;
pub mod wire;
