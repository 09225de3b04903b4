//! Times as the replay shows them and as `--at` and the go-to prompt take them: the one grammar
//! of typed-in times (`bbrtop_core::time_input`), a time of day and an offset counted from the
//! poll shown (for `--at`, the first).

use bbrtop_core::time_input::Time;
use std::time::SystemTime;

/// A poll's time, to the millisecond: `2026-11-23T16:02:11.250Z` (which the prompt takes back).
pub fn format_time(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// The time `text` names (RFC 3339, `HH:MM[:SS]` in UTC on the day of `shown`, or `+90s` after
/// it).
pub fn parse_time(text: &str, shown: SystemTime) -> Result<SystemTime, String> {
    // The prompt has no flag to name: the message says what it read.
    let t = bbrtop_core::time_input::parse_time(text).map_err(|e| format!("time {e}"))?;
    resolve(t, shown)
}

/// A parsed time, counted from `shown`.
pub fn resolve(t: Time, shown: SystemTime) -> Result<SystemTime, String> {
    t.resolve(shown).ok_or_else(|| "past the clock's end".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> SystemTime {
        humantime::parse_rfc3339(s).unwrap()
    }

    /// The grammar's forms are tested in `bbrtop_core::time_input`; here, what they count from.
    #[test]
    fn the_prompt_counts_from_the_poll_shown() {
        let shown = t("2026-11-23T16:02:11.250Z");
        assert_eq!(parse_time("03:12", shown), Ok(t("2026-11-23T03:12:00Z")));
        assert_eq!(parse_time("+90s", shown), Ok(t("2026-11-23T16:03:41.250Z")));
        assert_eq!(parse_time("2026-11-22T03:12:05Z", shown), Ok(t("2026-11-22T03:12:05Z")));
        assert!(parse_time("noon", shown).unwrap_err().contains("HH:MM:SS"));
    }

    #[test]
    fn shown_times_read_back() {
        let x = t("2026-11-23T16:02:11.250Z");
        assert_eq!(format_time(x), "2026-11-23T16:02:11.250Z");
        assert_eq!(parse_time(&format_time(x), x), Ok(x));
    }
}
