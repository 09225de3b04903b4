//! The docs pages the code writes (the flags and metrics references, the TUI's picture): a test
//! holds each to what the code makes now, and rewrites it when BBRTOP_WRITE_DOCS is set.

use std::path::Path;

/// Holds `path` (from the repository's root) to `want`, writing it first when BBRTOP_WRITE_DOCS
/// is set; `how` is the test command that rewrites it, for the failure's message.
pub fn hold(path: &str, want: &str, how: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if std::env::var_os("BBRTOP_WRITE_DOCS").is_some() {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::write(&file, want).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
    let have = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        have == want,
        "{path} differs from what the code makes; rewrite it with\n  BBRTOP_WRITE_DOCS=1 {how}"
    );
}
