//! Kubernetes from the node's side, pure: a socket's pod uid and container id from its cgroup
//! path, and pod and container names from a pod list (`GET /pods` of the kubelet, or the API
//! server's `/api/v1/pods?fieldSelector=spec.nodeName=NODE`: the same `PodList` document).

use serde::Deserialize;
use std::collections::HashMap;

/// The pod uid and container id in a cgroup path, for both cgroup drivers:
/// systemd `.../kubepods-burstable-pod<uid with _>.slice/cri-containerd-<id>.scope` (also `crio-`
/// and `docker-`) and cgroupfs `.../kubepods/burstable/pod<uid>/<id>`.
pub fn pod_of_cgroup(path: &str) -> Option<(String, Option<String>)> {
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    let uid = parts.by_ref().find_map(pod_uid)?;
    let container = parts.next().and_then(container_id);
    Some((uid, container))
}

fn pod_uid(part: &str) -> Option<String> {
    let p = part.strip_suffix(".slice").unwrap_or(part);
    let uid = p.rsplit_once("-pod").map(|(_, u)| u).or_else(|| p.strip_prefix("pod"))?;
    let uid = uid.replace('_', "-");
    (uid.len() == 36 && uid.chars().all(|c| c.is_ascii_hexdigit() || c == '-')).then_some(uid)
}

fn container_id(part: &str) -> Option<String> {
    let p = part.strip_suffix(".scope").unwrap_or(part);
    let id = p.rsplit_once('-').map_or(p, |(_, id)| id);
    (id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit())).then(|| id.to_string())
}

/// Pod names by uid, and container names by id.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PodIndex {
    pods: HashMap<String, (String, String)>,
    containers: HashMap<String, String>,
}

#[derive(Deserialize)]
struct PodList {
    items: Vec<PodItem>,
}

#[derive(Deserialize)]
struct PodItem {
    metadata: Meta,
    #[serde(default)]
    status: Status,
}

#[derive(Deserialize)]
struct Meta {
    uid: String,
    namespace: String,
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Status {
    #[serde(default)]
    container_statuses: Vec<ContainerStatus>,
    #[serde(default)]
    init_container_statuses: Vec<ContainerStatus>,
}

#[derive(Deserialize)]
struct ContainerStatus {
    name: String,
    #[serde(default, rename = "containerID")]
    container_id: Option<String>,
}

impl PodIndex {
    /// Reads a `PodList` document; a container id's runtime prefix (`containerd://`) is dropped.
    pub fn parse(json: &str) -> Result<PodIndex, String> {
        let list: PodList = serde_json::from_str(json).map_err(|e| format!("not a pod list: {e}"))?;
        let mut idx = PodIndex::default();
        for p in list.items {
            let statuses = p.status.container_statuses.into_iter().chain(p.status.init_container_statuses);
            for c in statuses {
                if let Some(id) = c.container_id.as_deref().and_then(|i| i.rsplit("://").next()) {
                    idx.containers.insert(id.to_string(), c.name);
                }
            }
            idx.pods.insert(p.metadata.uid, (p.metadata.namespace, p.metadata.name));
        }
        Ok(idx)
    }

    /// The pod of `uid` (namespace, name), and the container of `container_id`'s name.
    pub fn names(
        &self,
        uid: &str,
        container_id: Option<&str>,
    ) -> (Option<&(String, String)>, Option<&String>) {
        (self.pods.get(uid), container_id.and_then(|c| self.containers.get(c)))
    }

    pub fn len(&self) -> usize {
        self.pods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f5b1c2e-6a7d-4e8f-9a0b-1c2d3e4f5a6b";
    const CID: &str = "3a1f0c9e8d7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f";

    #[test]
    fn pod_and_container_from_both_cgroup_drivers() {
        let systemd = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{CID}.scope",
            UID.replace('-', "_")
        );
        assert_eq!(pod_of_cgroup(&systemd), Some((UID.into(), Some(CID.into()))));
        let besteffort =
            format!("/kubepods.slice/kubepods-pod{}.slice/crio-{CID}.scope", UID.replace('-', "_"));
        assert_eq!(pod_of_cgroup(&besteffort), Some((UID.into(), Some(CID.into()))));
        let cgroupfs = format!("/kubepods/burstable/pod{UID}/{CID}");
        assert_eq!(pod_of_cgroup(&cgroupfs), Some((UID.into(), Some(CID.into()))));
        assert_eq!(pod_of_cgroup(&format!("/kubepods/pod{UID}")), Some((UID.into(), None)));
        assert_eq!(pod_of_cgroup("/system.slice/sshd.service"), None);
        assert_eq!(pod_of_cgroup("/user.slice/user-0.slice/session-1.scope"), None);
        assert_eq!(pod_of_cgroup(""), None);
    }

    /// A pod list written by hand in the published `PodList` layout (core/v1) that the kubelet's
    /// `/pods` and the API server return: no kubelet runs here to record one from.
    #[test]
    fn names_from_a_pod_list() {
        let idx = PodIndex::parse(include_str!("testdata/podlist.json")).unwrap();
        assert_eq!(idx.len(), 2);
        let (pod, container) = idx.names(UID, Some(CID));
        assert_eq!(pod, Some(&("shop".to_string(), "frontend-7d9f8c6b5-x2k4p".to_string())));
        assert_eq!(container.map(String::as_str), Some("nginx"));
        assert_eq!(idx.names("nope", None), (None, None));
        assert!(PodIndex::parse("{\"kind\":\"Status\"}").unwrap_err().starts_with("not a pod list"));
    }
}
