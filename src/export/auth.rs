//! Basic auth against exporter-toolkit's bcrypt hashes. bcrypt is slow on purpose, so a check is
//! costly, and a flood of wrong passwords must not make Prometheus' own credential wait:
//!
//! - A credential bcrypt accepted is kept for the process's life (the users are read once, at
//!   start, so a right password stays right), apart from the wrong ones: no number of wrong
//!   credentials can push it out. It is answered from memory and never waits for a check.
//! - A wrong credential's verdict is kept for [`VERDICT_TTL`], at most [`WRONG_MAX`] of them: a
//!   repeated wrong password costs a lookup too; a flood of unique ones evicts only its own kind.
//! - A credential not seen before is checked with bcrypt, at most [`BCRYPT_AT_ONCE`] checks at a
//!   time, off the event loop, in the order they came (a fair semaphore). A flood of unique wrong
//!   passwords then costs one core at most, and delays only other credentials never seen.
//!
//! No password is kept: credentials are known by their SHA-256.

use base64::Engine as _;
use hyper::header::HeaderValue;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How long a wrong credential's verdict stands before it is checked again.
pub const VERDICT_TTL: Duration = Duration::from_secs(300);
/// Wrong verdicts kept at most; past this, expired ones go, then all the wrong ones.
pub const WRONG_MAX: usize = 1024;
/// Right credentials kept at most: one per user in practice (bcrypt reads 72 bytes of a password,
/// so a user has a few more only if someone who knows the password adds bytes past them).
const RIGHT_MAX: usize = 256;
/// bcrypt checks at once.
pub const BCRYPT_AT_ONCE: usize = 1;

/// A credential, by its SHA-256: the cache holds no password.
type Key = [u8; 32];

pub struct Auth {
    users: Arc<BTreeMap<String, String>>,
    verdicts: Mutex<Verdicts>,
    bcrypt: Semaphore,
    /// bcrypt checks run, for tests and figures.
    checks: AtomicU64,
}

/// What bcrypt said of each credential already checked: the right ones and the wrong ones apart,
/// so the wrong ones can be evicted without touching the right ones.
struct Verdicts {
    right: HashSet<Key>,
    wrong: HashMap<Key, Instant>,
    wrong_max: usize,
}

impl Verdicts {
    fn get(&self, key: &Key, now: Instant) -> Option<bool> {
        if self.right.contains(key) {
            return Some(true);
        }
        self.wrong.get(key).filter(|at| now.saturating_duration_since(**at) < VERDICT_TTL).map(|_| false)
    }

    fn insert(&mut self, key: Key, ok: bool, now: Instant) {
        if ok {
            if self.right.len() >= RIGHT_MAX {
                self.right.clear();
            }
            self.right.insert(key);
            return;
        }
        if self.wrong.len() >= self.wrong_max {
            self.wrong.retain(|_, at| now.saturating_duration_since(*at) < VERDICT_TTL);
            if self.wrong.len() >= self.wrong_max {
                self.wrong.clear();
            }
        }
        self.wrong.insert(key, now);
    }
}

impl Auth {
    pub fn new(users: Arc<BTreeMap<String, String>>) -> Auth {
        Auth::with_wrong_max(users, WRONG_MAX)
    }

    fn with_wrong_max(users: Arc<BTreeMap<String, String>>, wrong_max: usize) -> Auth {
        Auth {
            users,
            verdicts: Mutex::new(Verdicts { right: HashSet::new(), wrong: HashMap::new(), wrong_max }),
            bcrypt: Semaphore::new(BCRYPT_AT_ONCE),
            checks: AtomicU64::new(0),
        }
    }

    /// Whether any user is configured (else every request passes).
    pub fn enabled(&self) -> bool {
        !self.users.is_empty()
    }

    /// bcrypt checks run so far.
    pub fn checks(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// Whether the request's `Authorization` header names a user with the right password.
    pub async fn check(&self, header: Option<&HeaderValue>) -> bool {
        let Some((user, pass)) = basic_credentials(header) else { return false };
        let key = digest(&user, &pass);
        if let Some(v) = self.cached(&key) {
            return v;
        }
        let Ok(_in_turn) = self.bcrypt.acquire().await else { return false };
        // The same credential may have been checked while this request waited.
        if let Some(v) = self.cached(&key) {
            return v;
        }
        self.checks.fetch_add(1, Ordering::Relaxed);
        let users = Arc::clone(&self.users);
        let ok = tokio::task::spawn_blocking(move || verify(&users, &user, &pass)).await.unwrap_or(false);
        self.verdicts.lock().unwrap_or_else(|e| e.into_inner()).insert(key, ok, Instant::now());
        ok
    }

    fn cached(&self, key: &Key) -> Option<bool> {
        self.verdicts.lock().unwrap_or_else(|e| e.into_inner()).get(key, Instant::now())
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
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    fn header(user: &str, pass: &str) -> HeaderValue {
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
        HeaderValue::from_str(&format!("Basic {b64}")).unwrap()
    }

    fn alice(wrong_max: usize) -> Auth {
        let hash = bcrypt::hash("pw", 4).unwrap();
        Auth::with_wrong_max(Arc::new(BTreeMap::from([("alice".to_string(), hash)])), wrong_max)
    }

    /// The check's answer if it has one without waiting: polled once.
    fn at_once(auth: &Auth, h: &HeaderValue) -> Option<bool> {
        let mut fut = std::pin::pin!(auth.check(Some(h)));
        match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => Some(v),
            Poll::Pending => None,
        }
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
        let auth = alice(WRONG_MAX);
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

    /// A flood of unique wrong passwords, more than the wrong verdicts kept, evicts only wrong
    /// verdicts: the right credential is still answered without a check (on main the cache was
    /// cleared whole, and the right credential waited behind the flood's queued checks).
    #[test]
    fn a_flood_of_unique_wrong_passwords_never_evicts_the_right_one() {
        let auth = alice(8);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            assert!(auth.check(Some(&header("alice", "pw"))).await);
            for i in 0..20 {
                assert!(!auth.check(Some(&header("alice", &format!("guess-{i}")))).await);
            }
        });
        assert_eq!(auth.checks(), 21);
        assert_eq!(at_once(&auth, &header("alice", "pw")), Some(true), "answered from memory");
        assert_eq!(auth.checks(), 21, "no bcrypt check for the right credential");
    }

    /// While bcrypt is busy (every slot taken, a queue behind it), a credential already checked,
    /// right or wrong, is answered at once; a new one waits its turn.
    #[test]
    fn a_known_credential_never_waits_behind_bcrypt() {
        let auth = alice(WRONG_MAX);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            assert!(auth.check(Some(&header("alice", "pw"))).await);
            assert!(!auth.check(Some(&header("alice", "wrong"))).await);
        });
        let _busy = auth.bcrypt.try_acquire_many(BCRYPT_AT_ONCE as u32).unwrap();
        assert_eq!(at_once(&auth, &header("alice", "pw")), Some(true));
        assert_eq!(at_once(&auth, &header("alice", "wrong")), Some(false));
        assert_eq!(at_once(&auth, &header("alice", "new guess")), None, "a new credential waits");
    }
}
