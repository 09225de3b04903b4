//! The screens rendered on a `TestBackend` from fixed snapshots, compared with committed insta
//! snapshots; styles checked cell by cell; the update function driven by a table.

use super::Source;
use super::app::{Action, App, COLUMNS, View};
use super::procs::Owners;
use super::render::{self, Screen};
use super::rows::{Order, Rows};
use crate::replay::Status;
use bbrtop_core::columns;
use bbrtop_core::filter::Expr;
use bbrtop_core::model::ClosedFlow;
use bbrtop_core::model::derive::{LimitedBy, Rates};
use bbrtop_core::model::{Phase, ProbeBwStep};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::history::{History, HistoryView, Sample};
use bbrtop_core::snapshot::status::{Cause, Health, Reason};
use bbrtop_core::snapshot::{
    AlertStatus, AlertView, CollectorStatus, Derived, RecordRef, Snapshot, SocketView,
};
use bbrtop_core::testing::record;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tui_input::{Input, InputRequest as Edit};

/// The actions that type `s` on the prompt line.
fn typing(s: &str) -> Vec<Action> {
    s.chars().map(|c| Action::Edit(Edit::InsertChar(c))).collect()
}

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000 + secs)
}

fn history(srtt: impl Fn(u64) -> u32, phase: impl Fn(u64) -> Option<Phase>) -> HistoryView {
    let mut h = History::default();
    for i in 0..60u64 {
        let s = Sample {
            srtt_us: srtt(i),
            min_rtt_us: 20_000,
            cwnd_segs: 10 + i as u32,
            bbr_bw_bytes_per_sec: 2_400_000.0,
            delivery_rate_bytes_per_sec: 2_000_000.0 + (i as f32) * 1000.0,
            pacing_rate_bytes_per_sec: 2_500_000.0,
            phase: phase(i),
        };
        h.record(i, s, 60);
    }
    HistoryView::new(Arc::new(h), 0, 59, 60)
}

#[allow(clippy::too_many_arguments)]
fn socket(
    cookie: u64,
    cc: &str,
    port: u16,
    srtt: u32,
    inflated: bool,
    firing: bool,
    phase: Option<Phase>,
) -> SocketView {
    let r = record(cookie, cc)
        .local(format!("10.77.1.1:{port}"))
        .peer("10.77.2.2:5201")
        .inode(1000 + cookie as u32)
        .srtt_us(srtt)
        .min_rtt_us(20_000)
        .snd_cwnd_segs(40)
        .pacing_rate_bytes_per_sec(2_500_000)
        .delivery_rate_bytes_per_sec(2_400_000)
        .total_retrans_segs(3)
        .bytes_sent(1_000_000)
        .bytes_retrans(cookie * 1448 * 3)
        .bbr(2_450_000, 20_000, 1.25, 2.0)
        // ECN negotiated and seen, 90 of 1000 delivered segments CE-marked.
        .options(1 | 2 | 8 | 16)
        .delivered_segs(1000)
        .delivered_ce_segs(90)
        .build();
    let (ecn, retrans_ratio) = (bbrtop_core::model::Ecn::of(&r.tcp_info), r.tcp_info.retrans_ratio());
    SocketView {
        record: RecordRef::single(r),
        derived: Derived {
            phase,
            phase_source: phase.map(|_| bbrtop_core::model::Source::Kernel),
            baseline_rtt_us: Some(20_000),
            queue_delay_us: Some(srtt.saturating_sub(20_000)),
            inflation_ratio: Some(srtt as f64 / 20_000.0),
            inflated,
            inflated_for_seconds: inflated.then_some(7.0),
            alert_firing: firing,
            limited_by: Some(LimitedBy::Network),
            rates: Rates { goodput_bytes_per_sec: Some(2_300_000.0), ..Rates::default() },
            seen_for_seconds: 60.0,
            ecn,
            retrans_ratio,
            ..Derived::default()
        },
        history: history(|i| srtt.min(20_000 + i as u32 * 3000), |i| phase.filter(|_| i > 5)),
    }
}

/// The fixture's views as a snapshot keeps them, as of its time (poll 59 of 60-sample histories).
fn views(v: Vec<SocketView>) -> bbrtop_core::snapshot::Sockets {
    let at = bbrtop_core::snapshot::ViewAt {
        at_ms: bbrtop_core::units::unix_ms(at(60)),
        poll: 59,
        history: 60,
        rule: Default::default(),
    };
    bbrtop_core::snapshot::Sockets::of_views(v, at)
}

/// `snap` with its first socket's record changed by `f`.
fn with_first(snap: &mut Snapshot, f: impl FnOnce(&mut bbrtop_core::model::SocketRecord)) {
    let mut v = snap.sockets.to_vec();
    let mut r = (*v[0].record).clone();
    f(&mut r);
    v[0].record = RecordRef::single(r);
    snap.sockets = views(v);
}

fn fixture() -> Snapshot {
    let bbr = Some(Phase::ProbeBw(ProbeBwStep::Up));
    let sockets = vec![
        socket(1, "bbr", 40001, 24_000, false, false, bbr),
        socket(2, "cubic", 40002, 180_000, true, true, None),
        socket(3, "cubic", 40003, 45_000, true, false, None),
    ];
    let alert = |cookie: u64, status, resolved: Option<SystemTime>| AlertView {
        cookie,
        cc: "cubic".into(),
        local: format!("10.77.1.1:4000{cookie}").parse().unwrap(),
        peer: "10.77.2.2:5201".parse().unwrap(),
        status,
        srtt_us: 180_000,
        baseline_rtt_us: 20_000,
        ratio: 9.0,
        peak_ratio: 11.5,
        since: at(40),
        fired_at: at(45),
        resolved_at: resolved,
    };
    let mut by_cc = bbrtop_core::snapshot::aggregate::by_cc(&sockets, false);
    let sockets = views(sockets);
    let sums = counted(&[("bbr", 40_000_000, 1_200_000, 30, 2), ("cubic", 40_000_000, 400_000, 5, 0)]);
    bbrtop_engine::aggregate::add_totals(&mut by_cc, sums.clone(), Some((60.0, sums)));
    Snapshot {
        seq: 60,
        taken_at: at(60),
        by_cc,
        sockets,
        alerts: vec![alert(2, AlertStatus::Firing, None), alert(4, AlertStatus::Resolved, Some(at(52)))],
        collectors: vec![
            CollectorStatus { name: "netlink", health: Health::Ok, polls_total: 60, ..Default::default() },
            CollectorStatus {
                name: "bpf",
                health: Health::Ok,
                programs_attached: Some(2),
                ringbuf_lost_total: Some(0),
                ..Default::default()
            },
        ],
        inflation_onsets_total: vec![("cubic".into(), 2)],
        rule: RuleConfig::default(),
        // Cookie 5 closed in another namespace: not shown.
        closed: vec![
            closed(7, "bbr", at(58), 1.3),
            closed(6, "cubic", at(50), 12.5),
            closed(5, "cubic", at(49), 2.0),
        ],
        closed_by_cc: Vec::new(),
        totals: responded(),
    }
}

/// Responses delivered, as the edge guide's table has them: BBR 28/142/310 ms, CUBIC slower.
fn responded() -> Vec<bbrtop_core::snapshot::CcTotals> {
    let totals = |cc: &str, scale: f64| {
        let mut responses = bbrtop_core::snapshot::responses::Responses::default();
        for k in 0..100 {
            let ms = if k < 50 {
                28.0
            } else if k < 95 {
                142.0
            } else {
                310.0
            };
            responses.observe(12_000, scale * ms / 1000.0);
        }
        responses.observe(150_000, scale * 0.4);
        bbrtop_core::snapshot::CcTotals {
            cc: cc.into(),
            peer_group: "other".into(),
            asn: None,
            country: None,
            arm: None,
            counts: Default::default(),
            responses,
        }
    };
    vec![totals("bbr", 1.0), totals("cubic", 1.25)]
}

/// Per-cc counts: (cc, bytes sent and acked, bytes retransmitted, of them spurious, RTOs).
fn counted(
    ccs: &[(&str, u64, u64, u64, u64)],
) -> std::collections::BTreeMap<String, bbrtop_core::model::Tally> {
    use bbrtop_core::model::{Count, Tally};
    ccs.iter()
        .map(|&(cc, sent, retrans, dsack, rto)| {
            let t = Tally::from_counts([
                (Count::BytesSent, sent),
                (Count::BytesAcked, sent - retrans),
                (Count::BytesRetrans, retrans),
                (Count::RetransSegs, retrans / 1448),
                (Count::DsackDups, dsack),
                (Count::Rto, rto),
            ]);
            (cc.to_string(), t)
        })
        .collect()
}

fn closed(cookie: u64, cc: &str, closed_at: SystemTime, peak: f64) -> ClosedFlow {
    ClosedFlow {
        seq: cookie,
        cookie,
        netns: if cookie == 5 { 4026532999 } else { 4026531840 },
        cc: cc.into(),
        local: format!("10.77.1.1:4100{cookie}").parse().unwrap(),
        peer: "10.77.2.2:5201".parse().unwrap(),
        closed_at,
        lifetime_seconds: Some(12.5),
        counts: bbrtop_core::model::Tally::from_counts([
            (bbrtop_core::model::Count::BytesAcked, 31_250_000),
            (bbrtop_core::model::Count::BytesSent, 31_400_000),
            (bbrtop_core::model::Count::BytesRetrans, 5_792),
            (bbrtop_core::model::Count::RetransSegs, 4),
        ]),
        srtt_us: 26_000,
        min_rtt_us: 20_000,
        delivery_rate_bytes_per_sec: Some(2_400_000),
        bbr: None,
        peak_inflation_ratio: peak,
    }
}

fn render(app: &App, snap: &Snapshot, w: u16, h: u16) -> Buffer {
    render_from(&Source::Local, None, app, snap, w, h)
}

/// A frame of `snap` from `source` (with a replay's `playback`).
fn render_from(
    source: &Source,
    playback: Option<&Status>,
    app: &App,
    snap: &Snapshot,
    w: u16,
    h: u16,
) -> Buffer {
    render_all(source, playback, None, app, snap, w, h)
}

/// A frame of `snap` from `source`, with a replay's `playback` and an experiment's status.
fn render_all(
    source: &Source,
    playback: Option<&Status>,
    experiment: Option<&crate::experiment::status::Status>,
    app: &App,
    snap: &Snapshot,
    w: u16,
    h: u16,
) -> Buffer {
    let owners: Owners = [(1001, (4242, "nginx".to_string()))].into_iter().collect();
    let rows = Rows::of(app.order(), snap);
    let sys = bbrtop_core::system::SystemInfo::example();
    render::buffer_of(
        &Screen { app, snap, rows: &rows, sys: &sys, owners: &owners, source, playback, experiment },
        w,
        h,
    )
}

use render::text;

fn app_with(f: impl FnOnce(&mut App)) -> App {
    let mut a = App::default();
    f(&mut a);
    a
}

#[test]
fn screens_at_both_sizes() {
    let snap = fixture();
    let views: Vec<(&str, App)> = vec![
        ("sockets", App::default()),
        ("detail", app_with(|a| a.detail = true)),
        ("compare", app_with(|a| a.view = View::Compare)),
        ("alerts", app_with(|a| a.view = View::Alerts)),
        ("closed", app_with(|a| a.view = View::Closed)),
        ("help", app_with(|a| a.help = true)),
        (
            "filter_error",
            app_with(|a| {
                a.filter_error = Some("filter \"port x\": invalid port \"x\" (expected 1-65535)".into())
            }),
        ),
    ];
    for (name, app) in &views {
        for (w, h) in [(120, 40), (80, 24)] {
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), text(&render(app, &snap, w, h)));
        }
    }
}

/// An experiment as its loop leaves the status: two arms, the guard's stop of one, verdicts.
fn experiment_status() -> crate::experiment::status::Status {
    use crate::experiment::ArmCount;
    use crate::experiment::status::{Status, Stopped};
    use crate::experiment::verdict::{ArmFigures, Ends, Figure, GroupVerdict};
    let arm = |cc: &str, assigned, redirected| ArmCount {
        cc: cc.into(),
        percent: 50.0,
        assigned,
        setsockopt_failures: 0,
        redirected,
    };
    let fig = |arm: &str, responses, delivery: [f64; 3], retrans, share| ArmFigures {
        arm: arm.into(),
        connections: 10,
        responses,
        delivery: Some(delivery),
        retrans_ratio: Some(retrans),
        goodput_share: share,
        ..ArmFigures::default()
    };
    let ends = |lo, hi| Ends { lo, hi };
    let figure =
        |call: &str, control, test| Figure { call: call.into(), control, test, diff: ends(0.0, 0.0) };
    let verdict = |group: &str, call: &str| GroupVerdict {
        group: group.into(),
        arm: "bbr".into(),
        control: "cubic".into(),
        call: call.into(),
        responses: [555, 1035],
        delivery_p50: figure(call, ends(0.545, 0.677), ends(0.285, 0.339)),
        delivery_p95: figure(call, ends(1.09, f64::INFINITY), ends(0.354, 0.707)),
        delivery_p99: figure(call, ends(2.0, f64::INFINITY), ends(0.5, 1.0)),
        retrans_ratio: Some(figure("worse", ends(0.004, 0.007), ends(0.0151, 0.0191))),
    };
    Status {
        arms: vec![arm("cubic", 9, 0), arm("bbr", 9, 3)],
        figures: vec![
            fig("cubic", 555, [0.612, 1.246, 3.012], 0.0155, 0.45),
            fig("bbr", 1035, [0.293, 0.432, 0.590], 0.0079, 0.55),
        ],
        stopped: vec![Stopped {
            arm: "bbr".into(),
            at: 9.0,
            held: 5.0,
            reason: "retrans_ratio".into(),
            why: "test arm's retransmit ratio 21.20% (interval 19.70%..22.77%) above the 1.00% bound for 5s"
                .into(),
        }],
        verdicts: vec![verdict("all", "better"), verdict("peer_group=mobile", "not yet known")],
        seconds: 65.0,
    }
}

#[test]
fn experiment_view_at_both_sizes() {
    let snap = fixture();
    let app = app_with(|a| a.view = View::Experiment);
    let status = experiment_status();
    for (w, h) in [(120, 40), (80, 24)] {
        let t = text(&render_all(&Source::Local, None, Some(&status), &app, &snap, w, h));
        insta::assert_snapshot!(format!("experiment_{w}x{h}"), t);
    }
    let none = text(&render(&app, &snap, 120, 40));
    assert!(none.contains("No experiment runs in this bbrtop"), "{none}");
}

#[test]
fn small_terminal_and_empty_states() {
    let snap = fixture();
    let t = text(&render(&App::default(), &snap, 60, 20));
    assert!(t.contains("terminal too small: 60x20"), "{t}");
    let empty = Snapshot::empty(RuleConfig::default());
    let t = text(&render(&App::default(), &empty, 100, 30));
    assert!(t.contains("No TCP sockets"), "{t}");
    let filtered = app_with(|a| a.filter = Expr::parse("port 9").unwrap());
    assert!(text(&render(&filtered, &snap, 100, 30)).contains("No socket matches the filter"));
    // At 80 columns not every column fits, but the sort column always does.
    for &col in COLUMNS.iter() {
        let t = text(&render(&app_with(|a| a.sort = col), &snap, 80, 24));
        assert!(t.contains(&format!("{}↓", col.header)), "{col:?}:\n{t}");
    }
    // Scrolled right, the columns that did not fit at 80: LOCAL stays, the rest follow in order.
    // Contiguous: each column after the offset while it fits in the 78 cells inside the border.
    let t = text(&render(&app_with(|a| a.col_offset = 11), &snap, 80, 24));
    let head = t.lines().find(|l| l.starts_with("LOCAL")).unwrap();
    let mut used = columns::LOCAL.width;
    let rest = COLUMNS[12..].iter().take_while(|c| {
        used += c.width + 1;
        used <= 78
    });
    let want: Vec<&str> = std::iter::once("LOCAL").chain(rest.map(|c| c.header)).collect();
    assert!(want.len() >= 4 && want[1] == "CWND", "{want:?}");
    assert_eq!(head.split("  ").map(str::trim).filter(|h| !h.is_empty()).collect::<Vec<_>>(), want, "{t}");
    // Sorted by WHERE, the column shows each socket's pod, namespace name or cgroup ("-": none).
    let mut placed = fixture();
    let origin = bbrtop_core::model::Origin { netns_name: Some("blue".into()), ..Default::default() };
    with_first(&mut placed, |r| r.origin = Some(std::sync::Arc::new(origin)));
    let t = text(&render(&app_with(|a| a.sort = &columns::WHERE), &placed, 100, 30));
    assert!(t.lines().any(|l| l.contains("WHERE↓")) && t.contains(" blue ") && t.contains(" - "), "{t}");
    // Without the eBPF collector the closed-flows view says so instead of showing stale rows.
    let mut no_bpf = fixture();
    no_bpf.collectors.retain(|c| c.name != "bpf");
    let t = text(&render(&app_with(|a| a.view = View::Closed), &no_bpf, 100, 30));
    assert!(t.contains("eBPF off") && !t.contains("41007"), "{t}");
}

#[test]
fn a_long_collector_reason_wraps_instead_of_being_cut_off() {
    let mut snap = fixture();
    let reason = "eBPF off: missing CAP_BPF, CAP_PERFMON (run as root, or grant them with setcap or the unit's AmbientCapabilities)";
    for c in snap.collectors.iter_mut().filter(|c| c.name == "bpf") {
        c.health = Health::Off(Some(Reason::new(Cause::MissingCapabilities, reason)));
    }
    let t = text(&render(&App::default(), &snap, 80, 24));
    // Word-wrapped: joining the header's rows with spaces gives back every word of the reason.
    let joined = t.lines().take(6).collect::<Vec<_>>().join(" ");
    assert!(joined.split_whitespace().collect::<Vec<_>>().join(" ").contains(reason), "{t}");
    // The table is still there, below the taller header.
    assert!(t.lines().any(|l| l.starts_with("LOCAL")), "{t}");
}

#[test]
fn inflated_rows_stand_out() {
    let snap = fixture();
    // Sorted by inflation, descending: the firing CUBIC socket, the inflated one, then BBR.
    let b = render(&App::default(), &snap, 120, 40);
    let row_of = |port: &str| {
        (0..40u16).find(|y| text(&b).lines().nth(*y as usize).is_some_and(|l| l.contains(port))).unwrap()
    };
    let firing = &b[(2, row_of(":40002"))];
    assert_eq!(firing.fg, Color::Red);
    assert!(firing.modifier.contains(Modifier::BOLD));
    assert!(firing.modifier.contains(Modifier::REVERSED), "the first row is selected");
    assert_eq!(b[(2, row_of(":40003"))].fg, Color::Yellow);
    assert_eq!(b[(2, row_of(":40001"))].fg, Color::Reset);
}

#[test]
fn update_table() {
    let latest = Arc::new(fixture());
    type Check = fn(&App) -> bool;
    let cases: Vec<(Vec<Action>, Check)> = vec![
        (vec![Action::Down, Action::Down, Action::Down], |a| a.selected == 2),
        (vec![Action::Down, Action::Up, Action::Up], |a| a.selected == 0),
        (vec![Action::Bottom], |a| a.selected == 2),
        (vec![Action::NextSort], |a| a.sort == &columns::PACING),
        (vec![Action::PrevSort, Action::PrevSort], |a| a.sort == &columns::BASE_RTT),
        (vec![Action::ReverseSort], |a| !a.descending),
        ([vec![Action::StartFilter], typing("cc bbr"), vec![Action::FilterApply]].concat(), |a| {
            a.filter_text == "cc bbr" && a.filter == Expr::parse("cc bbr").unwrap() && a.editing.is_none()
        }),
        // A filter that does not parse is reported, and the previous one stays; `/` opens what
        // was typed again, to be mended.
        (
            [
                vec![Action::StartFilter],
                typing("port 9"),
                vec![Action::FilterApply, Action::StartFilter, Action::Edit(Edit::DeleteFromStart)],
                typing("port x"),
                vec![Action::FilterApply],
            ]
            .concat(),
            |a| {
                a.filter == Expr::parse("port 9").unwrap()
                    && a.filter_text == "port 9"
                    && a.filter_error.as_deref().is_some_and(|e| e.contains("invalid port"))
            },
        ),
        (
            [
                vec![Action::StartFilter],
                typing("srtt > 100"),
                vec![Action::FilterApply, Action::StartFilter, Action::Edit(Edit::InsertChar('m'))],
                typing("s"),
                vec![Action::FilterApply],
            ]
            .concat(),
            |a| {
                a.filter == Expr::parse("srtt > 100ms").unwrap()
                    && a.filter_error.is_none()
                    && a.rejected.is_none()
            },
        ),
        (vec![Action::StartFilter, Action::Edit(Edit::InsertChar('x')), Action::FilterCancel], |a| {
            a.filter_text.is_empty() && a.editing.is_none()
        }),
        (vec![Action::ToggleFreeze], |a| a.frozen.is_some()),
        (vec![Action::ToggleFreeze, Action::ToggleFreeze], |a| a.frozen.is_none()),
        (vec![Action::NextView, Action::NextView], |a| a.view == View::Alerts),
        (vec![Action::Show(View::Closed), Action::NextView], |a| a.view == View::Places),
        (vec![Action::Show(View::Places), Action::NextView], |a| a.view == View::Experiment),
        (vec![Action::Show(View::Experiment), Action::NextView], |a| a.view == View::Sockets),
        (vec![Action::ToggleHelp], |a| a.help),
        (vec![Action::ScrollRight; 40], |a| a.col_offset == COLUMNS.len() - 2),
        (vec![Action::ScrollRight, Action::ScrollLeft, Action::ScrollLeft], |a| a.col_offset == 0),
        (vec![Action::Quit], |a| a.quit),
    ];
    for (actions, check) in cases {
        let mut app = App::default();
        for act in &actions {
            let rows = app.rows(&latest).len();
            app.update(act.clone(), rows, &latest);
        }
        assert!(check(&app), "after {actions:?}: {app:?}");
    }
}

#[test]
fn sorting_and_filtering_rows() {
    let snap = fixture();
    let ports = |a: &App| a.rows(&snap).iter().map(|s| s.record.local.port()).collect::<Vec<_>>();
    assert_eq!(ports(&App::default()), vec![40002, 40003, 40001]);
    assert_eq!(ports(&app_with(|a| a.descending = false)), vec![40001, 40003, 40002]);
    assert_eq!(ports(&app_with(|a| a.filter = Expr::parse("cc cubic").unwrap())), vec![40002, 40003]);
    assert_eq!(
        ports(&app_with(|a| {
            a.sort = &columns::LOCAL;
            a.descending = false;
        })),
        vec![40001, 40002, 40003]
    );
}

/// `process PID|NAME` keeps the rows of the sockets the latest /proc scan found that process
/// holding; before any scan, by whom a socket is held is unknown and no row matches either way.
/// A new scan works the rows out again, though no socket changed.
#[test]
fn the_process_word_filters_by_the_scans_owners() {
    let snap = fixture();
    let scan = |o: &[(u32, u32, &str)]| -> Arc<Owners> {
        Arc::new(o.iter().map(|&(inode, pid, c)| (inode, (pid, c.to_string()))).collect())
    };
    let first = scan(&[(1001, 4242, "nginx"), (1002, 777, "envoy")]);
    let ports = |rows: &Rows| rows.views().iter().map(|s| s.record.local.port()).collect::<Vec<_>>();
    let by = |f: &str, owners: Option<&Arc<Owners>>| {
        let app = app_with(|a| a.filter = Expr::parse(f).unwrap());
        ports(&Rows::of(Order { owners, ..app.order() }, &snap))
    };
    assert_eq!(by("process nginx", Some(&first)), vec![40001]);
    assert_eq!(by("process ngi", Some(&first)), vec![40001], "a part of the command");
    assert_eq!(by("process = 777", Some(&first)), vec![40002]);
    assert_eq!(by("not process nginx", Some(&first)), vec![40002, 40003], "held by none asked for");
    assert_eq!((by("process nginx", None), by("not process nginx", None)), (vec![], vec![]));
    let app = app_with(|a| a.filter = Expr::parse("process envoy").unwrap());
    let mut rows = Rows::of(Order { owners: Some(&first), ..app.order() }, &snap);
    let moved = scan(&[(1003, 777, "envoy")]);
    rows.update(Order { owners: Some(&moved), ..app.order() }, &snap);
    assert_eq!(ports(&rows), vec![40003], "the descriptor passed on");
}

#[test]
fn the_selection_follows_its_socket_through_a_resort() {
    let latest = Arc::new(fixture());
    let mut app = App::default();
    let port = |a: &App| a.rows(&latest)[a.selected].record.local.port();
    // Each step as the loop runs it: follow this frame's rows, then apply a key's action.
    let step = |app: &mut App, act: Action| {
        app.follow(&Rows::of(app.order(), &latest));
        let n = app.rows(&latest).len();
        app.update(act, n, &latest);
        app.follow(&Rows::of(app.order(), &latest));
    };
    step(&mut app, Action::Bottom);
    assert_eq!(port(&app), 40001, "the last row by inflation, descending");
    step(&mut app, Action::ReverseSort);
    assert_eq!((app.selected, port(&app)), (0, 40001), "same socket, now the first row");
    step(&mut app, Action::Down);
    assert_eq!(port(&app), 40003, "moving picks the next row and pins it");
    // Filtered out: the row number stays (clamped), on whatever is there now.
    step(&mut app, Action::StartFilter);
    for act in typing("cc bbr") {
        step(&mut app, act);
    }
    step(&mut app, Action::FilterApply);
    assert_eq!((app.selected, port(&app)), (0, 40001));
}

/// With eBPF, the detail pane shows the spread of every ACK's srtt since the last poll.
#[test]
fn detail_shows_the_per_ack_srtt_spread() {
    let mut snap = fixture();
    with_first(&mut snap, |r| {
        r.kernel_rtt = Some(bbrtop_core::model::RttWindow {
            samples: 412,
            last_srtt_us: 24_000,
            min_srtt_us: Some(21_500),
            max_srtt_us: Some(38_250),
            bbr: None,
            rtt_samples: 206,
            rtt_min_us: Some(20_100),
            prompt_samples: 180,
            prompt_min_us: Some(20_400),
        })
    });
    let row = app_with(|_| {}).rows(&snap).iter().position(|s| s.record.cookie == 1).unwrap();
    let app = app_with(|a| {
        a.detail = true;
        a.selected = row;
    });
    let screen = text(&render(&app, &snap, 200, 50));
    assert!(screen.contains("acks 412 srtt 21.5ms..38.2ms prompt rtt 20.4ms+"), "{screen}");
}

/// The Where view: one row per place and cc; sockets with no origin count under "node".
#[test]
fn where_view_groups_sockets_by_place_and_cc() {
    let mut snap = fixture();
    let origin = bbrtop_core::model::Origin { netns_name: Some("blue".into()), ..Default::default() };
    with_first(&mut snap, |r| r.origin = Some(std::sync::Arc::new(origin)));
    let cc = snap.sockets.to_vec()[0].record.cc_name().to_string();
    let t = text(&render(&app_with(|a| a.view = View::Places), &snap, 100, 30));
    let row = |place: &str| t.lines().filter(|l| l.split_whitespace().next() == Some(place)).count();
    assert_eq!(row("blue"), 1, "{t}");
    let node_ccs: std::collections::BTreeSet<String> =
        snap.sockets.iter().skip(1).map(|s| s.record.cc_name().to_string()).collect();
    let node_ccs: std::collections::BTreeSet<&str> = node_ccs.iter().map(String::as_str).collect();
    assert_eq!(row("node"), node_ccs.len(), "one node row per cc:\n{t}");
    assert!(t.lines().any(|l| l.starts_with("blue") && l.contains(&cc)), "{t}");
    insta::assert_snapshot!("where_100x30", t);
}

/// The README's picture of the TUI is this buffer as SVG: the screen the tests above compare.
/// It is held to docs/img/tui.svg; `BBRTOP_WRITE_DOCS=1 cargo test --lib tui::tests::screen_as_svg`
/// rewrites it.
#[test]
fn screen_as_svg() {
    let b = render(&app_with(|a| a.detail = true), &fixture(), 120, 40);
    let svg = super::svg::buffer_to_svg(&b);
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    // Every row's text is in it, in order, with its colours.
    let rows: Vec<String> = text(&b).lines().map(str::to_string).collect();
    let header = rows.iter().find(|r| r.contains("edge-1")).expect("the header names the host");
    let word = header.split_whitespace().find(|w| w.contains("edge-1")).unwrap();
    assert!(svg.contains(word), "{word}");
    assert!(svg.matches("<text").count() > 40, "a run of text per style per row");
    assert!(svg.contains("fill=\"#"), "colours");
    crate::generated_docs::hold(
        "docs/img/tui.svg",
        &svg,
        "cargo test -p bbrtop --lib tui::tests::screen_as_svg",
    );
}

fn playback(index: usize, playing: bool, speed: f64, note: Option<&str>) -> Status {
    Status { index, len: 3600, at: at(60), playing, speed, note: note.map(str::to_string) }
}

/// The header names the source; a replay's says which poll it shows, when, and how it plays.
#[test]
fn replay_screens() {
    let snap = fixture();
    let rec = Source::Recording("/var/lib/bbrtop/rec".into());
    let time_prompt = app_with(|a| {
        a.update(Action::StartGoto, 3, &Arc::new(fixture()));
        *a.editing.as_mut().unwrap() = Input::new("16:05".into());
    });
    let cases: Vec<(&str, Status, App)> = vec![
        ("replay_playing", playback(120, true, 1.0, None), App::default()),
        ("replay_paused", playback(120, false, 2.0, None), app_with(|a| a.detail = true)),
        ("replay_end", playback(3599, false, 1.0, Some("no alert onset after this poll")), App::default()),
        ("replay_help", playback(120, true, 1.0, None), app_with(|a| a.help = true)),
        ("replay_goto", playback(120, false, 1.0, None), time_prompt),
    ];
    for (name, status, app) in &cases {
        for (w, h) in [(120, 40), (80, 24)] {
            let t = text(&render_from(&rec, Some(status), app, &snap, w, h));
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), t);
        }
    }
    // The poll's time is the one the prompt takes back (RFC 3339, UTC).
    let t = text(&render_from(&rec, Some(&playback(120, true, 1.0, None)), &App::default(), &snap, 120, 40));
    let line = t.lines().find(|l| l.starts_with("poll 121 of 3600")).expect(&t);
    assert!(line.contains(&crate::replay::format_time(at(60))) && line.contains("playing 1x"), "{line}");
    // The help lists every time control, and freeze is not one in a replay (f pauses).
    let help = text(&render_from(
        &rec,
        Some(&playback(1, true, 1.0, None)),
        &app_with(|a| a.help = true),
        &snap,
        80,
        24,
    ));
    for keys in ["space f", ". ,", "] [", "} {", "g ", "n N", "+ -", "? h"] {
        assert!(help.lines().any(|l| l.contains(&format!("│{keys}"))), "{keys:?}:\n{help}");
    }
    assert!(!help.contains("freeze"), "{help}");
}

#[test]
fn the_header_names_live_and_remote_sources_without_credentials() {
    let snap = fixture();
    let live = text(&render(&App::default(), &snap, 120, 40));
    assert!(live.lines().next().unwrap().starts_with("bbrtop live  edge-1"), "{live}");
    let remote = Source::Remote("https://ops:s3cret@edge-1:9100".into());
    let t = text(&render_from(&remote, None, &App::default(), &snap, 120, 40));
    assert!(t.lines().next().unwrap().starts_with("bbrtop remote https://edge-1:9100  edge-1"), "{t}");
    assert!(!t.contains("s3cret") && !t.contains("poll "), "{t}");
}

/// The time prompt: a time typed becomes the player's control; one that does not parse is said.
#[test]
fn a_time_typed_goes_to_the_player() {
    use crate::replay::Control;
    let latest = Arc::new(fixture());
    let typed = |s: &str| {
        let mut app = App::default();
        app.update(Action::StartGoto, 3, &latest);
        for act in typing(s) {
            app.update(act, 3, &latest);
        }
        app.update(Action::FilterApply, 3, &latest);
        app
    };
    let day = |hms: &str| {
        let d = humantime::format_rfc3339(at(60)).to_string();
        humantime::parse_rfc3339(&format!("{}T{hms}Z", &d[..10])).unwrap()
    };
    let a = typed("07:30:15");
    assert_eq!(
        (a.control, a.editing.is_none(), a.time_error.as_ref()),
        (Some(Control::Goto(day("07:30:15"))), true, None)
    );
    assert_eq!(a.filter_text, "", "the filter is left alone");
    let a = typed("2026-11-23T16:02:11Z");
    assert_eq!(a.control, Some(Control::Goto(humantime::parse_rfc3339("2026-11-23T16:02:11Z").unwrap())));
    let a = typed("yesterday");
    assert_eq!(a.control, None);
    assert!(a.time_error.as_deref().unwrap().contains("HH:MM:SS"), "{a:?}");
    let t = text(&render_from(
        &Source::Recording("r".into()),
        Some(&playback(1, false, 1.0, None)),
        &a,
        &fixture(),
        80,
        24,
    ));
    assert!(t.lines().last().unwrap().contains("time \"yesterday\""), "{t}");
    // Keys for the player pass through as they are; the next one clears the error.
    let mut a = typed("yesterday");
    a.update(Action::Time(Control::Skip(-60)), 3, &latest);
    assert_eq!((a.control, a.time_error), (Some(Control::Skip(-60)), None));
    // A filter typed after a time is a filter again.
    let mut a = typed("07:30");
    for act in [vec![Action::StartFilter], typing("port 9"), vec![Action::FilterApply]].concat() {
        a.update(act, 3, &latest);
    }
    assert_eq!(a.filter_text, "port 9", "{a:?}");
    assert_eq!(a.filter, Expr::parse("port 9").unwrap());
}

/// The BBR-vs-CUBIC view has the response times per cc and size, and none under a filter (they
/// are kept per cc and peer group, not per socket).
#[test]
fn compare_view_has_the_response_times() {
    let t = text(&render(&app_with(|a| a.view = View::Compare), &fixture(), 200, 40));
    let line =
        |cc: &str, size: &str| t.lines().find(|l| l.contains(cc) && l.contains(size)).map(str::to_string);
    let bbr = line("bbr", "<=15kB").unwrap_or_else(|| panic!("{t}"));
    assert!(bbr.contains("100") && bbr.contains("ms"), "{bbr}");
    assert!(line("cubic", "15-200kB").is_some(), "{t}");
    let t = text(&render(&filtered(View::Compare, "sport 40003"), &fixture(), 200, 40));
    assert!(!t.contains("<=15kB"), "{t}");
}

/// The BBR-vs-CUBIC view says which sockets its figures leave out, per cc.
#[test]
fn compare_view_names_the_sockets_left_out() {
    let mut snap = fixture();
    snap.by_cc[0].receivers = 2;
    snap.by_cc[0].loopback = 3;
    snap.by_cc[1].idle = 1;
    let t = text(&render(&app_with(|a| a.view = View::Compare), &snap, 200, 40));
    let want = "left out of the figures (they sent nothing, or are loopback): bbr 2 receiving, 3 loopback; cubic 1 idle";
    assert!(t.contains(want), "{t}");
    assert!(!text(&render(&app_with(|a| a.view = View::Compare), &fixture(), 200, 40)).contains("left out"));
}

fn filtered(view: View, words: &str) -> App {
    app_with(|a| {
        a.view = view;
        a.filter = Expr::parse(words).unwrap();
        a.filter_text = words.into();
    })
}

/// What a screen shows under the views' tabs (the header counts every socket, by design).
fn body(t: &str) -> String {
    t.lines().skip_while(|l| !l.contains("1 Sockets")).skip(1).collect::<Vec<_>>().join("\n")
}

/// `cc bbr` hides CUBIC in every view of sockets: the table, the per-cc figures (made again from the
/// sockets it matches), the alerts, the closed flows and Where.
#[test]
fn every_view_follows_the_filter() {
    let snap = fixture();
    // The experiment's view shows its arms, which are no sockets the filter narrows.
    for view in View::ALL.into_iter().filter(|v| *v != View::Experiment) {
        let all = text(&render(&app_with(|a| a.view = view), &snap, 120, 40));
        assert!(body(&all).contains("cubic"), "{view:?} unfiltered shows CUBIC:\n{all}");
        let t = text(&render(&filtered(view, "cc bbr"), &snap, 120, 40));
        assert!(!body(&t).contains("cubic"), "{view:?} under cc bbr:\n{t}");
        assert!(t.lines().last().unwrap().starts_with("filter: cc bbr"), "{t}");
        insta::assert_snapshot!(format!("filtered_{view:?}_120x40").to_lowercase(), t);
    }
    // The per-cc figures are the filter's sockets': the CUBIC socket on 40003 alone, and the
    // last minute's counters, which count every socket, left out and said to be.
    let t = text(&render(&filtered(View::Compare, "sport 40003"), &snap, 120, 40));
    let row = t.lines().find(|l| l.starts_with("cubic")).expect(&t);
    assert!(row.contains("45.0ms") && !row.contains("180.0ms") && !t.contains("GOODPUT"), "{t}");
    assert!(t.contains("filtered: 1 of 3 sockets") && t.contains("left out"), "{t}");
    // An alert is its socket's while the socket is there, and its own (cc, ends, last srtt) after.
    let alerts = |words: &str| {
        let t = body(&text(&render(&filtered(View::Alerts, words), &snap, 120, 40)));
        (t.contains("10.77.1.1:40002"), t.contains("10.77.1.1:40004"))
    };
    assert_eq!(alerts("cc cubic"), (true, true));
    assert_eq!(alerts("state established"), (true, false), "a gone socket's state is unknown");
    assert_eq!(alerts("sport 40004"), (false, true));
    assert_eq!(alerts("srtt > 100ms"), (true, true));
    assert_eq!(alerts("not lo and cc bbr"), (false, false));
    // Closed flows: the words that make sense of one (its cc, ends, final values).
    let closed = |words: &str| {
        let t = body(&text(&render(&filtered(View::Closed, words), &snap, 120, 40)));
        ["41007", "41006"].map(|p| t.contains(p))
    };
    assert_eq!(closed("cc cubic"), [false, true]);
    assert_eq!(closed("inflation > 5x"), [false, true]);
    assert_eq!(closed("sending"), [false, false]);
    assert!(
        body(&text(&render(&filtered(View::Closed, "sending"), &snap, 120, 40)))
            .contains("No closed flow matches the filter")
    );
    // Where: the filter's sockets by place.
    let t = body(&text(&render(&filtered(View::Places, "lo"), &snap, 120, 40)));
    assert!(t.contains("No socket matches the filter"), "{t}");
}

/// The issue's reports, typed at the prompt: `not` inverts, a comparison compares, `src` is the
/// local address, and an unknown word is an error shown in place, the filter in force kept.
#[test]
fn typed_filters_say_what_they_did() {
    let latest = Arc::new(fixture());
    let apply = |app: &mut App, words: &str| {
        let keys = [vec![Action::StartFilter, Action::Edit(Edit::DeleteFromStart)], typing(words)];
        for act in keys.concat().into_iter().chain([Action::FilterApply]) {
            app.update(act, 3, &latest);
        }
    };
    let ports = |a: &App| a.rows(&latest).iter().map(|s| s.record.local.port()).collect::<Vec<_>>();
    let mut app = App::default();
    apply(&mut app, "not cc bbr");
    assert_eq!(ports(&app), [40002, 40003]);
    apply(&mut app, "srtt > 100ms");
    assert_eq!(ports(&app), [40002]);
    apply(&mut app, "src 10.77.1.1");
    assert_eq!(ports(&app), [40002, 40003, 40001]);
    apply(&mut app, "cc bbr");
    for bad in ["srtt > 100", "bogus", "(cc cubic", "port"] {
        apply(&mut app, bad);
        assert_eq!(ports(&app), [40001], "{bad:?}: the filter in force stays");
        let t = text(&render(&app, &latest, 120, 40));
        let foot = t.lines().last().unwrap();
        let err = Expr::parse(bad).unwrap_err().to_string();
        assert!(foot.starts_with(&format!("filter {bad:?}: {}", &err[..20])), "{foot}");
        assert!(t.contains("sockets (1)"), "{t}");
    }
    let t = text(&render(&app, &latest, 120, 40));
    insta::assert_snapshot!("filter_error_in_place_120x40", t);
    // `/` opens what was typed, to be mended.
    app.update(Action::StartFilter, 1, &latest);
    assert_eq!(app.editing.as_ref().map(|e| e.value()), Some("port"));
    for act in typing(" 5201").into_iter().chain([Action::FilterApply]) {
        app.update(act, 1, &latest);
    }
    assert_eq!((ports(&app).len(), app.filter_error.as_ref()), (3, None));
}

/// The prompt edits as a shell's line does, through the keymap's keys, and shows its cursor.
#[test]
fn the_prompt_edits_a_line() {
    let latest = Arc::new(fixture());
    let mut app = App::default();
    let press = |app: &mut App, code: KeyCode, m: KeyModifiers| {
        assert!(press(app, code, m, false, &latest), "{code:?} is a key of the prompt");
    };
    let ctrl = KeyModifiers::CONTROL;
    let none = KeyModifiers::NONE;
    let line = |app: &App| app.editing.as_ref().map(|e| (e.value().to_string(), e.cursor()));
    press(&mut app, KeyCode::Char('/'), none);
    for c in "cc bbr port 22".chars() {
        press(&mut app, KeyCode::Char(c), none);
    }
    assert_eq!(line(&app), Some(("cc bbr port 22".into(), 14)));
    // (key, the line and cursor after it)
    let steps: &[(KeyCode, KeyModifiers, &str, usize)] = &[
        (KeyCode::Char('w'), ctrl, "cc bbr port ", 12),
        (KeyCode::Char('w'), ctrl, "cc bbr ", 7),
        (KeyCode::Char('a'), ctrl, "cc bbr ", 0),
        (KeyCode::Right, none, "cc bbr ", 1),
        (KeyCode::Right, none, "cc bbr ", 2),
        (KeyCode::Right, none, "cc bbr ", 3),
        (KeyCode::Char('k'), ctrl, "cc ", 3),
        (KeyCode::Char('x'), none, "cc x", 4),
        (KeyCode::Left, none, "cc x", 3),
        (KeyCode::Home, none, "cc x", 0),
        (KeyCode::Delete, none, "c x", 0),
        (KeyCode::End, none, "c x", 3),
        (KeyCode::Backspace, none, "c ", 2),
        (KeyCode::Char('e'), ctrl, "c ", 2),
        (KeyCode::Left, none, "c ", 1),
        (KeyCode::Char('u'), ctrl, " ", 0),
        (KeyCode::Char('c'), none, "c ", 1),
    ];
    for &(code, m, want, at) in steps {
        press(&mut app, code, m);
        assert_eq!(line(&app), Some((want.to_string(), at)), "after {m:?} {code:?}");
    }
    // The cursor in the middle is the character under it in reverse video; at the end, a block.
    let foot = |app: &App| text(&render(app, &latest, 80, 24)).lines().last().unwrap().to_string();
    let b = render(&app, &latest, 80, 24);
    assert_eq!(text(&b).lines().last().unwrap(), "/c");
    assert!(b[(2, 23)].modifier.contains(Modifier::REVERSED) && b[(2, 23)].symbol() == " ");
    assert!(!b[(1, 23)].modifier.contains(Modifier::REVERSED));
    press(&mut app, KeyCode::End, none);
    assert_eq!(foot(&app), "/c █");
    // A line longer than the screen scrolls to keep the cursor in view.
    for c in "port 5201 or ".repeat(8).chars() {
        press(&mut app, KeyCode::Char(c), none);
    }
    let f = foot(&app);
    assert!(f.chars().count() <= 80 && f.ends_with("or █") && f.starts_with('/'), "{f:?}");
    press(&mut app, KeyCode::Char('u'), ctrl);
    assert_eq!(line(&app), Some((String::new(), 0)));
    press(&mut app, KeyCode::Esc, none);
    assert!(app.editing.is_none() && app.filter_text.is_empty());
}

/// A key as the loop hands it over: through the keymap, in the mode the app is in, to `update`;
/// whether the key meant an action.
fn press(app: &mut App, code: KeyCode, m: KeyModifiers, replay: bool, latest: &Arc<Snapshot>) -> bool {
    let Some(act) = super::keymap::action(app.mode(), KeyEvent::new(code, m), replay) else {
        return false;
    };
    let rows = app.rows(latest).len();
    app.update(act, rows, latest);
    true
}

const NONE: KeyModifiers = KeyModifiers::NONE;

/// Help opened by `?` over the Compare view and a filter: what Esc, `q` and the commands' keys
/// would end or change if help let them through.
fn in_help(replay: bool, latest: &Arc<Snapshot>) -> App {
    let mut app = app_with(|a| {
        a.view = View::Compare;
        a.filter = Expr::parse("cc cubic").unwrap();
        a.filter_text = "cc cubic".into();
    });
    assert!(press(&mut app, KeyCode::Char('?'), NONE, replay, latest));
    assert!(app.help, "? opens help");
    app
}

#[test]
fn esc_closes_help_and_only_that() {
    let latest = Arc::new(fixture());
    for replay in [false, true] {
        let mut app = in_help(replay, &latest);
        press(&mut app, KeyCode::Esc, NONE, replay, &latest);
        assert!(!app.help && !app.quit, "replay {replay}: {app:?}");
        assert_eq!(app.filter_text, "cc cubic", "Esc closed help and did not clear the filter too");
        // With help closed, Esc clears the filter as ever.
        press(&mut app, KeyCode::Esc, NONE, replay, &latest);
        assert!(app.filter_text.is_empty() && !app.filtered(), "{app:?}");
    }
}

#[test]
fn q_in_help_closes_it_and_does_not_quit() {
    let latest = Arc::new(fixture());
    for replay in [false, true] {
        let mut app = in_help(replay, &latest);
        press(&mut app, KeyCode::Char('q'), NONE, replay, &latest);
        assert!(!app.help && !app.quit, "replay {replay}: {app:?}");
        // The next q, help closed, quits.
        press(&mut app, KeyCode::Char('q'), NONE, replay, &latest);
        assert!(app.quit);
    }
    // The keys that open help close it too.
    for (code, m) in
        [(KeyCode::Char('?'), KeyModifiers::SHIFT), (KeyCode::Char('h'), NONE), (KeyCode::F(1), NONE)]
    {
        let mut app = in_help(false, &latest);
        press(&mut app, code, m, false, &latest);
        assert!(!app.help && !app.quit, "{code:?}: {app:?}");
    }
}

#[test]
fn keys_in_help_leave_the_view_behind_it_unchanged() {
    let latest = Arc::new(fixture());
    let shift = KeyModifiers::SHIFT;
    // Views, sorts, moves, columns, the filter, freeze, detail, and a replay's time controls.
    let keys = [
        (KeyCode::Char('1'), NONE),
        (KeyCode::Char('3'), NONE),
        (KeyCode::Tab, NONE),
        (KeyCode::Char('s'), NONE),
        (KeyCode::Char('S'), shift),
        (KeyCode::Char('r'), NONE),
        (KeyCode::Char('j'), NONE),
        (KeyCode::Down, NONE),
        (KeyCode::End, NONE),
        (KeyCode::PageDown, NONE),
        (KeyCode::Right, NONE),
        (KeyCode::Char('/'), NONE),
        (KeyCode::Char('c'), NONE),
        (KeyCode::Char('f'), NONE),
        (KeyCode::Enter, NONE),
        (KeyCode::Char(' '), NONE),
        (KeyCode::Char('.'), NONE),
        (KeyCode::Char(']'), NONE),
        (KeyCode::Char('g'), NONE),
        (KeyCode::Char('n'), NONE),
        (KeyCode::Char('+'), NONE),
        (KeyCode::Char('Q'), shift),
    ];
    for replay in [false, true] {
        let mut app = in_help(replay, &latest);
        let (before, screen) = (format!("{app:?}"), text(&render(&app, &latest, 120, 40)));
        for (code, m) in keys {
            press(&mut app, code, m, replay, &latest);
            assert_eq!(format!("{app:?}"), before, "replay {replay}: {code:?} changed the app");
        }
        assert_eq!(text(&render(&app, &latest, 120, 40)), screen, "replay {replay}");
        assert!(app.help && app.view == View::Compare && app.sort == &columns::INFLATION && app.descending);
        assert!(app.editing.is_none() && app.control.is_none() && app.frozen.is_none() && !app.detail);
    }
}

#[test]
fn ctrl_c_in_help_still_quits() {
    let latest = Arc::new(fixture());
    for replay in [false, true] {
        let mut app = in_help(replay, &latest);
        press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL, replay, &latest);
        assert!(app.quit, "replay {replay}: {app:?}");
    }
}

/// The keys that close help are on its bottom border, which stays on screen when the help is
/// longer than the terminal (a replay's, at 80x24).
#[test]
fn the_help_says_what_closes_it() {
    let snap = fixture();
    let rec = Source::Recording("/var/lib/bbrtop/rec".into());
    let status = playback(120, true, 1.0, None);
    for playback in [None, Some(&status)] {
        for (w, h) in [(120, 40), (80, 24)] {
            let t = text(&render_from(&rec, playback, &app_with(|a| a.help = true), &snap, w, h));
            let border =
                t.lines().find(|l| l.contains('└')).unwrap_or_else(|| panic!("no bottom border:\n{t}"));
            assert!(border.contains(" Esc q ? h F1 close this help, Ctrl-c quit ┘"), "{w}x{h}:\n{t}");
        }
    }
}
