//! A real lab run, recorded and replayed: BBR and CUBIC flows through the built-in lab's
//! bottleneck, read by netlink and eBPF each second into an engine, each snapshot drawn as the live TUI
//! draws it and written by the recorder; the replay of the recording draws the same screens,
//! poll by poll. And `bbrtop record --lab` replayed by `bbrtop replay` in tmux. Privileged (the
//! lab).

mod support;

use bbrtop::lab::Lab;
use bbrtop::record::{RecordOptions, Recorder, Recording};
use bbrtop::replay::{Control, Player, PlayerOptions};
use bbrtop::tui::Source;
use bbrtop::tui::app::{App, View};
use bbrtop::tui::procs::Owners;
use bbrtop::tui::render::{self, Screen};
use bbrtop::tui::rows::Rows;
use bbrtop_collect::InetDiag;
use bbrtop_collect::netns::NetnsSpec;
use bbrtop_core::seam::Now;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use bbrtop_engine::{Engine, EngineConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::guard;
use support::tmux::Tmux;

const POLLS: usize = 16;

fn screen(snap: &Snapshot, app: &App, sys: &SystemInfo) -> String {
    let rows = Rows::of(app.order(), snap);
    let mut app = app.clone();
    app.follow(&rows);
    let owners = Owners::new();
    let s = Screen {
        app: &app,
        snap,
        rows: &rows,
        sys,
        owners: &owners,
        source: &Source::Local,
        playback: None,
        experiment: None,
    };
    render::text(&render::buffer_of(&s, 120, 40))
}

/// (what is shown, the screen's text).
type Screens = Vec<(String, String)>;

/// Every view, and the detail pane of each socket.
fn screens(snap: &Snapshot, sys: &SystemInfo) -> Screens {
    let mut apps: Vec<(String, App)> =
        View::ALL.iter().map(|&v| (format!("{v:?}"), App { view: v, ..App::default() })).collect();
    for i in 0..snap.sockets.len() {
        apps.push((format!("detail {i}"), App { detail: true, selected: i, ..App::default() }));
    }
    apps.into_iter().map(|(name, app)| (name, screen(snap, &app, sys))).collect()
}

#[test]
fn root_a_recorded_lab_run_replays_as_the_live_tui_showed_it() {
    if !guard::lab("recording and replaying a lab run") || !guard::bpf("the lab run's eBPF collectors") {
        return;
    }
    let mut lab = Lab::new(bbrtop::cli::startup::live_lab()).expect("the lab");
    lab.start_flow("bbr").expect("a BBR flow");
    let cubic = lab.start_flow("cubic").expect("a CUBIC flow");
    let ns = NetnsSpec(lab.sender_netns().to_path_buf());
    let sys = bbrtop_collect::host::system_info(Some(&ns));
    let cfg = EngineConfig::default();
    let mut diag = InetDiag::open(Some(&ns), cfg.filter.state_set()).expect("netlink");
    // eBPF too, as the TUI runs it on one namespace: closed flows, BBR's phase from the kernel,
    // every ACK's RTT read with the dump.
    let bpf = bbrtop_collect::bpf::load(&cfg.rule, None);
    assert!(bpf.status.reason.is_none(), "eBPF: {:?}", bpf.status.reason);
    if let Some(w) = bpf.windows {
        diag.read_windows(w);
    }
    let mut sources: Vec<Box<dyn bbrtop_core::seam::Source>> = vec![Box::new(diag)];
    sources.extend(bpf.sources);
    let mut engine = Engine::new(cfg);
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions { chunk: Duration::from_secs(5), ..RecordOptions::default() };
    let mut recorder = Recorder::create(dir.path(), opts, &sys).unwrap();
    // Each poll as the poller runs it: a dump, a tick; drawn as the live TUI would, and recorded.
    let mut live: Vec<(Arc<Snapshot>, Screens)> = Vec::new();
    for i in 0..POLLS {
        if i == POLLS / 2 {
            lab.stop_flow(&cubic);
        }
        for s in &mut sources {
            s.poll(&mut engine);
        }
        let snap = engine.tick(Now::system());
        recorder.write(&snap).unwrap();
        let drawn = screens(&snap, &sys);
        live.push((snap, drawn));
        std::thread::sleep(Duration::from_secs(1));
    }
    recorder.finish().unwrap();
    drop(lab);
    let has = |s: &Snapshot, cc: &str| s.sockets.iter().any(|v| v.record.cc_name() == cc);
    assert!(has(&live[2].0, "bbr") && has(&live[2].0, "cubic"), "both flows seen");
    assert!(!has(&live[POLLS - 1].0, "cubic"), "the CUBIC flow closed");
    assert!(live[POLLS - 1].0.closed.iter().any(|c| c.cc == "cubic"), "eBPF saw it close");

    let rec = Recording::open(dir.path()).unwrap();
    assert_eq!(rec.polls().len(), POLLS);
    assert!(std::fs::read_dir(dir.path()).unwrap().count() >= 4, "several chunks");
    let t = Instant::now();
    let mut p = Player::new(rec, PlayerOptions { history: 60, speed: 1.0 }, t).unwrap();
    p.control(Control::TogglePause, t).unwrap();
    for (i, (snap, drawn)) in live.iter().enumerate() {
        if i > 0 {
            p.control(Control::Step(1), t).unwrap();
        }
        assert_eq!(
            p.status().at,
            bbrtop_core::units::from_unix_ms(bbrtop_core::units::unix_ms(snap.taken_at))
        );
        let replayed = screens(p.shown(), &sys);
        assert_eq!(replayed.len(), drawn.len(), "poll {i}");
        for ((name, want), (_, got)) in drawn.iter().zip(&replayed) {
            assert_eq!(got, want, "poll {i}, {name}: replayed (left) against live (right)");
        }
    }
}

/// `bbrtop record --lab` then `bbrtop replay` in a terminal: the header names the recording, the
/// lab's namespace and its flows; the end of the recording is said; the detail pane's history is
/// the recorded polls; q gives the shell back.
#[test]
fn root_a_lab_recorded_by_bbrtop_record_replays_in_tmux() {
    if !guard::lab("bbrtop record --lab") || !support::tools::have("tmux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["record", "--lab", "--count", "12", "--record.chunk", "5s"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(o.status.success(), "bbrtop record: {}", String::from_utf8_lossy(&o.stderr));
    let t = Tmux::start("replay-lab");
    t.keys(&[&format!("{} replay {}", env!("CARGO_BIN_EXE_bbrtop"), rec.display()), "Enter"]);
    t.wait_for(" of 12  ");
    t.keys(&["Space"]);
    let p = t.wait_for("paused");
    assert!(p.contains(&format!("bbrtop recording {}", rec.display())), "{p}");
    // The header's first line wraps at 120 columns.
    let words = p.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("netns bbrtop-"), "the recording's host facts name the lab's namespace:\n{p}");
    t.type_text("}");
    let p = t.wait_for("end of the recording");
    assert!(p.contains("poll 12 of 12") && p.contains("bbr 1, cubic 1"), "{p}");
    t.type_text("/");
    t.type_text("cc bbr");
    t.keys(&["Enter"]);
    t.wait_for("filter: cc bbr");
    t.keys(&["Enter"]);
    let p = t.wait_for("phases over ");
    let n: usize =
        p.split("phases over ").nth(1).and_then(|r| r.split_whitespace().next()?.parse().ok()).unwrap();
    assert!((2..=12).contains(&n), "the BBR flow's recorded polls: {n}\n{p}");
    t.type_text("q");
    t.back_at_shell("q");
}
