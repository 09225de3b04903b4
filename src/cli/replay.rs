//! `bbrtop replay PATH`: the terminal UI over a recording, with time controls.

use super::Failure;
use super::startup;
use crate::record::Recording;
use crate::replay::{Control, Player, PlayerOptions, Polls};
use bbrtop_core::time_input::{Time, parse_time};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// A recording: a `bbrtop record` directory, or one chunk's .polls.parquet file.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Play this many times as fast as recorded (1/16 to 64; + and - change it while playing).
    #[arg(long, value_name = "FACTOR", default_value = "1", value_parser = parse_speed)]
    pub speed: f64,
    /// Polls of history the detail pane shows, up to the poll shown (the live TUI keeps 60).
    #[arg(long, value_name = "POLLS", default_value = "300",
          value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub history: u32,
    /// Start at this time: HH:MM:SS (UTC, on the recording's first day), RFC 3339, or an offset
    /// from the first poll (+90s).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub at: Option<Time>,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    use crate::replay::{MAX_SPEED, MIN_SPEED};
    match s.parse::<f64>() {
        Ok(x) if (MIN_SPEED..=MAX_SPEED).contains(&x) => Ok(x),
        _ => Err(format!("speed {s:?}: expected a factor from {MIN_SPEED} to {MAX_SPEED}")),
    }
}

pub fn run(a: ReplayArgs) -> Result<(), Failure> {
    // The recording first: a bad path is said the same way with or without a terminal.
    let bad = |e: anyhow::Error| Failure::Usage(format!("replay: {e:#}"));
    let rec = Recording::open(&a.path).map_err(bad)?;
    super::failure::warn_skipped(&a.path, rec.skipped());
    let sys = rec.system().clone();
    let start = match a.at {
        Some(t) => {
            Some(crate::replay::resolve(t, rec.at(0)).map_err(|e| Failure::Usage(format!("--at: {e}")))?)
        }
        None => None,
    };
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Failure::Usage(
            "replay needs a terminal (stdin and stdout); the recording's files are Parquet, which \
             DuckDB or pandas read"
                .into(),
        ));
    }
    let stop = startup::signals()?;
    let opts = PlayerOptions { history: a.history as usize, speed: a.speed };
    let mut player = Player::new(rec, opts, Instant::now()).map_err(bad)?;
    if let Some(t) = start {
        player.control(Control::Goto(t), Instant::now()).map_err(bad)?;
    }
    let result = crate::tui::replay_loop(&mut player, &a.path, &stop, sys);
    tracing::info!("exit");
    Ok(result?)
}
