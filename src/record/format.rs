//! A recording's files: the format's version and the metadata every file carries (`Meta`), and
//! how a Parquet stream of one is encoded (`writer`: zstd or not, no dictionaries, statistics
//! per column chunk, deltas for cookies and inodes, prefixes for addresses).

use anyhow::Context;
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::system::SystemInfo;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use std::io::Write;
use std::sync::Arc;

/// The recording format's version, in every file's metadata: 2 stores a socket's row only when
/// it changed (`sockets.rs`).
pub const FORMAT: &str = "2";
/// The formats this bbrtop reads: 1 had every socket's row at every poll.
const READS: [&str; 2] = ["1", FORMAT];
pub const KEY_FORMAT: &str = "bbrtop.format";
pub const KEY_SYSTEM: &str = "bbrtop.system";
pub const KEY_RULE: &str = "bbrtop.rule";

/// What every file of a recording says of itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta {
    pub system: SystemInfo,
    pub rule: RuleConfig,
}

impl Meta {
    fn key_values(&self) -> Vec<KeyValue> {
        vec![
            KeyValue::new(KEY_FORMAT.into(), FORMAT.to_string()),
            KeyValue::new(KEY_SYSTEM.into(), serde_json::to_string(&self.system).unwrap_or_default()),
            KeyValue::new(KEY_RULE.into(), serde_json::to_string(&self.rule).unwrap_or_default()),
        ]
    }

    /// Reads the metadata a file carries; `what` names the file in errors.
    pub fn from_key_values(kv: Option<&Vec<KeyValue>>, what: &str) -> anyhow::Result<Meta> {
        let get = |k: &str| kv.and_then(|kv| kv.iter().find(|e| e.key == k)).and_then(|e| e.value.clone());
        match get(KEY_FORMAT).as_deref() {
            Some(v) if READS.contains(&v) => {}
            Some(v) => anyhow::bail!("{what}: a recording of format {v}; this bbrtop reads format {FORMAT}"),
            None => anyhow::bail!("{what}: a Parquet file, but not a bbrtop recording"),
        }
        let system = serde_json::from_str(&get(KEY_SYSTEM).unwrap_or_default())
            .with_context(|| format!("{what}: unreadable {KEY_SYSTEM}"))?;
        let rule = serde_json::from_str(&get(KEY_RULE).unwrap_or_default())
            .with_context(|| format!("{what}: unreadable {KEY_RULE}"))?;
        Ok(Meta { system, rule })
    }
}

/// Rows in one row group, at most, where a writer does not flush sooner (`ROWS_PER_GROUP`).
const ROW_GROUP_ROWS: usize = 64 << 20;

/// Integer columns that differ from socket to socket and rise with the cookie, the rows' order
/// (inodes, roughly): their deltas are small.
const DELTA: [&str; 2] = ["cookie", "inode"];

/// Address columns, different in every row but sharing their prefix with the row before
/// (`127.0.0.1:4`...): stored as the prefix's length and the rest.
const PREFIXED: [&str; 2] = ["local", "peer"];

/// How a stream's pages are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    Zstd,
    /// Not at all: for a chunk's later segments, whose rows compaction decodes and encodes again
    /// (`segments.rs`). Each zstd column chunk holds a compressor and a decompressor while it is
    /// written or read (the decompressor alone 48 KB; some 190 columns a row group), which a
    /// segment of a few changed rows paid for a few KB saved: beside 10k idle sockets an exporter
    /// whose heap was trimmed went from 64 back to 95 MB within a minute of such segments.
    Plain,
}

/// A Parquet stream of `schema` into `out`.
///
/// Without dictionaries: a keyframe has a row per socket, so a dictionary would hold each value
/// once and an index beside it, and each column's dictionary keeps a hash table (some 36 KB, 190
/// columns a row group) while it encodes. Beside 10k idle sockets the exporter's peak (VmHWM)
/// went from 59 to 51 MB over 3 minutes, for a keyframe 6% larger.
///
/// Pages keep Parquet's default of 20,000 rows, so a row group's pages are compressed one column
/// at a time as it is written: pages that fill sooner hold a zstd context per column at once
/// (pages of 1024 rows, measured at 10k sockets, raised a keyframe's peak from 15 to 26 MB).
pub fn writer<W: Write + Send>(
    out: W,
    schema: Schema,
    meta: &Meta,
    pages: Pages,
) -> anyhow::Result<ArrowWriter<W>> {
    let compression = match pages {
        Pages::Zstd => Compression::ZSTD(ZstdLevel::try_new(3)?),
        Pages::Plain => Compression::UNCOMPRESSED,
    };
    let mut props = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        // Statistics per column chunk (the reader checks a chunk's times by them), not per page:
        // page indexes would double the footer, a chunk's fixed cost, for no reader.
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_dictionary_enabled(false)
        .set_key_value_metadata(Some(meta.key_values()));
    let encodings = DELTA.map(|c| (c, Encoding::DELTA_BINARY_PACKED)).into_iter();
    for (col, encoding) in encodings.chain(PREFIXED.map(|c| (c, Encoding::DELTA_BYTE_ARRAY))) {
        if schema.field_with_name(col).is_err() {
            continue;
        }
        props = props.set_column_encoding(ColumnPath::from(col), encoding);
    }
    Ok(ArrowWriter::try_new(out, Arc::new(schema), Some(props.build()))?)
}

/// One batch, written.
pub fn write(w: &mut ArrowWriter<impl Write + Send>, b: &RecordBatch) -> anyhow::Result<()> {
    w.write(b).context("writing Parquet")
}
