//! bbrtop's collectors: kernel bytes in, plain values out, handed to the engine through
//! `bbrtop_core::seam` and nothing else (this crate does not depend on the engine, so the
//! compiler keeps it so). They never sort, filter for display, or format.
//!
//! - [`inet_diag`]: the netlink dump of one namespace's sockets ([`InetDiag`]), over a
//!   [`socket::DiagSocket`];
//! - [`bpf`]: the eBPF programs (tcp_probe, socket close) and the walk of the sockets that moved
//!   in every namespace;
//! - [`attrib`]: namespace inodes and cgroup ids become names, cgroup paths and pods;
//! - [`host`]: the host's facts (which BBR, its BTF); [`netns`], [`caps`]: namespaces and
//!   capabilities, which collectors and the lab both need.

pub mod attrib;
pub mod bpf;
pub mod caps;
pub mod error;
pub mod every;
pub mod files;
#[cfg(test)]
mod fuzz;
pub mod host;
pub mod inet_diag;
pub mod netns;
pub mod socket;

pub use error::CollectError;
pub use every::{Every, Reconcile};
pub use inet_diag::InetDiag;

#[cfg(test)]
mod tests;
