//! External tools the tests run (promtool, amtool, systemd-analyze, prometheus, tmux...).

use super::guard;
use std::path::PathBuf;

/// The tool's path, or None when it is not installed (see [`guard::unavailable`]: the project's
/// own setup installs every one of them, so under CI a missing tool fails).
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        guard::unavailable(&format!("{name} is not installed (scripts/setup.sh installs it)"));
    }
    found
}

/// Whether a tool is installed, as [`tool`] decides.
pub fn have(name: &str) -> bool {
    tool(name).is_some()
}
