//! What the TUI spends per frame at 10k sockets: filtering and sorting the rows, following the
//! selection and drawing, at 200x50, 120x40 and 80x24, for the plain table, the detail pane, a
//! sort on LOCAL and a filter (`cc cubic`).
//!
//!     cargo bench --bench tui_frame
//!
//! It prints milliseconds per frame and asserts nothing about time.

use bbrtop::tui::Source;
use bbrtop::tui::app::App;
use bbrtop::tui::procs::Owners;
use bbrtop::tui::render::{self, Screen};
use bbrtop_core::filter::Expr;
use bbrtop_core::seam::{Now, feed_dump};
use bbrtop_core::system::SystemInfo;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::{Duration, Instant};

const SOCKETS: u64 = 10_000;
const FRAMES: u32 = 50;

fn main() {
    let recs = (1..=SOCKETS)
        .map(|c| {
            record(c, if c % 3 == 0 { "cubic" } else { "bbr" })
                .local(format!("10.77.1.1:{}", 10_000 + c % 50_000).as_str())
                .srtt_us(20_000 + (c % 997) as u32 * 100)
                .min_rtt_us(20_000)
                .last_ack_recv_ms(0)
                .bbr(2_400_000, 20_000, 1.25, 2.0)
                .build()
        })
        .collect();
    let mut e = Engine::new(EngineConfig::default());
    let now = Now::system();
    feed_dump(&mut e, Dump { sockets: recs, ..Dump::default() }, now);
    let snap = e.tick(now.after(Duration::from_secs(1)));
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
    for (w, h) in [(200, 50), (120, 40), (80, 24)] {
        let mut t = Terminal::new(TestBackend::new(w, h)).expect("a terminal");
        for (name, app) in &apps {
            let mut app = app.clone();
            let start = Instant::now();
            for _ in 0..FRAMES {
                // What the loop does per frame: filter and sort, follow the selection, draw.
                let rows = app.rows(&snap);
                app.follow(&rows);
                let screen = Screen {
                    app: &app,
                    snap: &snap,
                    rows: &rows,
                    sys: &sys,
                    owners: &owners,
                    source: &Source::Local,
                    playback: None,
                };
                t.draw(|f| render::draw(f, &screen)).expect("draw");
            }
            println!(
                "{w}x{h} {name}: {:.2} ms/frame at {} sockets",
                start.elapsed().as_secs_f64() * 1e3 / f64::from(FRAMES),
                snap.sockets.len()
            );
        }
    }
}
