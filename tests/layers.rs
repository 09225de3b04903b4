//! The map held to the code: ARCHITECTURE.md's table of the binary's folders lists every module
//! of `src/`, every import of one module by another runs down that table, only the three rooms
//! the map names build an engine, and no two sibling files (in any crate) import each other.
//! The crates' own boundaries are the compiler's to keep (their Cargo.toml files).
//!
//! Test code is left out: a `tests.rs` file, and a file's part from `#[cfg(test)]` + `mod tests {`
//! on (clippy keeps that part last). A name a folder re-exports (`pub use socket::SocketView` in
//! its `mod.rs`) counts as its file's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// A file's code without its tests.
fn code(path: &Path) -> String {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    let cut = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
    // Comments name paths too ("see `crate::x`"): only code counts.
    text[..cut].lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every path the code names from `crate::` or `super::`, groups opened (`crate::{a, b::c}`),
/// each as written, its first word included.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (i, _) in code.match_indices(start) {
            // `bbrtop_core::x` is another crate, not `core::`: the word must begin here.
            if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            out.extend(expand(start.trim_end_matches(':').to_string(), &code[i + start.len()..]));
        }
    }
    out
}

/// The paths `prefix::rest` names, where `rest` may open a `{...}` group.
fn expand(prefix: String, rest: &str) -> Vec<String> {
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0;
        let end = group
            .char_indices()
            .find(|(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => return true,
                    '}' => depth -= 1,
                    _ => {}
                }
                false
            })
            .map_or(group.len(), |(i, _)| i);
        let mut items = Vec::new();
        let (mut depth, mut from) = (0, 0);
        for (i, c) in group[..end].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&group[from..i]);
                    from = i + 1;
                }
                _ => {}
            }
        }
        items.push(&group[from..end]);
        return items.into_iter().flat_map(|it| expand(prefix.clone(), it.trim())).collect();
    }
    let word: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
    let word = word.trim_end_matches(':');
    if word.is_empty() || word == "self" {
        return vec![prefix];
    }
    match rest[word.len()..].strip_prefix("::{") {
        Some(group) => expand(format!("{prefix}::{word}"), &format!("{{{group}")),
        None => vec![format!("{prefix}::{word}")],
    }
}

/// A file's module path in its crate: `src/tui/render/table.rs` is `["tui", "render", "table"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The binary's modules in the order of ARCHITECTURE.md's table of folders, bottom first.
fn the_map() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).unwrap();
    let section = text.split("## The binary's folders, bottom to top").nth(1).expect("the folders' section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(2))
        .filter_map(|cell| cell.trim().strip_prefix("`src/"))
        .map(|f| f.trim_end_matches('`').trim_end_matches('/').trim_end_matches(".rs").to_string())
        .collect()
}

/// Which module of `src/` each module of `src/` names in its code.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(ROOT).join("src");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in rust_files(&src) {
        let m = module_path(&src, &f);
        let Some(top) = m.first() else { continue };
        let entry = out.entry(top.clone()).or_default();
        for p in paths(&code(&f)) {
            if let Some(target) = p.strip_prefix("crate::").and_then(|r| r.split("::").next())
                && target != top
            {
                entry.insert(target.to_string());
            }
        }
    }
    out
}

/// The names each folder's `mod.rs` (or `lib.rs`) re-exports from one of its files:
/// `pub use socket::{Derived, SocketView};` maps `[.., Derived]` and `[.., SocketView]` to
/// `[.., socket]`.
fn reexports(src: &Path, files: &[PathBuf]) -> BTreeMap<Vec<String>, Vec<String>> {
    let mut out = BTreeMap::new();
    for f in files {
        if !f.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs") {
            continue;
        }
        let folder = module_path(src, f);
        for line in code(f).lines() {
            let Some(rest) = line.strip_prefix("pub use ") else { continue };
            let rest = rest.trim_end_matches(';');
            let Some((file, names)) = rest.split_once("::") else { continue };
            let names = names.trim_start_matches('{').trim_end_matches('}');
            for name in names.split(',').map(|n| n.trim().rsplit(" as ").next().unwrap_or("").trim()) {
                let key: Vec<String> = folder.iter().cloned().chain([name.to_string()]).collect();
                out.insert(key, folder.iter().cloned().chain([file.to_string()]).collect());
            }
        }
    }
    out
}

#[test]
fn every_module_is_on_the_map() {
    let lib = std::fs::read_to_string(Path::new(ROOT).join("src/lib.rs")).unwrap();
    let mut test_only = false;
    let mut modules: Vec<String> = Vec::new();
    for l in lib.lines() {
        if l.starts_with("#[cfg(test)]") {
            test_only = true;
            continue;
        }
        if let Some(m) = l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod "))
            && !test_only
        {
            modules.push(m.trim_end_matches(';').to_string());
        }
        test_only = false;
    }
    let mut map = the_map();
    map.sort();
    modules.sort();
    assert_eq!(map, modules, "ARCHITECTURE.md's table of the binary's folders against src/lib.rs");
}

#[test]
fn imports_run_down_the_map() {
    let map = the_map();
    let row = |m: &str| map.iter().position(|x| x == m).unwrap_or_else(|| panic!("{m} is not on the map"));
    let mut up = Vec::new();
    for (from, targets) in imports() {
        if from == "main.rs" || from == "fuzz" {
            continue;
        }
        for t in targets {
            if row(&t) >= row(&from) {
                up.push(format!("{from} -> {t}"));
            }
        }
    }
    assert!(up.is_empty(), "imports that run up ARCHITECTURE.md's table: {up:?}");
}

#[test]
fn only_the_poller_the_cli_and_the_lab_build_an_engine() {
    let src = Path::new(ROOT).join("src");
    let users: BTreeSet<String> = rust_files(&src)
        .into_iter()
        .filter(|f| code(f).contains("bbrtop_engine"))
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    let allowed = |f: &str| f == "runtime.rs" || f.starts_with("cli/") || f == "lab/run.rs";
    let others: Vec<&String> = users.iter().filter(|f| !allowed(f)).collect();
    assert!(others.is_empty(), "outside the poller, the CLI and the lab's runner, {others:?} use the engine");
    assert!(users.contains("runtime.rs") && users.iter().any(|f| f.starts_with("cli/")), "{users:?}");
}

#[test]
fn no_two_sibling_files_import_each_other() {
    let mut roots = vec![Path::new(ROOT).join("src")];
    for c in std::fs::read_dir(Path::new(ROOT).join("crates")).unwrap() {
        roots.push(c.unwrap().path().join("src"));
    }
    let mut mutual = Vec::new();
    for src in roots {
        let files = rust_files(&src);
        let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(&src, f)).collect();
        let reexports = reexports(&src, &files);
        // Each file's edges to sibling files: module paths one word longer than their folder's.
        let mut edges: BTreeSet<(Vec<String>, Vec<String>)> = BTreeSet::new();
        for f in &files {
            let me = module_path(&src, f);
            let is_folder = f.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs");
            if is_folder || me.is_empty() {
                continue;
            }
            let parent = &me[..me.len() - 1];
            for p in paths(&code(f)) {
                let mut words: Vec<String> = p.split("::").map(str::to_string).collect();
                let absolute = match words.first().map(String::as_str) {
                    Some("crate") => words.split_off(1),
                    Some("super") => parent.iter().cloned().chain(words.into_iter().skip(1)).collect(),
                    _ => continue,
                };
                if absolute.len() > parent.len() && absolute[..parent.len()] == *parent {
                    let mut sibling: Vec<String> = absolute[..=parent.len()].to_vec();
                    if let Some(file) = reexports.get(&sibling) {
                        sibling = file.clone();
                    }
                    if sibling != me && modules.contains(&sibling) {
                        edges.insert((me.clone(), sibling));
                    }
                }
            }
        }
        for (a, b) in &edges {
            if a < b && edges.contains(&(b.clone(), a.clone())) {
                mutual.push(format!("{}: {} <-> {}", src.display(), a.join("::"), b.join("::")));
            }
        }
    }
    assert!(mutual.is_empty(), "sibling files that import each other: {mutual:?}");
}

#[test]
fn the_scanner_reads_groups_and_supers() {
    let got = paths("use crate::{a::b, c::{d, e}};\nuse super::f::G;\nlet x = bbrtop_core::g;");
    assert_eq!(got, ["crate::a::b", "crate::c::d", "crate::c::e", "super::f::G"]);
}
