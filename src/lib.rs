//! bbrtop: per-socket TCP congestion-control monitor.
//!
//! The pipeline (see DESIGN.md): collectors turn kernel bytes into [`engine::Update`]s; the
//! [`engine::Engine`] is the single writer and publishes immutable [`engine::snapshot::Snapshot`]s;
//! consumers (table, JSON, TUI, exporter, alerts) only read snapshots.

pub mod bpf;
pub mod caps;
pub mod cli;
pub mod collect;
pub mod doctor;
pub mod engine;
pub mod export;
pub mod filter;
pub mod lab;
pub mod mem;
pub mod model;
pub mod netns;
pub mod output;
pub mod rule;
pub mod runtime;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod tui;
pub mod units;
pub mod wire;
