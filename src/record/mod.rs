//! Recordings: every poll's state (sockets with derived values, per-cc aggregates, collector
//! status, alerts, closed flows, totals) kept on disk as Parquet, which DuckDB, pandas and Spark
//! read without bbrtop, and read back by replay, compare and the remote TUI.
//!
//! A recording is a directory of chunks; a chunk is the polls of one stretch of time (a minute by
//! default) in two files, `<start>.sockets.parquet` (a socket's row at each poll it changed,
//! after a keyframe of every socket's at the chunk's start: `sockets.rs`) and
//! `<start>.polls.parquet` (one row per poll, `polls.rs`). The chunk under way is written as
//! segments of a few seconds (`segments.rs`), each renamed from `.tmp` when whole, so a crash
//! loses at most the segment being written (`writer.rs`). `rebuild.rs` turns rows back into each
//! poll's sockets; `frame.rs` puts one poll in one body, for the remote TUI. `layout.rs` says
//! where chunks sit: in the directory, or in Hive-style `host=NAME/date=YYYY-MM-DD/` partitions
//! that a fleet's recordings read through as one table.

mod chunk;
mod columns;
mod format;
pub mod frame;
pub mod glob;
pub mod hindsight;
mod keyframe;
pub mod layout;
pub mod polls;
pub mod reader;
mod rebuild;
mod segments;
pub mod sockets;
mod stream;
pub mod writer;

pub use hindsight::{Hindsight, HindsightOptions, chunk_length as hindsight_chunk};
pub use layout::Layout;
pub use reader::{PollIndex, Recording};
pub use writer::{RecordOptions, Recorder};

#[cfg(test)]
pub(crate) mod tests;
