//! The experiment's edge: the checks made before anything is attached (the cgroup, the ccs, the
//! capabilities), and the program attached by a bpf_link to the cgroup's directory, never
//! pinned: the link is a file descriptor of this process, so the program leaves the cgroup when
//! the process exits, however it exits (SIGKILL included). Before it attaches, it refuses a cgroup
//! on whose path another sock_ops program runs (`overlap.rs`), holding a lock on the cgroup2
//! mount from that look to the attach, so two experiments started at once cannot both find the
//! path free.

use super::{Arm, Unit};
use bbrtop_collect::caps::{Cap, CapSet, names};
use std::path::{Path, PathBuf};

/// Why an experiment did not start: a usage error (a path, a cc), a missing capability, another
/// sock_ops program on the cgroup's path, or the kernel's refusal.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Privilege(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Kernel(String),
}

/// The cgroup2 mount points in a /proc/self/mountinfo text.
pub fn cgroup2_mounts(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let mount = pre.split_whitespace().nth(4)?;
            (post.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mount))
        })
        .collect()
}

/// The cgroup v2 directory `path` names: absolute, under a cgroup2 mount, or relative to the
/// first one (`system.slice/nginx.service`). The mount's root (the whole host) only when
/// `whole_host`.
pub fn resolve_cgroup(path: &Path, mounts: &[PathBuf], whole_host: bool) -> Result<PathBuf, StartError> {
    let bad = |why: &str| StartError::Usage(format!("--cgroup {}: {why}", path.display()));
    let first = mounts.first().ok_or_else(|| bad("no cgroup v2 hierarchy is mounted"))?;
    let full = if path.is_absolute() { path.to_path_buf() } else { first.join(path) };
    let full = full.canonicalize().map_err(|e| bad(&format!("{e}")))?;
    let Some(mount) = mount_of(&full, mounts) else {
        return Err(bad(&format!(
            "not a cgroup v2 directory (the v2 hierarchy is at {})",
            mounts.iter().map(|m| m.display().to_string()).collect::<Vec<_>>().join(", ")
        )));
    };
    if !full.join("cgroup.procs").is_file() {
        return Err(bad("not a cgroup v2 directory (no cgroup.procs)"));
    }
    if full == *mount && !whole_host {
        return Err(bad("the root cgroup is the whole host: say --whole-host to mean it"));
    }
    Ok(full)
}

/// The cgroup2 mount `dir` is under.
pub fn mount_of<'m>(dir: &Path, mounts: &'m [PathBuf]) -> Option<&'m PathBuf> {
    mounts.iter().find(|m| dir.starts_with(m))
}

/// Refuses a cc the kernel does not list as available (a module's is loadable: says how).
pub fn check_ccs(arms: &[Arm], available: &str) -> Result<(), StartError> {
    let have: Vec<&str> = available.split_whitespace().collect();
    match arms.iter().find(|a| !have.contains(&a.cc.as_str())) {
        None => Ok(()),
        Some(a) => Err(StartError::Usage(format!(
            "--arm {}: congestion control {:?} is not available (available: {}); if it is a module, modprobe tcp_{}",
            a.cc,
            a.cc,
            have.join(" "),
            a.cc
        ))),
    }
}

/// Every check, in order, before anything is loaded: the cgroup's path, the ccs, the
/// capabilities. Returns the cgroup's directory.
pub fn preflight(arms: &[Arm], cgroup: &Path, whole_host: bool) -> Result<PathBuf, StartError> {
    super::check_arms(arms).map_err(StartError::Usage)?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let dir = resolve_cgroup(cgroup, &cgroup2_mounts(&mountinfo), whole_host)?;
    let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map_err(|e| StartError::Kernel(format!("reading tcp_available_congestion_control: {e}")))?;
    check_ccs(arms, &avail)?;
    let missing = CapSet::effective().missing(&[Cap::Bpf, Cap::NetAdmin]);
    if !missing.is_empty() {
        return Err(StartError::Privilege(format!(
            "an experiment loads a sock_ops program into a cgroup, which needs {}",
            names(&missing)
        )));
    }
    Ok(dir)
}

/// What the program is loaded with.
#[derive(Clone, Debug)]
pub struct Plan {
    pub arms: Vec<Arm>,
    pub unit: Unit,
    pub seed: u64,
    pub ports: Vec<u16>,
    pub dry_run: bool,
}

#[cfg(feature = "bpf")]
pub use imp::{ArmMap, OpenObject, Running, start, verify};

#[cfg(feature = "bpf")]
mod imp {
    use super::{Plan, StartError};
    use crate::experiment::{ArmCount, CC_LEN, MAX_ARMS, cumulative};
    use libbpf_rs::Link;
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};
    use std::mem::MaybeUninit;
    use std::os::fd::AsRawFd;
    use std::path::{Path, PathBuf};

    bbrtop_collect::bpf_skeleton!(skel, "experiment.skel.rs");

    pub use libbpf_rs::OpenObject;

    /// The program, loaded and linked to the cgroup. Dropping it detaches; so does the process's
    /// exit, since the link is pinned nowhere.
    pub struct Running<'obj> {
        skel: skel::ExperimentSkel<'obj>,
        _link: Link,
        plan: Plan,
        cgroup: Cgroup,
    }

    /// The cgroup's directory and its identity (device and inode: the inode is the cgroup's id,
    /// so a cgroup made again under the same name is another).
    struct Cgroup {
        dir: PathBuf,
        id: Option<(u64, u64)>,
    }

    impl Cgroup {
        fn id(dir: &Path) -> Option<(u64, u64)> {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()))
        }
    }

    fn err(what: &str, e: impl std::fmt::Display) -> StartError {
        StartError::Kernel(format!("experiment program: {what}: {e}"))
    }

    /// Loads the program with `plan` and links it to the cgroup directory `dir`, unless another
    /// sock_ops program runs on its path (`overlap.rs`).
    pub fn start<'obj>(
        obj: &'obj mut MaybeUninit<OpenObject>,
        plan: &Plan,
        dir: &Path,
    ) -> Result<Running<'obj>, StartError> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mounts = super::cgroup2_mounts(&mountinfo);
        let mount = super::mount_of(dir, &mounts).ok_or_else(|| {
            StartError::Usage(format!("--cgroup {}: not under a cgroup2 mount", dir.display()))
        })?;
        // Held until the link is made: another experiment's look waits for it, then sees it.
        let lock = std::fs::File::open(mount).and_then(|f| f.lock().map(|()| f));
        let _lock = lock.map_err(|e| err(&format!("locking {}", mount.display()), e))?;
        alone(dir, mount)?;
        let loaded = load(obj, plan)?;
        let cg = std::fs::File::open(dir).map_err(|e| err(&dir.display().to_string(), e))?;
        let link = loaded.progs.experiment.attach_cgroup(cg.as_raw_fd()).map_err(|e| err("attach", e))?;
        let cgroup = Cgroup { dir: dir.to_path_buf(), id: Cgroup::id(dir) };
        Ok(Running { skel: loaded, _link: link, plan: plan.clone(), cgroup })
    }

    /// Refuses `dir` when a sock_ops program is attached to it, an ancestor or a descendant.
    fn alone(dir: &Path, mount: &Path) -> Result<(), StartError> {
        use crate::experiment::overlap::{MAX_DESCENDANTS, look};
        let mut query = |cg: &Path| sock_ops_ids(cg);
        let seen = look(dir, mount, MAX_DESCENDANTS, &mut query)
            .map_err(|e| err(&format!("querying the sock_ops programs on {}'s path", dir.display()), e))?;
        if seen.truncated {
            tracing::warn!(
                cgroup = %dir.display(),
                "looked for other sock_ops programs on the first {} descendant cgroups only",
                seen.descendants
            );
        }
        match seen.other {
            Some(mut o) => {
                o.name = prog_name(o.prog_id);
                Err(StartError::Conflict(o.refusal(dir)))
            }
            None => Ok(()),
        }
    }

    /// The IDs of the sock_ops programs attached to the cgroup `dir` itself (BPF_PROG_QUERY, as
    /// `bpftool cgroup show`; CAP_NET_ADMIN).
    #[allow(unsafe_code)]
    fn sock_ops_ids(dir: &Path) -> std::io::Result<Vec<u32>> {
        use libbpf_rs::libbpf_sys;
        let cg = std::fs::File::open(dir)?;
        let mut ids = [0u32; 64];
        let mut count = ids.len() as u32;
        // SAFETY: the kernel writes at most `count` IDs into `ids` and the total into `count`,
        // both live across the call; attach_flags may be null.
        let rc = unsafe {
            libbpf_sys::bpf_prog_query(
                cg.as_raw_fd(),
                libbpf_sys::BPF_CGROUP_SOCK_OPS,
                0,
                std::ptr::null_mut(),
                ids.as_mut_ptr(),
                &mut count,
            )
        };
        // ENOSPC: more than 64 attached; the first 64 are written, and one is enough.
        if rc < 0 && -rc != libc::ENOSPC {
            return Err(std::io::Error::from_raw_os_error(-rc));
        }
        Ok(ids[..(count as usize).min(ids.len())].to_vec())
    }

    /// A program's name, where the kernel tells it (CAP_SYS_ADMIN).
    #[allow(unsafe_code)]
    fn prog_name(id: u32) -> Option<String> {
        use libbpf_rs::libbpf_sys;
        let fd = libbpf_rs::Program::fd_from_id(id).ok()?;
        let mut info = libbpf_sys::bpf_prog_info::default();
        let mut len = size_of_val(&info) as u32;
        // SAFETY: the kernel writes at most `len` bytes of a bpf_prog_info into `info`, which lives
        // across the call; its pointer fields are null, so the kernel fills none of the arrays.
        let rc = unsafe {
            libbpf_sys::bpf_obj_get_info_by_fd(
                fd.as_raw_fd(),
                (&mut info as *mut libbpf_sys::bpf_prog_info).cast(),
                &mut len,
            )
        };
        let name: Vec<u8> = info.name.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
        (rc == 0).then(|| String::from_utf8_lossy(&name).into_owned())
    }

    /// Whether this kernel's verifier takes the program (`check`): loaded with one arm, attached
    /// nowhere, and closed.
    pub fn verify() -> Result<(), StartError> {
        let arm = crate::experiment::Arm { cc: "cubic".into(), parts: 10_000 };
        let plan =
            Plan { arms: vec![arm], unit: Default::default(), seed: 0, ports: Vec::new(), dry_run: true };
        load(&mut MaybeUninit::uninit(), &plan).map(drop)
    }

    fn load<'obj>(
        obj: &'obj mut MaybeUninit<OpenObject>,
        plan: &Plan,
    ) -> Result<skel::ExperimentSkel<'obj>, StartError> {
        let mut open = skel::ExperimentSkelBuilder::default().open(obj).map_err(|e| err("open", e))?;
        let ro = open.maps.rodata_data.as_deref_mut().ok_or_else(|| err("rodata", "missing"))?;
        ro.seed = plan.seed;
        ro.unit = plan.unit.code();
        ro.n_arms = plan.arms.len() as u32;
        ro.dry_run = u32::from(plan.dry_run);
        ro.n_ports = plan.ports.len() as u32;
        for (i, p) in plan.ports.iter().enumerate() {
            ro.ports[i] = *p;
        }
        for (i, (a, c)) in plan.arms.iter().zip(cumulative(&plan.arms)).enumerate().take(MAX_ARMS) {
            ro.cum[i] = c;
            let mut name = [0i8; CC_LEN];
            for (d, s) in name.iter_mut().zip(a.cc.bytes()) {
                *d = s as i8;
            }
            ro.cc[i] = name;
            ro.ecn[i] = u8::from(needs_ecn(&a.cc));
        }
        bbrtop_collect::bpf::loader::logged_load(|| open.load()).map_err(|e| err("load", e))
    }

    /// Whether a cc needs ECN negotiated in the handshake (the kernel's `TCP_CONG_NEEDS_ECN`,
    /// which it does not export): mainline's dctcp, and L4S's prague out of tree.
    fn needs_ecn(cc: &str) -> bool {
        matches!(cc, "dctcp" | "prague")
    }

    /// The experiment's cookie → arm map, read by the engine (one lookup per socket it starts
    /// counting, and one per response of a socket it does not count yet).
    pub struct ArmMap {
        map: libbpf_rs::MapHandle,
        names: Vec<String>,
    }

    impl bbrtop_core::seam::ArmOf for ArmMap {
        fn arm_of(&self, cookie: u64) -> Option<u8> {
            use libbpf_rs::{MapCore, MapFlags};
            let v = self.map.lookup(&cookie.to_ne_bytes(), MapFlags::ANY).ok()??;
            let arm = u32::from_ne_bytes(v.try_into().ok()?);
            u8::try_from(arm).ok().filter(|a| usize::from(*a) < self.names.len())
        }

        fn names(&self) -> &[String] {
            &self.names
        }
    }

    impl Running<'_> {
        /// Whether the cgroup is gone (removed, or removed and made again): the program then
        /// runs for nothing, and the experiment should end.
        pub fn cgroup_removed(&self) -> bool {
            Cgroup::id(&self.cgroup.dir) != self.cgroup.id
        }

        /// Closes (false) or opens arm `i`: while closed, the units it draws get arm 0, the
        /// control (the harm guard's lever). The program reads it at each new connection.
        pub fn set_open(&mut self, i: usize, open: bool) {
            if let Some(d) = self.skel.maps.data_data.as_deref_mut()
                && i < MAX_ARMS
            {
                d.open[i] = u32::from(open);
            }
        }

        /// Each connection's arm, by socket cookie, as the program recorded it (the connections
        /// it saw, at most the LRU map's 65,536, closed ones until evicted).
        /// The cookie → arm map as the engine asks it ([`bbrtop_core::seam::ArmOf`]), through a
        /// handle of its own, so the engine's thread reads it while this one opens and closes arms.
        pub fn arm_map(&self) -> Result<ArmMap, StartError> {
            let map = libbpf_rs::MapHandle::try_from(&self.skel.maps.arms).map_err(|e| err("arms map", e))?;
            Ok(ArmMap { map, names: self.plan.arms.iter().map(|a| a.cc.clone()).collect() })
        }

        pub fn arms_by_cookie(&self) -> std::collections::HashMap<u64, u32> {
            use libbpf_rs::{MapCore, MapFlags};
            let map = &self.skel.maps.arms;
            map.keys()
                .filter_map(|k| {
                    let v = map.lookup(&k, MapFlags::ANY).ok()??;
                    Some((u64::from_ne_bytes(k.try_into().ok()?), u32::from_ne_bytes(v.try_into().ok()?)))
                })
                .collect()
        }

        /// The counts so far, per arm.
        pub fn counts(&self) -> Vec<ArmCount> {
            let Some(bss) = self.skel.maps.bss_data.as_deref() else { return Vec::new() };
            self.plan
                .arms
                .iter()
                .enumerate()
                .map(|(i, a)| ArmCount {
                    cc: a.cc.clone(),
                    percent: f64::from(a.parts) / 100.0,
                    assigned: bss.assigned[i],
                    setsockopt_failures: bss.failed[i],
                    redirected: bss.redirected[i],
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mounts() {
        let mi = "30 23 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n\
                  31 23 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup2_mounts(mi), vec![PathBuf::from("/sys/fs/cgroup/unified")]);
    }

    #[test]
    fn resolves_a_cgroup_path_or_says_why_not() {
        let root = tempfile::tempdir().unwrap();
        let mount = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(mount.join("system.slice/nginx.service")).unwrap();
        std::fs::write(mount.join("cgroup.procs"), "").unwrap();
        std::fs::write(mount.join("system.slice/nginx.service/cgroup.procs"), "").unwrap();
        std::fs::create_dir(mount.join("plain")).unwrap();
        let mounts = [mount.clone()];
        let want = mount.join("system.slice/nginx.service");
        assert_eq!(resolve_cgroup(Path::new("system.slice/nginx.service"), &mounts, false).unwrap(), want);
        assert_eq!(resolve_cgroup(&want, &mounts, false).unwrap(), want);
        let msg = |p: &Path, whole| resolve_cgroup(p, &mounts, whole).unwrap_err().to_string();
        assert!(msg(Path::new("/tmp"), false).contains("--cgroup /tmp: not a cgroup v2 directory"));
        assert!(msg(Path::new("plain"), false).contains("no cgroup.procs"));
        assert!(msg(Path::new("nope"), false).starts_with("--cgroup nope: "));
        assert!(msg(&mount, false).contains("--whole-host"));
        assert_eq!(resolve_cgroup(&mount, &mounts, true).unwrap(), mount);
        assert!(resolve_cgroup(Path::new("x"), &[], false).unwrap_err().to_string().contains("no cgroup v2"));
    }

    #[test]
    fn refuses_a_cc_the_kernel_lacks() {
        let arms: Vec<Arm> = ["bbr=50%", "dctcp=50%"].iter().map(|s| s.parse().unwrap()).collect();
        let e = check_ccs(&arms, "reno bbr cubic\n").unwrap_err().to_string();
        assert!(e.contains("\"dctcp\" is not available") && e.contains("modprobe tcp_dctcp"), "{e}");
        assert!(check_ccs(&arms, "reno bbr cubic dctcp\n").is_ok());
    }
}
