//! What the counters are kept per besides the cc: the peer flags the exporter and the recorder
//! share, and what they load into.

use bbrtop_core::geo::GeoCell;
use bbrtop_core::peer_groups::PeerGroups;
use clap::Args;
use std::sync::Arc;

/// What the counters are kept per besides the cc: peer groups, and the peers' AS and country
/// (the top ones shown) where their databases are given; an experiment's arms while one runs.
#[derive(Clone, Default)]
pub struct Peers {
    pub groups: Arc<PeerGroups>,
    pub geo: Arc<GeoCell>,
    pub top: usize,
    pub arms: Option<bbrtop_core::seam::Arms>,
}

/// The AS and country database files the flags name, which `reload.rs` reads again when they
/// change: the flags' data, kept here so the reloader depends on the flags and not the reverse.
#[derive(Clone, Debug, Default)]
pub struct GeoFiles {
    pub asn: Option<std::path::PathBuf>,
    pub country: Option<std::path::PathBuf>,
}

/// What the counters are kept per besides the cc (the exporter's and the recorder's flags).
#[derive(Args, Clone, Debug, Default)]
pub struct PeerArgs {
    /// CIDR groups (YAML) that become the peer_group label. A regular file of at most 1 MiB.
    #[arg(long = "peer-groups.file", value_name = "FILE", alias = "peer-groups")]
    pub groups: Option<std::path::PathBuf>,
    /// A MaxMind-format ASN database (GeoLite2-ASN, GeoIP2-ISP, DBIP-ASN-Lite): the counters and
    /// response times gain an `asn` label (the top --peer-groups.top by bytes sent, the rest
    /// "other"). Read again when the file changes (and on SIGHUP, by the exporter). At most 256 MiB.
    #[arg(long = "peer-groups.asn.file", value_name = "FILE")]
    pub asn_db: Option<std::path::PathBuf>,
    /// A MaxMind-format Country or City database (GeoLite2, GeoIP2, DB-IP lite): a `country`
    /// label, as --peer-groups.asn.file has `asn`. At most 256 MiB.
    #[arg(long = "peer-groups.country.file", value_name = "FILE")]
    pub country_db: Option<std::path::PathBuf>,
    /// How many AS and country labels are shown, each: the first to rank by bytes sent, kept
    /// while the process runs (labels never flap); every other peer is "other".
    #[arg(long = "peer-groups.top", value_name = "N", default_value_t = bbrtop_engine::labels::DEFAULT_TOP as u64, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub top_labels: u64,
}

impl PeerArgs {
    /// The groups and databases the flags name (a one-line usage error for any that does not
    /// load), and the database files, for their reloads.
    pub fn load(&self) -> Result<(Peers, GeoFiles), super::Failure> {
        let files = GeoFiles { asn: self.asn_db.clone(), country: self.country_db.clone() };
        let peers = Peers {
            groups: Arc::new(super::args::peer_groups(self.groups.as_deref())?),
            geo: Arc::new(GeoCell::new(super::args::geo(files.asn.as_deref(), files.country.as_deref())?)),
            top: self.top_labels as usize,
            arms: None,
        };
        Ok((peers, files))
    }
}
