//! External tools the tests run (promtool, amtool, systemd-analyze, prometheus...).
#![allow(dead_code)]

use std::path::PathBuf;

/// The tool's path, or None after a loud skip message. Under CI=true a missing tool fails: the
/// project's own setup installs every one of them.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{name} is not installed (scripts/setup.sh installs it)");
        }
        eprintln!("SKIP: {name} is not installed; this test did not run");
    }
    found
}
