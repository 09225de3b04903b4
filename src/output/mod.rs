//! Output formats for `snapshot` and `watch`, and serde helpers for units.

pub mod json;
pub mod table;
pub mod units;

/// Serializes a `SystemTime` as RFC 3339 (UTC), the format Alertmanager and humans both read.
pub mod serde_time {
    use serde::Serializer;
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339_millis(*t))
    }

    pub mod option {
        use serde::Serializer;
        use std::time::SystemTime;

        pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => super::serialize(t, s),
                None => s.serialize_none(),
            }
        }
    }
}

/// Serializes a `Duration` as seconds (f64).
pub mod serde_duration {
    use serde::Serializer;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}
