//! The lab: network namespaces, links and real flows for tests, `--lab` and `bbrtop lab`.

pub mod cc;
pub mod delayline;
mod flow;
mod net;
pub mod scenario;
pub mod ss;

pub use flow::Flow;
pub use net::{Lab, LabConfig, LabError, privileged};
