//! Times and durations as a user types them, one grammar for every flag and prompt that takes
//! one: `replay --at`, the replay's go-to prompt, `compare`'s `PATH@FROM..TO`, and every
//! duration flag. Pure; the caller names the flag (clap puts it before the message) and the
//! reference a relative time is counted from.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DAY: u64 = 86_400;

/// The longest offset: adding a longer one to a reference can overflow the clock
/// (`+10000000000000000000s` panicked), and no recording is that long.
pub const MAX_OFFSET: Duration = Duration::from_secs(100 * 365 * DAY);

/// A time as typed: absolute, or relative to a reference the caller names (a recording's first
/// poll, the poll shown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Time {
    /// RFC 3339: `2026-11-23T03:12:00Z`, a space for the `T`, a fraction, an offset (`+02:00`),
    /// or no zone (UTC).
    At(SystemTime),
    /// `HH:MM` or `HH:MM:SS`, UTC, on the reference's day (as seconds since midnight).
    OfDay(u64),
    /// `+90s`, `+2m` or `90s`: this long after the reference.
    After(Duration),
}

impl Time {
    /// The time this names, given the reference; `None` only past the clock's end.
    pub fn resolve(self, reference: SystemTime) -> Option<SystemTime> {
        match self {
            Time::At(t) => Some(t),
            Time::OfDay(secs) => {
                let since = reference.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
                Some(UNIX_EPOCH + Duration::from_secs(since - since % DAY + secs))
            }
            Time::After(d) => reference.checked_add(d),
        }
    }
}

/// A typed-in time: RFC 3339, a time of day or an offset (see [`Time`]).
pub fn parse_time(text: &str) -> Result<Time, String> {
    let text = text.trim();
    if let Some(secs) = time_of_day(text) {
        return Ok(Time::OfDay(secs));
    }
    if let Some(t) = rfc3339(text) {
        return Ok(Time::At(t));
    }
    if let Ok(d) = humantime::parse_duration(text.strip_prefix('+').unwrap_or(text)) {
        if d > MAX_OFFSET {
            return Err(format!("{text:?}: an offset longer than 100 years"));
        }
        return Ok(Time::After(d));
    }
    Err(format!(
        "{text:?}: expected an RFC 3339 time (2026-11-23T03:12:00Z), a time of day (HH:MM:SS, UTC) \
         or an offset (+90s)"
    ))
}

/// A duration: `1s`, `250ms`, `1h 30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("invalid duration {s:?}: {e} (try 1s, 250ms)"))
}

/// A duration between `min` and `max`, named `what` in the error.
pub fn parse_duration_in(s: &str, what: &str, min: Duration, max: Duration) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < min || d > max {
        let show = |d: Duration| humantime::format_duration(d).to_string();
        return Err(format!("{what} {s:?} out of range ({} to {})", show(min), show(max)));
    }
    Ok(d)
}

/// Seconds since midnight of `HH:MM` or `HH:MM:SS`.
fn time_of_day(text: &str) -> Option<u64> {
    let parts: Vec<&str> = text.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.len() != 2) {
        return None;
    }
    let n: Vec<u64> = parts.iter().map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let (h, m, s) = (n[0], n[1], n.get(2).copied().unwrap_or(0));
    (h < 24 && m < 60 && s < 60).then_some(h * 3600 + m * 60 + s)
}

/// RFC 3339 with `Z`, no zone or an offset (`+02:00`); humantime reads UTC only, so the offset
/// is taken off here.
fn rfc3339(text: &str) -> Option<SystemTime> {
    if let Ok(t) = humantime::parse_rfc3339_weak(text) {
        return Some(t);
    }
    // "...+HH:MM" or "...-HH:MM" after the seconds.
    let (head, tail) = text.split_at(text.len().checked_sub(6).filter(|&i| text.is_char_boundary(i))?);
    let sign = match tail.as_bytes().first()? {
        b'+' => 1i64,
        b'-' => -1,
        _ => return None,
    };
    let off = time_of_day(&tail[1..])? as i64 * sign;
    let t = humantime::parse_rfc3339_weak(head).ok()?;
    let secs = Duration::from_secs(off.unsigned_abs());
    if off >= 0 { t.checked_sub(secs) } else { t.checked_add(secs) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> SystemTime {
        humantime::parse_rfc3339(s).unwrap()
    }

    /// Every form the replay's prompt and `--at` took, and `compare`'s range ends.
    #[test]
    fn every_accepted_form_means_what_it_meant() {
        let reference = t("2026-11-23T16:02:11.250Z");
        let cases = [
            // Times of day, on the reference's day.
            ("16:05:00", "2026-11-23T16:05:00Z"),
            ("03:12", "2026-11-23T03:12:00Z"),
            (" 23:59:59 ", "2026-11-23T23:59:59Z"),
            // RFC 3339, strict and weak.
            ("2026-11-22T03:12:05Z", "2026-11-22T03:12:05Z"),
            ("2026-11-22 03:12:05Z", "2026-11-22T03:12:05Z"),
            ("2026-11-22T03:12:05.5Z", "2026-11-22T03:12:05.5Z"),
            ("2026-11-22T03:12:05", "2026-11-22T03:12:05Z"),
            ("2026-11-22T03:12:05+00:00", "2026-11-22T03:12:05Z"),
            ("2026-11-22T05:12:05+02:00", "2026-11-22T03:12:05Z"),
            ("2026-11-22T01:12:05-02:00", "2026-11-22T03:12:05Z"),
            // Offsets from the reference.
            ("+90s", "2026-11-23T16:03:41.250Z"),
            ("90s", "2026-11-23T16:03:41.250Z"),
            ("+2m", "2026-11-23T16:04:11.250Z"),
            ("+1h 30m", "2026-11-23T17:32:11.250Z"),
        ];
        for (text, want) in cases {
            let got = parse_time(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(got.resolve(reference), Some(t(want)), "{text:?}");
        }
    }

    #[test]
    fn bad_times_are_one_line_errors() {
        for text in ["24:00:00", "12:60", "1:2:3", "noon", "", "2026-11-22T03:12:05+2:00", "+-3s", "é€ü"]
        {
            let e = parse_time(text).unwrap_err();
            assert!(e.contains("expected an RFC 3339 time") && !e.contains('\n'), "{text:?}: {e}");
        }
        let e = parse_time("+10000000000000000000s").unwrap_err();
        assert!(e.contains("longer than 100 years"), "{e}");
    }

    #[test]
    fn durations_keep_their_bounds() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("5").unwrap_err().contains("try 1s, 250ms"));
        let in_range = |s| parse_duration_in(s, "hold", Duration::from_secs(1), Duration::from_secs(60));
        assert_eq!(in_range("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(in_range("2m"), Err("hold \"2m\" out of range (1s to 1m)".into()));
        assert!(in_range("0s").is_err());
    }
}
