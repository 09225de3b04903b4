//! The lab: network namespaces, links and real flows for tests, `--lab` and `bbrtop lab`.

pub mod cc;
pub mod delayline;
pub mod scenario;
