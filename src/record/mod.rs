//! Recordings: every poll's state (sockets with derived values, per-cc aggregates, collector
//! status, alerts, closed flows, totals) kept on disk as Parquet, which DuckDB, pandas and Spark
//! read without bbrtop, and read back by replay, compare and the remote TUI.
//!
//! A recording is a directory of chunks; a chunk is the polls of one stretch of time (a minute by
//! default) in two files, `<start>.sockets.parquet` (one row per socket per poll, `sockets.rs`)
//! and `<start>.polls.parquet` (one row per poll, `polls.rs`). Both are written under a temporary
//! name and renamed when whole, the polls file last, so a crash loses at most the chunk being
//! written (`writer.rs`). `frame.rs` puts one poll in one body, for the remote TUI.

mod chunk;
mod columns;
pub mod frame;
pub mod hindsight;
pub mod polls;
pub mod reader;
mod rebuild;
pub mod sockets;
pub mod writer;

pub use hindsight::{Hindsight, HindsightOptions};
pub use reader::{PollIndex, Recording};
pub use writer::{RecordOptions, Recorder};

#[cfg(test)]
pub(crate) mod tests;
