//! `bbrtop export`: Prometheus metrics, the JSON API and health endpoints over HTTP(S), and the
//! alerts pushed to Alertmanager; closed flows pushed over OTLP.

pub mod alertmanager;
pub mod api;
pub mod auth;
pub mod cert;
pub mod frame;
pub mod hindsight;
pub mod listen_fds;
pub mod metrics;
pub mod otlp;
pub mod probes;
pub mod process;
pub mod server;
pub mod slots;
pub mod url_redact;
pub mod web_config;
