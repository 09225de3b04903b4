//! The `polls` table: one row per poll. The poll's small, nested state (per-cc aggregates,
//! collector status, alerts, closed flows, counts per cc and peer group) rides in JSON text
//! columns, which DuckDB reads with its json functions (`from_json`, `->>`), in the same shapes
//! as `bbrtop snapshot --json` and `/api`.

use super::columns::table;
use arrow_array::RecordBatch;
use bbrtop_core::snapshot::CcTotals;
use bbrtop_core::snapshot::{AlertView, CcAggregate, CollectorStatus, Snapshot, Sockets, ViewAt};
use bbrtop_core::units::{from_unix_ms, unix_ms};
use bbrtop_core::{model::ClosedFlow, snapshot::ClosedAggregate};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// One poll's row: the snapshot, which of its closed flows to write (a recording writes each
/// flow once, at the first poll that lists it; a frame sends them all), how many rows it has in
/// the sockets table, and the time of the keyframe its sockets are rebuilt from.
pub struct Poll<'a> {
    pub snap: &'a Snapshot,
    pub closed: &'a [ClosedFlow],
    pub rows: u64,
    pub key_at_ms: i64,
}

/// A poll read back: everything of its snapshot but the sockets and the rule.
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    pub seq: u64,
    pub at_ms: i64,
    /// Live sockets.
    pub sockets: u64,
    /// Its rows in the sockets table (format 1: one per live socket).
    pub rows: u64,
    /// The time of the keyframe its sockets are rebuilt from (format 1: its own).
    pub key_at_ms: i64,
    pub by_cc: Vec<CcAggregate>,
    pub collectors: Vec<CollectorStatus>,
    pub alerts: Vec<AlertView>,
    pub closed: Vec<ClosedFlow>,
    pub closed_by_cc: Vec<ClosedAggregate>,
    pub totals: Vec<CcTotals>,
    pub inflation_onsets_total: Vec<(String, u64)>,
    /// A JSON column that did not read (a file of another version): named, not fatal.
    pub unreadable: Vec<&'static str>,
}

impl Decoded {
    /// Whether its sockets are all in its own rows.
    pub fn is_key(&self) -> bool {
        self.key_at_ms == self.at_ms
    }

    /// What its sockets are viewed as of (with the recording's rule).
    pub fn view_at(&self, rule: bbrtop_core::rule::RuleConfig) -> ViewAt {
        ViewAt { at_ms: self.at_ms, rule, ..Default::default() }
    }

    /// The snapshot this poll was, with `sockets` (made for [`Decoded::view_at`]) and the rule.
    pub fn into_snapshot(self, sockets: Sockets, rule: bbrtop_core::rule::RuleConfig) -> Snapshot {
        Snapshot {
            seq: self.seq,
            taken_at: from_unix_ms(self.at_ms),
            sockets,
            by_cc: self.by_cc,
            alerts: self.alerts,
            collectors: self.collectors,
            inflation_onsets_total: self.inflation_onsets_total,
            rule,
            closed: self.closed,
            closed_by_cc: self.closed_by_cc,
            totals: self.totals,
        }
    }
}

fn json<T: serde::Serialize + ?Sized>(v: &T) -> Option<String> {
    serde_json::to_string(v).ok()
}

fn parse<T: DeserializeOwned>(d: &mut Decoded, name: &'static str, s: &str) -> Option<T> {
    let v = serde_json::from_str(s).ok();
    if v.is_none() {
        d.unreadable.push(name);
    }
    v
}

table! { <'p> Poll<'p> => Decoded {
    seq: u64 = |p| Some(p.snap.seq), |d, v| d.seq = v;
    at_ms: i64 = |p| Some(unix_ms(p.snap.taken_at)), |d, v| d.at_ms = v;
    sockets: u64 = |p| Some(p.snap.sockets.len() as u64), |d, v| d.sockets = v;
    rows: u64 = |p| Some(p.rows), |d, v| d.rows = v;
    key_at_ms: i64 = |p| Some(p.key_at_ms), |d, v| d.key_at_ms = v;
    by_cc: String = |p| json(&p.snap.by_cc), |d, v| d.by_cc = parse(d, "by_cc", &v).unwrap_or_default();
    collectors: String = |p| json(&p.snap.collectors), |d, v| d.collectors = parse(d, "collectors", &v).unwrap_or_default();
    alerts: String = |p| json(&p.snap.alerts), |d, v| d.alerts = parse(d, "alerts", &v).unwrap_or_default();
    closed: String = |p| json(p.closed), |d, v| d.closed = parse(d, "closed", &v).unwrap_or_default();
    closed_by_cc: String = |p| json(&p.snap.closed_by_cc), |d, v| d.closed_by_cc = parse(d, "closed_by_cc", &v).unwrap_or_default();
    totals: String = |p| json(&p.snap.totals), |d, v| d.totals = parse(d, "totals", &v).unwrap_or_default();
    inflation_onsets_total: String = |p| json(&p.snap.inflation_onsets_total), |d, v| d.inflation_onsets_total = parse(d, "inflation_onsets_total", &v).unwrap_or_default();
}}

/// Rows of polls as a batch.
pub fn batch(polls: &[Poll<'_>]) -> anyhow::Result<RecordBatch> {
    Ok(RecordBatch::try_new(Arc::new(schema()), encode(polls.iter(), polls.len()))?)
}

/// Every row of a `polls` batch.
pub fn read(batch: &RecordBatch) -> anyhow::Result<Vec<Decoded>> {
    let mut out = vec![Decoded::default(); batch.num_rows()];
    decode(batch, &mut out)?;
    // Format 1 has neither column: a row per live socket, every poll a keyframe.
    if batch.column_by_name("key_at_ms").is_none() {
        out.iter_mut().for_each(|d| (d.rows, d.key_at_ms) = (d.sockets, d.at_ms));
    }
    Ok(out)
}
