//! What the host says about its BBR, read at this edge and judged by pure functions: `struct bbr`
//! in the kernel BTF ([`StructBbr`]), which the loader asks which fields its programs read, and
//! the version behind the name "bbr" ([`HostBbr`]), which check, doctor and the TUI header show.

use crate::netns::{NetnsSpec, run_in};
use bbrtop_core::btf::Btf;
use bbrtop_core::model::{HostBbr, StructBbr};
use bbrtop_core::system::SystemInfo;
use std::path::{Path, PathBuf};

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

/// The BTF the programs are relocated against, and `struct bbr` as it has it.
pub struct RelocationBtf {
    /// For libbpf's `btf_custom_path`; None: the running kernel's own, as libbpf finds it.
    pub path: Option<PathBuf>,
    pub struct_bbr: Option<StructBbr>,
    /// Whether `struct bbr` comes from tcp_bbr's module BTF.
    pub from_module: bool,
    /// Keeps the merged blob's memory file open while `path` names it.
    _file: Option<std::fs::File>,
}

impl RelocationBtf {
    /// `custom` if given (a test's edited BTF: libbpf then consults nothing else); else the
    /// kernel's own where it has `struct bbr` (BBR built in) or tcp_bbr is not loaded; else the
    /// kernel's and tcp_bbr's module BTF merged into one blob, in a memory file. libbpf reads
    /// module BTF itself only with CAP_SYS_ADMIN (1.3 and later), which the shipped unit and
    /// DaemonSet do not grant; the files in /sys/kernel/btf are readable without it.
    pub fn find(custom: Option<&Path>) -> RelocationBtf {
        let plain = |path: Option<PathBuf>, struct_bbr| RelocationBtf {
            path,
            struct_bbr,
            from_module: false,
            _file: None,
        };
        if let Some(p) = custom {
            return plain(Some(p.to_path_buf()), in_file(p));
        }
        if let Some(s) = in_file(Path::new(VMLINUX_BTF)) {
            return plain(None, Some(s));
        }
        match merged_with_module() {
            Some((file, path, s)) => {
                RelocationBtf { path: Some(path), struct_bbr: Some(s), from_module: true, _file: Some(file) }
            }
            None => plain(None, None),
        }
    }
}

/// vmlinux's BTF with tcp_bbr's merged in, in a memory file named by its /proc/self/fd path.
fn merged_with_module() -> Option<(std::fs::File, PathBuf, StructBbr)> {
    use std::io::Write;
    let s = in_module()?;
    let (base, module) = (std::fs::read(VMLINUX_BTF).ok()?, std::fs::read(BBR_MODULE_BTF).ok()?);
    let merged = bbrtop_core::btf::merge_split(&base, &module).ok()?;
    let fd = rustix::fs::memfd_create("bbrtop-btf", rustix::fs::MemfdFlags::CLOEXEC).ok()?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&merged).ok()?;
    use std::os::fd::AsRawFd;
    let path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    Some((file, path, s))
}

/// Whether tcp_bbr's BTF is there now (the module is loaded).
pub fn bbr_module_loaded() -> bool {
    Path::new(BBR_MODULE_BTF).exists()
}

/// Which BBR this host runs as "bbr": from the names it offers, the module's version and the
/// kernel BTF.
pub fn host_bbr() -> HostBbr {
    let available = std::fs::read_to_string(AVAILABLE_CC).unwrap_or_default();
    let names: Vec<String> = available.split_whitespace().map(str::to_string).collect();
    let module_version = std::fs::read_to_string(BBR_MODULE_VERSION).ok();
    HostBbr::detect(&names, module_version.as_deref(), struct_bbr(None))
}

fn read_line(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}

fn default_cc() -> String {
    read_line("/proc/sys/net/ipv4/tcp_congestion_control")
}

/// Host facts, with the net sysctls read inside `netns` when given ("?" where unreadable).
pub fn system_info(netns: Option<&NetnsSpec>) -> SystemInfo {
    let default_cc = match netns {
        // /proc/sys/net read by a thread that entered the namespace is that namespace's.
        Some(ns) => run_in(ns, default_cc).unwrap_or_else(|_| "?".into()),
        None => default_cc(),
    };
    let ns_path = netns.map_or_else(|| std::path::PathBuf::from("/proc/self/ns/net"), |n| n.0.clone());
    let netns_inode = std::fs::metadata(ns_path).ok().map(|m| std::os::unix::fs::MetadataExt::ino(&m) as u32);
    SystemInfo {
        host: read_line("/proc/sys/kernel/hostname"),
        kernel: read_line("/proc/sys/kernel/osrelease"),
        default_cc,
        qdisc: read_line("/proc/sys/net/core/default_qdisc"),
        bbr: host_bbr().to_string(),
        netns_inode,
        netns: netns.map(|ns| {
            let p = &ns.0;
            // `ip netns` names read better than /run/netns/NAME.
            match p.parent() {
                Some(d) if d == std::path::Path::new("/run/netns") => {
                    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
                }
                _ => p.display().to_string(),
            }
        }),
    }
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

    #[test]
    fn our_own_namespace_and_a_path_to_it() {
        let here = system_info(None);
        assert_ne!(here.kernel, "?");
        assert_eq!(here.netns, None);
        assert_ne!(here.qdisc, "?");
        let ino = std::fs::metadata("/proc/self/ns/net").map(|m| std::os::unix::fs::MetadataExt::ino(&m));
        assert_eq!(here.netns_inode.map(u64::from), ino.ok());
        // Entering our own namespace by path needs CAP_SYS_ADMIN; without it the values are "?".
        let there = system_info(Some(&NetnsSpec("/proc/self/ns/net".into())));
        assert_eq!(there.netns.as_deref(), Some("/proc/self/ns/net"));
        assert!(there.default_cc == here.default_cc || there.default_cc == "?", "{there:?}");
    }
}
