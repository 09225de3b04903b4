//! The catalog of per-socket values: each declared once, with its header, unit, width in the
//! TUI, how it sorts, and its names elsewhere (the JSON socket object, a recording's `sockets`
//! table, `ss -tin`, the per-socket metrics). The TUI table, `bbrtop snapshot`'s table and the
//! per-socket metrics are built from these declarations; the JSON document and the recording
//! carry every field of the record, and a test holds each name declared here to them.
//!
//! Two different minimum RTTs live here under distinct names: `base_rtt` (`BASE RTT`), the
//! baseline the alert measures inflation against, and `min_rtt` (`MIN RTT`), tcp_info's own
//! windowed minimum; BBR's is `bbr_min_rtt` (`BBR MRTT`).

// Every declaration ends with `..BASE`, even one that names every field, so that a field added
// to `Column` later has a default everywhere.
#![allow(clippy::needless_update)]

use crate::snapshot::SocketView;
use crate::units::{bitrate, micros, percent, ratio};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::net::SocketAddr;

/// How a value reads and converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// An address and port.
    Addr,
    /// Words (a state, a phase, a place).
    Text,
    /// A count (segments, retransmits, an inode).
    Count,
    /// Microseconds: shown as ms or s, exported in seconds.
    Micros,
    /// Bytes per second: shown as a bit rate, exported as is.
    BytesPerSec,
    /// srtt over a baseline: shown as `1.50x`.
    Ratio,
    /// A BBR gain: shown as `1.25`.
    Gain,
    /// BBR's pacing and cwnd gains together: `1.25/2.00` (sorted by the pacing gain).
    Gains,
    /// A fraction shown as a percentage.
    Share,
}

/// One socket's value of one column.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// The kernel did not say (or the value does not apply): shown as `-`, sorted last.
    Unknown,
    Addr(SocketAddr),
    Text(Cow<'a, str>),
    Num(f64),
    Pair(f64, f64),
}

/// A per-socket gauge the exporter writes for the top-K sockets (`--metrics.per-socket.top-k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub help: &'static str,
}

/// One per-socket value.
pub struct Column {
    /// Its word: the filter's and the docs' name for it.
    pub key: &'static str,
    /// The table header (`bbrtop snapshot` writes spaces as `_`, so each header is one word).
    pub header: &'static str,
    /// What it is, in a line.
    pub doc: &'static str,
    pub unit: Unit,
    /// Cells in the TUI's table, header included.
    pub width: u16,
    /// Its field in the JSON socket object, as a path (`tcp_info.srtt_us`).
    pub json: Option<&'static str>,
    /// Its column in a recording's `sockets` table.
    pub parquet: Option<&'static str>,
    /// What `ss -tin` calls it, where it shows it.
    pub ss: Option<&'static str>,
    pub metric: Option<Metric>,
    /// Shown in the TUI's socket table; when not every column fits, the lower numbers stay.
    pub tui: Option<u8>,
    /// Shown in `bbrtop snapshot`'s table.
    pub table: bool,
    value: for<'a> fn(&'a SocketView) -> Value<'a>,
}

impl PartialEq for Column {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl std::fmt::Debug for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key)
    }
}

impl Column {
    pub fn value<'a>(&self, s: &'a SocketView) -> Value<'a> {
        (self.value)(s)
    }

    /// The value as a table shows it; `-` when unknown.
    pub fn text(&self, s: &SocketView) -> String {
        match (self.value(s), self.unit) {
            (Value::Unknown, _) => "-".into(),
            (Value::Addr(a), _) => a.to_string(),
            (Value::Text(t), _) => t.into_owned(),
            (Value::Pair(p, c), _) => format!("{p:.2}/{c:.2}"),
            (Value::Num(v), Unit::Micros) => micros(v as u32),
            (Value::Num(v), Unit::BytesPerSec) => bitrate(v),
            (Value::Num(v), Unit::Ratio) => ratio(v),
            (Value::Num(v), Unit::Gain | Unit::Gains) => format!("{v:.2}"),
            (Value::Num(v), Unit::Share) => percent(v),
            (Value::Num(v), _) => format!("{v}"),
        }
    }

    /// Orders two sockets by this column, unknown values last.
    pub fn compare(&self, a: &SocketView, b: &SocketView) -> Ordering {
        match (self.value(a), self.value(b)) {
            (Value::Unknown, Value::Unknown) => Ordering::Equal,
            (Value::Unknown, _) => Ordering::Greater,
            (_, Value::Unknown) => Ordering::Less,
            (Value::Addr(x), Value::Addr(y)) => x.cmp(&y),
            (Value::Text(x), Value::Text(y)) => x.cmp(&y),
            (Value::Num(x) | Value::Pair(x, _), Value::Num(y) | Value::Pair(y, _)) => x.total_cmp(&y),
            _ => Ordering::Equal,
        }
    }

    /// A number in the metrics' base units (seconds, bytes per second, ratios); None when
    /// unknown or not a number.
    pub fn base_value(&self, s: &SocketView) -> Option<f64> {
        match self.value(s) {
            Value::Num(v) if self.unit == Unit::Micros => Some(v / 1e6),
            Value::Num(v) | Value::Pair(v, _) => Some(v),
            _ => None,
        }
    }
}

/// A column's value from an optional number.
fn num<T: Into<f64>>(v: Option<T>) -> Value<'static> {
    v.map_or(Value::Unknown, |v| Value::Num(v.into()))
}

fn text<'a>(v: Option<impl Into<Cow<'a, str>>>) -> Value<'a> {
    v.map_or(Value::Unknown, |t| Value::Text(t.into()))
}

/// u64s are counts and rates far below 2^53: exact as f64.
fn wide(v: Option<u64>) -> Value<'static> {
    v.map_or(Value::Unknown, |v| Value::Num(v as f64))
}

/// What a declaration leaves out: no other name, shown nowhere, no value.
const BASE: Column = Column {
    key: "",
    header: "",
    doc: "",
    unit: Unit::Text,
    width: 0,
    json: None,
    parquet: None,
    ss: None,
    metric: None,
    tui: None,
    table: false,
    value: |_| Value::Unknown,
};

pub static LOCAL: Column = Column {
    key: "local",
    header: "LOCAL",
    doc: "The local address and port.",
    unit: Unit::Addr,
    width: 21,
    json: Some("local"),
    parquet: Some("local"),
    ss: Some("Local Address:Port"),
    tui: Some(0),
    table: true,
    value: |s| Value::Addr(s.record.local),
    ..BASE
};

pub static PEER: Column = Column {
    key: "peer",
    header: "PEER",
    doc: "The peer address and port.",
    unit: Unit::Addr,
    width: 21,
    json: Some("peer"),
    parquet: Some("peer"),
    ss: Some("Peer Address:Port"),
    tui: Some(7),
    table: true,
    value: |s| Value::Addr(s.record.peer),
    ..BASE
};

pub static STATE: Column = Column {
    key: "state",
    header: "STATE",
    doc: "The TCP state, as ss names it.",
    unit: Unit::Text,
    width: 10,
    json: Some("state"),
    parquet: Some("state"),
    ss: Some("State"),
    table: true,
    value: |s| Value::Text(s.record.state.name().into()),
    ..BASE
};

pub static PROCESS: Column = Column {
    key: "process",
    header: "PROCESS",
    doc: "The socket's inode; the TUI shows the process that holds it (pid/command).",
    unit: Unit::Count,
    width: 14,
    json: Some("inode"),
    parquet: Some("inode"),
    ss: Some("users"),
    tui: Some(12),
    value: |s| Value::Num(s.record.inode.into()),
    ..BASE
};

pub static WHERE: Column = Column {
    key: "where",
    header: "WHERE",
    doc: "Where it lives: pod, namespace name or cgroup (the socket walk's attribution).",
    unit: Unit::Text,
    width: 24,
    json: Some("origin"),
    tui: Some(16),
    value: |s| text(s.record.origin.as_deref().and_then(|o| o.label())),
    ..BASE
};

pub static CC: Column = Column {
    key: "cc",
    header: "CC",
    doc: "The congestion control.",
    unit: Unit::Text,
    width: 6,
    json: Some("cc"),
    parquet: Some("cc"),
    tui: Some(1),
    table: true,
    value: |s| Value::Text(s.record.cc_name().into()),
    ..BASE
};

pub static PHASE: Column = Column {
    key: "phase",
    header: "PHASE",
    doc: "BBR's phase: read from the kernel (eBPF, v2alpha and v3 over netlink) or inferred from the gains.",
    unit: Unit::Text,
    width: 9,
    json: Some("derived.phase"),
    parquet: Some("phase"),
    tui: Some(4),
    table: true,
    value: |s| text(s.derived.phase.map(|p| p.label())),
    ..BASE
};

pub static BBR_BW: Column = Column {
    key: "bbr_bw",
    header: "BBR BW",
    doc: "BBR's bottleneck bandwidth estimate.",
    unit: Unit::BytesPerSec,
    width: 11,
    json: Some("bbr.bw_bytes_per_sec"),
    parquet: Some("bbr_bw_bytes_per_sec"),
    ss: Some("bbr:(bw"),
    metric: Some(Metric {
        name: "bbrtop_socket_bbr_bandwidth_bytes_per_second",
        help: "BBR bandwidth estimate of one of the top-K sockets.",
    }),
    tui: Some(5),
    table: true,
    value: |s| wide(s.record.bbr.map(|b| b.bw_bytes_per_sec)),
    ..BASE
};

pub static BBR_MIN_RTT: Column = Column {
    key: "bbr_min_rtt",
    header: "BBR MRTT",
    doc: "BBR's own min RTT (a 10 s window, re-measured in PROBE_RTT).",
    unit: Unit::Micros,
    width: 9,
    json: Some("bbr.min_rtt_us"),
    parquet: Some("bbr_min_rtt_us"),
    ss: Some("bbr:(mrtt"),
    table: true,
    value: |s| num(s.record.bbr.and_then(|b| crate::model::derive::rtt_sample(b.min_rtt_us))),
    ..BASE
};

pub static P_GAIN: Column = Column {
    key: "pacing_gain",
    header: "P GAIN",
    doc: "BBR's pacing gain.",
    unit: Unit::Gain,
    width: 6,
    json: Some("bbr.pacing_gain"),
    parquet: Some("bbr_pacing_gain"),
    ss: Some("bbr:(pacing_gain"),
    table: true,
    value: |s| num(s.record.bbr.map(|b| b.pacing_gain)),
    ..BASE
};

pub static C_GAIN: Column = Column {
    key: "cwnd_gain",
    header: "C GAIN",
    doc: "BBR's cwnd gain.",
    unit: Unit::Gain,
    width: 6,
    json: Some("bbr.cwnd_gain"),
    parquet: Some("bbr_cwnd_gain"),
    ss: Some("bbr:(cwnd_gain"),
    table: true,
    value: |s| num(s.record.bbr.map(|b| b.cwnd_gain)),
    ..BASE
};

pub static GAINS: Column = Column {
    key: "gains",
    header: "GAINS",
    doc: "BBR's pacing and cwnd gains, sorted by the pacing gain.",
    unit: Unit::Gains,
    width: 9,
    tui: Some(14),
    value: |s| s.record.bbr.map_or(Value::Unknown, |b| Value::Pair(b.pacing_gain, b.cwnd_gain)),
    ..BASE
};

pub static BASE_RTT: Column = Column {
    key: "base_rtt",
    header: "BASE RTT",
    doc: "The baseline the alert measures inflation against (`--alert.baseline`).",
    unit: Unit::Micros,
    width: 9,
    json: Some("derived.baseline_rtt_us"),
    parquet: Some("baseline_rtt_us"),
    tui: Some(6),
    value: |s| num(s.derived.baseline_rtt_us),
    ..BASE
};

pub static SRTT: Column = Column {
    key: "srtt",
    header: "SRTT",
    doc: "Smoothed RTT.",
    unit: Unit::Micros,
    width: 8,
    json: Some("tcp_info.srtt_us"),
    parquet: Some("tcpi_srtt_us"),
    ss: Some("rtt"),
    metric: Some(Metric {
        name: "bbrtop_socket_srtt_seconds",
        help: "Smoothed RTT of one of the top-K inflated sockets.",
    }),
    tui: Some(2),
    table: true,
    value: |s| num(s.record.tcp_info.srtt_us()),
    ..BASE
};

pub static MIN_RTT: Column = Column {
    key: "min_rtt",
    header: "MIN RTT",
    doc: "tcp_info's min RTT (a window of net.ipv4.tcp_min_rtt_wlen, 300 s); without a sample yet (0, or a listener's ~0) it is unknown.",
    unit: Unit::Micros,
    width: 8,
    json: Some("tcp_info.min_rtt_us"),
    parquet: Some("tcpi_min_rtt_us"),
    ss: Some("minrtt"),
    metric: Some(Metric {
        name: "bbrtop_socket_min_rtt_seconds",
        help: "tcp_info min RTT of one of the top-K sockets.",
    }),
    table: true,
    value: |s| num(s.record.tcp_info.min_rtt_us().and_then(crate::model::derive::rtt_sample)),
    ..BASE
};

pub static INFLATION: Column = Column {
    key: "inflation",
    header: "INFL",
    doc: "srtt over the baseline.",
    unit: Unit::Ratio,
    width: 7,
    json: Some("derived.inflation_ratio"),
    parquet: Some("inflation_ratio"),
    metric: Some(Metric {
        name: "bbrtop_socket_rtt_inflation_ratio",
        help: "srtt / baseline of one of the top-K sockets.",
    }),
    tui: Some(3),
    table: true,
    value: |s| num(s.derived.inflation_ratio),
    ..BASE
};

pub static PACING: Column = Column {
    key: "pacing",
    header: "PACING",
    doc: "The pacing rate.",
    unit: Unit::BytesPerSec,
    width: 11,
    json: Some("tcp_info.pacing_rate_bytes_per_sec"),
    parquet: Some("tcpi_pacing_rate_bytes_per_sec"),
    ss: Some("pacing_rate"),
    tui: Some(9),
    table: true,
    value: |s| wide(s.record.tcp_info.pacing_rate_bytes_per_sec()),
    ..BASE
};

pub static DELIVERY: Column = Column {
    key: "delivery",
    header: "DELIVERY",
    doc: "The delivery rate of the latest sample.",
    unit: Unit::BytesPerSec,
    width: 11,
    json: Some("tcp_info.delivery_rate_bytes_per_sec"),
    parquet: Some("tcpi_delivery_rate_bytes_per_sec"),
    ss: Some("delivery_rate"),
    metric: Some(Metric {
        name: "bbrtop_socket_delivery_rate_bytes_per_second",
        help: "tcp_info delivery rate of one of the top-K sockets.",
    }),
    tui: Some(8),
    table: true,
    value: |s| wide(s.record.tcp_info.delivery_rate_bytes_per_sec()),
    ..BASE
};

pub static CWND: Column = Column {
    key: "cwnd",
    header: "CWND",
    doc: "Congestion window, in segments.",
    unit: Unit::Count,
    width: 6,
    json: Some("tcp_info.snd_cwnd_segs"),
    parquet: Some("tcpi_snd_cwnd_segs"),
    ss: Some("cwnd"),
    tui: Some(10),
    table: true,
    value: |s| num(s.record.tcp_info.snd_cwnd_segs()),
    ..BASE
};

pub static SND_WND: Column = Column {
    key: "snd_wnd",
    header: "SND WND",
    doc: "The peer's receive window, as the sender sees it, in bytes.",
    unit: Unit::Count,
    width: 8,
    json: Some("tcp_info.snd_wnd_bytes"),
    parquet: Some("tcpi_snd_wnd_bytes"),
    ss: Some("snd_wnd"),
    tui: Some(17),
    table: true,
    value: |s| num(s.record.tcp_info.snd_wnd_bytes()),
    ..BASE
};

pub static RETRANS: Column = Column {
    key: "retrans",
    header: "RETRANS",
    doc: "Segments retransmitted over the socket's life.",
    unit: Unit::Count,
    width: 8,
    json: Some("tcp_info.total_retrans_segs"),
    parquet: Some("tcpi_total_retrans_segs"),
    ss: Some("retrans"),
    tui: Some(13),
    table: true,
    value: |s| num(s.record.tcp_info.total_retrans_segs()),
    ..BASE
};

pub static RETX: Column = Column {
    key: "retx",
    header: "RETX%",
    doc: "Bytes retransmitted over bytes sent, over the socket's life.",
    unit: Unit::Share,
    width: 6,
    json: Some("derived.retrans_ratio"),
    parquet: Some("retrans_ratio"),
    ss: Some("bytes_retrans"),
    metric: Some(Metric {
        name: "bbrtop_socket_retransmit_ratio",
        help: "Bytes retransmitted over bytes sent, over the life of one of the top-K sockets.",
    }),
    tui: Some(11),
    value: |s| num(s.derived.retrans_ratio),
    ..BASE
};

pub static LIMIT: Column = Column {
    key: "limit",
    header: "LIMIT",
    doc: "What limits the sender: app, rwnd, sndbuf or cwnd.",
    unit: Unit::Text,
    width: 6,
    json: Some("derived.limited_by"),
    parquet: Some("limited_by"),
    tui: Some(15),
    table: true,
    value: |s| text(s.derived.limited_by.map(|l| l.label())),
    ..BASE
};

pub static ALERT: Column = Column {
    key: "alert",
    header: "ALERT",
    doc: "The alert rule's verdict: inflated, or FIRING.",
    unit: Unit::Text,
    width: 8,
    json: Some("derived.alert_firing"),
    parquet: Some("alert_firing"),
    table: true,
    value: |s| match (s.derived.alert_firing, s.derived.inflated) {
        (true, _) => Value::Text("FIRING".into()),
        (false, true) => Value::Text("inflated".into()),
        _ => Value::Unknown,
    },
    ..BASE
};

/// Every column. The TUI's table and `snapshot`'s show theirs in this order.
pub static ALL: &[&Column] = &[
    &LOCAL,
    &PEER,
    &STATE,
    &PROCESS,
    &WHERE,
    &CC,
    &PHASE,
    &BBR_BW,
    &BBR_MIN_RTT,
    &P_GAIN,
    &C_GAIN,
    &BASE_RTT,
    &SRTT,
    &MIN_RTT,
    &INFLATION,
    &PACING,
    &DELIVERY,
    &CWND,
    &GAINS,
    &SND_WND,
    &RETRANS,
    &RETX,
    &LIMIT,
    &ALERT,
];

/// The columns of the TUI's socket table, in order.
pub fn in_tui() -> impl Iterator<Item = &'static Column> {
    ALL.iter().copied().filter(|c| c.tui.is_some())
}

/// The columns of `bbrtop snapshot`'s table, in order.
pub fn in_table() -> impl Iterator<Item = &'static Column> {
    ALL.iter().copied().filter(|c| c.table)
}

/// The column whose key is `key`.
pub fn by_key(key: &str) -> Option<&'static Column> {
    ALL.iter().copied().find(|c| c.key == key)
}

/// The catalog as a Markdown table (docs/reference/columns.md's, which a test holds to this).
pub fn markdown() -> String {
    let code = |v: Option<&str>| v.map_or_else(|| "-".to_string(), |v| format!("`{v}`"));
    let mut out = String::from(
        "| key | header | unit | what | shown in | JSON | recording | `ss -tin` |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for c in ALL {
        let unit = format!("{:?}", c.unit).to_lowercase();
        let shown: Vec<&str> = [(c.tui.is_some(), "TUI"), (c.table, "snapshot")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        out.push_str(&format!(
            "| `{}` | `{}` | {unit} | {} | {} | {} | {} | {} |\n",
            c.key,
            c.header,
            c.doc.replace('|', "\\|"),
            if shown.is_empty() { "-".to_string() } else { shown.join(", ") },
            code(c.json),
            code(c.parquet),
            code(c.ss),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Derived, HistoryView, RecordRef};
    use crate::testing::record;

    fn view(r: crate::model::SocketRecord, d: Derived) -> SocketView {
        SocketView { record: RecordRef::single(r), derived: d, history: HistoryView::none() }
    }

    #[test]
    fn keys_and_headers_are_unique() {
        let mut keys: Vec<_> = ALL.iter().map(|c| c.key).collect();
        let mut headers: Vec<_> = ALL.iter().map(|c| c.header).collect();
        keys.sort();
        headers.sort();
        keys.dedup();
        headers.dedup();
        assert_eq!((keys.len(), headers.len()), (ALL.len(), ALL.len()));
        assert_eq!(by_key("srtt"), Some(&SRTT));
    }

    #[test]
    fn values_read_format_sort_and_convert() {
        let a = view(
            record(1, "bbr").srtt_us(45_300).bbr(1_250_000, 40_000, 1.25, 2.0).build(),
            Derived { inflation_ratio: Some(1.13), ..Derived::default() },
        );
        let b = view(record(2, "cubic").srtt_us(900).build(), Derived::default());
        assert_eq!((SRTT.text(&a), SRTT.text(&b)), ("45.3ms".into(), "0.900ms".into()));
        assert_eq!(BBR_BW.text(&a), "10.0Mbit/s");
        assert_eq!((GAINS.text(&a), GAINS.text(&b)), ("1.25/2.00".into(), "-".into()));
        assert_eq!(INFLATION.text(&a), "1.13x");
        assert_eq!(SRTT.compare(&a, &b), Ordering::Greater);
        // Unknown values sort last: b has no BBR bandwidth.
        assert_eq!(BBR_BW.compare(&a, &b), Ordering::Less);
        assert_eq!(BBR_BW.compare(&b, &a), Ordering::Greater);
        assert_eq!(SRTT.base_value(&a), Some(0.0453));
        assert_eq!(BBR_BW.base_value(&b), None);
        assert_eq!(ALERT.text(&a), "-");
    }

    /// A listener keeps its minimums at ~0 (no sample): unknown, not 4294.97 s.
    #[test]
    fn a_minimum_without_a_sample_reads_unknown() {
        let mut r = record(1, "bbr").bbr(0, u32::MAX, 2.89, 2.89).build();
        r.tcp_info.set_min_rtt_us(u32::MAX);
        let v = view(r, Derived::default());
        assert_eq!((MIN_RTT.text(&v), BBR_MIN_RTT.text(&v)), ("-".into(), "-".into()));
        assert_eq!(MIN_RTT.base_value(&v), None);
    }
}

#[cfg(test)]
mod names {
    use super::*;

    /// Each column's JSON path is in the socket object, with the value the column reads where
    /// that is a number or an address (the object carries the same units; words such as the
    /// phase are structured there, and only need to be present).
    #[test]
    fn json_paths_are_in_the_socket_object() {
        let v = crate::testing::full_view();
        let doc = serde_json::to_value(&v).unwrap();
        for c in ALL {
            let Some(path) = c.json else { continue };
            let got = path
                .split('.')
                .try_fold(&doc, |d, k| d.get(k))
                .unwrap_or_else(|| panic!("{}: no {path}", c.key));
            assert!(!got.is_null(), "{}: {path} is null", c.key);
            match c.value(&v) {
                Value::Num(x) => assert_eq!(got.as_f64(), Some(x), "{}: {path}", c.key),
                Value::Addr(a) => assert_eq!(got.as_str(), Some(a.to_string().as_str()), "{}", c.key),
                Value::Text(_) | Value::Pair(..) | Value::Unknown => {}
            }
        }
    }
}
