//! What the host says about its BBR, read at this edge and judged by pure functions: `struct bbr`
//! in the kernel BTF ([`StructBbr`]), which the loader asks which fields its programs read, and
//! the version behind the name "bbr" ([`HostBbr`]), which check, doctor and the TUI header show.

use bbrtop_core::btf::Btf;
use bbrtop_core::model::{HostBbr, StructBbr};
use std::path::Path;

/// The running kernel's BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// tcp_bbr's module BTF, split from vmlinux's, present while the module is loaded.
pub const BBR_MODULE_BTF: &str = "/sys/kernel/btf/tcp_bbr";
/// The version tcp_bbr declares (`MODULE_VERSION`): v3 says "3"; mainline declares none, and
/// then sysfs has no such file, built in or not.
pub const BBR_MODULE_VERSION: &str = "/sys/module/tcp_bbr/version";
const AVAILABLE_CC: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// `struct bbr` in a complete BTF file, if it is there.
fn in_file(path: &Path) -> Option<StructBbr> {
    let bytes = std::fs::read(path).ok()?;
    let members = Btf::parse(&bytes).ok()?.struct_members("bbr").ok()??;
    Some(StructBbr::from_members(members.iter().map(|m| m.name.as_str())))
}

/// `struct bbr` in tcp_bbr's module BTF, read over the kernel's.
fn in_module() -> Option<StructBbr> {
    let (base, module) = (std::fs::read(VMLINUX_BTF).ok()?, std::fs::read(BBR_MODULE_BTF).ok()?);
    let base = Btf::parse(&base).ok()?;
    let members = Btf::parse_split(&module, &base).ok()?.struct_members("bbr").ok()??;
    Some(StructBbr::from_members(members.iter().map(|m| m.name.as_str())))
}

/// `struct bbr` among the types the programs are relocated against: a custom BTF file's alone
/// (libbpf consults no module then), else the kernel's own (where it is when BBR is built in), else
/// tcp_bbr's module BTF. `None` when none has it.
pub fn struct_bbr(custom: Option<&Path>) -> Option<StructBbr> {
    match custom {
        Some(p) => in_file(p),
        None => in_file(Path::new(VMLINUX_BTF)).or_else(in_module),
    }
}

/// Which BBR this host runs as "bbr": from the names it offers, the module's version and the
/// kernel BTF.
pub fn host_bbr() -> HostBbr {
    let available = std::fs::read_to_string(AVAILABLE_CC).unwrap_or_default();
    let names: Vec<String> = available.split_whitespace().map(str::to_string).collect();
    let module_version = std::fs::read_to_string(BBR_MODULE_VERSION).ok();
    HostBbr::detect(&names, module_version.as_deref(), struct_bbr(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the host offers bbr, the kernel's or the module's BTF has its struct, of a layout
    /// this build knows (this machine's is mainline's: tests/bpf_layouts.rs says so).
    #[test]
    fn the_running_kernels_struct_bbr() {
        let bbr = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .is_ok_and(|a| a.split_whitespace().any(|c| c == "bbr"));
        if bbr && Path::new(VMLINUX_BTF).exists() {
            let s = struct_bbr(None).expect("bbr is available: struct bbr in the kernel BTF");
            assert!(s.layout != bbrtop_core::model::BbrLayout::Unknown && s.has_phase(), "{s:?}");
        }
        assert_eq!(struct_bbr(Some(Path::new("/nonexistent"))), None);
        let h = host_bbr();
        assert_eq!(h.names.iter().any(|c| c == "bbr"), bbr, "{h:?}");
        assert_eq!(h.version.is_some(), bbr, "{h}");
    }
}
