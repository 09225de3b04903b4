//! `--web.config.file`: the exporter-toolkit YAML format, the subset bbrtop implements.
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/bbrtop/cert.pem
//!   key_file: /etc/bbrtop/key.pem
//!   min_version: TLS12        # or TLS13; default TLS12
//! basic_auth_users:
//!   prometheus: $2y$10$...    # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\n')
//! ```
//! Unknown fields are errors, so a setting bbrtop does not implement is never silently ignored.
//! Relative file paths are relative to the config file, as in exporter-toolkit.

use bbrtop_collect::files::{self, Kind};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    #[serde(default)]
    pub tls_server_config: Option<TlsConfig>,
    #[serde(default, deserialize_with = "unique_users")]
    pub basic_auth_users: BTreeMap<String, String>,
}

/// The users, each named once: YAML lets a mapping repeat a key, and a map keeps only the last,
/// so a user written twice would silently lose one of its hashes.
fn unique_users<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    struct Users;
    impl<'de> serde::de::Visitor<'de> for Users {
        type Value = BTreeMap<String, String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of user names to bcrypt hashes")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut users = BTreeMap::new();
            while let Some((user, hash)) = m.next_entry::<String, String>()? {
                if users.insert(user.clone(), hash).is_some() {
                    return Err(serde::de::Error::custom(format!(
                        "basic_auth_users: user {user:?} is named twice"
                    )));
                }
            }
            Ok(users)
        }
    }
    d.deserialize_map(Users)
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    #[serde(default)]
    pub min_version: Option<String>,
}

/// What the server needs at run time.
#[derive(Clone, Default)]
pub struct Security {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// user -> bcrypt hash. Empty: no authentication.
    pub users: Arc<BTreeMap<String, String>>,
}

/// The highest bcrypt cost accepted: a check at 16 takes a few seconds on a server core, and
/// the exporter runs one check at a time.
const MAX_COST: u32 = 16;
/// bcrypt's least cost: the crate refuses to verify below it, so no password could ever match.
const MIN_COST: u32 = 4;

impl WebConfig {
    pub fn parse(text: &str) -> Result<WebConfig, String> {
        let c: WebConfig = serde_norway::from_str(text).map_err(|e| e.to_string().replace('\n', " "))?;
        for (user, hash) in &c.basic_auth_users {
            // Basic auth splits "user:password" at the first colon: such a user can never log in.
            if user.contains(':') || user.is_empty() {
                return Err(format!(
                    "basic_auth_users: user {user:?} can never log in (basic auth takes no ':' in a user name, and no empty one)"
                ));
            }
            // The format is checked now, not at the first scrape, by parsing: a verify would cost
            // as much as a login, which at a high cost stalls start-up.
            let parts: bcrypt::HashParts =
                hash.parse().map_err(|_| format!("basic_auth_users.{user}: not a bcrypt hash"))?;
            if parts.get_cost() < MIN_COST {
                return Err(format!(
                    "basic_auth_users.{user}: bcrypt cost {} is below {MIN_COST}, which bcrypt refuses to verify (no password could log in)",
                    parts.get_cost()
                ));
            }
            if parts.get_cost() > MAX_COST {
                return Err(format!(
                    "basic_auth_users.{user}: bcrypt cost {} is above {MAX_COST} (each check would take \
                     seconds; 10 to 12 is usual)",
                    parts.get_cost()
                ));
            }
        }
        Ok(c)
    }

    /// Reads the file and loads the certificate and key it names. Errors are one line.
    pub fn load(path: &Path) -> Result<Security, String> {
        let err = |e: String| format!("web config {}: {e}", path.display());
        let text = files::read_to_string("--web.config.file", path, Kind::Config)?;
        let c = WebConfig::parse(&text).map_err(err)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let tls = match &c.tls_server_config {
            Some(t) => Some(Arc::new(t.server_config(dir).map_err(err)?)),
            None => None,
        };
        Ok(Security { tls, users: Arc::new(c.basic_auth_users) })
    }
}

impl TlsConfig {
    fn server_config(&self, dir: &Path) -> Result<rustls::ServerConfig, String> {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let versions: &[&rustls::SupportedProtocolVersion] = match self.min_version.as_deref() {
            None | Some("TLS12") => &[&rustls::version::TLS13, &rustls::version::TLS12],
            Some("TLS13") => &[&rustls::version::TLS13],
            Some(v) => return Err(format!("tls_server_config.min_version {v:?}: expected TLS12 or TLS13")),
        };
        let cert_path = dir.join(&self.cert_file);
        let key_path = dir.join(&self.key_file);
        let cert_pem = files::read("cert_file", &cert_path, Kind::Pem)?;
        let certs = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("cert_file {}: {e}", cert_path.display()))?;
        if certs.is_empty() {
            return Err(format!("cert_file {}: no certificate", cert_path.display()));
        }
        // An expired (or not yet valid) certificate makes every client that verifies it refuse
        // every scrape: refused here, where it is one line, not served.
        if let Some((from, to)) = super::cert::validity(&certs[0]) {
            let now = std::time::SystemTime::now();
            let at = |t| humantime::format_rfc3339_seconds(t);
            if to < now {
                return Err(format!(
                    "cert_file {}: expired at {} (clients that verify it would refuse every connection)",
                    cert_path.display(),
                    at(to)
                ));
            }
            if from > now {
                return Err(format!("cert_file {}: not valid before {}", cert_path.display(), at(from)));
            }
        }
        let key = PrivateKeyDer::from_pem_slice(&files::read("key_file", &key_path, Kind::Pem)?)
            .map_err(|e| format!("key_file {}: {e}", key_path.display()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .map_err(|e| format!("tls_server_config: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| format!("tls_server_config: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_users_and_rejects_unknown_fields() {
        let hash = bcrypt::hash("pw", 4).unwrap();
        let c = WebConfig::parse(&format!("basic_auth_users:\n  alice: '{hash}'\n")).unwrap();
        assert!(bcrypt::verify("pw", &c.basic_auth_users["alice"]).unwrap());
        for bad in [
            "tls_server_config: {cert_file: a, key_file: b, client_auth_type: RequireAndVerifyClientCert}",
            "http_server_config: {http2: false}",
            "basic_auth_users: {alice: plaintext}",
            "tls_server_config: {cert_file: a}",
            ": [",
        ] {
            let e = WebConfig::parse(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad:?} -> {e}");
        }
    }

    /// Users who could never log in are refused at load, not found out at the first scrape: a
    /// cost-3 hash (bcrypt will not verify it), a ':' in the name, a user named twice.
    #[test]
    fn users_who_could_never_log_in_are_refused() {
        let cost3 = "$2b$03$abcdefghijklmnopqrstuuJZbTvV2pDT5yQMbyGgDy4XdNVcsvTg2";
        let e = WebConfig::parse(&format!("basic_auth_users:\n  alice: '{cost3}'\n")).unwrap_err();
        assert!(e.contains("cost 3 is below 4"), "{e}");
        let hash = bcrypt::hash("pw", 4).unwrap();
        let e = WebConfig::parse(&format!("basic_auth_users:\n  'al:ice': '{hash}'\n")).unwrap_err();
        assert!(e.contains("can never log in"), "{e}");
        let e = WebConfig::parse(&format!("basic_auth_users:\n  alice: '{hash}'\n  alice: '{hash}'\n"))
            .unwrap_err();
        assert!(e.contains("named twice") && !e.contains('\n'), "{e}");
    }

    /// A cost-31 hash would take days to verify (this test would never end): it is parsed, not
    /// verified, and refused.
    #[test]
    fn a_high_cost_hash_is_refused_without_being_verified() {
        let cost31 = "$2b$31$abcdefghijklmnopqrstuuJZbTvV2pDT5yQMbyGgDy4XdNVcsvTg2";
        let e = WebConfig::parse(&format!("basic_auth_users:\n  alice: '{cost31}'\n")).unwrap_err();
        assert!(e.contains("cost 31 is above 16"), "{e}");
    }

    #[test]
    fn missing_cert_is_one_line_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("web.yml");
        std::fs::write(
            &p,
            "tls_server_config: {cert_file: nope.pem, key_file: nope.key, min_version: TLS13}\n",
        )
        .unwrap();
        let e = WebConfig::load(&p).err().unwrap();
        assert!(e.contains("nope.pem") && !e.contains('\n'), "{e}");
        std::fs::write(&p, "tls_server_config: {cert_file: a, key_file: b, min_version: TLS10}\n").unwrap();
        assert!(WebConfig::load(&p).err().unwrap().contains("min_version"));
    }
}
