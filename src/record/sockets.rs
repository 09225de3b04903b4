//! The `sockets` table: a row per socket per poll at which it changed, flat, so that DuckDB or
//! pandas read it as is. Columns are the poll (`seq`, `at_ms`), what the row says (`row`: `key`,
//! `change` or `gone`), the socket record (identity, where it lives, cc, BBR and DCTCP info, skmem,
//! the eBPF RTT window), every tcp_info field (`tcpi_*`), and what bbrtop derived from them.
//!
//! History as changes (format 2): a chunk's first poll has a `key` row for every live socket;
//! later polls have a `change` row for a socket that came or moved and a `gone` row (every value
//! null but the cookie) for one that went. A socket's state at a poll is its latest row at or
//! after the poll's keyframe (the polls table's `key_at_ms`), unless that row is `gone`. Format 1
//! had every socket's row at every poll, each a keyframe of its own.
//!
//! So that a socket that did not move need not be written, nothing in a row changes with time
//! alone: what grows with time is stored as the time it points at: `first_seen_ms` (not seconds
//! seen), `inflated_since_ms`, and tcp_info's `last_*` ages as the instants they name
//! (`tcpi_last_data_sent_at_ms`...). Decoding turns them back.

use super::columns::{ColumnType, table};
use anyhow::Context;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use bbrtop_core::model::derive::LimitedBy;
use bbrtop_core::model::tcp_info::TCP_INFO_LAYOUT;
use bbrtop_core::model::{
    BbrExt, BbrInfo, BbrState, BbrVersion, Cookie, DctcpInfo, Ecn, MemInfo, Origin, Phase, Pod, RttWindow,
    SocketRecord, Source, TcpState,
};
use bbrtop_core::snapshot::KernelSocket;
use bbrtop_core::snapshot::history::HistoryView;
use bbrtop_core::snapshot::{Derived, RecordRef, SocketView};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

/// tcp_info's fields that count milliseconds since something: recorded as the instant instead.
const AGES: [&str; 4] = ["last_data_sent_ms", "last_ack_sent_ms", "last_data_recv_ms", "last_ack_recv_ms"];

/// What a row says of its socket: its whole state at a keyframe, its new state, or that it went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// A keyframe's row (and every row of format 1, which has no `row` column).
    #[default]
    Key,
    Change,
    Gone,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Key => "key",
            Kind::Change => "change",
            Kind::Gone => "gone",
        }
    }

    fn of_label(s: &str) -> Option<Kind> {
        [Kind::Key, Kind::Change, Kind::Gone].into_iter().find(|k| k.label() == s)
    }
}

/// One row to write: a socket's view, or (`gone`) its cookie alone.
pub struct Row {
    pub kind: Kind,
    pub cookie: Cookie,
    pub view: Option<SocketView>,
}

/// One poll's rows as a batch: `seq` and `at_ms` (the poll), `row`, the record's and derived
/// columns, then tcp_info's. Rows in cookie order, as the caller gives them.
pub fn batch(seq: u64, at_ms: i64, rows: &[Row]) -> anyhow::Result<RecordBatch> {
    let n = rows.len();
    let order: Vec<Option<&SocketView>> = rows.iter().map(|r| r.view.as_ref()).collect();
    let ins: Vec<In<'_>> = rows.iter().map(|r| (Ctx { at_ms, cookie: r.cookie }, r.view.as_ref())).collect();
    let mut kinds = String::builder(n);
    rows.iter().for_each(|r| String::append(&mut kinds, Some(r.kind.label().to_string())));
    let mut columns = poll_columns(seq, at_ms, n);
    columns.push(String::finish(&mut kinds));
    columns.extend(view::encode(ins.iter(), n));
    for &(name, off, size) in TCP_INFO_LAYOUT {
        let age = AGES.contains(&name);
        let value = |s: &SocketView| s.record.tcp_info.field(off, size);
        columns.push(if age {
            column::<i64>(&order, |s| value(s).map(|v| at_ms - v as i64))
        } else {
            // Each field keeps its width: a u8 column reads as a u8 in DuckDB.
            match size {
                1 => column::<u8>(&order, |s| value(s).and_then(|v| v.try_into().ok())),
                2 => column::<u16>(&order, |s| value(s).and_then(|v| v.try_into().ok())),
                4 => column::<u32>(&order, |s| value(s).and_then(|v| v.try_into().ok())),
                _ => column::<u64>(&order, value),
            }
        });
    }
    Ok(RecordBatch::try_new(Arc::new(schema()), columns)?)
}

/// The poll's columns, leading the table: `n` rows of `seq` and `at_ms`.
fn poll_columns(seq: u64, at_ms: i64, n: usize) -> Vec<ArrayRef> {
    vec![u64::finish(&mut filled::<u64>(n, Some(seq))), i64::finish(&mut filled::<i64>(n, Some(at_ms)))]
}

fn poll_fields() -> [Field; 2] {
    [Field::new("seq", DataType::UInt64, true), Field::new("at_ms", DataType::Int64, true)]
}

/// The poll's columns alone, for `n` rows copied from another poll (a keyframe's row group of
/// sockets that did not move, `keyframe.rs`).
pub fn stamp(seq: u64, at_ms: i64, n: usize) -> anyhow::Result<RecordBatch> {
    Ok(RecordBatch::try_new(Arc::new(Schema::new(poll_fields().to_vec())), poll_columns(seq, at_ms, n))?)
}

/// The whole table's schema.
pub fn schema() -> Schema {
    let mut fields = poll_fields().to_vec();
    fields.push(Field::new("row", DataType::Utf8, true));
    fields.extend(view::schema().fields().iter().map(|f| f.as_ref().clone()));
    for &(name, _, size) in TCP_INFO_LAYOUT {
        let name = tcpi_column(name);
        let dt = if name.ends_with("_at_ms") { DataType::Int64 } else { uint(size) };
        fields.push(Field::new(name, dt, true));
    }
    Schema::new(fields)
}

fn tcpi_column(field: &str) -> String {
    match field.strip_suffix("_ms").filter(|_| AGES.contains(&field)) {
        Some(base) => format!("tcpi_{base}_at_ms"),
        None => format!("tcpi_{field}"),
    }
}

fn uint(size: usize) -> DataType {
    match size {
        1 => DataType::UInt8,
        2 => DataType::UInt16,
        4 => DataType::UInt32,
        _ => DataType::UInt64,
    }
}

/// One column of `T` from each socket, in order (null for a socket that went).
fn column<T: ColumnType>(
    order: &[Option<&SocketView>],
    value: impl Fn(&SocketView) -> Option<T>,
) -> ArrayRef {
    let mut b = T::builder(order.len());
    order.iter().for_each(|s| T::append(&mut b, s.and_then(&value)));
    T::finish(&mut b)
}

fn filled<T: ColumnType + Clone>(n: usize, v: Option<T>) -> T::Builder {
    let mut b = T::builder(n);
    (0..n).for_each(|_| T::append(&mut b, v.clone()));
    b
}

/// The poll a row belongs to (for the columns stored as instants), and its socket.
#[derive(Clone, Copy)]
struct Ctx {
    at_ms: i64,
    cookie: Cookie,
}

/// A row as the table's getters read it: the socket's view, none for a socket that went.
type In<'a> = (Ctx, Option<&'a SocketView>);

/// One socket as decoding fills it.
#[derive(Clone, Debug)]
pub struct Decoded {
    pub seq: u64,
    pub at_ms: i64,
    pub kind: Kind,
    pub record: SocketRecord,
    pub derived: Derived,
    kernel: Option<KernelSocket>,
    first_seen_ms: Option<i64>,
    inflated_since_ms: Option<i64>,
}

impl Decoded {
    fn new() -> Decoded {
        let any = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
        Decoded {
            seq: 0,
            at_ms: 0,
            kind: Kind::Key,
            record: SocketRecord::new(0, any, any, TcpState::Established),
            derived: Derived::default(),
            kernel: None,
            first_seen_ms: None,
            inflated_since_ms: None,
        }
    }

    /// The socket as the snapshot showed it; its history is for the reader to build.
    pub fn into_view(mut self) -> SocketView {
        let secs = |ms: i64| (self.at_ms - ms) as f64 / 1e3;
        self.derived.seen_for_seconds = self.first_seen_ms.map_or(0.0, secs);
        self.derived.inflated_for_seconds = self.inflated_since_ms.map(secs);
        self.derived.kernel = self.kernel.map(Arc::new);
        SocketView {
            record: RecordRef::single(self.record),
            derived: self.derived,
            history: HistoryView::none(),
        }
    }
}

/// Every row of a `sockets` batch.
pub fn decode(batch: &RecordBatch) -> anyhow::Result<Vec<Decoded>> {
    let mut out = vec![Decoded::new(); batch.num_rows()];
    let col = |name: &str| batch.column_by_name(name).with_context(|| format!("no column {name}"));
    let seq = u64::column(col("seq")?.as_ref())?;
    let at = i64::column(col("at_ms")?.as_ref())?;
    for (i, d) in out.iter_mut().enumerate() {
        d.seq = seq.get(i).context("a row without a poll")?;
        d.at_ms = at.get(i).context("a row without a time")?;
    }
    // Format 1 has no `row`: each of its rows is a keyframe's.
    if let Some(a) = batch.column_by_name("row") {
        let kind = String::column(a.as_ref())?;
        for (i, d) in out.iter_mut().enumerate() {
            let label = kind.get(i).unwrap_or_default();
            d.kind = Kind::of_label(&label).with_context(|| format!("a row of kind {label:?}"))?;
        }
    }
    view::decode(batch, &mut out)?;
    for &(name, off, size) in TCP_INFO_LAYOUT {
        let Some(a) = batch.column_by_name(&tcpi_column(name)) else { continue };
        let a = arrow_cast_wide(a)?;
        for (i, d) in out.iter_mut().enumerate() {
            let v = match &a {
                Wide::Ages(g) => g.get(i).map(|t| (d.at_ms - t) as u64),
                Wide::Values(g) => g.get(i),
            };
            if let Some(v) = v {
                d.record.tcp_info.set_field(off, size, v);
            }
        }
    }
    Ok(out)
}

fn widen<'a>(get: Box<dyn Fn(usize) -> Option<u64> + 'a>) -> Wide<'a> {
    Wide::Values(super::columns::Getter::from_fn(get))
}

enum Wide<'a> {
    Ages(super::columns::Getter<'a, i64>),
    Values(super::columns::Getter<'a, u64>),
}

/// A tcp_info column of any unsigned width, or an instant, read as 64 bits.
fn arrow_cast_wide(a: &ArrayRef) -> anyhow::Result<Wide<'_>> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{UInt8Type, UInt16Type, UInt32Type, UInt64Type};
    Ok(match a.data_type() {
        DataType::Int64 => Wide::Ages(i64::column(a.as_ref())?),
        DataType::UInt8 => {
            let v = a.as_primitive::<UInt8Type>();
            widen(Box::new(move |i| (!v.is_null(i)).then(|| u64::from(v.value(i)))))
        }
        DataType::UInt16 => {
            let v = a.as_primitive::<UInt16Type>();
            widen(Box::new(move |i| (!v.is_null(i)).then(|| u64::from(v.value(i)))))
        }
        DataType::UInt32 => {
            let v = a.as_primitive::<UInt32Type>();
            widen(Box::new(move |i| (!v.is_null(i)).then(|| u64::from(v.value(i)))))
        }
        DataType::UInt64 => {
            let v = a.as_primitive::<UInt64Type>();
            widen(Box::new(move |i| (!v.is_null(i)).then(|| v.value(i))))
        }
        other => anyhow::bail!("a tcp_info column of type {other}"),
    })
}

fn addr(s: &str) -> Option<SocketAddr> {
    s.parse().ok()
}

fn origin(d: &mut Decoded) -> &mut Origin {
    Arc::make_mut(d.record.origin.get_or_insert_with(Default::default))
}

fn pod(d: &mut Decoded) -> &mut Pod {
    origin(d).pod.get_or_insert_with(Default::default)
}

fn bbr(d: &mut Decoded) -> &mut BbrInfo {
    d.record.bbr.get_or_insert(BbrInfo {
        bw_bytes_per_sec: 0,
        min_rtt_us: 0,
        pacing_gain: 0.0,
        cwnd_gain: 0.0,
        version: BbrVersion::V1,
        ext: None,
        unknown_trailing_bytes: 0,
    })
}

fn ext(d: &mut Decoded) -> &mut BbrExt {
    bbr(d).ext.get_or_insert(BbrExt {
        bw_hi_bytes_per_sec: None,
        bw_lo_bytes_per_sec: None,
        inflight_lo_pkts: None,
        inflight_hi_pkts: None,
        extra_acked_pkts: 0,
        kernel_mode: 0,
        kernel_phase: 0,
    })
}

fn dctcp(d: &mut Decoded) -> &mut DctcpInfo {
    d.record.dctcp.get_or_insert(DctcpInfo {
        enabled: false,
        ce_state: 0,
        alpha: 0,
        ab_ecn_bytes: 0,
        ab_tot_bytes: 0,
    })
}

fn skmem(d: &mut Decoded) -> &mut MemInfo {
    d.record.skmem.get_or_insert_with(MemInfo::default)
}

fn krtt(d: &mut Decoded) -> &mut RttWindow {
    d.record.kernel_rtt.get_or_insert(RttWindow {
        samples: 0,
        last_srtt_us: 0,
        min_srtt_us: None,
        max_srtt_us: None,
        bbr: None,
        rtt_samples: 0,
        rtt_min_us: None,
        prompt_samples: 0,
        prompt_min_us: None,
    })
}

fn krtt_bbr(d: &mut Decoded) -> &mut BbrState {
    krtt(d).bbr.get_or_insert_with(BbrState::default)
}

fn ecn(d: &mut Decoded) -> &mut Ecn {
    d.derived.ecn.get_or_insert(Ecn {
        negotiated: false,
        seen: false,
        delivered_ce_segs: 0,
        ce_fraction: None,
        received_ce_segs: None,
        delivered_ce_bytes: None,
        received_ce_bytes: None,
    })
}

fn kernel(d: &mut Decoded) -> &mut KernelSocket {
    d.kernel.get_or_insert_with(KernelSocket::default)
}

fn kernel_bbr(d: &mut Decoded) -> &mut BbrState {
    kernel(d).bbr.get_or_insert_with(BbrState::default)
}

/// The columns read from a socket's view; `at` is the poll's time, for those stored as instants.
mod view {
    use super::*;

    fn rec<'a>(x: &'a In<'_>) -> Option<&'a SocketRecord> {
        Some(&x.1?.record)
    }

    fn der<'a>(x: &'a In<'_>) -> Option<&'a Derived> {
        Some(&x.1?.derived)
    }

    fn pod_of<'a>(x: &'a In<'_>) -> Option<&'a Pod> {
        rec(x)?.origin.as_ref()?.pod.as_ref()
    }

    fn kern<'a>(x: &'a In<'_>) -> Option<&'a KernelSocket> {
        der(x)?.kernel.as_deref()
    }

    fn since(x: &In<'_>, secs: f64) -> i64 {
        x.0.at_ms - (secs * 1e3).round() as i64
    }

    table! { <'s> In<'s> => Decoded {
        cookie: u64 = |x| Some(x.0.cookie), |d, v| d.record.cookie = v;
        local: String = |x| Some(rec(x)?.local.to_string()), |d, v| d.record.local = addr(&v).unwrap_or(d.record.local);
        peer: String = |x| Some(rec(x)?.peer.to_string()), |d, v| d.record.peer = addr(&v).unwrap_or(d.record.peer);
        state: String = |x| Some(rec(x)?.state.name().to_string()), |d, v| if let Ok(s) = v.parse() { d.record.state = s };
        uid: u32 = |x| Some(rec(x)?.uid), |d, v| d.record.uid = v;
        inode: u32 = |x| Some(rec(x)?.inode), |d, v| d.record.inode = v;
        netns: u64 = |x| rec(x)?.netns, |d, v| d.record.netns = Some(v);
        cgroup_id: u64 = |x| rec(x)?.cgroup_id, |d, v| d.record.cgroup_id = Some(v);
        netns_name: String = |x| rec(x)?.origin.as_ref()?.netns_name.clone(), |d, v| origin(d).netns_name = Some(v);
        cgroup: String = |x| rec(x)?.origin.as_ref()?.cgroup.clone(), |d, v| origin(d).cgroup = Some(v);
        pod_uid: String = |x| Some(pod_of(x)?.uid.clone()), |d, v| pod(d).uid = v;
        pod_container_id: String = |x| pod_of(x)?.container_id.clone(), |d, v| pod(d).container_id = Some(v);
        pod_namespace: String = |x| pod_of(x)?.namespace.clone(), |d, v| pod(d).namespace = Some(v);
        pod_name: String = |x| pod_of(x)?.name.clone(), |d, v| pod(d).name = Some(v);
        pod_container: String = |x| pod_of(x)?.container.clone(), |d, v| pod(d).container = Some(v);
        cc: String = |x| rec(x)?.cc.as_deref().map(str::to_string), |d, v| d.record.cc = Some(v.into());
        bbr_bw_bytes_per_sec: u64 = |x| Some(rec(x)?.bbr?.bw_bytes_per_sec), |d, v| bbr(d).bw_bytes_per_sec = v;
        bbr_min_rtt_us: u32 = |x| Some(rec(x)?.bbr?.min_rtt_us), |d, v| bbr(d).min_rtt_us = v;
        bbr_pacing_gain: f64 = |x| Some(rec(x)?.bbr?.pacing_gain), |d, v| bbr(d).pacing_gain = v;
        bbr_cwnd_gain: f64 = |x| Some(rec(x)?.bbr?.cwnd_gain), |d, v| bbr(d).cwnd_gain = v;
        bbr_version: String = |x| Some(rec(x)?.bbr?.version.to_string()), |d, v| if let Ok(ver) = v.parse() { bbr(d).version = ver };
        bbr_unknown_trailing_bytes: u32 = |x| Some(rec(x)?.bbr?.unknown_trailing_bytes), |d, v| bbr(d).unknown_trailing_bytes = v;
        bbr_extra_acked_pkts: u32 = |x| Some(rec(x)?.bbr?.ext?.extra_acked_pkts), |d, v| ext(d).extra_acked_pkts = v;
        bbr_bw_hi_bytes_per_sec: u64 = |x| rec(x)?.bbr?.ext?.bw_hi_bytes_per_sec, |d, v| ext(d).bw_hi_bytes_per_sec = Some(v);
        bbr_bw_lo_bytes_per_sec: u64 = |x| rec(x)?.bbr?.ext?.bw_lo_bytes_per_sec, |d, v| ext(d).bw_lo_bytes_per_sec = Some(v);
        bbr_inflight_lo_pkts: u32 = |x| rec(x)?.bbr?.ext?.inflight_lo_pkts, |d, v| ext(d).inflight_lo_pkts = Some(v);
        bbr_inflight_hi_pkts: u32 = |x| rec(x)?.bbr?.ext?.inflight_hi_pkts, |d, v| ext(d).inflight_hi_pkts = Some(v);
        bbr_kernel_mode: u8 = |x| Some(rec(x)?.bbr?.ext?.kernel_mode), |d, v| ext(d).kernel_mode = v;
        bbr_kernel_phase: u8 = |x| Some(rec(x)?.bbr?.ext?.kernel_phase), |d, v| ext(d).kernel_phase = v;
        dctcp_enabled: bool = |x| Some(rec(x)?.dctcp?.enabled), |d, v| dctcp(d).enabled = v;
        dctcp_ce_state: u16 = |x| Some(rec(x)?.dctcp?.ce_state), |d, v| dctcp(d).ce_state = v;
        dctcp_alpha: u32 = |x| Some(rec(x)?.dctcp?.alpha), |d, v| dctcp(d).alpha = v;
        dctcp_ab_ecn_bytes: u32 = |x| Some(rec(x)?.dctcp?.ab_ecn_bytes), |d, v| dctcp(d).ab_ecn_bytes = v;
        dctcp_ab_tot_bytes: u32 = |x| Some(rec(x)?.dctcp?.ab_tot_bytes), |d, v| dctcp(d).ab_tot_bytes = v;
        skmem_rmem_alloc: u32 = |x| Some(rec(x)?.skmem?.rmem_alloc), |d, v| skmem(d).rmem_alloc = v;
        skmem_rcvbuf: u32 = |x| Some(rec(x)?.skmem?.rcvbuf), |d, v| skmem(d).rcvbuf = v;
        skmem_wmem_alloc: u32 = |x| Some(rec(x)?.skmem?.wmem_alloc), |d, v| skmem(d).wmem_alloc = v;
        skmem_sndbuf: u32 = |x| Some(rec(x)?.skmem?.sndbuf), |d, v| skmem(d).sndbuf = v;
        skmem_fwd_alloc: u32 = |x| Some(rec(x)?.skmem?.fwd_alloc), |d, v| skmem(d).fwd_alloc = v;
        skmem_wmem_queued: u32 = |x| Some(rec(x)?.skmem?.wmem_queued), |d, v| skmem(d).wmem_queued = v;
        skmem_optmem: u32 = |x| Some(rec(x)?.skmem?.optmem), |d, v| skmem(d).optmem = v;
        skmem_backlog: u32 = |x| Some(rec(x)?.skmem?.backlog), |d, v| skmem(d).backlog = v;
        skmem_drops: u32 = |x| Some(rec(x)?.skmem?.drops), |d, v| skmem(d).drops = v;
        ebpf_rtt_samples: u32 = |x| Some(rec(x)?.kernel_rtt?.samples), |d, v| krtt(d).samples = v;
        ebpf_rtt_last_srtt_us: u32 = |x| Some(rec(x)?.kernel_rtt?.last_srtt_us), |d, v| krtt(d).last_srtt_us = v;
        ebpf_rtt_min_srtt_us: u32 = |x| rec(x)?.kernel_rtt?.min_srtt_us, |d, v| krtt(d).min_srtt_us = Some(v);
        ebpf_rtt_max_srtt_us: u32 = |x| rec(x)?.kernel_rtt?.max_srtt_us, |d, v| krtt(d).max_srtt_us = Some(v);
        ebpf_rtt_rtt_samples: u32 = |x| Some(rec(x)?.kernel_rtt?.rtt_samples), |d, v| krtt(d).rtt_samples = v;
        ebpf_rtt_rtt_min_us: u32 = |x| rec(x)?.kernel_rtt?.rtt_min_us, |d, v| krtt(d).rtt_min_us = Some(v);
        ebpf_rtt_prompt_samples: u32 = |x| Some(rec(x)?.kernel_rtt?.prompt_samples), |d, v| krtt(d).prompt_samples = v;
        ebpf_rtt_prompt_min_us: u32 = |x| rec(x)?.kernel_rtt?.prompt_min_us, |d, v| krtt(d).prompt_min_us = Some(v);
        ebpf_rtt_bbr_mode: u8 = |x| Some(rec(x)?.kernel_rtt?.bbr?.mode), |d, v| krtt_bbr(d).mode = v;
        ebpf_rtt_bbr_cycle_idx: u8 = |x| Some(rec(x)?.kernel_rtt?.bbr?.cycle_idx), |d, v| krtt_bbr(d).cycle_idx = v;
        ebpf_rtt_bbr_cycle_v3: bool = |x| Some(rec(x)?.kernel_rtt?.bbr?.cycle_v3), |d, v| krtt_bbr(d).cycle_v3 = v;
        ebpf_rtt_bbr_full_bw_reached: bool = |x| Some(rec(x)?.kernel_rtt?.bbr?.full_bw_reached), |d, v| krtt_bbr(d).full_bw_reached = v;
        ebpf_rtt_bbr_lt_use_bw: bool = |x| Some(rec(x)?.kernel_rtt?.bbr?.lt_use_bw), |d, v| krtt_bbr(d).lt_use_bw = v;
        ebpf_rtt_bbr_min_rtt_us: u32 = |x| rec(x)?.kernel_rtt?.bbr?.min_rtt_us, |d, v| krtt_bbr(d).min_rtt_us = Some(v);
        phase: String = |x| Some(der(x)?.phase?.label().to_string()), |d, v| d.derived.phase = Phase::from_label(&v);
        phase_source: String = |x| Some(der(x)?.phase_source?.label().to_string()), |d, v| d.derived.phase_source = Source::from_label(&v);
        baseline_rtt_us: u32 = |x| der(x)?.baseline_rtt_us, |d, v| d.derived.baseline_rtt_us = Some(v);
        queue_delay_us: u32 = |x| der(x)?.queue_delay_us, |d, v| d.derived.queue_delay_us = Some(v);
        inflation_ratio: f64 = |x| der(x)?.inflation_ratio, |d, v| d.derived.inflation_ratio = Some(v);
        inflated: bool = |x| Some(der(x)?.inflated), |d, v| d.derived.inflated = v;
        inflated_since_ms: i64 = |x| der(x)?.inflated_for_seconds.map(|s| since(x, s)), |d, v| d.inflated_since_ms = Some(v);
        alert_firing: bool = |x| Some(der(x)?.alert_firing), |d, v| d.derived.alert_firing = v;
        limited_by: String = |x| Some(der(x)?.limited_by?.label().to_string()), |d, v| d.derived.limited_by = LimitedBy::from_label(&v);
        ecn_negotiated: bool = |x| Some(der(x)?.ecn?.negotiated), |d, v| ecn(d).negotiated = v;
        ecn_seen: bool = |x| Some(der(x)?.ecn?.seen), |d, v| ecn(d).seen = v;
        ecn_delivered_ce_segs: u32 = |x| Some(der(x)?.ecn?.delivered_ce_segs), |d, v| ecn(d).delivered_ce_segs = v;
        ecn_ce_fraction: f64 = |x| der(x)?.ecn?.ce_fraction, |d, v| ecn(d).ce_fraction = Some(v);
        ecn_received_ce_segs: u32 = |x| der(x)?.ecn?.received_ce_segs, |d, v| ecn(d).received_ce_segs = Some(v);
        ecn_delivered_ce_bytes: u32 = |x| der(x)?.ecn?.delivered_ce_bytes, |d, v| ecn(d).delivered_ce_bytes = Some(v);
        ecn_received_ce_bytes: u32 = |x| der(x)?.ecn?.received_ce_bytes, |d, v| ecn(d).received_ce_bytes = Some(v);
        retrans_ratio: f64 = |x| der(x)?.retrans_ratio, |d, v| d.derived.retrans_ratio = Some(v);
        goodput_bytes_per_sec: f64 = |x| der(x)?.rates.goodput_bytes_per_sec, |d, v| d.derived.rates.goodput_bytes_per_sec = Some(v);
        recv_bytes_per_sec: f64 = |x| der(x)?.rates.recv_bytes_per_sec, |d, v| d.derived.rates.recv_bytes_per_sec = Some(v);
        retrans_segs_per_sec: f64 = |x| der(x)?.rates.retrans_segs_per_sec, |d, v| d.derived.rates.retrans_segs_per_sec = Some(v);
        first_seen_ms: i64 = |x| Some(since(x, der(x)?.seen_for_seconds)), |d, v| d.first_seen_ms = Some(v);
        kernel_netns: u32 = |x| Some(kern(x)?.netns), |d, v| kernel(d).netns = v;
        kernel_phase_changes: u64 = |x| Some(kern(x)?.phase_changes), |d, v| kernel(d).phase_changes = v;
        kernel_mode_entered: u32 = |x| Some(kern(x)?.mode_entered), |d, v| kernel(d).mode_entered = v;
        kernel_peak_ratio: f64 = |x| Some(kern(x)?.peak_ratio), |d, v| kernel(d).peak_ratio = v;
        kernel_bbr_mode: u8 = |x| Some(kern(x)?.bbr?.mode), |d, v| kernel_bbr(d).mode = v;
        kernel_bbr_cycle_idx: u8 = |x| Some(kern(x)?.bbr?.cycle_idx), |d, v| kernel_bbr(d).cycle_idx = v;
        kernel_bbr_cycle_v3: bool = |x| Some(kern(x)?.bbr?.cycle_v3), |d, v| kernel_bbr(d).cycle_v3 = v;
        kernel_bbr_full_bw_reached: bool = |x| Some(kern(x)?.bbr?.full_bw_reached), |d, v| kernel_bbr(d).full_bw_reached = v;
        kernel_bbr_lt_use_bw: bool = |x| Some(kern(x)?.bbr?.lt_use_bw), |d, v| kernel_bbr(d).lt_use_bw = v;
        kernel_bbr_min_rtt_us: u32 = |x| kern(x)?.bbr?.min_rtt_us, |d, v| kernel_bbr(d).min_rtt_us = Some(v);
    }}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column of the catalog that names a recording column is one, and reads back as the
    /// value it was.
    #[test]
    fn the_catalogs_columns_are_recorded_and_read_back() {
        let v = bbrtop_core::testing::full_view();
        let row = Row { kind: Kind::Key, cookie: v.record.cookie, view: Some(v.clone()) };
        let batch = batch(1, 1_000, &[row]).unwrap();
        let back = decode(&batch).unwrap().pop().unwrap().into_view();
        for c in bbrtop_core::columns::ALL {
            let Some(name) = c.parquet else { continue };
            assert!(batch.schema().column_with_name(name).is_some(), "{}: no column {name}", c.key);
            assert_eq!(c.text(&back), c.text(&v), "{}", c.key);
        }
    }
}
