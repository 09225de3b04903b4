//! The manual as a reader meets it on GitHub: README.md stays short and answers its four questions
//! with one link each, and every relative link and `#anchor` in README.md and docs/ resolves (the
//! file exists; the anchor is the slug GitHub gives one of its headings).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README's questions, in order, and the one page that answers each.
const QUESTIONS: [(&str, &str); 4] = [
    ("host ready", "docs/check-a-host.md"),
    ("alert mean", "docs/runbook.md"),
    ("roll BBR out", "docs/roll-out.md"),
    ("kernels", "docs/kernels.md"),
];

/// README.md and every Markdown file under docs/, relative to the repository.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path.strip_prefix(ROOT).unwrap().to_path_buf());
            }
        }
    }
    let mut out = vec![PathBuf::from("README.md")];
    walk(&Path::new(ROOT).join("docs"), &mut out);
    out.sort();
    out
}

fn read(page: &Path) -> String {
    fs::read_to_string(Path::new(ROOT).join(page)).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
}

/// The text outside fenced code blocks, fences' lines blanked so line numbers hold.
fn prose(doc: &str) -> Vec<String> {
    let mut fenced = false;
    doc.lines()
        .map(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return String::new();
            }
            if fenced { String::new() } else { l.to_string() }
        })
        .collect()
}

/// A line without its inline code spans (a run of backticks to the next run of the same length).
fn without_code(line: &str) -> String {
    let (mut out, mut rest) = (String::new(), line);
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let run = rest[at..].len() - rest[at..].trim_start_matches('`').len();
        let ticks = "`".repeat(run);
        match rest[at + run..].find(&ticks) {
            Some(end) => rest = &rest[at + run + end + run..],
            None => {
                out.push_str(&rest[at..]);
                return out;
            }
        }
    }
    out + rest
}

/// GitHub's anchor for a heading: lowercase, inline code and punctuation dropped but `-` and
/// `_`, spaces made hyphens; a repeated slug gets `-1`, `-2`, ...
fn slugs(doc: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose(doc) {
        let Some(text) = line.strip_prefix('#').map(|t| t.trim_start_matches('#')) else { continue };
        if !text.starts_with(' ') {
            continue;
        }
        let base: String = text
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let slug = (0..).map(|n| if n == 0 { base.clone() } else { format!("{base}-{n}") });
        let fresh = slug.into_iter().find(|s| !seen.contains(s)).unwrap();
        seen.insert(fresh);
    }
    seen
}

/// Every link target in a page's prose (`[text](target)` and images), with its line number.
fn links(doc: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(doc).iter().enumerate() {
        let line = without_code(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let target = &rest[at + 2..];
            let end = target.find(')').unwrap_or(target.len());
            out.push((n + 1, target[..end].to_string()));
            rest = &target[end..];
        }
    }
    out
}

/// `target` read from `page`, as a path in the repository (None when it climbs out of it).
fn resolve(page: &Path, target: &str) -> Option<PathBuf> {
    let mut path = PathBuf::new();
    for part in page.parent().unwrap().join(target).components() {
        match part {
            Component::ParentDir => {
                if !path.pop() {
                    return None;
                }
            }
            Component::Normal(p) => path.push(p),
            _ => return None,
        }
    }
    Some(path)
}

/// The broken links of one page: a missing file or an anchor no heading of its file has.
fn broken(page: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    for (line, target) in links(&read(page)) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let file = if file.is_empty() { Some(page.to_path_buf()) } else { resolve(page, file) };
        let at = format!("{}:{line}: ({target})", page.display());
        let Some(file) = file.filter(|f| Path::new(ROOT).join(f).exists()) else {
            bad.push(format!("{at}: no such file"));
            continue;
        };
        if !anchor.is_empty() && !slugs(&read(&file)).contains(anchor) {
            bad.push(format!("{at}: no heading of {} has this anchor", file.display()));
        }
    }
    bad
}

#[test]
fn every_link_and_anchor_resolves() {
    let bad: Vec<String> = pages().iter().flat_map(|p| broken(p)).collect();
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_readme_is_short_and_answers_each_question_with_one_link() {
    let readme = read(Path::new("README.md"));
    assert!(
        readme.lines().count() < 300,
        "README.md has {} lines: move the rest into docs/",
        readme.lines().count()
    );
    let section = readme.split("\n## Four questions").nth(1).expect("README: ## Four questions");
    let section = section.split("\n## ").next().unwrap();
    let items: Vec<&str> = section.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).collect();
    assert_eq!(items.len(), QUESTIONS.len(), "{items:#?}");
    for (item, (question, page)) in items.iter().zip(QUESTIONS) {
        assert!(item.contains(question), "{item:?} should ask about {question:?}");
        let targets: Vec<String> = links(item).into_iter().map(|(_, t)| t).collect();
        assert_eq!(targets, [page], "{item:?}: one link, to {page}");
    }
}

/// The README keeps its two commands, and CI runs the second.
#[test]
fn the_readme_holds_the_commands_ci_runs() {
    let readme = read(Path::new("README.md"));
    for command in ["./scripts/run.sh --lab", "./scripts/test.sh"] {
        assert!(readme.lines().any(|l| l.starts_with(command)), "README: no line starting {command:?}");
    }
    let ci = fs::read_to_string(Path::new(ROOT).join(".ci/run")).expect(".ci/run");
    assert!(
        ci.lines().any(|l| l == "exec ./scripts/test.sh"),
        ".ci/run should run the README's test command"
    );
}

/// Every page under docs/ is in the index, so none is found only by chance.
#[test]
fn the_index_lists_every_page() {
    let index = Path::new("docs/README.md");
    let listed: BTreeSet<PathBuf> = links(&read(index))
        .into_iter()
        .filter_map(|(_, t)| resolve(index, t.split('#').next().unwrap()))
        .collect();
    for page in pages().iter().filter(|p| p.starts_with("docs") && p.as_path() != index) {
        assert!(listed.contains(page), "docs/README.md does not list {}", page.display());
    }
}

/// The checker itself: GitHub's slugs, code spans left alone, a link across lines' ends.
#[test]
fn slugs_and_links_read_as_github_does() {
    let doc = "# Kernels: what each one carries\n## `bbrtop export`\n## A fleet's recordings, as one table\n\
               ## Dup\n## Dup\n```\n# not a heading\n```\n";
    let want = [
        "kernels-what-each-one-carries",
        "bbrtop-export",
        "a-fleets-recordings-as-one-table",
        "dup",
        "dup-1",
    ];
    assert_eq!(slugs(doc), want.iter().map(|s| s.to_string()).collect());
    let doc = "see [a](x.md#y) and `[b](not.md)`, ``c `[d](no.md)` e``\n```\n[f](fenced.md)\n```\n![g](img/g.svg)\n";
    let got: Vec<String> = links(doc).into_iter().map(|(_, t)| t).collect();
    assert_eq!(got, ["x.md#y", "img/g.svg"]);
    assert_eq!(resolve(Path::new("docs/reference/a.md"), "../runbook.md"), Some("docs/runbook.md".into()));
    assert_eq!(resolve(Path::new("README.md"), "../x.md"), None);
}
