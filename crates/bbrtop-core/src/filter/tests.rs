//! The filter language's table tests: every word, operator, precedence rule, unit and error
//! message, on two sockets that differ in every word, and on closed flows and alerts.

use super::*;
use crate::columns::{self, Unit};
use crate::model::derive::Rates;
use crate::model::{ClosedBbr, ClosedFlow, Count, Origin, Pod, Tally};
use crate::snapshot::{AlertStatus, AlertView, Derived, HistoryView, RecordRef, SocketView};
use crate::testing::record;
use std::sync::Arc;
use std::time::SystemTime;

/// A BBR sender in a pod: 10.77.1.1:40001 to 10.77.2.2:5201, srtt 150 ms over a 20 ms baseline,
/// 2% retransmitted, delivering 10 Mbit/s.
fn sender() -> SocketView {
    let mut r = record(1, "bbr")
        .local("10.77.1.1:40001")
        .peer("10.77.2.2:5201")
        .netns(4026532000)
        .srtt_us(150_000)
        .min_rtt_us(20_000)
        .snd_cwnd_segs(40)
        .total_retrans_segs(3)
        .bytes_sent(1_000_000)
        .bytes_retrans(20_000)
        .pacing_rate_bytes_per_sec(2_500_000)
        .delivery_rate_bytes_per_sec(1_250_000)
        .bbr(2_450_000, 20_000, 1.25, 2.0)
        .build();
    let pod = Pod {
        uid: "0f5b1c2e-6a7d".into(),
        namespace: Some("shop".into()),
        name: Some("frontend-1".into()),
        ..Pod::default()
    };
    let origin = Origin {
        netns_name: Some("blue".into()),
        cgroup: Some("/kubepods/pod0f5b/abc".into()),
        pod: Some(pod),
    };
    r.origin = Some(Arc::new(origin));
    let derived = Derived {
        baseline_rtt_us: Some(20_000),
        inflation_ratio: Some(7.5),
        retrans_ratio: r.tcp_info.retrans_ratio(),
        rates: Rates { goodput_bytes_per_sec: Some(1e6), ..Rates::default() },
        ..Derived::default()
    };
    SocketView { record: RecordRef::single(r), derived, history: HistoryView::none() }
}

/// A CUBIC loopback receiver of a dual-stack listener (its addresses IPv4-mapped), in
/// CLOSE-WAIT, with no origin and no retransmit ratio, inflation or delivery rate.
fn receiver() -> SocketView {
    let mut r = record(2, "cubic")
        .local("[::ffff:127.0.0.1]:5201")
        .peer("[::ffff:127.0.0.1]:40002")
        .srtt_us(50)
        .snd_cwnd_segs(10)
        .build();
    r.state = TcpState::CloseWait;
    let derived = Derived {
        rates: Rates {
            goodput_bytes_per_sec: Some(0.0),
            recv_bytes_per_sec: Some(5000.0),
            ..Rates::default()
        },
        ..Derived::default()
    };
    SocketView { record: RecordRef::single(r), derived, history: HistoryView::none() }
}

/// (expression, matches the sender, matches the receiver).
const WORDS: &[(&str, bool, bool)] = &[
    ("", true, true),
    ("   ", true, true),
    // cc
    ("cc bbr", true, false),
    ("cc BBR", true, false),
    ("CC bbr", true, false),
    ("cc = cubic", false, true),
    ("cc == cubic", false, true),
    ("cc != bbr", false, true),
    ("cc ne bbr", false, true),
    ("cc reno", false, false),
    // port: either end
    ("port 5201", true, true),
    ("port 40001", true, false),
    ("port :5201", true, true),
    ("port = 40002", false, true),
    ("port != 5201", false, false),
    ("port != 40002", true, false),
    ("port > 40001", false, true),
    // sport: the local end, dport: the peer's, as ss has them
    ("sport 40001", true, false),
    ("sport 5201", false, true),
    ("dport 5201", true, false),
    ("dport = :5201", true, false),
    ("dport == 5201", true, false),
    ("dport eq 5201", true, false),
    ("dport != 5201", false, true),
    ("dport ne 5201", false, true),
    ("dport neq 5201", false, true),
    ("sport >= 1024", true, true),
    ("sport ge 5202", true, false),
    ("sport > 40000", true, false),
    ("sport gt 40000", true, false),
    ("sport < 5201", false, false),
    ("sport lt 5202", false, true),
    ("sport <= 5201", false, true),
    ("sport le 5200", false, false),
    ("dport >= 40002", false, true),
    // src: the local address, dst and peer the peer's; a bare address is the peer's
    ("src 10.77.1.1", true, false),
    ("src 10.77.0.0/16", true, false),
    ("src = 10.77.1.1", true, false),
    ("src != 10.77.1.1", false, true),
    ("src 127.0.0.1", false, true),
    ("src ::ffff:127.0.0.1", false, true),
    ("dst 10.77.2.2", true, false),
    ("dst 10.77.2.0/24", true, false),
    ("dst 127.0.0.0/8", false, true),
    ("peer 10.77.2.2", true, false),
    ("peer 10.77.2.2/32", true, false),
    ("10.77.2.0/24", true, false),
    ("10.77.1.1", false, false),
    ("127.0.0.1", false, true),
    ("2001:db8::/32", false, false),
    // state
    ("state established", true, false),
    ("state ESTAB", true, false),
    ("state close-wait", false, true),
    ("state close_wait", false, true),
    ("state != established", false, true),
    // where it lives
    ("netns blue", true, false),
    ("netns 4026532000", true, false),
    ("netns red", false, false),
    ("netns != blue", false, true),
    ("pod shop/frontend", true, false),
    ("pod 0f5b1c2e", true, false),
    ("pod kube-system/", false, false),
    ("cgroup kubepods", true, false),
    ("cgroup system.slice", false, false),
    // lo, sending
    ("lo", false, true),
    ("LO", false, true),
    ("not lo", true, false),
    ("sending", true, false),
    ("!sending", false, true),
    // values, in their columns' units
    ("srtt > 100ms", true, false),
    ("srtt>100ms", true, false),
    ("srtt < 1ms", false, true),
    ("srtt = 150ms", true, false),
    ("srtt == 0.15s", true, false),
    ("srtt >= 150000us", true, false),
    ("srtt <= 50us", false, true),
    ("srtt != 150ms", false, true),
    ("srtt gt 100ms", true, false),
    ("min_rtt < 30ms", true, false),
    ("base_rtt = 20ms", true, false),
    ("bbr_min_rtt = 20ms", true, false),
    ("inflation > 2x", true, false),
    ("inflation > 7", true, false),
    ("inflation >= 7.5X", true, false),
    ("retx > 1%", true, false),
    ("retx = 2%", true, false),
    ("retx < 1%", false, false),
    ("cwnd >= 40", true, false),
    ("cwnd < 40", false, true),
    ("retrans = 3", true, false),
    ("delivery >= 10Mbit/s", true, false),
    ("delivery = 10000kbit", true, false),
    ("delivery < 10Mbit/s", false, false),
    ("pacing > 19Mbps", true, false),
    ("pacing < 0.1Gbit", true, false),
    ("bbr_bw > 1Mbit", true, false),
    ("pacing_gain > 1", true, false),
    ("cwnd_gain = 2", true, false),
    ("gains >= 1.25", true, false),
    // and: a word, a symbol, or two words side by side
    ("cc bbr and port 5201", true, false),
    ("cc bbr && sport 40001", true, false),
    ("cc bbr & sending", true, false),
    ("cc bbr AND sending", true, false),
    ("cc bbr port 5201", true, false),
    ("cc bbr lo", false, false),
    // or
    ("cc bbr or lo", true, true),
    ("cc bbr || lo", true, true),
    ("cc bbr | lo", true, true),
    ("cc reno OR cc bbr", true, false),
    // not: a word or a symbol, and twice
    ("not cc bbr", false, true),
    ("NOT cc bbr", false, true),
    ("!cc bbr", false, true),
    ("! ! cc bbr", true, false),
    ("not not lo", false, true),
    // precedence: not over and over or; parentheses group
    ("cc cubic or lo and cc bbr", false, true),
    ("(cc cubic or lo) and cc bbr", false, false),
    ("not cc bbr or lo", false, true),
    ("not (cc bbr or lo)", false, false),
    ("not cc cubic and lo", false, false),
    ("not (cc cubic and lo)", true, false),
    ("cc bbr sending or lo srtt < 1ms", true, true),
    ("((lo))", false, true),
    ("!(cc bbr)", false, true),
    // an unknown value is neither true nor false: not shown, with or without not
    ("not retx < 1%", true, false),
    ("not delivery < 10Mbit/s", true, false),
    ("retx < 1% or lo", false, true),
    ("retx < 1% and lo", false, false),
    ("not (retx < 1% and lo)", true, false),
];

#[test]
fn every_word_and_operator() {
    let (s, r) = (sender(), receiver());
    for &(text, want_s, want_r) in WORDS {
        let e = Expr::parse(text).unwrap_or_else(|err| panic!("{text:?}: {err}"));
        assert_eq!((e.matches(&s), e.matches(&r)), (want_s, want_r), "{text:?} parsed as {e:?}");
    }
}

/// Each number of the catalog compares in its own unit: `full_view` knows every one, and its
/// value, typed back in the unit, is equal to it and not above it.
#[test]
fn every_catalog_number_compares() {
    let v = crate::testing::full_view();
    let mut compared = 0;
    for c in columns::ALL {
        // `cc`, `state`, `peer` and `process` are words of their own.
        if matches!(c.key, "cc" | "state" | "peer" | "process") {
            continue;
        }
        if matches!(c.unit, Unit::Text | Unit::Addr) {
            assert_eq!(
                Expr::parse(&format!("{} = 1", c.key)),
                Err(FilterError::NotANumber(c.key.into())),
                "{}",
                c.key
            );
            continue;
        }
        let n = v.value(c).unwrap_or_else(|| panic!("{}: full_view has no value", c.key));
        let typed = match c.unit {
            Unit::Micros => format!("{n}us"),
            Unit::BytesPerSec => format!("{}bit/s", n * 8.0),
            Unit::Share => format!("{}%", n * 100.0),
            Unit::Ratio => format!("{n}x"),
            _ => format!("{n}"),
        };
        let m = |op: &str| Expr::parse(&format!("{} {op} {typed}", c.key)).unwrap().matches(&v);
        assert!(m("=") && m(">=") && m("<=") && !m(">") && !m("<") && !m("!="), "{} = {typed}", c.key);
        compared += 1;
    }
    assert!(compared >= 15, "{compared} numbers compared");
}

#[test]
fn units() {
    // (key, typed, the value in the column's unit)
    let cases: &[(&str, &str, f64)] = &[
        ("srtt", "500us", 500.0),
        ("srtt", "500µs", 500.0),
        ("srtt", "100ms", 100_000.0),
        ("srtt", "100MS", 100_000.0),
        ("srtt", "1.5s", 1_500_000.0),
        ("srtt", ".5s", 500_000.0),
        ("delivery", "10Mbit/s", 1_250_000.0),
        ("delivery", "10mbit", 1_250_000.0),
        ("delivery", "10Mbps", 1_250_000.0),
        ("delivery", "1Gbit", 125_000_000.0),
        ("delivery", "1gbps", 125_000_000.0),
        ("delivery", "500kbit", 62_500.0),
        ("delivery", "500Kbit/s", 62_500.0),
        ("delivery", "8bit", 1.0),
        ("delivery", "8bps", 1.0),
        ("delivery", "1Tbit/s", 125_000_000_000.0),
        ("retx", "1%", 0.01),
        ("retx", "0.5%", 0.005),
        ("inflation", "2x", 2.0),
        ("inflation", "2X", 2.0),
        ("inflation", "1.5", 1.5),
        ("cwnd", "10", 10.0),
        ("pacing_gain", "1.25", 1.25),
    ];
    for &(key, typed, want) in cases {
        let c = columns::by_key(key).unwrap();
        let got = values::parse_value(c, typed).unwrap_or_else(|e| panic!("{key} {typed}: {e}"));
        assert!((got - want).abs() <= want * 1e-12, "{key} {typed}: {got} != {want}");
    }
}

/// Every error, with the one line it says.
#[test]
fn every_error_message() {
    let cases: &[(&str, &str)] = &[
        (
            "bbr",
            "unknown word \"bbr\" (expected cc NAME, port N, sport/dport N, src/dst ADDR, state S, netns, pod, cgroup, process, lo, sending, an address, or a value such as srtt > 100ms)",
        ),
        (
            "rtt > 100ms",
            "unknown word \"rtt\" (expected cc NAME, port N, sport/dport N, src/dst ADDR, state S, netns, pod, cgroup, process, lo, sending, an address, or a value such as srtt > 100ms)",
        ),
        (
            "443",
            "\"443\" alone means nothing: a port is \"port 443\" (either end), \"sport 443\" or \"dport 443\"",
        ),
        ("established", "\"established\" alone means nothing: a state is \"state established\""),
        ("cc", "\"cc\" needs a value: cc NAME"),
        ("cc =", "\"cc\" needs a value: cc NAME"),
        ("cc bbr and cc", "\"cc\" needs a value: cc NAME"),
        ("port", "\"port\" needs a value: port N (443, or :443 as ss writes it)"),
        ("sport >=", "\"sport\" needs a value: sport N (443, or :443 as ss writes it)"),
        ("dport (", "\"dport\" needs a value: dport N (443, or :443 as ss writes it)"),
        ("src", "\"src\" needs a value: src ADDR[/LEN]"),
        ("dst", "\"dst\" needs a value: dst ADDR[/LEN]"),
        ("peer", "\"peer\" needs a value: peer ADDR[/LEN]"),
        ("state", "\"state\" needs a value: state STATE (established, syn-sent, listen, ...)"),
        ("netns", "\"netns\" needs a value: netns NAME|INODE"),
        ("pod", "\"pod\" needs a value: pod NAMESPACE/NAME|UID (a part will do)"),
        ("cgroup", "\"cgroup\" needs a value: cgroup PART (of the cgroup's path)"),
        ("srtt >", "\"srtt >\" needs a value: srtt > VALUE"),
        ("10.0.0.0/33", "invalid CIDR or address \"10.0.0.0/33\""),
        ("src 10.0.0.300", "invalid CIDR or address \"10.0.0.300\""),
        ("dst 10.0.0.1:80", "invalid CIDR or address \"10.0.0.1:80\""),
        ("port 0", "invalid port \"0\" (expected 1-65535)"),
        ("port 70000", "invalid port \"70000\" (expected 1-65535)"),
        ("sport x", "invalid port \"x\" (expected 1-65535)"),
        ("dport = :", "invalid port \":\" (expected 1-65535)"),
        (
            "state nope",
            "unknown TCP state \"nope\" (try established, syn-sent, syn-recv, fin-wait-1, fin-wait-2, time-wait, close-wait, last-ack, listen, closing)",
        ),
        ("srtt", "\"srtt\" needs a comparison: srtt > VALUE, e.g. srtt > 100ms (operators: < <= > >= = !=)"),
        (
            "srtt 100ms",
            "\"srtt\" needs a comparison: srtt > VALUE, e.g. srtt > 100ms (operators: < <= > >= = !=)",
        ),
        (
            "phase = startup",
            "\"phase\" is not a number to compare (numbers: srtt, min_rtt, base_rtt, inflation, retx, cwnd, delivery, pacing, bbr_bw, ...)",
        ),
        (
            "local 10.0.0.1",
            "\"local\" is not a number to compare (numbers: srtt, min_rtt, base_rtt, inflation, retx, cwnd, delivery, pacing, bbr_bw, ...)",
        ),
        ("srtt > 100", "srtt \"100\": expected a time such as 100ms, 1.5s or 500us"),
        ("srtt > 100mb", "srtt \"100mb\": expected a time such as 100ms, 1.5s or 500us"),
        ("srtt > fast", "srtt \"fast\": expected a time such as 100ms, 1.5s or 500us"),
        ("srtt > .", "srtt \".\": expected a time such as 100ms, 1.5s or 500us"),
        (
            &*format!("cwnd > {}", "9".repeat(400)),
            &*format!("cwnd {:?}: expected a number such as 10", "9".repeat(400)),
        ),
        (
            "delivery > 10",
            "delivery \"10\": expected a bit rate such as 10Mbit/s, 1Gbit or 500kbit (or 10Mbps as ss writes it)",
        ),
        (
            "delivery > 10MB/s",
            "delivery \"10MB/s\": expected a bit rate such as 10Mbit/s, 1Gbit or 500kbit (or 10Mbps as ss writes it)",
        ),
        ("retx > 1", "retx \"1\": expected a percentage such as 1% or 0.5%"),
        ("inflation > 2%", "inflation \"2%\": expected a ratio such as 2x or 1.5"),
        ("cwnd > 10ms", "cwnd \"10ms\": expected a number such as 10"),
        ("pacing_gain > 1x", "pacing_gain \"1x\": expected a number such as 1.25"),
        ("cc < bbr", "\"<\" does not go with \"cc\" (only = and !=)"),
        ("src >= 10.0.0.1", "\">=\" does not go with \"src\" (only = and !=)"),
        ("state gt listen", "\"gt\" does not go with \"state\" (only = and !=)"),
        ("and cc bbr", "\"and\" needs a word on each side"),
        ("cc bbr and", "\"and\" needs a word on each side"),
        ("cc bbr &&", "\"&&\" needs a word on each side"),
        ("cc bbr or", "\"or\" needs a word on each side"),
        ("|| lo", "\"||\" needs a word on each side"),
        ("cc bbr && || lo", "\"&&\" needs a word on each side"),
        ("lo or and lo", "\"or\" needs a word on each side"),
        ("> 5", "\">\" needs a word on each side"),
        ("not", "\"not\" needs a word after it"),
        ("cc bbr !", "\"not\" needs a word after it"),
        ("(not)", "\"not\" needs a word after it"),
        ("(cc bbr", "unbalanced \"(\": no \")\" closes it"),
        ("(", "unbalanced \"(\": no \")\" closes it"),
        ("((lo)", "unbalanced \"(\": no \")\" closes it"),
        ("cc bbr)", "unbalanced \")\": no \"(\" opens it"),
        (")", "unbalanced \")\": no \"(\" opens it"),
        ("lo) (lo", "unbalanced \")\": no \"(\" opens it"),
        ("()", "\"()\" holds nothing"),
        ("lo and ()", "\"()\" holds nothing"),
    ];
    for &(text, want) in cases {
        let err = Expr::parse(text).expect_err(text);
        assert_eq!(err.to_string(), want, "{text:?}");
        assert!(!want.contains('\n'));
    }
    // Nesting is bounded: a pasted line of parentheses is an error, not an overflowed stack.
    let deep = |n: usize| format!("{}lo{}", "(".repeat(n), ")".repeat(n));
    assert!(Expr::parse(&deep(parser::MAX_DEPTH)).unwrap().matches(&receiver()));
    let too_deep = "more than 64 nots and parentheses nested";
    assert_eq!(Expr::parse(&deep(parser::MAX_DEPTH + 1)).unwrap_err().to_string(), too_deep);
    assert_eq!(Expr::parse(&deep(100_000)).unwrap_err().to_string(), too_deep);
    assert_eq!(Expr::parse(&format!("{}lo", "!".repeat(100_000))).unwrap_err().to_string(), too_deep);
    assert!(Expr::parse(&format!("{}lo", "not ".repeat(64))).unwrap().matches(&receiver()));
}

/// `--filter` decides which sockets are tracked: it takes every word about the record, and
/// refuses those whose truth changes from poll to poll, saying why.
#[test]
fn tracked_words() {
    let all = "cc bbr and (dport = 5201 or src 10.0.0.0/8) and not lo and netns blue and state established \
               or pod shop/ or cgroup kubepods or 10.77.2.2 or sport >= 1024 or port 443 or dst ::1";
    let e = Expr::parse_tracked(all).unwrap();
    assert!(e.matches(&*sender().record));
    let refused = [
        ("sending", "sending"),
        ("srtt > 100ms", "srtt > 100ms"),
        ("cc bbr and not retx > 1%", "retx > 1%"),
        ("cwnd<10", "cwnd < 10"),
    ];
    for (text, said) in refused {
        let err = Expr::parse_tracked(text).expect_err(text);
        assert_eq!(err, FilterError::PerPoll(said.into()), "{text}");
        assert_eq!(
            err.to_string(),
            format!(
                "{said:?} changes from poll to poll, and --filter decides which sockets are tracked at all (one that left would lose its history and counters): use it in the TUI's / filter"
            )
        );
        assert!(Expr::parse(text).is_ok(), "the TUI takes {text:?}");
    }
    let err = Expr::parse_tracked("cc bbr and process nginx").expect_err("process");
    assert_eq!(err, FilterError::TuiOnly("process".into()));
    assert!(err.to_string().contains("known only to the TUI"), "{err}");
    // On a record alone (what the engine tracks), a word about a value is never true.
    let srtt = Expr::parse("srtt > 1us").unwrap();
    assert!(srtt.matches(&sender()) && !srtt.matches(&*sender().record));
}

/// The flags are words too: each flag's values OR-ed, the flags AND-ed; and which states the
/// kernel is asked for.
#[test]
fn flags_and_states() {
    let (s, r) = (sender(), receiver());
    let net: ipnet::IpNet = "10.77.2.0/24".parse().unwrap();
    let f = |cc: &[&str], ports: &[u16], peers: &[ipnet::IpNet], expr: &str| {
        let cc: Vec<String> = cc.iter().map(|c| c.to_string()).collect();
        let f = Filter::from_flags(
            &cc,
            ports,
            peers,
            &[TcpState::Established, TcpState::CloseWait],
            Expr::parse_tracked(expr).unwrap(),
        );
        (f.matches(&s.record), f.matches(&r.record))
    };
    assert_eq!(f(&[], &[], &[], ""), (true, true));
    assert_eq!(f(&["reno", "bbr"], &[], &[], ""), (true, false), "one flag's values are OR-ed");
    assert_eq!(f(&["bbr", "cubic"], &[40002, 22], &[], ""), (false, true));
    assert_eq!(f(&["bbr", "cubic"], &[5201], &[net], ""), (true, false), "the flags are AND-ed");
    assert_eq!(f(&[], &[5201], &[], "not lo"), (true, false), "and so is --filter");
    assert!(Filter::default().is_empty() && !Filter::parse_words("lo").unwrap().is_empty());
    // States: the default leaves out LISTEN and TIME-WAIT; --state, or a state word, decides.
    let listen = StateSet::default_filter();
    assert!(!listen.contains(TcpState::Listen));
    assert_eq!(Filter::default().state_set(), listen);
    assert_eq!(Filter::parse_words("cc bbr").unwrap().state_set(), listen);
    assert_eq!(Filter::parse_words("cc bbr or state listen").unwrap().state_set(), StateSet::all());
    assert_eq!(Filter::parse_words("not state time-wait").unwrap().state_set(), StateSet::all());
    let flagged =
        Filter::from_flags(&[], &[], &[], &[TcpState::Listen], Expr::parse_tracked("state listen").unwrap());
    assert_eq!(flagged.state_set(), StateSet::from_states(&[TcpState::Listen]));
    let mut r2 = (*r.record).clone();
    r2.state = TcpState::TimeWait;
    assert!(!Filter::parse_words("cc cubic").unwrap().matches(&r2), "TIME-WAIT is left out by default");
    assert!(Filter::parse_words("state time-wait").unwrap().matches(&r2));
}

/// A closed flow: its cc, ends, namespace inode, CLOSE state and final values; what is not known
/// of it (a pod, a namespace's name, a cwnd) matches neither way.
#[test]
fn closed_flows() {
    let mut c = ClosedFlow::example("bbr", 30_000, Some(1_250_000));
    c.counts =
        Tally::from_counts([(Count::BytesSent, 1000), (Count::BytesRetrans, 30), (Count::RetransSegs, 2)]);
    c.peak_inflation_ratio = 2.5;
    c.bbr = Some(ClosedBbr { mode: "probe_bw", min_rtt_us: 20_000, bw_bytes_per_sec: 2_500_000 });
    let cases: &[(&str, bool)] = &[
        ("cc bbr", true),
        ("cc cubic", false),
        ("src 10.0.0.1 sport 1 dst 10.0.0.2 dport 2", true),
        ("lo", false),
        ("state close", true),
        ("state established", false),
        ("netns 1", true),
        ("netns 2", false),
        ("netns blue", false),
        ("not netns blue", false),
        ("pod shop/", false),
        ("not cgroup kubepods", false),
        ("sending", false),
        ("not sending", true),
        ("process nginx", false),
        ("not process 1", false),
        ("srtt = 30ms", true),
        ("min_rtt > 0us", false),
        ("not min_rtt > 0us", false),
        ("delivery = 10Mbit/s", true),
        ("retrans = 2", true),
        ("retx = 3%", true),
        ("bbr_bw = 20Mbit/s", true),
        ("bbr_min_rtt = 20ms", true),
        ("inflation >= 2.5x", true),
        ("cwnd > 1", false),
        ("not cwnd > 1", false),
        ("cc bbr or cwnd > 1", true),
    ];
    check(&c, cases);
}

/// `process PID|NAME`: a subject that knows its owner (the TUI's, from /proc) matches by pid or
/// by a part of the command; one that does not is unknown, so neither the word nor its negation
/// matches.
#[test]
fn process_words() {
    struct Held(u32, &'static str);
    impl Subject for Held {
        fn ends(&self) -> (&str, std::net::SocketAddr, std::net::SocketAddr) {
            ("bbr", "10.0.0.1:443".parse().unwrap(), "10.0.0.2:5000".parse().unwrap())
        }
        fn state(&self) -> Option<TcpState> {
            None
        }
        fn place(&self, _: &crate::filter::Place) -> Option<bool> {
            None
        }
        fn sending(&self) -> Option<bool> {
            None
        }
        fn value(&self, _: &crate::columns::Column) -> Option<f64> {
            None
        }
        fn process(&self, p: &crate::filter::Process) -> Option<bool> {
            Some(p.is(self.0, self.1))
        }
    }
    let nginx = Held(812, "nginx");
    check(
        &nginx,
        &[
            ("process nginx", true),
            ("process ngin", true),
            ("process = 812", true),
            ("process != 812", false),
            ("process envoy", false),
            ("not process envoy and cc bbr", true),
        ],
    );
    check(&receiver(), &[("process nginx", false), ("not process nginx", false)]);
    assert_eq!(
        Expr::parse("process").unwrap_err().to_string(),
        "\"process\" needs a value: process PID|NAME (a part of the command will do)"
    );
}

/// Each (expression, whether it matches `s`).
fn check(s: &impl Subject, cases: &[(&str, bool)]) {
    for &(text, want) in cases {
        assert_eq!(Expr::parse(text).unwrap().matches(s), want, "{text:?}");
    }
}

/// An alert whose socket is gone: its cc, ends and last evaluation.
#[test]
fn alerts_of_gone_sockets() {
    let a = AlertView {
        cookie: 9,
        cc: "cubic".into(),
        local: "10.77.1.1:40002".parse().unwrap(),
        peer: "10.77.2.2:5201".parse().unwrap(),
        status: AlertStatus::Resolved,
        srtt_us: 180_000,
        baseline_rtt_us: 20_000,
        ratio: 9.0,
        peak_ratio: 11.5,
        since: SystemTime::UNIX_EPOCH,
        fired_at: SystemTime::UNIX_EPOCH,
        resolved_at: None,
    };
    let cases: &[(&str, bool)] = &[
        ("cc cubic", true),
        ("not cc bbr", true),
        ("sport 40002 and dst 10.77.2.0/24", true),
        ("lo", false),
        ("srtt > 100ms", true),
        ("base_rtt = 20ms", true),
        ("inflation > 8x", true),
        ("state established", false),
        ("not state established", false),
        ("netns blue", false),
        ("not netns blue", false),
        ("not sending", true),
        ("cwnd > 1", false),
        ("not cwnd > 1", false),
    ];
    check(&a, cases);
}

#[test]
fn the_tree_and_its_tokens() {
    use super::lexer::{Kind, tokens};
    let kinds: Vec<Kind> = tokens("!(srtt>=1ms||lo)&&x!=y").iter().map(|t| t.kind).collect();
    assert_eq!(
        kinds,
        [
            Kind::Not,
            Kind::Open,
            Kind::Word,
            Kind::Cmp(Cmp::Ge),
            Kind::Word,
            Kind::Or,
            Kind::Word,
            Kind::Close,
            Kind::And,
            Kind::Word,
            Kind::Cmp(Cmp::Ne),
            Kind::Word
        ]
    );
    let words: Vec<&str> = tokens(" pod shop/front  10.0.0.0/8 ::1 1.5s ").iter().map(|t| t.text).collect();
    assert_eq!(words, ["pod", "shop/front", "10.0.0.0/8", "::1", "1.5s"]);
    // Precedence, as a tree: not binds tightest, then and, then or.
    let lo = || Expr::Word(Word::Loopback);
    let cc = |c: &str| Expr::Word(Word::Cc(c.into()));
    assert_eq!(
        Expr::parse("not lo cc bbr or cc cubic").unwrap(),
        Expr::Or(vec![Expr::And(vec![Expr::Not(Box::new(lo())), cc("bbr")]), cc("cubic")])
    );
    assert_eq!(Expr::parse("").unwrap(), Expr::everything());
}

#[test]
fn place_words_match_the_origin() {
    let s = sender();
    let mut bare = (*s.record).clone();
    bare.origin = None;
    assert!(Expr::parse("netns blue").unwrap().matches(&*s.record));
    assert!(!Expr::parse("cgroup kubepods").unwrap().matches(&bare), "no origin, no match");
    assert!(Expr::parse("netns 4026532000").unwrap().matches(&bare), "the inode is the record's own");
}
