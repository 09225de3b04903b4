//! `bbrtop --connect URL`: the live state of a remote `bbrtop export`, read from its frame
//! endpoint every poll (through its TLS and basic auth) and published as snapshots, so the TUI
//! shows another host as it shows this one. A source of snapshots, like the poller: it sits
//! beside `runtime`, below the consumers (the exporter serves what this reads).

pub mod client;
pub mod poll;
pub mod target;

pub use crate::record::frame::PATH as FRAME_PATH;
