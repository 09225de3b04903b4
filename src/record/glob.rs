//! A side's path with `*` and `?` in its segments, expanded within bounds. Each segment that
//! holds one is matched against one directory's entries (hidden ones only by a pattern that
//! starts with '.'), in order. A pattern such as `/*/*/*/*` would otherwise walk the whole
//! filesystem and hold every path it met before the first error: past [`MAX_PATHS`] paths at any
//! segment, or [`MAX_DIRS`] directories read, it stops with a one-line error. Pure: the command
//! hands it a directory lister.

use std::path::{Path, PathBuf};

/// The most paths a pattern may stand for at any of its segments: a fleet of this many hosts is
/// larger than any side one comparison reads (each match is a recording, read whole).
pub const MAX_PATHS: usize = 4096;
/// The most directories a pattern may read.
pub const MAX_DIRS: usize = 4096;

/// The paths `pattern` matches, in order; a path without `*` or `?` is itself. `list` gives a
/// directory's entry names, or None where it does not read (that branch matches nothing). An
/// empty result is the caller's to report: it may still name a recording.
pub fn expand(
    pattern: &Path,
    list: &mut dyn FnMut(&Path) -> Option<Vec<String>>,
) -> Result<Vec<PathBuf>, String> {
    let mut found = vec![PathBuf::new()];
    let mut read = 0;
    for part in pattern.components() {
        let seg = part.as_os_str().to_string_lossy();
        if !seg.contains(['*', '?']) {
            found.iter_mut().for_each(|p| p.push(part));
            continue;
        }
        let mut next = Vec::new();
        for base in &found {
            read += 1;
            if read > MAX_DIRS {
                return Err(format!(
                    "{}: the pattern reads more than {MAX_DIRS} directories",
                    pattern.display()
                ));
            }
            let dir = if base.as_os_str().is_empty() { Path::new(".") } else { base.as_path() };
            let Some(entries) = list(dir) else { continue };
            let mut names: Vec<String> = entries
                .into_iter()
                .filter(|n| matches(&seg, n) && (seg.starts_with('.') || !n.starts_with('.')))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|n| base.join(n)));
            if next.len() > MAX_PATHS {
                return Err(format!(
                    "{}: the pattern matches more than {MAX_PATHS} paths",
                    pattern.display()
                ));
            }
        }
        found = next;
    }
    Ok(found)
}

/// Whether `name` matches `pattern`, where `*` is any run of characters and `?` any one.
pub fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The classic two-pointer match, backtracking only to the last star: at most |p|·|n| steps.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            (i, j) = (i + 1, j + 1);
        } else if i < p.len() && p[i] == '*' {
            (star, mark, i) = (Some(i), j, i + 1);
        } else if let Some(s) = star {
            (i, mark) = (s + 1, mark + 1);
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_star_and_question_mark() {
        for (p, n) in [("*", "x"), ("*", ""), ("host=edge-*", "host=edge-12"), ("a?c", "abc"), ("*b*", "abc")]
        {
            assert!(matches(p, n), "{p} {n}");
        }
        for (p, n) in [("host=edge-?", "host=edge-12"), ("a*d", "abc"), ("", "a"), ("abc", "ab")] {
            assert!(!matches(p, n), "{p} {n}");
        }
        assert!(matches("*a*a*a*a*b", &"a".repeat(40).replace("aa", "ab")));
        assert!(!matches("*a*a*a*a*c", &"a".repeat(1000)), "bounded: no blow-up");
    }

    /// A tree as deep as asked where every directory holds `wide` entries named 0, 1, ...,
    /// counting the directories read.
    fn tree(wide: usize, reads: &mut usize) -> impl FnMut(&Path) -> Option<Vec<String>> + '_ {
        move |_| {
            *reads += 1;
            Some((0..wide).map(|i| i.to_string()).collect())
        }
    }

    #[test]
    fn a_pattern_expands_in_order_without_hidden_entries() {
        let mut list = |d: &Path| match d.to_str() {
            Some("fleet") => Some(vec!["host=b".into(), "host=a".into(), ".host=x".into(), "other".into()]),
            Some("fleet/host=a" | "fleet/host=b") => Some(vec!["date=1".into()]),
            _ => None,
        };
        let got = expand(Path::new("fleet/host=?/date=*"), &mut list).unwrap();
        assert_eq!(got, [PathBuf::from("fleet/host=a/date=1"), PathBuf::from("fleet/host=b/date=1")]);
        assert_eq!(expand(Path::new("fleet/.host=*"), &mut list).unwrap(), [PathBuf::from("fleet/.host=x")]);
        assert_eq!(expand(Path::new("fleet/none-*"), &mut list).unwrap(), Vec::<PathBuf>::new());
        assert_eq!(expand(Path::new("plain/path"), &mut list).unwrap(), [PathBuf::from("plain/path")]);
    }

    #[test]
    fn a_pattern_over_a_huge_tree_stops_at_its_bounds() {
        // 100 entries a level: `*/*/*/*` stands for 10^8 paths; the width bound stops it at the
        // second level, after 1 + 41 directories read.
        let mut reads = 0;
        let e = expand(Path::new("/*/*/*/*"), &mut tree(100, &mut reads)).unwrap_err();
        assert_eq!(e, format!("/*/*/*/*: the pattern matches more than {MAX_PATHS} paths"));
        assert!(reads <= 1 + MAX_PATHS / 100 + 1, "{reads} directories read");
        // One entry a level, deeper than the directories bound: the read bound stops it.
        let mut reads = 0;
        let deep = "/*".repeat(MAX_DIRS + 10);
        let e = expand(Path::new(&deep), &mut tree(1, &mut reads)).unwrap_err();
        assert!(e.ends_with(&format!(": the pattern reads more than {MAX_DIRS} directories")), "{e}");
        assert_eq!(reads, MAX_DIRS);
        // Exactly at the bound is fine.
        let mut reads = 0;
        let at = expand(Path::new("/*/*"), &mut tree(64, &mut reads)).unwrap();
        assert_eq!((at.len(), reads), (64 * 64, 65));
    }
}
