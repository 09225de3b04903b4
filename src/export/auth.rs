//! Basic auth against exporter-toolkit's bcrypt hashes. bcrypt is slow on purpose, so a check is
//! costly: a credential is checked once and its verdict kept for [`VERDICT_TTL`] (as
//! exporter-toolkit caches a credential that passed), and only one check runs at a time, off the
//! event loop. A flood of wrong passwords then costs one core at most; Prometheus' own
//! credential, already checked, costs a hash lookup, so scrapes and the poller go on.

use base64::Engine as _;
use hyper::header::HeaderValue;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How long a verdict stands before the credential is checked again.
pub const VERDICT_TTL: Duration = Duration::from_secs(300);
/// Verdicts kept at most; past this, expired ones go, then all of them.
const VERDICTS_MAX: usize = 1024;

/// A credential, by its SHA-256: the cache holds no password.
type Key = [u8; 32];

pub struct Auth {
    users: Arc<BTreeMap<String, String>>,
    verdicts: Mutex<HashMap<Key, (bool, Instant)>>,
    bcrypt: Semaphore,
    /// bcrypt checks run, for tests and figures.
    checks: std::sync::atomic::AtomicU64,
}

impl Auth {
    pub fn new(users: Arc<BTreeMap<String, String>>) -> Auth {
        Auth {
            users,
            verdicts: Mutex::default(),
            bcrypt: Semaphore::new(1),
            checks: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether any user is configured (else every request passes).
    pub fn enabled(&self) -> bool {
        !self.users.is_empty()
    }

    /// bcrypt checks run so far.
    pub fn checks(&self) -> u64 {
        self.checks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the request's `Authorization` header names a user with the right password.
    pub async fn check(&self, header: Option<&HeaderValue>) -> bool {
        let Some((user, pass)) = basic_credentials(header) else { return false };
        let key = digest(&user, &pass);
        if let Some(v) = self.cached(&key) {
            return v;
        }
        let Ok(_one_at_a_time) = self.bcrypt.acquire().await else { return false };
        // The same credential may have been checked while this request waited.
        if let Some(v) = self.cached(&key) {
            return v;
        }
        self.checks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let users = Arc::clone(&self.users);
        let ok = tokio::task::spawn_blocking(move || verify(&users, &user, &pass)).await.unwrap_or(false);
        self.remember(key, ok);
        ok
    }

    fn cached(&self, key: &Key) -> Option<bool> {
        let verdicts = self.verdicts.lock().unwrap_or_else(|e| e.into_inner());
        verdicts.get(key).filter(|(_, at)| at.elapsed() < VERDICT_TTL).map(|(ok, _)| *ok)
    }

    fn remember(&self, key: Key, ok: bool) {
        let mut verdicts = self.verdicts.lock().unwrap_or_else(|e| e.into_inner());
        if verdicts.len() >= VERDICTS_MAX {
            verdicts.retain(|_, (_, at)| at.elapsed() < VERDICT_TTL);
            if verdicts.len() >= VERDICTS_MAX {
                verdicts.clear();
            }
        }
        verdicts.insert(key, (ok, Instant::now()));
    }
}

fn digest(user: &str, pass: &str) -> Key {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(user.as_bytes());
    ctx.update(&[0]);
    ctx.update(pass.as_bytes());
    let mut key = [0u8; 32];
    key.copy_from_slice(ctx.finish().as_ref());
    key
}

fn verify(users: &BTreeMap<String, String>, user: &str, pass: &str) -> bool {
    match users.get(user) {
        Some(hash) => bcrypt::verify(pass, hash).unwrap_or(false),
        None => {
            // Spend the same time on an unknown user, so timing does not reveal user names.
            if let Some(h) = users.values().next() {
                let _ = bcrypt::verify(pass, h);
            }
            false
        }
    }
}

pub fn basic_credentials(v: Option<&HeaderValue>) -> Option<(String, String)> {
    let v = v?.to_str().ok()?;
    let (scheme, b64) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD.decode(b64.trim()).ok()?;
    let s = String::from_utf8(raw).ok()?;
    let (u, p) = s.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(user: &str, pass: &str) -> HeaderValue {
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
        HeaderValue::from_str(&format!("Basic {b64}")).unwrap()
    }

    #[test]
    fn credentials() {
        let h = |s: &str| HeaderValue::from_str(s).unwrap();
        assert_eq!(basic_credentials(Some(&h("Basic YWxpY2U6cDpx"))), Some(("alice".into(), "p:q".into())));
        assert_eq!(basic_credentials(Some(&h("Bearer YWxpY2U6cDpx"))), None);
        assert_eq!(basic_credentials(Some(&h("Basic !!"))), None);
        assert_eq!(basic_credentials(None), None);
    }

    #[test]
    fn one_bcrypt_check_per_credential() {
        let hash = bcrypt::hash("pw", 4).unwrap();
        let auth = Auth::new(Arc::new(BTreeMap::from([("alice".to_string(), hash)])));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            for _ in 0..5 {
                assert!(auth.check(Some(&header("alice", "pw"))).await);
                assert!(!auth.check(Some(&header("alice", "wrong"))).await);
            }
            assert!(!auth.check(Some(&header("mallory", "pw"))).await);
            assert!(!auth.check(None).await);
        });
        assert_eq!(auth.checks(), 3, "alice:pw, alice:wrong and mallory:pw, once each");
    }
}
