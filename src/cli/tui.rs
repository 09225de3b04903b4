//! `bbrtop` with no command: the live terminal UI over this host's sockets, a namespace's, or
//! the built-in lab's.

use super::Failure;
use super::args::PollArgs;
use super::startup;
use crate::system::SystemInfo;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct TuiArgs {
    #[command(flatten)]
    pub poll: PollArgs,
    /// Start the built-in lab (network namespaces, a 40 ms path with a 20 Mbit/s tbf bottleneck and a deep queue,
    /// one BBR and one CUBIC flow) and watch it. Torn down on exit. Needs CAP_NET_ADMIN and
    /// CAP_SYS_ADMIN.
    #[arg(long, conflicts_with = "netns")]
    pub lab: bool,
    /// Write the log here (nothing is printed while the TUI is up; see --log.level, --log.format).
    #[arg(long = "log.file", value_name = "PATH", alias = "log-file")]
    pub log_file: Option<PathBuf>,
}

pub fn run(a: TuiArgs) -> Result<(), Failure> {
    // Checked before anything is set up (the lab takes seconds and privileges).
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Failure::Usage(
            "the terminal UI needs a terminal (stdin and stdout); for pipes use `bbrtop snapshot` or \
             `bbrtop watch`"
                .into(),
        ));
    }
    let lab = a.lab.then(startup::live_lab);
    let mut started = startup::start(&a.poll, Default::default(), lab, &mut |line| tracing::warn!("{line}"))?;
    if let Some(l) = &started.lab {
        tracing::info!(lab = l.name(), path = l.path_description(), "lab started");
    }
    let sys = SystemInfo::read(started.netns.as_ref());
    let result = crate::tui::ui_loop(&started.runtime.published(), &started.stop, sys);
    started.runtime.stop();
    drop(started);
    tracing::info!("exit");
    Ok(result?)
}
