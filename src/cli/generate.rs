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

/// docs/reference/flags.md: every command's flags from the same definitions as `--help`, held to
/// the file by a test (`BBRTOP_WRITE_DOCS=1 cargo test -p bbrtop --lib cli::generate` rewrites it).
pub fn flags_markdown() -> String {
    let mut root = super::Cli::command();
    root.build();
    let mut out = String::from(
        "# Flags\n\nEvery command's flags, generated from the definitions `--help` prints (`bbrtop man` \
         has the same as manual pages). How they are named: \
         [Flag names](exit-codes-and-files.md#flag-names).\n",
    );
    let global: Vec<&clap::Arg> = root.get_arguments().filter(|a| a.is_global_set()).collect();
    section(&mut out, "Every command", None, &global);
    let own = |c: &clap::Command| -> Vec<clap::Arg> {
        c.get_arguments().filter(|a| !a.is_global_set()).cloned().collect()
    };
    let tui = own(&root);
    section(&mut out, "`bbrtop` (the terminal UI)", root.get_about(), &tui.iter().collect::<Vec<_>>());
    for sub in root.get_subcommands().filter(|s| s.get_name() != "help") {
        let args = own(sub);
        let heading = format!("`bbrtop {}`", sub.get_name());
        section(&mut out, &heading, sub.get_about(), &args.iter().collect::<Vec<_>>());
    }
    out
}

/// One command's table: its visible arguments, `--help` and `--version` left out.
fn section(out: &mut String, heading: &str, about: Option<&clap::builder::StyledStr>, args: &[&clap::Arg]) {
    out.push_str(&format!("\n## {heading}\n\n"));
    if let Some(about) = about {
        out.push_str(&format!("{}\n\n", cell(&about.to_string())));
    }
    out.push_str("| flag | value | default | what |\n| --- | --- | --- | --- |\n");
    let shown =
        args.iter().filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"));
    for a in shown {
        let values: Vec<String> =
            a.get_value_names().unwrap_or_default().iter().map(|v| v.to_string()).collect();
        // A switch's value and its `false` default say nothing.
        let takes = a.get_action().takes_values();
        let (flag, value) = match a.get_long() {
            Some(long) if takes => (format!("--{long}"), values.join(" ")),
            Some(long) => (format!("--{long}"), String::new()),
            None => (values.join(" "), String::new()),
        };
        let defaults: Vec<String> = match takes {
            true => a.get_default_values().iter().map(|d| d.to_string_lossy().into_owned()).collect(),
            false => Vec::new(),
        };
        let mut help = a.get_long_help().or(a.get_help()).map(ToString::to_string).unwrap_or_default();
        // An enum's values (a lab scenario) with what each is, as `--help` lists them.
        let possible: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|p| !p.is_hide_set())
            .map(|p| match p.get_help() {
                Some(h) => format!("`{}`: {h}", p.get_name()),
                None => format!("`{}`", p.get_name()),
            })
            .collect();
        if !possible.is_empty() {
            help.push_str(&format!(" (one of {})", possible.join("; ")));
        }
        let code =
            |s: &str| if s.is_empty() { String::new() } else { format!("`{}`", s.replace('|', "\\|")) };
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            code(&flag),
            code(&value),
            code(&defaults.join(", ")),
            cell(&help)
        ));
    }
}

/// Help text as one table cell: its lines joined, a pipe escaped.
fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    /// docs/reference/flags.md is the CLI's own, as generated.
    #[test]
    fn the_flags_reference_is_generated() {
        let want = super::flags_markdown();
        crate::generated_docs::hold(
            "docs/reference/flags.md",
            &want,
            "cargo test -p bbrtop --lib cli::generate",
        );
        for flag in ["`--log.level`", "`--interval`", "`--web.listen-address`", "`--arm`", "`--bdp`"] {
            assert!(want.contains(flag), "{flag} missing from the generated reference");
        }
    }
}
