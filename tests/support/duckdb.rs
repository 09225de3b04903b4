//! DuckDB (scripts/setup.sh installs it into target/duckdb-venv), which reads recordings knowing
//! nothing of bbrtop, and the SQL of docs/recordings.md for them.

use super::guard;
use std::path::{Path, PathBuf};
use std::process::Command;

/// DuckDB's Python, or None once its absence is said (which fails the test under CI).
pub fn duckdb_or_said() -> Option<PathBuf> {
    duckdb_python().or_else(|| {
        guard::unavailable("DuckDB (scripts/setup.sh installs it into target/duckdb-venv)");
        None
    })
}

fn duckdb_python() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/duckdb-venv/bin/python");
    let ok = Command::new(&p).args(["-c", "import duckdb"]).status().is_ok_and(|s| s.success());
    ok.then_some(p)
}

/// Runs `sql` in DuckDB inside `dir`; one line per row, columns joined by tabs.
pub fn duckdb(python: &Path, dir: &Path, sql: &str) -> Vec<String> {
    let script =
        "import duckdb, sys\nfor r in duckdb.sql(sys.argv[1]).fetchall(): print('\\t'.join(map(str, r)))";
    let out = Command::new(python).current_dir(dir).args(["-c", script, sql]).output().expect("python");
    assert!(out.status.success(), "DuckDB: {sql}\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8").lines().map(String::from).collect()
}

/// docs/recordings.md's view of each socket's state at each poll (the SQL block that creates
/// `socket_states`), which reads the recording in `rec/` of DuckDB's directory.
pub fn readme_states_sql() -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/recordings.md")).unwrap();
    let block = doc
        .split("```sql\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("CREATE VIEW socket_states"))
        .expect("docs/recordings.md has the socket_states view");
    block.to_string()
}
