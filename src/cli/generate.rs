//! `bbrtop completions SHELL` and `bbrtop man`: shell completions and manual pages, generated
//! from the same flag definitions as `--help`, so they cannot drift from the binary.

use super::Failure;
use anyhow::Context;
use clap::{Args, CommandFactory};
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write bbrtop.1 and a page per command (bbrtop-export.1, ...) into this directory instead
    /// of printing bbrtop.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn completions(a: CompletionsArgs) -> Result<(), Failure> {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut super::Cli::command(), "bbrtop", &mut out);
    write_stdout(&out)
}

pub fn man(a: ManArgs) -> Result<(), Failure> {
    let cmd = super::Cli::command();
    match a.dir {
        Some(dir) => std::fs::create_dir_all(&dir)
            .and_then(|()| clap_mangen::generate_to(cmd, &dir))
            .with_context(|| format!("writing manual pages to {}", dir.display()))
            .map_err(Failure::Runtime),
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out).context("rendering the manual page")?;
            write_stdout(&out)
        }
    }
}

/// All at once: a closed pipe (`| head`) is a runtime failure, not a panic.
fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes).and_then(|()| stdout.flush()).context("writing to stdout")?;
    Ok(())
}
