//! The shipped DaemonSet (deploy/kubernetes/daemonset.yaml): the exporter's args and its memory
//! limit, read from the manifest, so that what runs here follows the file. Used by
//! tests/daemonset_memory.rs, and by benches/footprint.rs, which includes this file by path.

use serde_norway::Value;
use std::path::Path;

/// The manifest, from the repository's root.
pub const MANIFEST: &str = "deploy/kubernetes/daemonset.yaml";

/// What the manifest runs, and in how much memory.
#[derive(Clone, Debug)]
pub struct DaemonSet {
    /// The container's args, as written (`export` first).
    pub args: Vec<String>,
    /// resources.limits.memory, in bytes.
    pub memory_limit: u64,
}

/// The DaemonSet in `root`'s manifest: its one container's args and memory limit.
pub fn read(root: &Path) -> Result<DaemonSet, String> {
    let text = std::fs::read_to_string(root.join(MANIFEST)).map_err(|e| format!("{MANIFEST}: {e}"))?;
    let doc: Value = serde_norway::from_str(&text).map_err(|e| format!("{MANIFEST}: {e}"))?;
    let c = &doc["spec"]["template"]["spec"]["containers"][0];
    let args = c["args"]
        .as_sequence()
        .ok_or_else(|| format!("{MANIFEST}: no args in the first container"))?
        .iter()
        .map(|a| a.as_str().map(str::to_owned).ok_or_else(|| format!("{MANIFEST}: an arg is not a string")))
        .collect::<Result<Vec<_>, _>>()?;
    let memory = c["resources"]["limits"]["memory"]
        .as_str()
        .ok_or_else(|| format!("{MANIFEST}: no resources.limits.memory"))?;
    Ok(DaemonSet { args, memory_limit: quantity(memory)? })
}

/// A Kubernetes memory quantity in bytes: `256Mi`, `1Gi`, `500M`, `134217728`.
pub fn quantity(s: &str) -> Result<u64, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mult: u64 = match unit {
        "" => 1,
        "k" | "K" => 1000,
        "M" => 1000_u64.pow(2),
        "G" => 1000_u64.pow(3),
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => return Err(format!("memory quantity {s:?}: unknown unit {unit:?}")),
    };
    num.parse::<u64>().map(|n| n * mult).map_err(|_| format!("memory quantity {s:?}"))
}

/// A size as bbrtop's flags write it (`96MiB`, `500MB`), in bytes.
pub fn size(s: &str) -> Result<u64, String> {
    quantity(s.strip_suffix('B').unwrap_or(s))
}

impl DaemonSet {
    /// The value of `--name=value` among the args.
    pub fn flag(&self, name: &str) -> Option<&str> {
        self.args.iter().find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
    }

    /// The args to run on this machine, flags as the manifest writes them (`--name=value`):
    /// `--web.listen-address` set to `listen`; args naming the pod's environment (`$(NODE_NAME)`)
    /// left out; `--hindsight.dir` pointed at `hindsight_dir` unless its path exists here.
    pub fn local_args(&self, listen: &str, hindsight_dir: &Path) -> Vec<String> {
        self.args
            .iter()
            .filter(|a| !a.contains("$("))
            .map(|a| match a.split_once('=') {
                Some(("--web.listen-address", _)) => format!("--web.listen-address={listen}"),
                Some(("--hindsight.dir", d)) if !Path::new(d).is_dir() => {
                    format!("--hindsight.dir={}", hindsight_dir.display())
                }
                _ => a.clone(),
            })
            .collect()
    }
}
