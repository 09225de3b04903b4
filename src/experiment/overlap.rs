//! Another sock_ops program where the experiment's would run. Programs on a cgroup and on its
//! ancestors all run for a connection (a descendant's first, then its ancestors', in order of
//! attachment), each may set the cc, and the last to set it wins: two experiments on one path both
//! count connections whose cc only one of them set. So the experiment looks, before it attaches,
//! at the programs attached to its cgroup, to each ancestor up to the cgroup2 mount, and to its
//! descendants, and refuses when there is any. Any sock_ops program, not only bbrtop's: from
//! outside, nothing says whether a program sets TCP_CONGESTION, and one that does falsifies the
//! summary just the same.
//!
//! The descendants are walked breadth-first up to [`MAX_DESCENDANTS`] cgroups (a busy Kubernetes
//! node has some thousands); a cgroup tree beyond that is looked at that far, with a warning. The
//! kernel has no query for a subtree, and a marker file each experiment leaves would see only
//! bbrtop's own. The query (`BPF_PROG_QUERY`) is a parameter, so the walk is tested on plain
//! directories.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// At most this many descendant cgroups are looked at.
pub const MAX_DESCENDANTS: usize = 10_000;

/// Where a cgroup sits relative to the experiment's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    Same,
    Ancestor,
    Descendant,
}

/// A sock_ops program attached on the experiment's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Other {
    pub cgroup: PathBuf,
    pub relation: Relation,
    pub prog_id: u32,
    /// The program's name, where the kernel tells it (BPF_PROG_GET_FD_BY_ID needs CAP_SYS_ADMIN).
    pub name: Option<String>,
}

/// The program's name in experiment.bpf.c (the kernel keeps 15 characters of a name).
pub const OUR_PROGRAM: &str = "experiment";

impl Other {
    /// The one-line refusal, for an experiment on `dir`.
    pub fn refusal(&self, dir: &Path) -> String {
        let whose = match self.name.as_deref() {
            Some(OUR_PROGRAM) => format!("program {} (another bbrtop experiment)", self.prog_id),
            Some(n) => format!("program {} ({n:?})", self.prog_id),
            None => format!("program {}", self.prog_id),
        };
        let where_ = match self.relation {
            Relation::Same => "to it".to_string(),
            Relation::Ancestor => format!("to its ancestor {}", self.cgroup.display()),
            Relation::Descendant => format!("to its descendant {}", self.cgroup.display()),
        };
        format!(
            "--cgroup {}: sock_ops {whose} is attached {where_}; both would set the cc of the same \
             connections and the last to run wins, so stop it first",
            dir.display()
        )
    }
}

/// What the look found: the first other program, and how many descendants it looked at (with
/// whether it stopped at the bound).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Look {
    pub other: Option<Other>,
    pub descendants: usize,
    pub truncated: bool,
}

/// Looks at `dir`, its ancestors up to `mount` (the cgroup2 mount it is under) and at most
/// `limit` descendants; `query` gives the IDs of the sock_ops programs attached to one cgroup.
/// A descendant removed while it is walked is skipped; any other failure is returned.
pub fn look(
    dir: &Path,
    mount: &Path,
    limit: usize,
    query: &mut dyn FnMut(&Path) -> std::io::Result<Vec<u32>>,
) -> std::io::Result<Look> {
    let found = |cg: &Path, relation: Relation, ids: Vec<u32>| {
        ids.first().map(|&prog_id| Other { cgroup: cg.to_path_buf(), relation, prog_id, name: None })
    };
    let mut path = Some(dir);
    while let Some(cg) = path {
        let relation = if cg == dir { Relation::Same } else { Relation::Ancestor };
        if let Some(o) = found(cg, relation, query(cg)?) {
            return Ok(Look { other: Some(o), ..Look::default() });
        }
        path = cg.parent().filter(|_| cg != mount && cg.starts_with(mount));
    }
    let mut todo: VecDeque<PathBuf> = children(dir)?.into();
    let mut seen = 0;
    while let Some(cg) = todo.pop_front() {
        if seen == limit {
            return Ok(Look { other: None, descendants: seen, truncated: true });
        }
        seen += 1;
        let gone = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
        match query(&cg) {
            Ok(ids) => {
                if let Some(o) = found(&cg, Relation::Descendant, ids) {
                    return Ok(Look { other: Some(o), descendants: seen, truncated: false });
                }
            }
            Err(e) if gone(&e) => continue,
            Err(e) => return Err(e),
        }
        match children(&cg) {
            Ok(c) => todo.extend(c),
            Err(e) if gone(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Look { other: None, descendants: seen, truncated: false })
}

/// A cgroup's child cgroups: its subdirectories (symbolic links are not followed).
fn children(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A tree of plain directories, with programs "attached" by a map the query reads.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let mount = t.path().canonicalize().unwrap();
        for d in ["a/b/c", "a/b/d", "a/e", "f"] {
            std::fs::create_dir_all(mount.join(d)).unwrap();
        }
        std::fs::write(mount.join("a/b/cgroup.procs"), "").unwrap();
        (t, mount)
    }

    fn run(mount: &Path, dir: &str, on: &[(&str, u32)], limit: usize) -> (Look, Vec<PathBuf>) {
        let on: HashMap<PathBuf, u32> = on.iter().map(|(p, id)| (mount.join(p), *id)).collect();
        let mut asked = Vec::new();
        let mut query = |p: &Path| {
            asked.push(p.to_path_buf());
            Ok(on.get(p).map(|id| vec![*id]).unwrap_or_default())
        };
        let l = look(&mount.join(dir), mount, limit, &mut query).unwrap();
        (l, asked)
    }

    #[test]
    fn finds_a_program_on_the_cgroup_an_ancestor_or_a_descendant() {
        let (_t, m) = tree();
        let other =
            |p: &str, relation, prog_id| Some(Other { cgroup: m.join(p), relation, prog_id, name: None });
        assert_eq!(run(&m, "a/b", &[("a/b", 7)], 100).0.other, other("a/b", Relation::Same, 7));
        assert_eq!(run(&m, "a/b", &[("a", 8)], 100).0.other, other("a", Relation::Ancestor, 8));
        assert_eq!(run(&m, "a/b", &[("", 9)], 100).0.other, other("", Relation::Ancestor, 9));
        assert_eq!(run(&m, "a/b", &[("a/b/d", 10)], 100).0.other, other("a/b/d", Relation::Descendant, 10));
        // A sibling's and a cousin's programs are not on the path.
        let (l, asked) = run(&m, "a/b", &[("a/e", 11), ("f", 12)], 100);
        assert_eq!(l, Look { other: None, descendants: 2, truncated: false });
        let want: Vec<PathBuf> = ["a/b", "a", "", "a/b/c", "a/b/d"].iter().map(|p| m.join(p)).collect();
        assert_eq!(asked, want, "the cgroup, its ancestors up to the mount, then its descendants");
    }

    #[test]
    fn the_walk_of_descendants_is_bounded() {
        let (_t, m) = tree();
        let (l, asked) = run(&m, "a", &[("a/b/d", 10)], 2);
        assert_eq!(l, Look { other: None, descendants: 2, truncated: true });
        assert_eq!(asked.len(), 2 + 2, "a, the mount, then two descendants: {asked:?}");
        assert!(run(&m, "a", &[("a/b/d", 10)], 4).0.other.is_some());
    }

    #[test]
    fn a_descendant_removed_meanwhile_is_skipped_and_other_errors_are_not() {
        let (_t, m) = tree();
        let gone = m.join("a/b/c");
        let mut query = |p: &Path| {
            if p == gone { Err(std::io::Error::from(std::io::ErrorKind::NotFound)) } else { Ok(Vec::new()) }
        };
        let l = look(&m.join("a/b"), &m, 100, &mut query).unwrap();
        assert_eq!((l.other, l.descendants), (None, 2));
        let mut refused = |_: &Path| Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(look(&m.join("a/b"), &m, 100, &mut refused).is_err());
    }

    #[test]
    fn the_refusal_is_one_line_naming_the_program_and_its_cgroup() {
        let dir = Path::new("/sys/fs/cgroup/unified/a");
        let o = |relation, name: Option<&str>| Other {
            cgroup: PathBuf::from("/sys/fs/cgroup/unified/a/b"),
            relation,
            prog_id: 42,
            name: name.map(str::to_string),
        };
        let ours = o(Relation::Descendant, Some("experiment")).refusal(dir);
        assert!(ours.starts_with(
            "--cgroup /sys/fs/cgroup/unified/a: sock_ops program 42 (another bbrtop experiment)"
        ));
        assert!(ours.contains("attached to its descendant /sys/fs/cgroup/unified/a/b;"), "{ours}");
        let theirs = o(Relation::Ancestor, Some("cil_sock_ops")).refusal(dir);
        assert!(theirs.contains("program 42 (\"cil_sock_ops\") is attached to its ancestor"), "{theirs}");
        let unnamed = o(Relation::Same, None).refusal(dir);
        assert!(unnamed.contains("sock_ops program 42 is attached to it;"), "{unnamed}");
        for l in [ours, theirs, unnamed] {
            assert!(!l.contains('\n') && l.contains("stop it first"), "{l}");
        }
    }
}
