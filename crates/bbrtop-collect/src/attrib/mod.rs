//! Attribution at the collectors' edge: a socket's network namespace inode and cgroup id become
//! names (`ip netns` names, cgroup paths, Kubernetes pods). The tables are read from the host
//! (`/run/netns`, the cgroup2 mount, a pod list) and kept; an id not in them makes a rescan, at
//! most every few seconds. Pure parsing lives in `kube`.

pub mod kube;

use bbrtop_core::model::{Origin, Pod};
use kube::PodIndex;
use rustc_hash::FxHashMap as HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often unknown ids may make the tables be read again.
const RESCAN: Duration = Duration::from_secs(5);

/// Where the pod list comes from: a file (refreshed on rescans) or an http URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodSource {
    File(PathBuf),
    Url(String),
}

/// A socket's network namespace inode and cgroup id.
type Place = (Option<u64>, Option<u64>);

pub struct Resolver {
    netns: HashMap<u64, String>,
    cgroups: HashMap<u64, String>,
    cgroup_root: Option<PathBuf>,
    pods: Option<PodSource>,
    index: PodIndex,
    origins: HashMap<Place, Option<Arc<Origin>>>,
    scanned: Option<Instant>,
}

impl Resolver {
    pub fn new(pods: Option<PodSource>) -> Resolver {
        Resolver {
            netns: HashMap::default(),
            cgroups: HashMap::default(),
            cgroup_root: cgroup2_root(),
            pods,
            index: PodIndex::default(),
            origins: HashMap::default(),
            scanned: None,
        }
    }

    /// The origin of a socket in namespace `netns` and cgroup `cgroup`, shared by every socket
    /// there; `None` when nothing is known of either.
    pub fn origin(&mut self, netns: Option<u64>, cgroup: Option<u64>) -> Option<Arc<Origin>> {
        if let Some(o) = self.origins.get(&(netns, cgroup)) {
            return o.clone();
        }
        let unknown = netns.is_some_and(|n| !self.netns.contains_key(&n))
            || cgroup.is_some_and(|c| !self.cgroups.contains_key(&c));
        if unknown && self.scanned.is_none_or(|t| t.elapsed() >= RESCAN) {
            self.rescan();
        }
        let o = self.build(netns, cgroup);
        // An origin of unknown ids is not kept: a later rescan may name them.
        if o.as_ref().is_some_and(|o| o.cgroup.is_some() || o.netns_name.is_some()) || !unknown {
            self.origins.insert((netns, cgroup), o.clone());
        }
        o
    }

    fn build(&self, netns: Option<u64>, cgroup: Option<u64>) -> Option<Arc<Origin>> {
        let cgroup = cgroup.and_then(|c| self.cgroups.get(&c)).cloned();
        let pod = cgroup.as_deref().and_then(kube::pod_of_cgroup).map(|(uid, container_id)| {
            let (names, container) = self.index.names(&uid, container_id.as_deref());
            Pod {
                namespace: names.map(|n| n.0.clone()),
                name: names.map(|n| n.1.clone()),
                container: container.cloned(),
                uid,
                container_id,
            }
        });
        let pod_name =
            pod.as_ref().and_then(|p| Some(format!("{}/{}", p.namespace.as_ref()?, p.name.as_ref()?)));
        let netns_name = netns.and_then(|n| self.netns.get(&n)).cloned().or(pod_name);
        let o = Origin { netns_name, cgroup, pod };
        (o != Origin::default()).then(|| Arc::new(o))
    }

    fn rescan(&mut self) {
        self.scanned = Some(Instant::now());
        self.netns = netns_names(Path::new("/run/netns"));
        if let Some(root) = &self.cgroup_root {
            self.cgroups.clear();
            cgroup_paths(root, root, &mut self.cgroups, 0);
        }
        if let Some(src) = &self.pods
            && let Ok(idx) = read_pods(src).and_then(|j| PodIndex::parse(&j))
        {
            self.index = idx;
        }
        self.origins.clear();
    }
}

/// The cgroup2 hierarchy: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one.
pub fn cgroup2_root() -> Option<PathBuf> {
    let (hybrid, unified) = (Path::new("/sys/fs/cgroup/unified"), Path::new("/sys/fs/cgroup"));
    if hybrid.join("cgroup.procs").exists() {
        Some(hybrid.into())
    } else {
        unified.join("cgroup.controllers").exists().then(|| unified.into())
    }
}

/// `ip netns` names by the inode of the namespace they name.
fn netns_names(dir: &Path) -> HashMap<u64, String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return HashMap::default() };
    entries
        .flatten()
        .filter_map(|e| Some((std::fs::metadata(e.path()).ok()?.ino(), e.file_name().to_str()?.to_string())))
        .collect()
}

/// Every cgroup's path (from `root`) by its id, the inode of its directory; 32 levels at most.
fn cgroup_paths(root: &Path, dir: &Path, out: &mut HashMap<u64, String>, depth: u32) {
    if depth > 32 {
        return;
    }
    if let Ok(m) = std::fs::metadata(dir) {
        let rel = dir.strip_prefix(root).map(|r| format!("/{}", r.display())).unwrap_or_default();
        out.insert(m.ino(), if rel == "/" { "/".into() } else { rel });
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            cgroup_paths(root, &e.path(), out, depth + 1);
        }
    }
}

fn read_pods(src: &PodSource) -> Result<String, String> {
    match src {
        PodSource::File(p) => crate::files::read_to_string("--kubernetes.pods", p, crate::files::Kind::Pods),
        PodSource::Url(u) => ureq::get(u)
            .call()
            .and_then(|mut r| r.body_mut().read_to_string())
            .map_err(|e| format!("{u}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_paths_are_named_by_their_directorys_inode() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("kubepods/burstable/pod0f5b1c2e-6a7d-4e8f-9a0b-1c2d3e4f5a6b"))
            .unwrap();
        let mut out = HashMap::default();
        cgroup_paths(d.path(), d.path(), &mut out, 0);
        let leaf = d.path().join("kubepods/burstable/pod0f5b1c2e-6a7d-4e8f-9a0b-1c2d3e4f5a6b");
        let ino = std::fs::metadata(&leaf).unwrap().ino();
        assert_eq!(out[&ino], "/kubepods/burstable/pod0f5b1c2e-6a7d-4e8f-9a0b-1c2d3e4f5a6b");
        assert_eq!(out[&std::fs::metadata(d.path()).unwrap().ino()], "/");
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn an_origin_names_the_pod_from_the_pod_list() {
        let d = tempfile::tempdir().unwrap();
        let list = d.path().join("pods.json");
        std::fs::write(&list, include_str!("testdata/podlist.json")).unwrap();
        let mut r = Resolver::new(Some(PodSource::File(list)));
        r.cgroup_root = None;
        r.rescan();
        let cid = "3a1f0c9e8d7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f";
        let path = format!("/kubepods/burstable/pod0f5b1c2e-6a7d-4e8f-9a0b-1c2d3e4f5a6b/{cid}");
        r.cgroups.insert(77, path.clone());
        let o = r.build(Some(1), Some(77)).unwrap();
        assert_eq!(o.cgroup.as_deref(), Some(path.as_str()));
        assert_eq!(
            o.netns_name.as_deref(),
            Some("shop/frontend-7d9f8c6b5-x2k4p"),
            "the pod names its namespace"
        );
        let pod = o.pod.as_ref().unwrap();
        assert_eq!((pod.container.as_deref(), pod.container_id.as_deref()), (Some("nginx"), Some(cid)));
        assert_eq!(o.label().as_deref(), Some("shop/frontend-7d9f8c6b5-x2k4p"));
        assert_eq!(r.build(None, None), None);
    }
}
