//! Random loss and CE marks on a lab link, and a receiver's ACKs thinned: a tc eBPF program
//! (src/lab/lab_loss.bpf.c) on an interface's egress. Netem and a marking AQM would do the first two
//! elsewhere; this kernel has neither.

use super::LabError;
use bbrtop_collect::netns::NetnsSpec;

/// The program's threshold for a loss fraction: drop when a random u32 is below it.
pub fn threshold(fraction: f64) -> u32 {
    (fraction.clamp(0.0, 1.0) * u32::MAX as f64).round() as u32
}

/// What the program does to the packets leaving an interface.
#[derive(Clone, Copy, Debug, Default)]
pub struct Effects {
    /// The fraction dropped at random (0..1).
    pub loss: f64,
    /// The fraction of ECN-capable packets marked CE (0..1).
    pub ce: f64,
    /// Keep one pure ACK in this many (0 or 1: all).
    pub ack_every: u32,
}

/// Applies `fx` to the packets leaving `dev` in namespace `ns`. The filter lives as long as the
/// interface (the lab's namespace), so nothing here needs to be kept.
#[cfg(feature = "bpf")]
pub fn attach(ns: &NetnsSpec, dev: &str, fx: Effects) -> Result<(), LabError> {
    let dev = dev.to_string();
    bbrtop_collect::netns::run_in(ns, move || imp::attach(&dev, fx))
        .map_err(|e| LabError::Collect(e.to_string()))?
}

#[cfg(not(feature = "bpf"))]
pub fn attach(_ns: &NetnsSpec, _dev: &str, _fx: Effects) -> Result<(), LabError> {
    Err(LabError::Unsupported(
        "loss, CE marks and thinned ACKs need the lab's tc eBPF program: this bbrtop was built without the bpf feature"
            .into(),
    ))
}

#[cfg(feature = "bpf")]
mod imp {
    use super::{Effects, LabError, threshold};
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};
    use libbpf_rs::{TC_EGRESS, TcHookBuilder};
    use std::mem::MaybeUninit;
    use std::os::fd::AsFd;

    bbrtop_collect::bpf_skeleton!(skel, "lab_loss.skel.rs");

    fn err(what: &str, e: impl std::fmt::Display) -> LabError {
        LabError::Unsupported(format!("lab loss program: {what}: {e}"))
    }

    /// On a thread inside the namespace: load, and attach to `dev`'s egress (creating clsact).
    pub fn attach(dev: &str, fx: Effects) -> Result<(), LabError> {
        let ifindex = nix_ifindex(dev)?;
        let mut obj = MaybeUninit::uninit();
        let mut open = skel::LabLossSkelBuilder::default().open(&mut obj).map_err(|e| err("open", e))?;
        let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| err("rodata", "missing"))?;
        (ro.threshold, ro.ce_threshold, ro.ack_every) = (threshold(fx.loss), threshold(fx.ce), fx.ack_every);
        let loaded = open.load().map_err(|e| err("load", e))?;
        let fd = loaded.progs.lab_loss.as_fd();
        let mut hook =
            TcHookBuilder::new(fd).ifindex(ifindex).replace(true).handle(1).priority(1).hook(TC_EGRESS);
        hook.create().map_err(|e| err("clsact", e))?;
        hook.attach().map_err(|e| err("attach", e))?;
        Ok(())
    }

    fn nix_ifindex(dev: &str) -> Result<i32, LabError> {
        let name = std::ffi::CString::new(dev).map_err(|e| err("interface name", e))?;
        #[allow(unsafe_code)]
        // SAFETY: a valid NUL-terminated string, alive for the call.
        let idx = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if idx == 0 {
            return Err(err(dev, std::io::Error::last_os_error()));
        }
        Ok(idx as i32)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn thresholds() {
        assert_eq!(super::threshold(0.0), 0);
        assert_eq!(super::threshold(0.01), 42_949_673);
        assert_eq!(super::threshold(2.0), u32::MAX);
    }
}
