//! Command-line entry: flags, dispatch, and the mapping of failures to exit codes.
//!
//! Exit codes: 0 success; 1 a runtime failure (netlink, I/O); 2 bad usage (unknown flag, bad
//! value, missing namespace); 3 a missing privilege (capability). Every failure is one line on
//! stderr.

// The command line's own failures are one line on stderr, before or without a log sink.
#![allow(clippy::print_stderr)]

pub mod args;
pub mod check;
pub mod compare;
pub mod doctor;
pub mod experiment;
pub mod export;
pub mod failure;
pub mod generate;
pub mod lab;
pub mod otlp;
pub mod peers;
pub mod print;
pub mod record;
pub mod reload;
pub mod replay;
pub mod snapshot;
pub mod startup;
pub mod tui;
pub mod watch;

pub use failure::Failure;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "bbrtop",
    version,
    about = "Per-socket TCP BBR and congestion-control monitor",
    long_about = "Per-socket TCP BBR and congestion-control monitor. With no command, the live terminal UI \
                  (q quits, ? lists the keys); `bbrtop --lab` shows a built-in BBR vs CUBIC lab.",
    args_conflicts_with_subcommands = true,
    // Every command's manual page names the version.
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Log only this level and above: debug, info, warn or error.
    #[arg(long = "log.level", value_name = "LEVEL", default_value = "info", global = true,
          value_parser = crate::log::parse_level)]
    pub log_level: tracing::level_filters::LevelFilter,
    /// Log lines as logfmt or json (on stderr; the TUI writes them to --log.file, or nowhere).
    #[arg(long = "log.format", value_name = "FORMAT", default_value = "logfmt", global = true,
          value_parser = |s: &str| s.parse::<crate::log::Format>())]
    pub log_format: crate::log::Format,
    /// Write the log here instead of stderr, for any command (a terminal UI, which owns the
    /// screen, logs nowhere without it).
    #[arg(long = "log.file", value_name = "PATH", alias = "log-file", global = true)]
    pub log_file: Option<std::path::PathBuf>,
    /// The terminal UI's flags, when no command is given.
    #[command(flatten)]
    pub tui: tui::TuiArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Poll once and print every socket (a table, or --json).
    Snapshot(snapshot::SnapshotArgs),
    /// Poll every --interval and stream one JSON object per socket per poll (--ndjson).
    Watch(watch::WatchArgs),
    /// Compare two recordings, or two time ranges of one: per cc and peer group, with intervals.
    Compare(compare::CompareArgs),
    /// Record every poll's state into a directory of Parquet files (replay, compare, DuckDB).
    Record(record::RecordArgs),
    /// Check the host's BBR setup: exit 0 all well, 1 warnings, 2 failures.
    Doctor(doctor::DoctorArgs),
    /// Load and attach the eBPF programs, poll once, report what attached: exit 0 or 1.
    Check(check::CheckArgs),
    /// Run a lab scenario (a BBR guide's, or the edge guide's rollout) in network namespaces and report.
    Lab(lab::LabArgs),
    /// Give each new connection of one cgroup a congestion control drawn by arm shares, until
    /// stopped, with a harm guard and a verdict per arm and group.
    Experiment(experiment::ExperimentArgs),
    /// Serve Prometheus metrics and the JSON API, and push alerts to Alertmanager.
    Export(Box<export::ExportArgs>),
    /// The terminal UI over a recording: play, pause, step, seek, jump to alert onsets.
    Replay(replay::ReplayArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(generate::CompletionsArgs),
    /// Print the manual page (roff), or write every command's page into a directory.
    Man(generate::ManArgs),
}

pub fn main() -> ExitCode {
    // Damaged recordings and frames are errors, not panics on stderr (`crate::contained`).
    crate::contained::quiet_when_contained();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // --help and --version are not errors.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{}", usage_line(&e));
            return ExitCode::from(2);
        }
    };
    let logging = init_logging(&cli);
    match logging.and_then(|()| run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            // One line: newlines in a chained error would break log scrapers.
            eprintln!("bbrtop: error: {}", f.to_string().replace('\n', " "));
            ExitCode::from(f.code())
        }
    }
}

/// The one log sink: --log.file for any command; else stderr, or nowhere while a terminal UI
/// owns the screen.
fn init_logging(cli: &Cli) -> Result<(), Failure> {
    use crate::log::{Sink, init};
    let ui = match &cli.command {
        None | Some(Command::Replay(_)) => true,
        Some(Command::Lab(l)) => l.tui,
        Some(Command::Experiment(e)) => e.tui,
        Some(_) => false,
    };
    let sink = match &cli.log_file {
        Some(p) => Sink::File(
            std::fs::File::create(p)
                .map_err(|e| Failure::Runtime(anyhow::anyhow!("opening log file {}: {e}", p.display())))?,
        ),
        None if ui => Sink::Nowhere,
        None => Sink::Stderr,
    };
    init(cli.log_format, cli.log_level, sink);
    Ok(())
}

/// A usage error as one line, like every other failure: clap's message without its usage block.
pub(crate) fn usage_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    // The first paragraph: some messages list what they name on the lines below the first.
    let first: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let first = first.join(" ");
    format!("bbrtop: error: {} (see --help)", first.strip_prefix("error: ").unwrap_or(&first))
}

/// Runs a command; the exit code on success is the command's (0, or doctor's verdict).
fn run(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Some(Command::Snapshot(a)) => snapshot::run(a).map(|()| 0),
        Some(Command::Watch(a)) => watch::run(a).map(|()| 0),
        Some(Command::Record(a)) => record::run(a).map(|()| 0),
        Some(Command::Compare(a)) => compare::run(a).map(|()| 0),
        Some(Command::Doctor(a)) => doctor::run(a),
        Some(Command::Check(a)) => check::run(a),
        Some(Command::Lab(a)) => lab::run(a).map(|()| 0),
        Some(Command::Export(a)) => export::run(*a).map(|()| 0),
        Some(Command::Experiment(a)) => experiment::run(a).map(|()| 0),
        Some(Command::Replay(a)) => replay::run(a).map(|()| 0),
        Some(Command::Completions(a)) => generate::completions(a).map(|()| 0),
        Some(Command::Man(a)) => generate::man(a).map(|()| 0),
        None => tui::run(cli.tui).map(|()| 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(args: &[&str]) -> String {
        let e = Cli::try_parse_from(std::iter::once("bbrtop").chain(args.iter().copied())).unwrap_err();
        usage_line(&e)
    }

    #[test]
    fn usage_errors_are_one_line_with_what_is_wrong() {
        for (args, says) in [
            (&["--bogus"][..], "unexpected argument '--bogus'"),
            (&["export", "--web.max-connections", "99999999999999999999"], "--web.max-connections"),
            (&["export", "--web.max-connections", "0"], "--web.max-connections"),
            (&["export", "--alertmanager.resend-interval", "0s"], "resend interval \"0s\" out of range"),
            (&["export", "--alertmanager.resend-interval", "100000000h"], "out of range"),
            (&["watch", "--alert.for", "1000000000h"], "hold"),
            (&["experiment", "--cgroup", "x", "--arm", "bbr"], "expected CC=PERCENT"),
            (&["experiment", "--cgroup", "x", "--arm", "bbr=30%", "--unit", "host"], "--unit"),
            // Typed-in times and durations: one grammar, the flag named.
            (&["replay", "rec", "--at", "noon"], "--at <TIME>"),
            (&["replay", "rec", "--at", "+10000000000000000000s"], "longer than 100 years"),
            (&["experiment", "--cgroup", "x", "--arm", "bbr=100%", "--interval", "5"], "--interval"),
            (&["experiment", "--cgroup", "x", "--arm", "bbr=100%", "--guard.hold", "x"], "try 1s, 250ms"),
            (&["compare", "a@later..", "b"], "expected an RFC 3339 time"),
        ] {
            let line = usage(args);
            assert!(line.starts_with("bbrtop: error: ") && line.contains(says), "{args:?}: {line}");
            assert_eq!(line.lines().count(), 1, "{line}");
        }
    }
}
