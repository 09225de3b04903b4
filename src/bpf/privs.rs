//! Dropping CAP_BPF and CAP_PERFMON once the programs are attached: the links, the ring buffer
//! and the loss counter are file descriptors already open, and using them needs no capability.

use crate::caps::Cap;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Removes `caps` from this thread's effective and permitted sets. Threads started later inherit
/// the reduced sets; call it before starting them.
#[allow(unsafe_code)]
pub fn drop_caps(caps: &[Cap]) -> std::io::Result<()> {
    let mut hdr = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two CapData (version 3 layout) into `data` and reads `hdr`; both
    // live across the call and have the kernel's layout (repr(C), three u32s per word).
    if unsafe { libc::syscall(libc::SYS_capget, &mut hdr as *mut CapHeader, data.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    for &c in caps {
        let (word, bit) = ((c as usize) / 32, 1u32 << ((c as u32) % 32));
        data[word].effective &= !bit;
        data[word].permitted &= !bit;
    }
    // SAFETY: as above; capset only reads `hdr` and `data`.
    if unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
