//! What a peer's address says of it: its autonomous system and country, from MaxMind-format
//! databases (GeoLite2 and GeoIP2 ASN, ISP, Country and City; DB-IP's lite ASN and Country), so
//! a rollout's win can be told by network and place, as the guides tell it.
//!
//! The databases come as bytes the caller read; each must be of the kind asked for, checked by
//! its `database_type`, so a country database given for the AS is a one-line error, not empty
//! answers.

use maxminddb::{Reader, geoip2};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Which database a file must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `autonomous_system_number` and `_organization`: GeoLite2-ASN, GeoIP2-ISP, DBIP-ASN-Lite.
    Asn,
    /// `country.iso_code`: GeoLite2/GeoIP2 Country and City, DBIP-Country-Lite and City-Lite.
    Country,
}

impl Kind {
    fn accepts(self, database_type: &str) -> bool {
        let t = database_type.to_ascii_lowercase();
        match self {
            Kind::Asn => t.contains("asn") || t.contains("isp"),
            Kind::Country => t.contains("country") || t.contains("city"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Asn => "an ASN (or ISP) database",
            Kind::Country => "a Country (or City) database",
        }
    }
}

/// One database, loaded and checked.
pub struct Db {
    kind: Kind,
    reader: Reader<Vec<u8>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("kind", &self.kind).field("type", &self.database_type()).finish()
    }
}

impl Db {
    /// `bytes` as a database of `kind`. Errors are one line.
    pub fn new(kind: Kind, bytes: Vec<u8>) -> Result<Db, String> {
        let reader =
            Reader::from_source(bytes).map_err(|e| format!("not a MaxMind-format database ({e})"))?;
        let t = reader.metadata().database_type.as_str();
        if !kind.accepts(t) {
            return Err(format!("a {t} database, not {}", kind.name()));
        }
        Ok(Db { kind, reader })
    }

    /// What the file says it is (`GeoLite2-ASN`).
    pub fn database_type(&self) -> &str {
        &self.reader.metadata().database_type
    }

    /// When the database was built, in seconds since the epoch.
    pub fn build_epoch(&self) -> u64 {
        self.reader.metadata().build_epoch
    }
}

/// The AS and country databases given; either may be absent.
#[derive(Debug, Default)]
pub struct Geo {
    pub asn: Option<Db>,
    pub country: Option<Db>,
}

/// What the databases say of one address: each part absent where its database is, or where it
/// holds nothing for the address (private ranges, loopback, unallocated).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerGeo {
    pub asn: Option<u32>,
    pub as_org: Option<String>,
    /// ISO 3166-1 alpha-2.
    pub country: Option<String>,
}

impl Geo {
    /// No database: every lookup finds nothing.
    pub const NONE: Geo = Geo { asn: None, country: None };

    /// The AS and country labels `ip` takes where the labels are kept: `AS15169` or `unknown`
    /// with an AS database, a country code or `unknown` with a country database, and `None` for
    /// a dimension whose database is not given.
    pub fn labels(&self, ip: IpAddr) -> (Option<String>, Option<String>) {
        let g = self.lookup(ip);
        let asn = self.asn.as_ref().map(|_| asn_label(g.asn));
        let country = self.country.as_ref().map(|_| g.country.unwrap_or_else(|| UNKNOWN.to_string()));
        (asn, country)
    }

    /// What the databases say of `ip`. An IPv4 address mapped into IPv6 is looked up as IPv4.
    pub fn lookup(&self, ip: IpAddr) -> PeerGeo {
        let ip = ip.to_canonical();
        let mut out = PeerGeo::default();
        if let Some(db) = &self.asn
            && let Some(a) = decode::<geoip2::Asn>(db, ip)
        {
            out.asn = a.autonomous_system_number;
            out.as_org = a.autonomous_system_organization.map(str::to_string);
        }
        if let Some(db) = &self.country
            && let Some(c) = decode::<geoip2::Country>(db, ip)
        {
            out.country = c.country.iso_code.or(c.registered_country.iso_code).map(str::to_string);
        }
        out
    }
}

/// The record `db` holds for `ip`, if any; a record that does not decode counts as none (a
/// database is data from outside: it must not end a poll).
fn decode<'a, T: serde::Deserialize<'a>>(db: &'a Db, ip: IpAddr) -> Option<T> {
    db.reader.lookup(ip).ok()?.decode::<T>().ok().flatten()
}

/// The databases as a long-running command holds them: whole, and replaced whole when reloaded
/// (SIGHUP, or the files changed), so a lookup never sees half of a reload.
#[derive(Debug, Default)]
pub struct GeoCell {
    geo: RwLock<Arc<Geo>>,
    /// Bumped at each replacement: a reader that keeps labels notices.
    version: AtomicU64,
}

impl GeoCell {
    pub fn new(geo: Geo) -> GeoCell {
        GeoCell { geo: RwLock::new(Arc::new(geo)), version: AtomicU64::new(0) }
    }

    pub fn get(&self) -> Arc<Geo> {
        Arc::clone(&self.geo.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn set(&self, geo: Geo) {
        *self.geo.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(geo);
        self.version.fetch_add(1, Ordering::Release);
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Whether any database is given: without one, no peer has an AS or country label.
    pub fn is_on(&self) -> bool {
        let g = self.get();
        g.asn.is_some() || g.country.is_some()
    }
}

/// The label an AS takes: `AS15169`, or `unknown` where no database says.
pub fn asn_label(asn: Option<u32>) -> String {
    asn.map_or_else(|| UNKNOWN.to_string(), |n| format!("AS{n}"))
}

/// The label of a peer no database places.
pub const UNKNOWN: &str = "unknown";

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::{MAXMIND_COUNTRY_TEST, maxmind_test_geo as geo};

    /// The records of MaxMind's test databases, as their source JSON lists them.
    #[test]
    fn maxminds_test_databases_read_as_their_sources_say() {
        let g = geo();
        let at = |s: &str| g.lookup(s.parse().unwrap());
        assert_eq!(
            at("1.0.0.1"),
            PeerGeo { asn: Some(15169), as_org: Some("Google Inc.".into()), country: None }
        );
        assert_eq!(at("12.81.96.7").asn, Some(7018), "12.81.96.0/19");
        assert_eq!(at("12.81.96.7").as_org, None, "that range names no organization");
        assert_eq!(at("81.2.69.142").country.as_deref(), Some("GB"));
        assert_eq!(at("89.160.20.113").country.as_deref(), Some("SE"));
        assert_eq!(at("::ffff:81.2.69.142").country.as_deref(), Some("GB"), "IPv4 mapped into IPv6");
        assert_eq!(at("10.1.2.3"), PeerGeo::default(), "a private address: nothing");
        assert_eq!(at("127.0.0.1"), PeerGeo::default());
        assert_eq!(g.asn.as_ref().unwrap().database_type(), "GeoLite2-ASN");
        assert!(g.country.as_ref().unwrap().build_epoch() > 1_000_000_000);
        assert_eq!(Geo::default().lookup("1.0.0.1".parse().unwrap()), PeerGeo::default());
    }

    #[test]
    fn a_database_of_the_wrong_kind_or_no_database_is_a_one_line_error() {
        let e = Db::new(Kind::Asn, MAXMIND_COUNTRY_TEST.to_vec()).unwrap_err();
        assert_eq!(e, "a GeoLite2-Country database, not an ASN (or ISP) database");
        let e = Db::new(Kind::Country, b"groups: {}\n".to_vec()).unwrap_err();
        assert!(e.starts_with("not a MaxMind-format database") && !e.contains('\n'), "{e}");
        let mut cut = MAXMIND_COUNTRY_TEST.to_vec();
        cut.truncate(cut.len() / 2);
        assert!(Db::new(Kind::Country, cut).is_err(), "a file cut short");
    }

    #[test]
    fn labels() {
        assert_eq!(asn_label(Some(64_500)), "AS64500");
        assert_eq!(asn_label(None), "unknown");
        let ip = "1.0.0.1".parse().unwrap();
        assert_eq!(geo().labels(ip), (Some("AS15169".into()), Some("unknown".into())));
        assert_eq!(Geo::NONE.labels(ip), (None, None), "no database, no label");
    }
}
