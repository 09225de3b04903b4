//! Where a recording's chunks sit: flat, in the directory itself, or in Hive-style partitions,
//! `DIR/host=NAME/date=YYYY-MM-DD/<chunk files>` (`--record.layout hive`), so that one glob over a
//! directory or bucket of many hosts' recordings reads as one table with `host` and `date`
//! columns (DuckDB's `hive_partitioning`, Spark, ClickHouse). A chunk's partition is the date
//! (UTC) of its first poll: a chunk that runs past midnight stays in the day it began, and so do
//! its segments.
//!
//! Readers take the directory itself, its `date=*` directories and its `host=*/date=*` ones: a
//! flat recording, a host's subtree (`DIR/host=NAME`), or a directory with one host's tree. A
//! directory of several hosts' trees is several recordings: [`recordings`] names each (and
//! expands `*` and `?` in a path's segments), as `bbrtop compare` takes them for a side.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How a recorder lays its chunks out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// In the directory itself (what bbrtop always wrote).
    #[default]
    Flat,
    /// In `host=NAME/date=YYYY-MM-DD/` beneath the directory.
    Hive { host: String },
}

pub const HOST: &str = "host=";
pub const DATE: &str = "date=";

/// Longest host name taken (DNS's limit).
const MAX_HOST: usize = 253;

/// Whether `name` can be a `host=` partition: a path segment that is the same on every system
/// and every tool that reads it (no `/`, no `=`, nothing hidden, nothing to escape): a letter or
/// digit, then letters, digits, '.', '-' and '_'. The error is one line.
pub fn check_host(name: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    if name.is_empty() {
        return Err("an empty host name (give --record.host NAME)".into());
    }
    if name.len() > MAX_HOST {
        return Err(format!("host name {:?}...: longer than {MAX_HOST} bytes", &name[..32.min(name.len())]));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) || !name.chars().all(ok_char) {
        return Err(format!(
            "host name {name:?}: a host= partition takes a letter or digit, then letters, digits, '.', '-' and '_' only"
        ));
    }
    Ok(())
}

/// The directory of host `host`'s tree in `dir`: `dir/host=NAME`.
pub fn host_dir(dir: &Path, host: &str) -> PathBuf {
    dir.join(format!("{HOST}{host}"))
}

/// `date=2026-11-23`: the partition of a chunk whose first poll is at `at` (UTC).
pub fn date_partition(at: SystemTime) -> String {
    let t = humantime::format_rfc3339_seconds(at).to_string();
    format!("{DATE}{}", &t[..10])
}

/// The value of a `host=` directory's name, if it is one.
pub fn host_of(name: &str) -> Option<&str> {
    name.strip_prefix(HOST).filter(|h| !h.is_empty())
}

/// The subdirectories of `dir` whose names start with `prefix`, by name (none if `dir` does not
/// read: the caller reads `dir` itself and says why).
fn subdirs(dir: &Path, prefix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.len() > prefix.len())
        .collect();
    out.sort();
    out
}

/// The directories that may hold chunks in a recording at `dir`, relative to it ("" for `dir`
/// itself): `dir`, its `date=*` directories, and its `host=*/date=*` ones. Two levels at most.
pub fn leaves(dir: &Path) -> Vec<String> {
    let mut out = vec![String::new()];
    out.extend(subdirs(dir, DATE));
    for h in subdirs(dir, HOST) {
        out.extend(subdirs(&dir.join(&h), DATE).into_iter().map(|d| format!("{h}/{d}")));
    }
    out
}

/// The hosts whose trees `dir` holds (its `host=*` directories), by name.
pub fn hosts(dir: &Path) -> Vec<String> {
    subdirs(dir, HOST).iter().filter_map(|h| host_of(h).map(String::from)).collect()
}

/// The host a recording at `path` is partitioned by: `path` is `host=NAME` (a host's subtree),
/// a date partition within one, or holds one host's tree.
pub fn partition_host(path: &Path) -> Option<String> {
    let host = |p: &Path| p.file_name().and_then(|n| host_of(&n.to_string_lossy()).map(String::from));
    let in_date = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(DATE));
    let hs = hosts(path);
    host(path)
        .or_else(|| in_date.then(|| path.parent().and_then(host)).flatten())
        .or_else(|| (hs.len() == 1).then(|| hs[0].clone()))
}

/// The recordings a side's path names: its matches where a segment holds `*` or `?`, within
/// [`super::glob`]'s bounds; a directory of several hosts' trees as each host's. A pattern that
/// matches nothing, or past the bounds, is a one-line error naming it.
pub fn recordings(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut list = |dir: &Path| {
        let entries = std::fs::read_dir(dir).ok()?;
        Some(entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
    };
    let found = super::glob::expand(path, &mut list).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(!found.is_empty(), "{}: no recording matches", path.display());
    let mut out = Vec::new();
    for p in found {
        let hs = if p.is_dir() { hosts(&p) } else { Vec::new() };
        if hs.len() > 1 {
            out.extend(hs.iter().map(|h| host_dir(&p, h)));
        } else {
            out.push(p);
        }
    }
    Ok(out)
}

/// A recorder's tree checked against the directory it writes into: a flat recording and host
/// trees are not mixed in one directory (readers would take both as one recording).
pub fn check_mix(dir: &Path, layout: &Layout) -> anyhow::Result<()> {
    match layout {
        Layout::Flat => {
            let hs = hosts(dir);
            anyhow::ensure!(
                hs.is_empty(),
                "{}: holds a hive layout's trees (host={}): record with --record.layout hive, or into another directory",
                dir.display(),
                hs.join(", host=")
            );
        }
        Layout::Hive { host } => {
            check_host(host).map_err(anyhow::Error::msg)?;
            let flat = std::fs::read_dir(dir)
                .with_context(|| format!("reading {}", dir.display()))?
                .flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(super::chunk::POLLS_SUFFIX));
            anyhow::ensure!(
                !flat,
                "{}: holds a flat recording's chunks: record with --record.layout flat, or into another directory",
                dir.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn host_names_are_safe_path_segments() {
        for ok in ["edge-1", "ip-10-0-0-1.eu-west-1.compute.internal", "EDGE_2", "7"] {
            assert_eq!(check_host(ok), Ok(()), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a=b", "host=a", ".hidden", "_x", "-x", "a b", "é", "a\0b", "a\\b"]
        {
            let e = check_host(bad).unwrap_err();
            assert!(!e.contains('\n') && e.contains("host name"), "{bad:?}: {e}");
        }
        assert!(check_host(&"a".repeat(254)).unwrap_err().contains("longer than 253"));
    }

    #[test]
    fn a_chunk_is_in_the_date_of_its_first_poll() {
        // 2026-11-23T23:59:59Z, and a second later.
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_478_399);
        assert_eq!(date_partition(t), "date=2026-11-23");
        assert_eq!(date_partition(t + Duration::from_secs(1)), "date=2026-11-24");
        assert_eq!(host_dir(Path::new("rec"), "edge-1"), Path::new("rec/host=edge-1"));
    }

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"").unwrap();
    }

    #[test]
    fn globs_expand_to_recordings_and_a_fleet_to_its_hosts() {
        let tmp = tempfile::tempdir().unwrap();
        let fleet = tmp.path().join("fleet");
        for h in ["edge-1", "edge-2", "canary"] {
            touch(&fleet.join(format!("host={h}/date=2026-11-23/x.polls.parquet")));
        }
        let names = |ps: Vec<PathBuf>| -> Vec<String> {
            ps.iter().map(|p| p.strip_prefix(&fleet).unwrap().display().to_string()).collect()
        };
        assert_eq!(names(recordings(&fleet.join("host=edge-*")).unwrap()), ["host=edge-1", "host=edge-2"]);
        assert_eq!(names(recordings(&fleet.join("host=edge-?")).unwrap()), ["host=edge-1", "host=edge-2"]);
        assert_eq!(names(recordings(&fleet).unwrap()), ["host=canary", "host=edge-1", "host=edge-2"]);
        assert_eq!(names(recordings(&fleet.join("host=canary")).unwrap()), ["host=canary"]);
        assert_eq!(
            names(recordings(&fleet.join("host=*/date=*")).unwrap()),
            ["host=canary/date=2026-11-23", "host=edge-1/date=2026-11-23", "host=edge-2/date=2026-11-23"]
        );
        let e = recordings(&fleet.join("host=core-*")).unwrap_err().to_string();
        assert!(e.ends_with("host=core-*: no recording matches") && !e.contains('\n'), "{e}");
        assert_eq!(partition_host(&fleet.join("host=edge-1")).as_deref(), Some("edge-1"));
        assert_eq!(partition_host(&fleet.join("host=edge-1/date=2026-11-23")).as_deref(), Some("edge-1"));
        assert_eq!(partition_host(&fleet), None, "three hosts");
        let leaves = leaves(&fleet);
        assert_eq!(leaves.len(), 4, "{leaves:?}");
        assert_eq!(leaves[1], "host=canary/date=2026-11-23");
    }
}
