//! A chunk's segments: the files a recorder writes while the chunk is under way, so that a crash
//! or SIGKILL loses at most one segment's polls (`--record.segment`, 5 s by default) rather than
//! the chunk's. Segment `k` of chunk `<stem>` is `<stem>.part<k>.sockets.parquet` and
//! `<stem>.part<k>.polls.parquet`, each whole once renamed from `.tmp`, and read at once by bbrtop
//! and DuckDB (the same `*.sockets.parquet` glob). When the chunk closes its segments' rows go
//! into the chunk's two files (`splice`: a keyframe's row groups copied as they are, changes
//! encoded again together) and the segments are removed, so a recording holds two files per chunk
//! and at most one chunk's segments; a recorder that starts does the same for the segments a
//! killed one left.

use super::chunk;
use super::chunk::{POLLS_SUFFIX, SOCKETS_SUFFIX, TMP, put_in_place};
use super::format::{Meta, Pages};
use super::stream::Stream;
use super::{keyframe, polls, sockets};
use anyhow::Context;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

const PART: &str = ".part";

/// Segment `k` of the chunk named `stem`. Zero-padded, so that names sort as numbers do.
pub fn stem_of(stem: &str, k: usize) -> String {
    format!("{stem}{PART}{k:04}")
}

/// The chunk a segment's stem belongs to, or `None` for a chunk's own stem.
pub fn chunk_of(stem: &str) -> Option<&str> {
    part_of(stem).map(|(chunk, _)| chunk)
}

/// The chunk a segment's stem belongs to and the segment's number, or `None` for a chunk's own.
pub fn part_of(stem: &str) -> Option<(&str, usize)> {
    let (chunk, k) = stem.rsplit_once(PART)?;
    let valid = k.len() >= 4 && k.bytes().all(|b| b.is_ascii_digit());
    Some((chunk, k.parse().ok().filter(|_| valid)?))
}

/// Whether `stem` names a chunk or a segment as a recorder names them: what a recorder takes
/// for its own, the rest of a directory being someone else's.
pub fn is_own(stem: &str) -> bool {
    chunk::is_chunk_stem(part_of(stem).map_or(stem, |(chunk, _)| chunk))
}

/// Whether file `name` is one a recorder writes under its temporary name (`<stem><suffix>.tmp`).
pub fn is_own_tmp(name: &str) -> bool {
    let Some(file) = name.strip_suffix(TMP) else { return false };
    [POLLS_SUFFIX, SOCKETS_SUFFIX].iter().any(|s| file.strip_suffix(s).is_some_and(is_own))
}

/// Whether segment stem `stem` follows `before` (the stem read before it, by name), as a later
/// segment's changes must: a chunk's own stem, a chunk's first segment, or segment k after k-1.
/// Segments of a chunk carry the same keyframe time, so a missing one between two is seen only
/// by their numbers.
pub fn in_sequence(before: Option<&str>, stem: &str) -> bool {
    match part_of(stem) {
        None | Some((_, 0)) => true,
        Some((chunk, k)) => before == Some(stem_of(chunk, k - 1).as_str()),
    }
}

/// Makes segments `parts` (oldest first) the chunk `stem`: their rows, in order, in the chunk's
/// two files (the polls file renamed last, which marks the chunk whole), then removes them.
/// The chunk's bytes.
pub fn compact(dir: &Path, stem: &str, parts: &[String]) -> anyhow::Result<u64> {
    let Some(first) = parts.first() else { return Ok(0) };
    let mut bytes = 0;
    for (suffix, schema) in [(SOCKETS_SUFFIX, sockets::schema()), (POLLS_SUFFIX, polls::schema())] {
        let path = |s: &str| dir.join(format!("{s}{suffix}"));
        if parts.len() == 1 {
            // Renamed already, by a recorder killed between its two files.
            if !path(first).exists() && path(stem).exists() {
                continue;
            }
            std::fs::rename(path(first), path(stem))
                .with_context(|| format!("renaming {}", path(first).display()))?;
            bytes += std::fs::metadata(path(stem)).map_or(0, |m| m.len());
            continue;
        }
        let meta = read_meta(&path(first))?;
        let tmp = dir.join(format!("{stem}{suffix}{TMP}"));
        let out = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let paths: Vec<PathBuf> = parts.iter().map(|p| path(p)).collect();
        let file =
            splice(&paths, out, schema, &meta, COPIED).inspect_err(|_| drop(std::fs::remove_file(&tmp)))?;
        bytes += put_in_place(dir, stem, suffix, file)?;
    }
    remove(dir, parts);
    Ok(bytes)
}

/// Compressed row groups of at least this many rows (a keyframe's, which a poll writes out a
/// group at a time) are copied as they are; smaller ones and a later segment's (its changes, not
/// compressed) are decoded and encoded again together, so that a chunk of few changes keeps one
/// row group, and one footer (some 35 KB), rather than one a segment.
const COPIED: usize = chunk::ROWS_PER_GROUP;

/// A keyframe's row group of at least this many rows is copied too, whatever its size, so that
/// the next chunk's keyframe can copy it in turn (`keyframe.rs`); smaller ones are not worth a
/// footer of their own.
const KEY_COPIED: usize = chunk::ROWS_PER_SLICE;

/// Files `paths` as one Parquet file of `schema` written to `out`: their rows, in order. A
/// compressed row group of `copied` rows or more, or a keyframe's of `KEY_COPIED`, is copied as it
/// is, column chunk by column chunk, nothing decoded or encoded again: a chunk whose keyframe
/// holds 100k sockets closes in the time its bytes take to copy, where decoding and encoding them
/// again took some 0.3 s of CPU and an encoder's 8 bytes per row of each column (some 100 MB) at
/// once. Smaller ones are merged into row groups of up to `copied` rows, which bounds the
/// encoder's memory the same way.
pub(super) fn splice(
    paths: &[PathBuf],
    out: File,
    schema: Schema,
    meta: &Meta,
    copied: usize,
) -> anyhow::Result<File> {
    let mut w = Stream::new(BufWriter::new(out), schema.clone(), meta, Pages::Zstd)?;
    for p in paths {
        let what = || p.display().to_string();
        let file = File::open(p).with_context(|| format!("opening {}", what()))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file.try_clone()?)
            .with_context(|| format!("{}: not a readable Parquet file", what()))?;
        anyhow::ensure!(
            builder.schema().fields() == schema.fields(),
            "{}: not a segment of this table",
            what()
        );
        let groups = builder.metadata().row_groups().to_vec();
        for (i, rg) in groups.iter().enumerate() {
            // A later segment's pages are not compressed (`Pages::Plain`), whatever its size.
            let packed = rg.columns().iter().all(|c| c.compression() != Compression::UNCOMPRESSED);
            let rows = rg.num_rows() as usize;
            let key = rows >= KEY_COPIED && keyframe::keyframe_span(rg).is_some();
            if packed && (rows >= copied || key) {
                w.copy(&file, rg, None).with_context(|| format!("copying {}", what()))?;
                continue;
            }
            let rows = ParquetRecordBatchReaderBuilder::try_new(file.try_clone()?)?.with_row_groups(vec![i]);
            for batch in rows.build()? {
                w.write(&batch.with_context(|| format!("reading {}", what()))?)?;
                if w.rows_open() >= copied {
                    w.flush()?;
                }
            }
        }
    }
    w.finish()?.into_inner().context("finishing a chunk")
}

/// Segments are gone once the chunk is whole: polls files first, so none is left half a segment.
fn remove(dir: &Path, parts: &[String]) {
    for suffix in [POLLS_SUFFIX, SOCKETS_SUFFIX] {
        for p in parts {
            let _ = std::fs::remove_file(dir.join(format!("{p}{suffix}")));
        }
    }
}

pub(super) fn read_meta(path: &Path) -> anyhow::Result<Meta> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(f)
        .with_context(|| format!("{}: not a readable Parquet file", path.display()))?;
    Meta::from_key_values(b.metadata().file_metadata().key_value_metadata(), &path.display().to_string())
}

/// What a killed recorder left in `dir` (its `.tmp` files removed before): each chunk's whole
/// segments become the chunk, or are removed where the chunk was already made of them. A
/// segment that does not compact (damaged) is left for the reader to skip and name.
pub fn recover(dir: &Path) -> anyhow::Result<()> {
    let mut chunks: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(POLLS_SUFFIX) else { continue };
        if let Some(chunk) = chunk_of(stem) {
            chunks.entry(chunk.to_string()).or_default().push(stem.to_string());
        }
    }
    for (chunk, mut parts) in chunks {
        parts.sort();
        // Segments after a missing one are changes against sockets no file holds: gone.
        let mut before = None;
        let whole = parts.iter().take_while(|p| in_sequence(before.replace(p.as_str()), p)).count();
        if whole < parts.len() {
            tracing::warn!(chunk, lost = parts.len() - whole, "segments after a missing one are dropped");
            remove(dir, &parts[whole..]);
        }
        if dir.join(format!("{chunk}{POLLS_SUFFIX}")).exists() {
            remove(dir, &parts[..whole]);
        } else if let Err(e) = compact(dir, &chunk, &parts[..whole]) {
            tracing::warn!(chunk, "the segments a recorder left did not compact: {e:#}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn segment_names_sort_after_their_chunk_and_in_order() {
        let c = "20261123T171000Z-42";
        assert_eq!(chunk_of(&stem_of(c, 3)), Some(c));
        assert_eq!(chunk_of(&stem_of("20261123T171000Z-42.1", 12)), Some("20261123T171000Z-42.1"));
        assert_eq!(chunk_of(c), None);
        assert_eq!(chunk_of("x.partly"), None);
        assert!(c < stem_of(c, 0).as_str() && stem_of(c, 9) < stem_of(c, 10));
        assert_eq!(part_of(&stem_of(c, 12)), Some((c, 12)));
    }

    #[test]
    fn only_names_a_recorder_gives_are_its_own() {
        let c = "20261123T171000Z-42";
        for own in [c, "20261123T171000Z-42.1", &stem_of(c, 3), &stem_of("20261123T171000Z-7.2", 0)] {
            assert!(is_own(own), "{own}");
        }
        for theirs in
            ["notes", "20261123T171000Z", "20261123T171000Z-", "2026112xT171000Z-4", "ü0261123T171000Z-4"]
        {
            assert!(!is_own(theirs), "{theirs}");
        }
        assert!(is_own_tmp(&format!("{}{POLLS_SUFFIX}{TMP}", stem_of(c, 1))));
        assert!(is_own_tmp(&format!("{c}{SOCKETS_SUFFIX}{TMP}")), "a chunk being compacted");
        for theirs in [
            "editor.tmp",
            &format!("notes{POLLS_SUFFIX}{TMP}"),
            &format!("{c}.tmp"),
            &format!("{c}{POLLS_SUFFIX}"),
        ] {
            assert!(!is_own_tmp(theirs), "{theirs}");
        }
    }

    #[test]
    fn files_not_of_a_recording_are_not_spliced() {
        let dir = tempfile::tempdir().unwrap();
        let c = "20261123T171000Z-42";
        let schema = arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "x",
            arrow_schema::DataType::Int64,
            true,
        )]);
        let batch = arrow_array::RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![Arc::new(arrow_array::Int64Array::from(vec![1, 2]))],
        )
        .unwrap();
        let parts = [stem_of(c, 0), stem_of(c, 1)];
        for p in &parts {
            for suffix in [SOCKETS_SUFFIX, POLLS_SUFFIX] {
                let f = File::create(dir.path().join(format!("{p}{suffix}"))).unwrap();
                let mut w = parquet::arrow::ArrowWriter::try_new(f, Arc::new(schema.clone()), None).unwrap();
                w.write(&batch).unwrap();
                w.close().unwrap();
            }
        }
        let e = compact(dir.path(), c, &parts).unwrap_err();
        assert!(format!("{e:#}").contains("not a bbrtop recording"), "{e:#}");
        assert!(dir.path().join(format!("{}{POLLS_SUFFIX}", parts[1])).exists(), "the segments are kept");
        assert!(!dir.path().join(format!("{c}{SOCKETS_SUFFIX}{TMP}")).exists(), "nothing half written");
    }

    #[test]
    fn a_segment_follows_the_one_numbered_before_it() {
        let c = "20261123T171000Z-42";
        let (p0, p1, p2) = (stem_of(c, 0), stem_of(c, 1), stem_of(c, 2));
        assert!(in_sequence(None, c) && in_sequence(Some("older"), &p0));
        assert!(in_sequence(Some(&p0), &p1) && in_sequence(Some(&p1), &p2));
        assert!(!in_sequence(Some(&p0), &p2), "segment 1 is missing");
        assert!(!in_sequence(None, &p1) && !in_sequence(Some(c), &p1));
    }
}
