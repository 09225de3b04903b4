//! bbrtop's pure core: what the kernel says about a TCP socket, decoded, and the rules bbrtop
//! judges it by. Nothing here opens a socket, reads a file or starts a thread.

pub mod btf;
pub mod columns;
pub mod filter;
#[cfg(test)]
mod fuzz;
pub mod model;
pub mod peer_groups;
pub mod rule;
pub mod seam;
pub mod snapshot;
pub mod stats;
pub mod system;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub mod units;
pub mod wire;
