//! Where a socket lives: its network namespace's name, its cgroup, and on Kubernetes its pod.
//! Plain data, filled at the collectors' edge (`crate::attrib`); shared by every socket of the
//! same namespace and cgroup.

use serde::Serialize;
use std::borrow::Cow;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The namespace's name: its `ip netns` name, or the pod's `namespace/name` when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netns_name: Option<String>,
    /// The cgroup (v2) path, from the cgroup2 mount's root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<Pod>,
}

/// A Kubernetes pod, as far as it is known: the uid and container id come from the cgroup path,
/// the rest from the kubelet's (or API server's) pod list when one is configured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Pod {
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

impl Origin {
    /// One short word for a table column: the pod's namespace/name, else the namespace's name,
    /// else the cgroup's last part. Borrowed but for a pod's.
    pub fn label(&self) -> Option<Cow<'_, str>> {
        let pod =
            self.pod.as_ref().and_then(|p| Some(format!("{}/{}", p.namespace.as_ref()?, p.name.as_ref()?)));
        let cgroup = || self.cgroup.as_deref().and_then(|c| c.rsplit('/').find(|p| !p.is_empty()));
        pod.map(Cow::Owned).or_else(|| self.netns_name.as_deref().or_else(cgroup).map(Cow::Borrowed))
    }
}
