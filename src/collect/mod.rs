//! Collectors: kernel bytes in, plain [`crate::engine::Update`]s out. They never sort, filter
//! for display, or format.

pub mod host;
pub mod inet_diag;
pub mod socket;

pub use inet_diag::{CollectError, InetDiag};

#[cfg(test)]
mod tests;
