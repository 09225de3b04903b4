//! bbrtop: per-socket TCP congestion-control monitor.
//!
//! The pipeline (ARCHITECTURE.md): collectors read the kernel and feed the engine through one
//! seam ([`engine::sink`]); the [`engine::Engine`] is the single writer and publishes immutable
//! [`engine::snapshot::Snapshot`]s; consumers (table, JSON, TUI, exporter, alerts) only read
//! snapshots; [`cli`] alone wires them together. ARCHITECTURE.md lists the layers and the one
//! direction imports go.
//!
//! Below [`cli`] nothing prints to stderr: logs go through [`log`]'s one sink (the lint below
//! checks it; `cli` alone writes its one-line failures there).
#![deny(clippy::print_stderr)]

pub mod attrib;
pub mod bpf;
pub mod btf;
pub mod caps;
pub mod cli;
pub mod collect;
pub mod compare;
pub mod contained;
pub mod doctor;
pub mod engine;
pub mod export;
pub mod files;
pub mod filter;
#[cfg(test)]
mod fuzz;
pub mod lab;
pub mod log;
pub mod mem;
pub mod model;
pub mod netns;
pub mod output;
pub mod peer_groups;
pub mod record;
pub mod remote;
pub mod replay;
pub mod rule;
pub mod runtime;
pub mod system;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod tui;
pub mod units;
pub mod wire;
