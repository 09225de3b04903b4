//! The map held to the code: ARCHITECTURE.md's table of the binary's folders lists every module
//! of `src/`, every import of one module by another runs down that table, only the three rooms
//! the map names build an engine, and no sibling files (in any crate) import each other in a
//! circle of any length.
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

/// A file's module path, and the sibling files it imports (module paths one word longer than
/// their folder's), for every file of the crate whose sources are in `src`.
type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

fn sibling_imports(src: &Path) -> Graph {
    let files = rust_files(src);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let reexports = reexports(src, &files);
    let mut edges = Graph::new();
    for f in &files {
        let me = module_path(src, f);
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
                    edges.entry(me.clone()).or_default().insert(sibling);
                }
            }
        }
    }
    edges
}

/// The graph's circles: one per strongly connected part of more than one node, as the nodes in
/// the order the imports run, from the part's least node (Tarjan's algorithm, then a walk within
/// the part back to its start).
fn circles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct Tarjan<'g, N> {
        edges: &'g BTreeMap<N, BTreeSet<N>>,
        index: BTreeMap<N, (usize, usize)>,
        stack: Vec<N>,
        parts: Vec<Vec<N>>,
    }
    impl<N: Ord + Clone> Tarjan<'_, N> {
        fn visit(&mut self, n: &N) {
            let i = self.index.len();
            self.index.insert(n.clone(), (i, i));
            self.stack.push(n.clone());
            for m in self.edges.get(n).into_iter().flatten() {
                let low = match self.index.get(m) {
                    None => {
                        self.visit(m);
                        self.index[m].1
                    }
                    Some(&(mi, _)) if self.stack.contains(m) => mi,
                    Some(_) => continue,
                };
                let me = self.index.get_mut(n).unwrap();
                me.1 = me.1.min(low);
            }
            if self.index[n].0 == self.index[n].1 {
                let at = self.stack.iter().rposition(|x| x == n).unwrap();
                self.parts.push(self.stack.split_off(at));
            }
        }
    }
    let mut t = Tarjan { edges, index: BTreeMap::new(), stack: Vec::new(), parts: Vec::new() };
    for n in edges.keys() {
        if !t.index.contains_key(n) {
            t.visit(n);
        }
    }
    let mut out = Vec::new();
    for part in t.parts.into_iter().filter(|p| p.len() > 1) {
        let inside: BTreeSet<N> = part.into_iter().collect();
        let start = inside.first().unwrap().clone();
        // Depth first from the start, within the part, until an edge leads back to it: every
        // node of the part reaches the start, so the walk finds it.
        let mut path = vec![start.clone()];
        let mut seen = BTreeSet::from([start.clone()]);
        let mut next: Vec<Vec<N>> =
            vec![edges[&start].iter().filter(|m| inside.contains(*m)).cloned().collect()];
        while let Some(options) = next.last_mut() {
            let Some(m) = options.pop() else {
                next.pop();
                path.pop();
                continue;
            };
            if m == start {
                break;
            }
            if seen.insert(m.clone()) {
                next.push(
                    edges.get(&m).into_iter().flatten().filter(|x| inside.contains(*x)).cloned().collect(),
                );
                path.push(m);
            }
        }
        out.push(path);
    }
    out
}

/// The circles among sibling files of every crate's sources under `root`, each as
/// `folder: a -> b -> c -> a`.
fn circles_in(root: &Path) -> Vec<String> {
    let mut roots = vec![root.join("src")];
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        roots.extend(crates.map(|c| c.unwrap().path().join("src")));
    }
    let mut out = Vec::new();
    for src in roots {
        for circle in circles(&sibling_imports(&src)) {
            let names: Vec<String> = circle.iter().chain(circle.first()).map(|m| m.join("::")).collect();
            out.push(format!("{}: {}", src.display(), names.join(" -> ")));
        }
    }
    out
}

#[test]
fn no_sibling_files_import_each_other_in_a_circle() {
    let found = circles_in(Path::new(ROOT));
    assert!(found.is_empty(), "sibling files that import each other, in a circle: {found:?}");
}

#[test]
fn a_circle_of_three_files_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let cli = dir.path().join("src/cli");
    std::fs::create_dir_all(&cli).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "pub mod cli;\n").unwrap();
    std::fs::write(cli.join("mod.rs"), "pub mod peers;\npub mod reload;\npub mod startup;\n").unwrap();
    std::fs::write(cli.join("peers.rs"), "use super::reload::GeoFiles;\n").unwrap();
    std::fs::write(cli.join("reload.rs"), "fn f() { crate::cli::startup::hup(); }\n").unwrap();
    // The third file's import closes the circle; its tests' imports would not count.
    std::fs::write(
        cli.join("startup.rs"),
        "use super::{args, peers::Peers};\n#[cfg(test)]\nmod tests {\n    use super::super::reload;\n}\n",
    )
    .unwrap();
    let found = circles_in(dir.path());
    let src = dir.path().join("src");
    assert_eq!(
        found,
        [format!("{}: cli::peers -> cli::reload -> cli::startup -> cli::peers", src.display())]
    );
    // Without the closing import, no circle.
    std::fs::write(cli.join("startup.rs"), "use super::args;\n").unwrap();
    assert_eq!(circles_in(dir.path()), Vec::<String>::new());
}

#[test]
fn a_circle_is_named_in_import_order_and_one_per_tangle() {
    let graph: BTreeMap<u8, BTreeSet<u8>> = [
        (1, BTreeSet::from([2])),
        (2, BTreeSet::from([3, 5])),
        (3, BTreeSet::from([1])),
        (4, BTreeSet::from([1])),
        (5, BTreeSet::from([6])),
        (6, BTreeSet::from([5])),
        (7, BTreeSet::from([8])),
    ]
    .into();
    let mut got = circles(&graph);
    got.sort();
    assert_eq!(got, [vec![1, 2, 3], vec![5, 6]]);
    // Two files that import each other are the shortest circle.
    let pair: BTreeMap<u8, BTreeSet<u8>> = [(1, BTreeSet::from([2])), (2, BTreeSet::from([1]))].into();
    assert_eq!(circles(&pair), [vec![1, 2]]);
}

#[test]
fn the_scanner_reads_groups_and_supers() {
    let got = paths("use crate::{a::b, c::{d, e}};\nuse super::f::G;\nlet x = bbrtop_core::g;");
    assert_eq!(got, ["crate::a::b", "crate::c::d", "crate::c::e", "super::f::G"]);
}
