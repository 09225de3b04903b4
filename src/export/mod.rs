//! `bbrtop export`: Prometheus metrics, the JSON API and health endpoints over HTTP(S).

pub mod metrics;
pub mod peer_groups;
pub mod server;
pub mod web_config;
