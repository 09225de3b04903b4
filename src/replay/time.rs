//! Times as the replay shows them and as the go-to prompt takes them: RFC 3339 in UTC, or a time
//! of day (`HH:MM[:SS]`, UTC) on the day of the poll shown.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DAY: u64 = 86_400;

/// A poll's time, to the millisecond: `2026-11-23T16:02:11.250Z` (which the prompt takes back).
pub fn format_time(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// The time `text` names: RFC 3339 (`2026-11-23T16:02:11Z`, an offset, or a space for the T), or
/// `HH:MM` / `HH:MM:SS` in UTC on the day of `shown`.
pub fn parse_time(text: &str, shown: SystemTime) -> Result<SystemTime, String> {
    let text = text.trim();
    if let Some(t) = time_of_day(text) {
        let since = shown.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        return Ok(UNIX_EPOCH + Duration::from_secs(since - since % DAY + t));
    }
    rfc3339(text).ok_or_else(|| format!("time {text:?}: expected HH:MM:SS (UTC) or an RFC 3339 time"))
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

/// RFC 3339 with `Z` or an offset (`+02:00`); humantime reads UTC only, so the offset is
/// taken off here.
fn rfc3339(text: &str) -> Option<SystemTime> {
    let text = text.replacen(' ', "T", 1);
    if let Ok(t) = humantime::parse_rfc3339(&text) {
        return Some(t);
    }
    // "...+HH:MM" or "...-HH:MM" after the seconds.
    let (head, tail) = text.split_at(text.len().checked_sub(6)?);
    let sign = match tail.as_bytes().first()? {
        b'+' => 1i64,
        b'-' => -1,
        _ => return None,
    };
    let off = time_of_day(&tail[1..])? as i64 * sign;
    let t = humantime::parse_rfc3339(&format!("{head}Z")).ok()?;
    let secs = Duration::from_secs(off.unsigned_abs());
    if off >= 0 { t.checked_sub(secs) } else { t.checked_add(secs) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> SystemTime {
        humantime::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn the_prompt_takes_a_time_of_day_or_rfc3339() {
        let shown = t("2026-11-23T16:02:11.250Z");
        let cases = [
            ("16:05:00", Some("2026-11-23T16:05:00Z")),
            ("03:12", Some("2026-11-23T03:12:00Z")),
            (" 23:59:59 ", Some("2026-11-23T23:59:59Z")),
            ("2026-11-22T03:12:05Z", Some("2026-11-22T03:12:05Z")),
            ("2026-11-22 03:12:05Z", Some("2026-11-22T03:12:05Z")),
            ("2026-11-22T03:12:05.5Z", Some("2026-11-22T03:12:05.5Z")),
            ("2026-11-22T05:12:05+02:00", Some("2026-11-22T03:12:05Z")),
            ("2026-11-22T01:12:05-02:00", Some("2026-11-22T03:12:05Z")),
            ("24:00:00", None),
            ("12:60", None),
            ("1:2:3", None),
            ("noon", None),
            ("", None),
            ("2026-11-22T03:12:05+2:00", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_time(text, shown).ok(), want.map(t), "{text:?}");
        }
        assert!(parse_time("noon", shown).unwrap_err().contains("HH:MM:SS"));
    }

    #[test]
    fn shown_times_read_back() {
        let x = t("2026-11-23T16:02:11.250Z");
        assert_eq!(format_time(x), "2026-11-23T16:02:11.250Z");
        assert_eq!(parse_time(&format_time(x), x), Ok(x));
    }
}
