//! A Parquet file written a row group at a time, where a row group is either rows encoded here or
//! one copied from another file as its bytes are, its leading columns (the poll: `seq`, `at_ms`)
//! optionally encoded anew. What a chunk's sockets table (a keyframe reusing the previous chunk's
//! row groups of sockets that did not move, `keyframe.rs`) and a chunk's compaction (`segments.rs`)
//! both write.

use super::format::{self, Meta, Pages};
use anyhow::Context;
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::arrow_writer::{ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::reader::ChunkReader;
use parquet::file::writer::SerializedFileWriter;
use std::io::Write;
use std::sync::Arc;

pub struct Stream<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    schema: Arc<Schema>,
    /// The row group being encoded: a writer per column, and its rows so far.
    open: Option<(Vec<ArrowColumnWriter>, usize)>,
    /// Writers of the leading columns alone, for a copied row group stamped anew (made when first
    /// needed: two columns' writers, not every column's).
    stamp: Option<ArrowRowGroupWriterFactory>,
    meta: Meta,
    pages: Pages,
}

impl<W: Write + Send> Stream<W> {
    pub fn new(out: W, schema: Schema, meta: &Meta, pages: Pages) -> anyhow::Result<Stream<W>> {
        let (file, factory) = format::writer(out, schema.clone(), meta, pages)?.into_serialized_writer()?;
        Ok(Stream {
            file,
            factory,
            schema: Arc::new(schema),
            open: None,
            stamp: None,
            meta: meta.clone(),
            pages,
        })
    }

    /// Encodes `batch` into the row group under way (one is started if none is).
    pub fn write(&mut self, batch: &RecordBatch) -> anyhow::Result<()> {
        let (writers, rows) = match &mut self.open {
            Some(o) => o,
            None => {
                let writers = self.factory.create_column_writers(self.file.flushed_row_groups().len())?;
                self.open.insert((writers, 0))
            }
        };
        let mut each = writers.iter_mut();
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            for leaf in compute_leaves(field, column)? {
                each.next().context("a column without its writer")?.write(&leaf)?;
            }
        }
        *rows += batch.num_rows();
        Ok(())
    }

    /// Rows encoded into the row group under way.
    pub fn rows_open(&self) -> usize {
        self.open.as_ref().map_or(0, |o| o.1)
    }

    /// Writes out the row group under way, if any.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        let Some((writers, _)) = self.open.take() else { return Ok(()) };
        let mut out = self.file.next_row_group()?;
        for w in writers {
            w.close()?.append_to_row_group(&mut out)?;
        }
        out.close()?;
        Ok(())
    }

    /// Row group `rg` of `from` (a file of the same schema), copied as its bytes are: nothing
    /// decoded or encoded. With `stamp`, its leading columns are `stamp`'s instead (as many as it
    /// has, with as many rows as `rg`), encoded here. The row group under way is written out first.
    pub fn copy<R: ChunkReader>(
        &mut self,
        from: &R,
        rg: &RowGroupMetaData,
        stamp: Option<&RecordBatch>,
    ) -> anyhow::Result<()> {
        self.flush()?;
        let stamped = match stamp {
            Some(b) => {
                anyhow::ensure!(b.num_rows() as i64 == rg.num_rows(), "a stamp of another row group's rows");
                self.stamped(b)?
            }
            None => Vec::new(),
        };
        let skip = stamped.len();
        let mut out = self.file.next_row_group()?;
        for c in stamped {
            c.close()?.append_to_row_group(&mut out)?;
        }
        for column in rg.columns().iter().skip(skip) {
            let close = ColumnCloseResult {
                bytes_written: column.compressed_size() as u64,
                rows_written: rg.num_rows() as u64,
                metadata: column.clone(),
                bloom_filter: None,
                column_index: None,
                offset_index: None,
            };
            out.append_column(from, close)?;
        }
        out.close()?;
        Ok(())
    }

    /// `batch` (the schema's leading columns) encoded by writers of those columns alone.
    fn stamped(&mut self, batch: &RecordBatch) -> anyhow::Result<Vec<ArrowColumnWriter>> {
        let fields = batch.schema().fields().clone();
        anyhow::ensure!(
            fields.iter().zip(self.schema.fields()).all(|(a, b)| a == b)
                && fields.len() < self.schema.fields().len(),
            "a stamp that is not the leading columns"
        );
        let factory = match &self.stamp {
            Some(f) => f,
            None => {
                let sink =
                    format::writer(std::io::sink(), Schema::new(fields.clone()), &self.meta, self.pages)?;
                self.stamp.insert(sink.into_serialized_writer()?.1)
            }
        };
        let mut writers = factory.create_column_writers(0)?;
        for ((field, column), w) in fields.iter().zip(batch.columns()).zip(writers.iter_mut()) {
            for leaf in compute_leaves(field, column)? {
                w.write(&leaf)?;
            }
        }
        Ok(writers)
    }

    /// Memory the row group under way holds.
    pub fn memory_size(&self) -> usize {
        self.open.as_ref().map_or(0, |(w, _)| w.iter().map(ArrowColumnWriter::memory_size).sum())
    }

    /// Bytes written out so far.
    pub fn bytes_written(&self) -> usize {
        self.file.bytes_written()
    }

    /// The file, whole: the row group under way written out, then the footer.
    pub fn finish(mut self) -> anyhow::Result<W> {
        self.flush()?;
        self.file.into_inner().context("finishing a Parquet file")
    }
}
