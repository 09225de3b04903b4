//! What the report commands (`lab`, `compare`) write: a figure into `--plot DIR`, and the report
//! as JSON (`--json`) or text on stdout.

use super::Failure;
use anyhow::Context;
use std::path::Path;

/// Writes `svg` (or the plot's error) as `dir/name`, saying so on stderr unless `quiet`.
pub fn plot(dir: &Path, name: &str, svg: Result<String, String>, quiet: bool) -> Result<(), Failure> {
    let svg = svg.map_err(|e| Failure::Runtime(anyhow::anyhow!(e)))?;
    let file = dir.join(name);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&file, svg))
        .with_context(|| format!("--plot {}", file.display()))?;
    if !quiet {
        eprintln!("wrote {}", file.display());
    }
    Ok(())
}

/// The report on stdout: one JSON document, or its text.
pub fn report<T: serde::Serialize>(
    json: bool,
    doc: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<(), Failure> {
    if json {
        crate::output::json::write_line(&mut std::io::stdout().lock(), doc).context("writing to stdout")?;
    } else {
        print!("{}", text(doc));
    }
    Ok(())
}
