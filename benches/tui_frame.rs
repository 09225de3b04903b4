//! What the TUI spends per frame at 10k and 100k sockets, idle or with 1% of them moving each
//! poll: the rows brought to the new snapshot (`Rows::update`), the selection followed and the
//! frame drawn at 120x40, for the plain table, the detail pane, a sort on LOCAL and a filter
//! (`cc cubic`). Beside each, in the same run, what every frame did before the rows were kept:
//! every socket derived, filtered and sorted (`App::rows`) and the selection looked for in them,
//! drawing not counted. The ratio is what to read on a shared machine; absolute times move with
//! its load.
//!
//!     cargo bench --bench tui_frame
//!     cargo bench --bench tui_frame -- --only 100k
//!
//! It prints milliseconds per frame and asserts nothing about time.

use bbrtop::tui::Source;
use bbrtop::tui::app::App;
use bbrtop::tui::procs::Owners;
use bbrtop::tui::render::{self, Screen};
use bbrtop::tui::rows::Rows;
use bbrtop_core::filter::Expr;
use bbrtop_core::model::SocketRecord;
use bbrtop_core::seam::{Now, feed_dump};
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::Arc;
use std::time::{Duration, Instant};

const FRAMES: usize = 10;

/// Socket `c` at poll `poll`: one in `moving` changes its srtt every poll.
fn socket(c: u64, poll: u64, moving: u64) -> SocketRecord {
    let jitter = if moving > 0 && c.is_multiple_of(moving) { (poll % 7) as u32 * 300 } else { 0 };
    record(c, if c.is_multiple_of(3) { "cubic" } else { "bbr" })
        .local(format!("10.77.{}.1:{}", c / 50_000, 10_000 + c % 50_000).as_str())
        .srtt_us(20_000 + (c % 997) as u32 * 100 + jitter)
        .min_rtt_us(20_000)
        .last_ack_recv_ms(0)
        .bbr(2_400_000, 20_000, 1.25, 2.0)
        .build()
}

/// `FRAMES + 1` snapshots of `n` sockets, one per poll a second apart, `moving` as in [`socket`].
fn snapshots(n: u64, moving: u64) -> Vec<Arc<Snapshot>> {
    let mut e = Engine::new(EngineConfig::default());
    let start = Now::system();
    (0..=FRAMES as u64)
        .map(|poll| {
            let now = start.after(Duration::from_secs(poll));
            let sockets = (1..=n).map(|c| socket(c, poll, moving)).collect();
            feed_dump(&mut e, Dump { sockets, ..Dump::default() }, now);
            e.tick(now.after(Duration::from_millis(10)))
        })
        .collect()
}

fn ms(d: Duration, frames: usize) -> f64 {
    d.as_secs_f64() * 1e3 / frames as f64
}

fn main() {
    let only: Option<String> = std::env::args().skip_while(|a| a != "--only").nth(1);
    let (owners, sys) = (Owners::new(), SystemInfo::example());
    let with = |f: fn(&mut App)| {
        let mut a = App::default();
        f(&mut a);
        a
    };
    let apps = [
        ("table", App::default()),
        ("table + detail", with(|a| a.detail = true)),
        ("sorted by LOCAL", with(|a| a.sort = &bbrtop_core::columns::LOCAL)),
        ("filter cc cubic", with(|a| a.filter = Expr::parse("cc cubic").expect("a filter"))),
    ];
    let mut t = Terminal::new(TestBackend::new(120, 40)).expect("a terminal");
    for (label, n) in [("10k", 10_000), ("100k", 100_000)] {
        if only.as_ref().is_some_and(|o| o != label) {
            continue;
        }
        for (how, moving) in [("idle", 0), ("1% moving", 100)] {
            let snaps = snapshots(n, moving);
            let changed: usize =
                snaps.windows(2).map(|w| w[1].sockets.changes_since(&w[0].sockets).count()).sum();
            println!(
                "{label} sockets, {how} ({:.0} changed a poll):",
                changed as f64 / (snaps.len() - 1) as f64
            );
            for (name, app) in &apps {
                let mut app = app.clone();
                // The first snapshot builds the rows whole (as a change of sort or filter does).
                let start = Instant::now();
                let mut rows = Rows::of(app.order(), &snaps[0]);
                let built = start.elapsed();
                app.selected = 7;
                app.follow(&rows);
                let start = Instant::now();
                for snap in &snaps[1..] {
                    rows.update(app.order(), snap);
                    app.follow(&rows);
                    let screen = Screen {
                        app: &app,
                        snap,
                        rows: &rows,
                        sys: &sys,
                        owners: &owners,
                        source: &Source::Local,
                        playback: None,
                        experiment: None,
                    };
                    t.draw(|f| render::draw(f, &screen)).expect("draw");
                }
                let now = start.elapsed();
                let start = Instant::now();
                for snap in &snaps[1..] {
                    let all = app.rows(snap);
                    std::hint::black_box(all.iter().position(|s| Some(s.record.cookie) == app.pinned));
                }
                let before = start.elapsed();
                println!(
                    "  {name:<16} {:8.3} ms/frame (rows built whole: {:.1} ms); before: {:8.3} ms/frame \
                     without drawing; {:.0}x",
                    ms(now, FRAMES),
                    built.as_secs_f64() * 1e3,
                    ms(before, FRAMES),
                    before.as_secs_f64() / now.as_secs_f64()
                );
            }
        }
    }
}
