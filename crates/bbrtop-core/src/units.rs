//! Units, a leaf every layer may use: human units for tables and the TUI (bit rates in Mbit/s
//! like `ss`, times in ms), and the serde forms of times and durations in JSON and alerts.

use std::time::SystemTime;

/// Bytes per second as a bit rate: "950bit/s", "12.3Kbit/s", "19.8Mbit/s", "1.2Gbit/s".
pub fn bitrate(bytes_per_sec: f64) -> String {
    let bits = bytes_per_sec * 8.0;
    let (v, unit) = if bits >= 1e9 {
        (bits / 1e9, "Gbit/s")
    } else if bits >= 1e6 {
        (bits / 1e6, "Mbit/s")
    } else if bits >= 1e3 {
        (bits / 1e3, "Kbit/s")
    } else {
        return format!("{bits:.0}bit/s");
    };
    format!("{v:.1}{unit}")
}

/// Microseconds as "0.052ms", "12.3ms" or "1.09s".
pub fn micros(us: u32) -> String {
    let ms = us as f64 / 1000.0;
    if ms >= 1000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else if ms >= 10.0 {
        format!("{ms:.1}ms")
    } else {
        format!("{ms:.3}ms")
    }
}

/// An inflation ratio in at most 7 cells: "1.52x", "45.3x", "10436x" (a µs-scale baseline behind a
/// deep queue gives ratios in the thousands).
pub fn ratio(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.2}x")
    } else if x < 100.0 {
        format!("{x:.1}x")
    } else if x < 1e6 {
        format!("{x:.0}x")
    } else {
        format!("{:.0}Mx", x / 1e6)
    }
}

/// A fraction as a percentage: "0.42%", "3.1%", "27%" (two significant digits below 10%, where
/// retransmit ratios live).
pub fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p < 1.0 {
        format!("{p:.2}%")
    } else if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// An optional value, or "-".
pub fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

/// Milliseconds since the epoch (negative before it): how recordings store instants.
pub fn unix_ms(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

/// The instant `ms` milliseconds from the epoch.
pub fn from_unix_ms(ms: i64) -> SystemTime {
    let d = std::time::Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 { SystemTime::UNIX_EPOCH + d } else { SystemTime::UNIX_EPOCH - d }
}

/// Serializes a `SystemTime` as RFC 3339 (UTC), the format Alertmanager and humans both read.
pub mod serde_time {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339_millis(*t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        humantime::parse_rfc3339_weak(&s).map_err(serde::de::Error::custom)
    }

    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};
        use std::time::SystemTime;

        pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => super::serialize(t, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
            let s = <Option<std::borrow::Cow<'de, str>>>::deserialize(d)?;
            s.map(|s| humantime::parse_rfc3339_weak(&s).map_err(serde::de::Error::custom)).transpose()
        }
    }
}

/// Serializes a `Duration` as seconds (f64).
pub mod serde_duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Duration::try_from_secs_f64(f64::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// Names the engine keeps as `&'static str` (collectors, programs, BBR modes), read back from a
/// recording or a remote frame. Each distinct name is leaked once; the set is small and fixed by
/// the code that wrote it, and past [`interned::MAX`] names a newcomer reads as "other", so a
/// hostile file cannot grow it without bound.
pub mod interned {
    use serde::{Deserialize, Deserializer};
    use std::collections::{BTreeMap, HashSet};
    use std::sync::{LazyLock, Mutex};

    pub const MAX: usize = 256;

    /// A name read back this way. (An alias, so that serde's derive does not take a field of it
    /// for a string borrowed from the input.)
    pub type Name = &'static str;

    static NAMES: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Default::default);

    pub fn intern(s: &str) -> &'static str {
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = names.get(s) {
            return n;
        }
        if names.len() >= MAX {
            return "other";
        }
        let n: &'static str = Box::leak(s.to_owned().into_boxed_str());
        names.insert(n);
        n
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        Ok(intern(&<std::borrow::Cow<'de, str>>::deserialize(d)?))
    }

    /// A map keyed by such names.
    pub fn keys<'de, D: Deserializer<'de>, V: Deserialize<'de>>(
        d: D,
    ) -> Result<BTreeMap<&'static str, V>, D::Error> {
        let m = BTreeMap::<String, V>::deserialize(d)?;
        Ok(m.into_iter().map(|(k, v)| (intern(&k), v)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_fit_their_columns() {
        for (x, want) in
            [(1.2, "1.20x"), (9.994, "9.99x"), (45.34, "45.3x"), (10436.41, "10436x"), (2.5e7, "25Mx")]
        {
            assert_eq!(ratio(x), want);
            assert!(ratio(x).len() <= 7, "{x}");
        }
    }

    #[test]
    fn formats() {
        assert_eq!(bitrate(2_500_000.0), "20.0Mbit/s");
        assert_eq!(bitrate(100.0), "800bit/s");
        assert_eq!(bitrate(1_500.0), "12.0Kbit/s");
        assert_eq!(bitrate(250_000_000.0), "2.0Gbit/s");
        assert_eq!(micros(52), "0.052ms");
        assert_eq!(micros(12_345), "12.3ms");
        assert_eq!(micros(1_090_000), "1.09s");
        assert_eq!(opt(None::<u32>, micros), "-");
    }
}
