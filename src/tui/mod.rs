//! The terminal UI, live or over a recording. Live, the poller runs on its own thread and this
//! loop only reads the latest snapshot (an `Arc` clone), draws, and turns keys into actions; in a
//! replay, the player hands it the poll due and takes its time controls. It knows nothing of
//! commands, collectors or the lab: `cli` starts those and hands it what to show.

pub mod app;
mod key;
pub mod keymap;
pub mod procs;
mod ranked;
pub mod render;
pub mod rows;
pub mod source;
use bbrtop_core::system::SystemInfo;
mod tty;

pub use source::Source;

use crate::replay::{Control, Player, Polls, Status};
use crate::runtime::Published;
use anyhow::Context;
use app::App;
use bbrtop_core::snapshot::Snapshot;
use crossterm::event::{self, Event, KeyEventKind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Restores the terminal when dropped: on q, on errors, and (through ratatui's hook) on panic.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Set by the panic hook the loop installs.
static PANICKED: AtomicBool = AtomicBool::new(false);

/// Draws `published` snapshots of this host until q, Ctrl-C or `stop` (a signal, or the end of a
/// lab run). `sys` is the header's host facts (those of the watched namespace).
pub fn ui_loop(published: &Published, stop: &AtomicBool, sys: SystemInfo) -> anyhow::Result<()> {
    ui_loop_from(Source::Local, published, stop, &|| sys.clone())
}

/// [`ui_loop`] for `bbrtop experiment --tui`: its Experiment view shows the latest `status` the
/// experiment's loop published.
pub fn ui_loop_experiment(
    published: &Published,
    stop: &AtomicBool,
    sys: SystemInfo,
    status: &crate::experiment::status::Latest,
) -> anyhow::Result<()> {
    run(&mut Live(published), &Source::Local, stop, &|| sys.clone(), Some(status))
}

/// [`ui_loop`] for a live source other than this host (a remote exporter): the header names it,
/// and processes are not looked up here. `sys` is asked again at each frame drawn: a remote's
/// host facts come with its first frame, which may come late.
pub fn ui_loop_from(
    source: Source,
    published: &Published,
    stop: &AtomicBool,
    sys: &dyn Fn() -> SystemInfo,
) -> anyhow::Result<()> {
    run(&mut Live(published), &source, stop, sys, None)
}

/// A recording's player in the TUI, with its time controls, until q, Ctrl-C or `stop`. `sys` is
/// the host facts of the recording; `path` is named in the header.
pub fn replay_loop<P: Polls>(
    player: &mut Player<P>,
    path: &Path,
    stop: &AtomicBool,
    sys: SystemInfo,
) -> anyhow::Result<()> {
    run(player, &Source::Recording(path.to_path_buf()), stop, &|| sys.clone(), None)
}

/// Where the loop's snapshots come from: the latest of a live source, or a player.
trait Frames {
    /// The snapshot to draw at `now` (a player moves on first, while it plays).
    fn latest(&mut self, now: Instant) -> anyhow::Result<Arc<Snapshot>>;
    /// Where a player is; `None` when live.
    fn playback(&self) -> Option<Status>;
    fn control(&mut self, c: Control, now: Instant) -> anyhow::Result<()>;
    /// How long the loop may wait for a key before it looks again.
    fn wait(&self, now: Instant) -> Duration;
}

/// Looks 4 times a second at least: new snapshots and SIGTERM are noticed promptly.
const WAKE: Duration = Duration::from_millis(250);

struct Live<'a>(&'a Published);

impl Frames for Live<'_> {
    fn latest(&mut self, _: Instant) -> anyhow::Result<Arc<Snapshot>> {
        Ok(self.0.latest())
    }
    fn playback(&self) -> Option<Status> {
        None
    }
    fn control(&mut self, _: Control, _: Instant) -> anyhow::Result<()> {
        Ok(())
    }
    fn wait(&self, _: Instant) -> Duration {
        WAKE
    }
}

impl<P: Polls> Frames for Player<P> {
    fn latest(&mut self, now: Instant) -> anyhow::Result<Arc<Snapshot>> {
        self.advance(now).context("reading the recording")?;
        Ok(Arc::clone(self.shown()))
    }
    fn playback(&self) -> Option<Status> {
        Some(self.status())
    }
    fn control(&mut self, c: Control, now: Instant) -> anyhow::Result<()> {
        Player::control(self, c, now).context("reading the recording")
    }
    fn wait(&self, now: Instant) -> Duration {
        Player::wait(self, now).map_or(WAKE, |d| d.min(WAKE))
    }
}

/// The loop: draws what `frames` has, hands it keys, until q, Ctrl-C, `stop` or a hangup.
fn run(
    frames: &mut impl Frames,
    source: &Source,
    stop: &AtomicBool,
    sys: &dyn Fn() -> SystemInfo,
    experiment: Option<&crate::experiment::status::Latest>,
) -> anyhow::Result<()> {
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
        // A panic `contained` turns into an error (damaged data) is not the UI's to end.
        if crate::contained::is_contained() {
            return;
        }
        PANICKED.store(true, Ordering::SeqCst);
        previous(info);
    }));
    // Processes are this host's: another host's (or another time's) sockets are not theirs.
    let procs = match source {
        Source::Local => procs::ProcTable::start(Duration::from_secs(5)),
        _ => procs::ProcTable::none(),
    };
    let mut app = App::default();
    // The table's rows, kept from frame to frame and brought to each snapshot drawn.
    let mut table = rows::Rows::default();
    // A frame is drawn for a new snapshot, a move of the play, or after input (keys, a resize),
    // not on every wake: an idle screen costs one frame per poll.
    let (mut drawn, mut dirty, mut rows) = (None, true, 0);
    // Input the terminal holds that crossterm did not take even when nudged: waited past (a
    // hangup only) until the next frame, or the wait would return at once, again and again.
    let mut stranded = false;
    while !app.quit && !stop.load(Ordering::Relaxed) {
        if PANICKED.load(Ordering::SeqCst) {
            anyhow::bail!("a bbrtop thread panicked (message above)");
        }
        let latest = frames.latest(Instant::now())?;
        let shown = (latest.seq, frames.playback());
        if dirty || drawn.as_ref() != Some(&shown) {
            let sys = sys();
            // An `Arc` taken, no lock held while the frame is drawn: the experiment's loop, which
            // publishes the next, never waits on the terminal.
            let status = experiment.map(crate::experiment::status::Latest::latest);
            let view = View {
                source,
                playback: shown.1.as_ref(),
                sys: &sys,
                procs: &procs,
                experiment: status.as_deref(),
            };
            rows = draw(&mut terminal, &mut app, &mut table, &latest, &view)?;
            drawn = Some(shown);
        }
        let ready = tty.wait(frames.wait(Instant::now()), !stranded).context("reading the terminal")?;
        if ready == tty::Ready::Gone {
            tracing::info!("the terminal hung up");
            tty::detach();
            break;
        }
        // A resize comes as a signal crossterm turns into an event: look even when quiet.
        dirty = handle_events(&mut app, rows, &latest, frames)?;
        // Input crossterm left unread past its buffer (see `tty::Tty::nudge`).
        stranded = ready == tty::Ready::Input && !dirty;
        if stranded && tty.nudge().is_ok() {
            dirty = handle_events(&mut app, rows, &latest, frames)?;
            stranded = !dirty;
        }
    }
    Ok(())
}

/// What a frame shows besides the snapshot.
struct View<'a> {
    source: &'a Source,
    playback: Option<&'a Status>,
    sys: &'a SystemInfo,
    procs: &'a procs::ProcTable,
    experiment: Option<&'a crate::experiment::status::Status>,
}

/// Draws one frame of `latest` (or the frozen snapshot), bringing the table's rows to it first;
/// returns the table's row count.
fn draw(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    table: &mut rows::Rows,
    latest: &Arc<Snapshot>,
    v: &View,
) -> anyhow::Result<usize> {
    let snap = app.shown(latest);
    let owners = v.procs.owners();
    v.procs.want_all(rows::by_process(&app.filter));
    let scanned = v.procs.scans_here().then_some(&owners);
    table.update(rows::Order { owners: scanned, ..app.order() }, &snap);
    app.follow(table);
    // The process scan looks for the owners of what is on screen: the rows within a screen's
    // height of the selection (the table shows a part of these).
    let near = app.page + 8;
    v.procs.shown(table.inodes(app.selected.saturating_sub(near), 2 * near));
    let mut page = app.page;
    terminal
        .draw(|f| {
            page = f.area().height.saturating_sub(8) as usize;
            let screen = render::Screen {
                app,
                snap: &snap,
                rows: table,
                sys: v.sys,
                owners: &owners,
                source: v.source,
                playback: v.playback,
                experiment: v.experiment,
            };
            render::draw(f, &screen);
        })
        .context("drawing")?;
    app.page = page;
    Ok(table.len())
}

/// Hands every event crossterm has ready to the app, without waiting, and each time control to
/// the player as it comes (keys typed ahead each count); whether any came (a key, a resize: the
/// screen is to be drawn again).
fn handle_events(
    app: &mut App,
    rows: usize,
    latest: &Arc<Snapshot>,
    frames: &mut impl Frames,
) -> anyhow::Result<bool> {
    let replay = frames.playback().is_some();
    let mut any = false;
    while event::poll(Duration::ZERO).context("reading the terminal")? {
        any = true;
        if let Event::Key(k) = event::read().context("reading the terminal")?
            && k.kind != KeyEventKind::Release
            && let Some(action) = keymap::action(app.mode(), k, replay)
        {
            tracing::debug!(key = ?k.code, ?action, "key");
            app.update(action, rows, latest);
            if let Some(c) = app.control.take() {
                frames.control(c, Instant::now())?;
            }
        }
    }
    Ok(any)
}

/// The screen as SVG, for the README's picture.
#[cfg(test)]
mod svg;
#[cfg(test)]
mod tests;
