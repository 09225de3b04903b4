//! Random loss and CE marks on a lab link: a tc eBPF program (bpf/lab_loss.bpf.c) on an
//! interface's egress. Netem and a marking AQM would do this elsewhere; this kernel has neither.

use super::LabError;
use bbrtop_collect::netns::NetnsSpec;

/// The program's threshold for a loss fraction: drop when a random u32 is below it.
pub fn threshold(fraction: f64) -> u32 {
    (fraction.clamp(0.0, 1.0) * u32::MAX as f64).round() as u32
}

/// Drops `loss` of the packets leaving `dev` in namespace `ns`, and marks `ce` of the ECN-capable
/// ones CE. The filter lives as long as the interface (the lab's namespace), so nothing here
/// needs to be kept.
#[cfg(feature = "bpf")]
pub fn attach(ns: &NetnsSpec, dev: &str, loss: f64, ce: f64) -> Result<(), LabError> {
    let dev = dev.to_string();
    let (t, c) = (threshold(loss), threshold(ce));
    bbrtop_collect::netns::run_in(ns, move || imp::attach(&dev, t, c))
        .map_err(|e| LabError::Collect(e.to_string()))?
}

#[cfg(not(feature = "bpf"))]
pub fn attach(_ns: &NetnsSpec, _dev: &str, _loss: f64, _ce: f64) -> Result<(), LabError> {
    Err(LabError::Unsupported(
        "loss and CE marks need the lab's tc eBPF program: this bbrtop was built without the bpf feature"
            .into(),
    ))
}

#[cfg(feature = "bpf")]
mod imp {
    use super::LabError;
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};
    use libbpf_rs::{TC_EGRESS, TcHookBuilder};
    use std::mem::MaybeUninit;
    use std::os::fd::AsFd;

    bbrtop_collect::bpf_skeleton!(skel, "lab_loss.skel.rs");

    fn err(what: &str, e: impl std::fmt::Display) -> LabError {
        LabError::Unsupported(format!("lab loss program: {what}: {e}"))
    }

    /// On a thread inside the namespace: load, and attach to `dev`'s egress (creating clsact).
    pub fn attach(dev: &str, threshold: u32, ce_threshold: u32) -> Result<(), LabError> {
        let ifindex = nix_ifindex(dev)?;
        let mut obj = MaybeUninit::uninit();
        let mut open = skel::LabLossSkelBuilder::default().open(&mut obj).map_err(|e| err("open", e))?;
        let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| err("rodata", "missing"))?;
        (ro.threshold, ro.ce_threshold) = (threshold, ce_threshold);
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
