//! Reading the fixed-layout records eBPF writes (ring-buffer events, the socket walk's records):
//! native-endian integers at named offsets, addresses by family, NUL-padded names. The caller
//! checks a record's length before reading it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    pub fn arr<const N: usize>(&self, off: usize) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.0[off..off + N]);
        a
    }
    pub fn u8(&self, off: usize) -> u8 {
        self.0[off]
    }
    pub fn u16(&self, off: usize) -> u16 {
        u16::from_ne_bytes(self.arr(off))
    }
    pub fn u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.arr(off))
    }
    pub fn u64(&self, off: usize) -> u64 {
        u64::from_ne_bytes(self.arr(off))
    }

    /// The address at `off` (16 bytes; an IPv4 one in the first 4), `None` for a family other
    /// than AF_INET and AF_INET6.
    pub fn addr(&self, family: u16, off: usize) -> Option<IpAddr> {
        match family {
            AF_INET => Some(IpAddr::V4(Ipv4Addr::from(self.arr::<4>(off)))),
            AF_INET6 => Some(IpAddr::V6(Ipv6Addr::from(self.arr::<16>(off)))),
            _ => None,
        }
    }

    /// The NUL-padded name in the `len` bytes at `off`.
    pub fn name(&self, off: usize, len: usize) -> &[u8] {
        let b = &self.0[off..off + len];
        &b[..b.iter().position(|&c| c == 0).unwrap_or(len)]
    }
}
