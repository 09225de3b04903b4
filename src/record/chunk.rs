//! One chunk's two Parquet streams: how they are written (zstd, one row group per chunk so that
//! each socket's values sit in one dictionary and repeat in the same place poll after poll) and
//! the metadata every file carries.

use crate::rule::RuleConfig;
use crate::system::SystemInfo;
use anyhow::Context;
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::io::Write;
use std::sync::Arc;

/// The recording format's version, in every file's metadata.
pub const FORMAT: &str = "1";
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
            Some(FORMAT) => {}
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

/// Rows in one row group, at most: a chunk is one row group unless it is huge.
const ROW_GROUP_ROWS: usize = 64 << 20;

/// A Parquet stream of `schema` into `out`.
pub fn writer<W: Write + Send>(out: W, schema: Schema, meta: &Meta) -> anyhow::Result<ArrowWriter<W>> {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        // Pages end by size only (1 MiB), not after the default 20,000 rows: a page then spans
        // many polls, and zstd finds an idle socket's values where they were a poll before.
        .set_data_page_row_count_limit(usize::MAX)
        .set_key_value_metadata(Some(meta.key_values()))
        .build();
    Ok(ArrowWriter::try_new(out, Arc::new(schema), Some(props))?)
}

/// One batch, written.
pub fn write(w: &mut ArrowWriter<impl Write + Send>, b: &RecordBatch) -> anyhow::Result<()> {
    w.write(b).context("writing Parquet")
}
