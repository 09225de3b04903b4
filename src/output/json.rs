//! JSON for `snapshot --json` and `/api/sockets`, and NDJSON lines for `watch`.
//!
//! Field names are stable and carry their units (`srtt_us`, `pacing_rate_bytes_per_sec`). A field
//! the kernel did not send is absent, never zero. The README documents every field.

use crate::engine::snapshot::{CcAggregate, CollectorStatus, Snapshot, SocketView};
use serde::Serialize;
use std::io::Write;

/// The document `snapshot --json` prints.
#[derive(Serialize)]
pub struct SnapshotDoc<'a> {
    #[serde(with = "crate::output::serde_time")]
    pub taken_at: std::time::SystemTime,
    pub sockets: Vec<&'a SocketView>,
    pub by_cc: &'a [CcAggregate],
    pub collectors: &'a [CollectorStatus],
}

impl<'a> SnapshotDoc<'a> {
    pub fn new(snap: &'a Snapshot, sockets: Vec<&'a SocketView>) -> Self {
        SnapshotDoc { taken_at: snap.taken_at, sockets, by_cc: &snap.by_cc, collectors: &snap.collectors }
    }
}

/// One `watch --ndjson` line: a socket at one poll.
#[derive(Serialize)]
pub struct SocketLine<'a> {
    #[serde(with = "crate::output::serde_time")]
    pub ts: std::time::SystemTime,
    pub seq: u64,
    #[serde(flatten)]
    pub socket: &'a SocketView,
}

/// Writes one JSON value and a newline.
pub fn write_line<W: Write, T: Serialize>(w: &mut W, v: &T) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, v).map_err(std::io::Error::other)?;
    w.write_all(b"\n")
}
