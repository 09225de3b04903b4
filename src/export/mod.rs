//! `bbrtop export`: Prometheus metrics, the JSON API and health endpoints over HTTP(S), and the
//! alerts pushed to Alertmanager.

pub mod alertmanager;
pub mod metrics;
pub mod peer_groups;
pub mod server;
pub mod web_config;
