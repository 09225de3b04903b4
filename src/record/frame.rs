//! One poll on the wire (the remote TUI's `--connect`, and what `export` serves it): the same two
//! Parquet tables as a recording's chunk, in one body. Framing: the magic line, then each file
//! as a little-endian u64 length and its bytes, sockets first.
//!
//! A frame is a keyframe (every socket's row), or the changes since a poll the reader holds (a
//! reader asks `?since=SEQ`, the poll it decoded last): rows for the sockets that came, moved or
//! went, as a recording's later polls have, and its `key_at_ms` that poll's time, which the
//! reader checks before it applies them. Beside idle sockets a frame of changes is a few KB where
//! a keyframe is every socket.

use super::chunk;
use super::format::{Meta, Pages};
use super::{polls, rebuild, sockets};
use anyhow::Context;
use bbrtop_core::snapshot::{Snapshot, Sockets};
use bbrtop_core::system::SystemInfo;
use bbrtop_core::units::unix_ms;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// Where an exporter serves its frames, behind `--web.enable-api` and its auth.
pub const PATH: &str = "/api/v1/frame";

/// The body's first bytes.
pub const MAGIC: &[u8] = b"bbrtop-frame 1\n";
/// The media type of a frame.
pub const CONTENT_TYPE: &str = "application/vnd.bbrtop.frame";

/// `snap` (with all of its closed flows) and the host's facts, as a frame: a chunk of one poll,
/// a keyframe that stands alone without `since`, else the changes since that poll (one the
/// reader holds).
pub fn encode(snap: &Snapshot, sys: &SystemInfo, since: Option<&Snapshot>) -> anyhow::Result<Vec<u8>> {
    let meta = Meta { system: sys.clone(), rule: snap.rule };
    let mut pair = match since {
        None => chunk::Pair::new(Vec::new(), Vec::new(), meta, snap.taken_at)?,
        Some(base) => {
            let carry = chunk::Carry::since(base.sockets.clone(), unix_ms(base.taken_at));
            chunk::Pair::resume(Vec::new(), Vec::new(), meta, snap.taken_at, carry, Pages::Zstd)?
        }
    };
    pair.write(snap, &snap.closed)?;
    let (socks, poll) = pair.finish()?;
    let mut out = MAGIC.to_vec();
    push(&mut out, &socks);
    push(&mut out, &poll);
    Ok(out)
}

fn push(out: &mut Vec<u8>, part: &[u8]) {
    out.extend_from_slice(&(part.len() as u64).to_le_bytes());
    out.extend_from_slice(part);
}

/// A frame back into the snapshot it was (history empty) and the host's facts; a frame of
/// changes is applied to `held`, the poll it was asked against, which it must name.
pub fn decode(body: &[u8], held: Option<&Snapshot>) -> anyhow::Result<(Snapshot, SystemInfo)> {
    // Parquet's reader panics on some damaged pages: a bad frame is an error, not the end.
    crate::contained::contain("the frame", || decode_parts(body, held))
}

fn decode_parts(body: &[u8], held: Option<&Snapshot>) -> anyhow::Result<(Snapshot, SystemInfo)> {
    let rest = body.strip_prefix(MAGIC).context("not a bbrtop frame (wrong magic)")?;
    let (socks, rest) = part(rest)?;
    let (poll, rest) = part(rest)?;
    anyhow::ensure!(rest.is_empty(), "a frame with {} bytes past its end", rest.len());
    let b = ParquetRecordBatchReaderBuilder::try_new(Bytes::copy_from_slice(socks))
        .context("the frame's sockets")?;
    let meta = Meta::from_key_values(b.metadata().file_metadata().key_value_metadata(), "the frame")?;
    let mut rows = Vec::new();
    for batch in b.build()? {
        rows.extend(sockets::decode(&batch?)?);
    }
    let socks = rows;
    let b =
        ParquetRecordBatchReaderBuilder::try_new(Bytes::copy_from_slice(poll)).context("the frame's poll")?;
    let mut rows = Vec::new();
    for batch in b.build()? {
        rows.extend(polls::read(&batch?)?);
    }
    anyhow::ensure!(rows.len() == 1, "a frame of {} polls", rows.len());
    let row = rows.pop().expect("one");
    let base = match held {
        _ if row.is_key() => None,
        Some(h) if unix_ms(h.taken_at) == row.key_at_ms => Some(&h.sockets),
        _ => anyhow::bail!("a frame of changes since a poll this reader does not hold"),
    };
    anyhow::ensure!(
        row.rows == socks.len() as u64,
        "a frame of {} sockets' rows, not {}",
        socks.len(),
        row.rows
    );
    let empty = Sockets::default();
    let sockets = rebuild::apply(base.unwrap_or(&empty), base.is_none(), socks, row.view_at(meta.rule));
    Ok((row.into_snapshot(sockets, meta.rule), meta.system))
}

/// A length-prefixed part, and what follows it.
fn part(b: &[u8]) -> anyhow::Result<(&[u8], &[u8])> {
    let (len, rest) = b.split_first_chunk::<8>().context("a frame cut short")?;
    let len = usize::try_from(u64::from_le_bytes(*len)).context("a frame part too long")?;
    anyhow::ensure!(len <= rest.len(), "a frame cut short ({len} bytes announced, {} there)", rest.len());
    Ok(rest.split_at(len))
}
