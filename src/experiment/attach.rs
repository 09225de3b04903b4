//! The experiment's edge: the checks made before anything is attached (the cgroup, the ccs, the
//! capabilities), and the program attached by a bpf_link to the cgroup's directory, never
//! pinned: the link is a file descriptor of this process, so the program leaves the cgroup when
//! the process exits, however it exits (SIGKILL included).

use super::{Arm, Unit};
use bbrtop_collect::caps::{Cap, CapSet, names};
use std::path::{Path, PathBuf};

/// Why an experiment did not start: a usage error (a path, a cc), a missing capability, or the
/// kernel's refusal.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Privilege(String),
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
    let Some(mount) = mounts.iter().find(|m| full.starts_with(m)) else {
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
    use std::path::Path;

    bbrtop_collect::bpf_skeleton!(skel, "experiment.skel.rs");

    pub use libbpf_rs::OpenObject;

    /// The program, loaded and linked to the cgroup. Dropping it detaches; so does the process's
    /// exit, since the link is pinned nowhere.
    pub struct Running<'obj> {
        skel: skel::ExperimentSkel<'obj>,
        _link: Link,
        plan: Plan,
    }

    fn err(what: &str, e: impl std::fmt::Display) -> StartError {
        StartError::Kernel(format!("experiment program: {what}: {e}"))
    }

    /// Loads the program with `plan` and links it to the cgroup directory `dir`.
    pub fn start<'obj>(
        obj: &'obj mut MaybeUninit<OpenObject>,
        plan: &Plan,
        dir: &Path,
    ) -> Result<Running<'obj>, StartError> {
        let loaded = load(obj, plan)?;
        let cg = std::fs::File::open(dir).map_err(|e| err(&dir.display().to_string(), e))?;
        let link = loaded.progs.experiment.attach_cgroup(cg.as_raw_fd()).map_err(|e| err("attach", e))?;
        Ok(Running { skel: loaded, _link: link, plan: plan.clone() })
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
        }
        bbrtop_collect::bpf::loader::logged_load(|| open.load()).map_err(|e| err("load", e))
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
