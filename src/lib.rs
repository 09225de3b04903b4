//! bbrtop: per-socket TCP congestion-control monitor.
//!
//! The pipeline (ARCHITECTURE.md): collectors read the kernel and feed the engine through one
//! seam (`bbrtop_core::seam`); the engine (`bbrtop_engine::Engine`) is the single writer and
//! publishes immutable snapshots (`bbrtop_core::snapshot`); consumers (table, JSON, TUI,
//! exporter, alerts) only read snapshots; [`cli`] alone wires them together. ARCHITECTURE.md lists the layers and the one
//! direction imports go.
//!
//! Below [`cli`] nothing prints to stderr: logs go through [`log`]'s one sink (the lint below
//! checks it; `cli` alone writes its one-line failures there).
#![deny(clippy::print_stderr)]

pub mod cli;
pub mod compare;
pub mod contained;
pub mod doctor;
pub mod experiment;
pub mod export;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod generated_docs;
pub mod lab;
pub mod latest;
pub mod log;
pub mod mem;
pub mod output;
pub mod plot;
pub mod record;
pub mod remote;
pub mod replay;
pub mod runtime;
pub mod worker;

pub mod tui;
