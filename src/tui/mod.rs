//! The live terminal UI. The poller runs on its own thread; this loop only reads the latest
//! snapshot (an `Arc` clone), draws, and turns keys into actions. It knows nothing of commands,
//! collectors or the lab: `cli` starts those and hands it what to show.

pub mod app;
pub mod keymap;
pub mod procs;
pub mod render;
pub use crate::system;
mod tty;

use crate::engine::snapshot::Snapshot;
use crate::runtime::Published;
use anyhow::Context;
use app::App;
use crossterm::event::{self, Event, KeyEventKind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Restores the terminal when dropped: on q, on errors, and (through ratatui's hook) on panic.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Set by the panic hook `ui_loop` installs.
static PANICKED: AtomicBool = AtomicBool::new(false);

/// Draws `published` snapshots until q, Ctrl-C or `stop` (a signal, or the end of a lab run).
/// `sys` is the header's host facts (those of the watched namespace).
pub fn ui_loop(published: &Published, stop: &AtomicBool, sys: system::SystemInfo) -> anyhow::Result<()> {
    // The guard first: if setup fails half-way (raw mode on, no alternate screen), it still undoes it.
    let _guard = TerminalGuard;
    let tty = tty::Tty::open().context("opening the terminal")?;
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
    // A frame is drawn for a new snapshot or after input (keys, a resize), not on every wake:
    // an idle screen costs one frame per poll.
    let (mut drawn, mut dirty, mut rows) = (None, true, 0);
    while !app.quit && !stop.load(Ordering::Relaxed) {
        if PANICKED.load(Ordering::SeqCst) {
            anyhow::bail!("a bbrtop thread panicked (message above)");
        }
        let latest = published.latest();
        if dirty || drawn != Some(latest.seq) {
            rows = draw(&mut terminal, &mut app, &latest, &sys, &procs)?;
            drawn = Some(latest.seq);
        }
        // Wake at least 4 times a second: new snapshots and SIGTERM are noticed promptly.
        match tty.wait(Duration::from_millis(250)).context("reading the terminal")? {
            tty::Ready::Gone => {
                tracing::info!("the terminal hung up");
                tty::detach();
                break;
            }
            // A resize comes as a signal crossterm turns into an event: look even when quiet.
            tty::Ready::Input | tty::Ready::Quiet => dirty = handle_events(&mut app, rows, &latest)?,
        }
    }
    Ok(())
}

/// Draws one frame of `latest` (or the frozen snapshot); returns the table's row count.
fn draw(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    latest: &Arc<Snapshot>,
    sys: &system::SystemInfo,
    procs: &procs::ProcTable,
) -> anyhow::Result<usize> {
    let snap = app.shown(latest);
    let owners = procs.owners();
    let table = app.rows(&snap);
    app.follow(&table);
    let mut page = app.page;
    terminal
        .draw(|f| {
            page = f.area().height.saturating_sub(8) as usize;
            let screen = render::Screen { app, snap: &snap, rows: &table, sys, owners: &owners };
            render::draw(f, &screen);
        })
        .context("drawing")?;
    app.page = page;
    Ok(table.len())
}

/// Hands every event crossterm has ready to the app, without waiting; whether any came (a key,
/// a resize: the screen is to be drawn again).
fn handle_events(app: &mut App, rows: usize, latest: &Arc<Snapshot>) -> anyhow::Result<bool> {
    let mut any = false;
    while event::poll(Duration::ZERO).context("reading the terminal")? {
        any = true;
        if let Event::Key(k) = event::read().context("reading the terminal")?
            && k.kind != KeyEventKind::Release
            && let Some(action) = keymap::action(app.mode(), k)
        {
            tracing::debug!(key = ?k.code, ?action, "key");
            app.update(action, rows, latest);
        }
    }
    Ok(any)
}

/// The screen as SVG, for the README's picture.
#[cfg(test)]
mod svg;
#[cfg(test)]
mod tests;
