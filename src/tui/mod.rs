//! The live terminal UI, bbrtop's default command. The poller runs on its own thread; this loop
//! only reads the latest snapshot (an `Arc` clone), draws, and turns keys into actions.

pub mod app;
pub mod keymap;
pub mod procs;
pub mod render;
pub mod system;

use crate::cli::Failure;
use crate::cli::args::PollArgs;
use crate::engine::Engine;
use crate::lab::{Lab, LabConfig};
use crate::netns::NetnsSpec;
use crate::runtime::{Published, Runtime};
use anyhow::Context;
use app::App;
use clap::Args;
use crossterm::event::{self, Event, KeyEventKind};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct TuiArgs {
    #[command(flatten)]
    pub poll: PollArgs,
    /// Start the built-in lab (network namespaces, a 40 ms path with a 20 Mbit/s tbf bottleneck and a deep queue,
    /// one BBR and one CUBIC flow) and watch it. Torn down on exit. Needs CAP_NET_ADMIN and
    /// CAP_SYS_ADMIN.
    #[arg(long, conflicts_with = "netns")]
    pub lab: bool,
    /// Write diagnostics here (nothing is printed while the TUI is up).
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
}

/// Restores the terminal when dropped: on q, on errors, and (through ratatui's hook) on panic.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Where diagnostics go while the terminal belongs to the UI (nowhere, unless asked).
pub struct Log(pub Option<std::fs::File>);

impl Log {
    pub fn line(&mut self, msg: &str) {
        if let Some(f) = &mut self.0 {
            let _ = writeln!(f, "{} {msg}", humantime::format_rfc3339_seconds(std::time::SystemTime::now()));
        }
    }
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
    let mut log = Log(match &a.log_file {
        Some(p) => {
            Some(std::fs::File::create(p).with_context(|| format!("opening log file {}", p.display()))?)
        }
        None => None,
    });
    let stop = Arc::new(AtomicBool::new(false));
    // SIGTERM, and SIGINT/SIGHUP sent from outside (in raw mode Ctrl-C is a key), stop the loop so
    // the terminal is restored and the lab torn down instead of dying with the screen raw.
    // Registered first, so a signal during the lab's setup is handled too.
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGTERM, SIGINT, SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing signal handlers")?;
    }
    // Privileged work first: the lab, netlink, eBPF (which drops its capabilities once attached).
    let lab = if a.lab { Some(start_lab(&mut log)?) } else { None };
    let netns = match &lab {
        Some(l) => Some(NetnsSpec(l.sender_netns().to_path_buf())),
        None => a.poll.source.netns.clone(),
    };
    let cfg = a.poll.engine_config();
    let (sources, status) = crate::cli::sources::assemble(netns.as_ref(), &cfg.filter, &cfg.rule)?;
    if let Some(note) = crate::cli::sources::bpf_note(&status) {
        log.line(&note);
    }
    let engine = Engine::new(cfg);
    let mut runtime =
        Runtime::start(engine, sources, a.poll.source.interval).context("starting the poller")?;

    let sys = system::SystemInfo::read(netns.as_ref());
    let result = ui_loop_in(&runtime.published(), &stop, &mut log, sys);
    runtime.stop();
    drop(lab);
    log.line("exit");
    result
}

fn start_lab(log: &mut Log) -> Result<Lab, Failure> {
    // A 40 ms round trip, so min RTT and inflation read as they would on a real path.
    let cfg = LabConfig { delay: Some(Duration::from_millis(20)), ..LabConfig::default() };
    let mut lab = Lab::new(cfg).map_err(|e| match e {
        crate::lab::LabError::Privilege(m) => Failure::Privilege(format!("--lab needs {m}")),
        e => Failure::Runtime(e.into()),
    })?;
    for cc in ["bbr", "cubic"] {
        lab.start_flow(cc).map_err(|e| Failure::Runtime(e.into()))?;
    }
    log.line(&format!("lab {}: {}", lab.name(), lab.path_description()));
    Ok(lab)
}

/// Set by the panic hook `ui_loop` installs.
static PANICKED: AtomicBool = AtomicBool::new(false);

/// Draws `published` snapshots until q, Ctrl-C or `stop` (SIGTERM, or the end of a lab run).
pub fn ui_loop(published: &Published, stop: &AtomicBool, log: &mut Log) -> Result<(), Failure> {
    ui_loop_in(published, stop, log, system::SystemInfo::read(None))
}

/// [`ui_loop`] with the header's host facts given (those of a watched namespace).
pub fn ui_loop_in(
    published: &Published,
    stop: &AtomicBool,
    log: &mut Log,
    sys: system::SystemInfo,
) -> Result<(), Failure> {
    // The guard first: if setup fails half-way (raw mode on, no alternate screen), it still undoes it.
    let _guard = TerminalGuard;
    // try_init also installs a panic hook that restores the terminal, then runs the previous hook.
    let mut terminal = ratatui::try_init().context("setting up the terminal")?;
    // libbpf would print its warnings over the screen; nothing may reach stderr while we draw.
    #[cfg(feature = "bpf")]
    libbpf_rs::set_print(None);
    // A panic on another thread (the poller) restores the terminal through that hook; the loop
    // must then stop too, or it would go on drawing over the restored screen.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICKED.store(true, Ordering::SeqCst);
        previous(info);
    }));
    let procs = procs::ProcTable::start(Duration::from_secs(5));
    let mut app = App::default();
    while !app.quit && !stop.load(Ordering::Relaxed) {
        if PANICKED.load(Ordering::SeqCst) {
            return Err(Failure::Runtime(anyhow::anyhow!("a bbrtop thread panicked (message above)")));
        }
        let latest = published.latest();
        let snap = app.shown(&latest);
        let owners = procs.owners();
        let table = app.rows(&snap);
        let rows = table.len();
        app.follow(&table);
        let mut page = app.page;
        terminal
            .draw(|f| {
                page = f.area().height.saturating_sub(8) as usize;
                let screen =
                    render::Screen { app: &app, snap: &snap, rows: &table, sys: &sys, owners: &owners };
                render::draw(f, &screen);
            })
            .context("drawing")?;
        app.page = page;
        // Wake at least 4 times a second: new snapshots and SIGTERM are noticed promptly.
        if event::poll(Duration::from_millis(250)).context("reading the terminal")? {
            match event::read().context("reading the terminal")? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if let Some(action) = keymap::action(app.mode(), k) {
                        log.line(&format!("key {:?} -> {action:?}", k.code));
                        app.update(action, rows, &latest);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
