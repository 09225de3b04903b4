//! `bbrtop replay`: a run recorded with the recorder and replayed through the player shows the
//! screens the live TUI showed for the same polls; the replay's header from a recording; and the
//! command's one-line errors, and `bbrtop replay` in tmux driven by its time keys. The run is a
//! real engine fed synthetic dumps, one a second, so it needs no privilege (`replay_lab.rs`
//! records a real lab run).

mod support;

use bbrtop::record::{RecordOptions, Recorder, Recording};
use bbrtop::replay::{Control, Player, PlayerOptions, Status};
use bbrtop::tui::Source;
use bbrtop::tui::app::{App, View};
use bbrtop::tui::procs::Owners;
use bbrtop::tui::render::{self, Screen};
use bbrtop::tui::rows::Rows;
use bbrtop_core::model::SocketRecord;
use bbrtop_core::seam::Now;
use bbrtop_core::seam::feed_dump;
use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};
use support::tmux::Tmux;

const POLLS: usize = 150;

fn sock(cookie: u64, cc: &str, srtt: u32, acked: u64) -> SocketRecord {
    record(cookie, cc)
        .local(format!("10.77.1.1:{}", 40000 + cookie))
        .peer("10.77.2.2:5201")
        .srtt_us(srtt)
        .min_rtt_us(20_000)
        .last_ack_recv_ms(0)
        .sending()
        .snd_cwnd_segs(10 + (srtt / 1000) % 50)
        .bytes_acked(acked)
        .bytes_sent(acked + acked / 50)
        .bytes_retrans(acked / 100)
        .total_retrans_segs((acked / 144_800) as u32)
        .pacing_rate_bytes_per_sec(2_500_000)
        .delivery_rate_bytes_per_sec(2_000_000 + u64::from(srtt))
        .bbr(2_400_000 + u64::from(srtt), 20_000, 1.25, 2.0)
        .build()
}

/// The published snapshots of a run a second apart from `t0`: a BBR socket all along; a CUBIC
/// socket from poll 5 that is inflated in polls 20..60 (its alert fires at 25 and resolves at
/// 60) and closes at poll 100; a second BBR socket from poll 30.
fn live_run(t0: SystemTime, polls: usize) -> Vec<Snapshot> {
    let mut e = Engine::new(EngineConfig::default());
    let mono = Instant::now();
    (0..polls)
        .map(|i| {
            let now =
                Now { mono: mono + Duration::from_secs(i as u64), wall: t0 + Duration::from_secs(i as u64) };
            let n = i as u64;
            let mut sockets = vec![sock(1, "bbr", 20_000 + (n % 7) as u32 * 1500, n * 2_000_000)];
            if (5..100).contains(&i) {
                let srtt = if (20..60).contains(&i) { 90_000 + (n % 5) as u32 * 4000 } else { 23_000 };
                sockets.push(sock(2, "cubic", srtt, n * 1_500_000));
            }
            if i >= 30 {
                sockets.push(sock(3, "bbr", 21_000 + (n % 3) as u32 * 1000, (n - 30) * 3_000_000));
            }
            feed_dump(&mut e, Dump { sockets, ..Dump::default() }, now);
            (*e.tick(now)).clone()
        })
        .collect()
}

fn t0() -> SystemTime {
    humantime::parse_rfc3339("2026-11-23T03:10:00Z").unwrap()
}

/// Records `snaps` into a fresh directory, in chunks of 30 s.
fn recorded(snaps: &[Snapshot]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let opts = RecordOptions { chunk: Duration::from_secs(30), ..RecordOptions::default() };
    let mut r = Recorder::create(dir.path(), opts, &bbrtop_core::system::SystemInfo::example()).unwrap();
    for s in snaps {
        r.write(s).unwrap();
    }
    r.finish().unwrap();
    dir
}

fn screen(source: &Source, playback: Option<&Status>, app: &App, snap: &Snapshot, w: u16, h: u16) -> String {
    let rows = Rows::of(app.order(), snap);
    let mut app = app.clone();
    app.follow(&rows);
    let (owners, sys) = (Owners::new(), bbrtop_core::system::SystemInfo::example());
    let s = Screen {
        app: &app,
        snap,
        rows: &rows,
        sys: &sys,
        owners: &owners,
        source,
        playback,
        experiment: None,
    };
    render::text(&render::buffer_of(&s, w, h))
}

/// Every view, the sockets view with the detail pane on each socket in turn.
fn views(snap: &Snapshot) -> Vec<(String, App)> {
    let mut out: Vec<(String, App)> =
        View::ALL.iter().map(|&v| (format!("{v:?}"), App { view: v, ..App::default() })).collect();
    for i in 0..snap.sockets.len() {
        out.push((format!("detail {i}"), App { detail: true, selected: i, ..App::default() }));
    }
    out
}

/// The replay shows, poll by poll, the screens the live TUI drew from the same polls (at the
/// live window of 60 polls of history, the detail charts too).
#[test]
fn replayed_screens_are_the_live_screens() {
    let live = live_run(t0(), POLLS);
    assert!(live[30].firing().count() == 1 && live[120].sockets.len() == 2, "the run as designed");
    let dir = recorded(&live);
    let rec = Recording::open(dir.path()).unwrap();
    assert_eq!(rec.polls().len(), POLLS);
    assert_eq!(rec.system(), &bbrtop_core::system::SystemInfo::example());
    let opts = PlayerOptions { history: 60, speed: 1.0 };
    let t = Instant::now();
    let mut p = Player::new(rec, opts, t).unwrap();
    p.control(Control::TogglePause, t).unwrap();
    let mut compared = 0;
    for (i, snap) in live.iter().enumerate() {
        if i > 0 {
            p.control(Control::Step(1), t).unwrap();
        }
        assert_eq!(p.status().index, i);
        let replayed = p.shown();
        for (name, app) in views(snap) {
            let want = screen(&Source::Local, None, &app, snap, 120, 40);
            let got = screen(&Source::Local, None, &app, replayed, 120, 40);
            assert_eq!(got, want, "poll {i}, {name}: replayed (left) against live (right)");
            compared += 1;
        }
    }
    assert!(compared > POLLS * 6, "{compared}");
}

/// Seeking back and forth in a recording lands on the same screens as stepping there.
#[test]
fn seeks_in_a_recording_show_the_polls_they_name() {
    let live = live_run(t0(), POLLS);
    let dir = recorded(&live);
    let t = Instant::now();
    let opts = PlayerOptions { history: 60, speed: 1.0 };
    let mut p = Player::new(Recording::open(dir.path()).unwrap(), opts, t).unwrap();
    let detail = App { detail: true, ..App::default() };
    let check = |p: &Player<Recording>, want: usize| {
        assert_eq!(p.status().index, want);
        let got = screen(&Source::Local, None, &detail, p.shown(), 120, 40);
        assert_eq!(got, screen(&Source::Local, None, &detail, &live[want], 120, 40), "poll {want}");
    };
    p.control(Control::Skip(60), t).unwrap();
    check(&p, 60);
    p.control(Control::Onset { forward: false }, t).unwrap();
    check(&p, 25);
    p.control(Control::Skip(-10), t).unwrap();
    check(&p, 15);
    p.control(Control::Goto(t0() + Duration::from_millis(99_500)), t).unwrap();
    check(&p, 99);
    p.control(Control::Onset { forward: true }, t).unwrap();
    assert_eq!(p.status().note.as_deref(), Some("no alert onset after this poll"));
    p.control(Control::Skip(3600), t).unwrap();
    check(&p, POLLS - 1);
    assert!(p.status().at_end());
}

/// The replay's screens from a recording, with its header: the recording, the poll, its time.
#[test]
fn replay_screens_from_a_recording() {
    let dir = recorded(&live_run(t0(), POLLS));
    let t = Instant::now();
    let mut p = Player::new(Recording::open(dir.path()).unwrap(), PlayerOptions::default(), t).unwrap();
    let source = Source::Recording("/var/lib/bbrtop/rec".into());
    p.control(Control::Onset { forward: true }, t).unwrap();
    p.control(Control::TogglePause, t).unwrap();
    let detail = App { detail: true, selected: 0, ..App::default() };
    let s = screen(&source, Some(&p.status()), &detail, p.shown(), 120, 40);
    assert!(s.contains("poll 26 of 150  2026-11-23T03:10:25.000Z  paused"), "{s}");
    insta::assert_snapshot!("onset_paused_detail_120x40", s);
    p.control(Control::Skip(3600), t).unwrap();
    let alerts = App { view: View::Alerts, ..App::default() };
    let s = screen(&source, Some(&p.status()), &alerts, p.shown(), 80, 24);
    assert!(s.contains("end of the recording"), "{s}");
    insta::assert_snapshot!("end_alerts_80x24", s);
}

fn bbrtop(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bbrtop")).args(args).output().unwrap()
}

/// Bad recordings are one line on stderr and exit 2, before any terminal is needed.
#[test]
fn bad_recordings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a recording\n").unwrap();
    let fake = dir.path().join("x.polls.parquet");
    std::fs::write(&fake, "PAR1 but not really").unwrap();
    let good = recorded(&live_run(t0(), POLLS)[..3]);
    // A FIFO where a chunk's file should be: refused at once, not waited on.
    let fifo = dir.path().join("f.polls.parquet");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // One chunk whose sockets file is cut short: exit 2 like a damaged polls file (main: 1).
    let cut = recorded(&live_run(t0(), POLLS)[..3]);
    let sockets = std::fs::read_dir(cut.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".sockets.parquet"))
        .unwrap();
    let bytes = std::fs::read(&sockets).unwrap();
    std::fs::write(&sockets, &bytes[..bytes.len() / 2]).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![cut.path().display().to_string()], "not a readable Parquet file"),
        (vec![dir.path().join("missing").display().to_string()], "no such file or directory"),
        (vec![empty.display().to_string()], "no complete chunk"),
        (vec![text.display().to_string()], "not a recording"),
        (vec![fake.display().to_string()], "not a readable Parquet file"),
        (vec![good.path().display().to_string(), "--at".into(), "noon".into()], "'--at <TIME>': \"noon\""),
        (vec![good.path().display().to_string(), "--speed".into(), "0".into()], "speed \"0\""),
        // A good recording, but no terminal here.
        (vec![good.path().display().to_string()], "replay needs a terminal"),
    ];
    for (args, says) in cases {
        let err = support::usage_error(&[&["replay".to_string()][..], &args[..]].concat());
        assert!(err.starts_with("bbrtop: error: ") && err.contains(says), "{args:?}: {err}");
    }
    // The FIFO under a 20 s bound (main opened it for a blocking read, and waited forever).
    let o = Command::new("timeout")
        .args(["20", env!("CARGO_BIN_EXE_bbrtop"), "replay", &fifo.display().to_string()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not a regular file (a FIFO)") && err.lines().count() == 1, "{err}");
    let o = bbrtop(&["replay", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && help.contains("--speed") && help.contains("--at"), "{help}");
}

/// A damaged chunk in the middle of a recording is left out with a line that names it, and the
/// replay plays the rest to its end (main ended the recording, or the replay, there).
#[test]
fn replay_skips_a_damaged_chunk_and_plays_the_rest() {
    if !support::tools::have("tmux") {
        return;
    }
    let dir = recorded(&live_run(t0(), 100));
    let mut polls: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".polls.parquet"))
        .collect();
    polls.sort();
    assert!(polls.len() >= 3, "chunks of 30 s: {polls:?}");
    let lost = bbrtop::record::Recording::open(&polls[1]).unwrap().polls().len();
    std::fs::write(&polls[1], "PAR1 damaged").unwrap();
    let left = 100 - lost;
    let t = Tmux::start("replay-damaged");
    let cmd = format!("{} replay {}", env!("CARGO_BIN_EXE_bbrtop"), dir.path().display());
    t.keys(&[&cmd, "Enter"]);
    t.wait_for(&format!(" of {left}"));
    t.keys(&["Space"]);
    t.wait_for("paused");
    for _ in 0..3 {
        t.type_text("}");
    }
    t.wait_for("end of the recording");
    t.type_text("q");
    t.back_at_shell("q");
    let p = t.pane();
    assert!(p.contains("bbrtop: warning: ") && p.contains("skipped a damaged chunk"), "{p}");
}

/// The poll the header shows: "poll K of N".
fn poll_shown(pane: &str) -> usize {
    let line =
        pane.lines().find(|l| l.starts_with("poll ")).unwrap_or_else(|| panic!("no poll line:\n{pane}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `bbrtop replay` in a real terminal: it plays, and every time key does what the help says;
/// the detail pane reaches 300 polls back; q gives the shell back as it was.
#[test]
fn replay_in_tmux_answers_the_time_keys() {
    if !support::tools::have("tmux") {
        return;
    }
    let dir = recorded(&live_run(t0(), 400));
    let t = Tmux::start("replay-keys");
    let cmd = format!("{} replay {}", env!("CARGO_BIN_EXE_bbrtop"), dir.path().display());
    t.keys(&[&cmd, "Enter"]);
    let p = t.wait_for("poll 2 of 400");
    assert!(p.contains(&format!("bbrtop recording {}", dir.path().display())), "{p}");
    assert!(p.contains("playing 1x") && p.contains("edge-1"), "{p}");
    t.keys(&["Space"]);
    let k = poll_shown(&t.wait_for("paused"));
    for (key, want) in [(".", k + 1), (",", k), ("]", k + 10), ("}", k + 70), ("[", k + 60), ("{", k)] {
        t.type_text(key);
        t.wait_for(&format!("poll {want} of 400"));
    }
    t.type_text("g");
    t.wait_for("go to (HH:MM:SS UTC, RFC 3339 or +90s):");
    t.type_text("03:10:42");
    t.keys(&["Enter"]);
    let p = t.wait_for("poll 43 of 400");
    assert!(p.contains("2026-11-23T03:10:42.000Z"), "{p}");
    t.type_text("n");
    t.wait_for("no alert onset after this poll");
    t.type_text("N");
    let p = t.wait_for("poll 26 of 400");
    assert!(p.contains("alerts firing: 1"), "the onset's poll shows its alert:\n{p}");
    t.type_text("g");
    t.type_text("teatime");
    t.keys(&["Enter"]);
    t.wait_for("time \"teatime\": expected an RFC 3339 time");
    // f pauses and plays in a replay; + doubles the speed.
    t.type_text("+");
    t.type_text("f");
    t.wait_for("playing 2x");
    t.keys(&["Space"]);
    t.wait_for("paused (2x when playing)");
    for _ in 0..7 {
        t.type_text("}");
    }
    let p = t.wait_for("end of the recording");
    assert_eq!(poll_shown(&p), 400, "{p}");
    t.keys(&["Enter"]);
    t.wait_for("phases over 300 polls");
    t.type_text("?");
    let p = t.wait_for("pause / play");
    assert!(p.contains("go to a time") && p.contains("next / previous alert onset"), "{p}");
    t.type_text("?");
    t.type_text("q");
    t.back_at_shell("q");
}
