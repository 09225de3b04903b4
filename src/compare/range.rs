//! One side of a comparison on the command line, `PATH[@FROM..TO]`, and the polls it selects.
//!
//! FROM and TO are each a typed-in time (`bbrtop_core::time_input`): an RFC 3339 time
//! (`2026-11-23T03:12:00Z`), an offset from the recording's first poll (`+90s`, `+2m`, or `90s`),
//! a time of day on its first day (`03:12`), or empty for the recording's start or end.
//! The range is half open: polls at or after FROM and before TO. Pure: the caller reads the
//! poll times from the recording.

use bbrtop_core::time_input::{Time, parse_time};
use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideSpec {
    pub path: PathBuf,
    pub from: Option<Time>,
    pub to: Option<Time>,
    /// As given, for messages and the report.
    pub text: String,
}

impl std::str::FromStr for SideSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<SideSpec, String> {
        // A path may hold an '@' itself: only an '@' followed by a range starts one.
        let Some((path, range)) = s.rsplit_once('@').filter(|(_, r)| r.contains("..")) else {
            return Ok(SideSpec { path: s.into(), from: None, to: None, text: s.into() });
        };
        let (from, to) = range.split_once("..").unwrap_or_default();
        let spec = SideSpec { path: path.into(), from: bound(from)?, to: bound(to)?, text: s.into() };
        if path.is_empty() {
            return Err(format!("{s:?}: no recording before the '@'"));
        }
        Ok(spec)
    }
}

/// A side: one or more recordings, comma-separated (`canary` against `edge-2,edge-3,edge-4`),
/// each `PATH[@FROM..TO]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideSpecs {
    pub specs: Vec<SideSpec>,
    /// As given.
    pub text: String,
}

impl std::str::FromStr for SideSpecs {
    type Err = String;

    fn from_str(s: &str) -> Result<SideSpecs, String> {
        if s.split(',').any(str::is_empty) {
            return Err(format!("{s:?}: an empty recording in the list (PATH[@FROM..TO],...)"));
        }
        let specs = s.split(',').map(str::parse).collect::<Result<Vec<SideSpec>, String>>()?;
        Ok(SideSpecs { specs, text: s.into() })
    }
}

fn bound(s: &str) -> Result<Option<Time>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    parse_time(s).map(Some)
}

/// `t` as RFC 3339, to the second.
fn show(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

impl SideSpec {
    /// The indices of the polls (at `times`, in order) the range selects: a one-line error for
    /// a recording with no polls, an empty range, or a range outside the recording.
    pub fn select(&self, times: &[SystemTime]) -> Result<Range<usize>, String> {
        let (Some(&first), Some(&last)) = (times.first(), times.last()) else {
            return Err(format!("{}: the recording has no polls", self.path.display()));
        };
        // An offset is at most MAX_OFFSET; a clock that still overflows is past every poll.
        let at = |b: Time| b.resolve(first).unwrap_or(last + Duration::from_secs(1));
        let from = self.from.map_or(first, at);
        // Open at the end: the last poll is in a range with no TO.
        let to = self.to.map(at);
        if to.is_some_and(|to| to <= from) {
            return Err(format!("{}: the range is empty (its end is not after its start)", self.text));
        }
        let start = times.partition_point(|t| *t < from);
        let end = to.map_or(times.len(), |to| times.partition_point(|t| *t < to));
        if start >= end {
            let outside = from > last || to.is_some_and(|to| to <= first);
            let why = if outside { "is outside the recording" } else { "holds no polls" };
            return Err(format!(
                "{}: the range {why} (polls from {} to {})",
                self.text,
                show(first),
                show(last)
            ));
        }
        Ok(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn t(s: &str) -> SystemTime {
        humantime::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn a_side_of_several_recordings_parses_each() {
        let s: SideSpecs = "edge-2,edge-3@+1m..".parse().unwrap();
        let paths: Vec<&Path> = s.specs.iter().map(|s| s.path.as_path()).collect();
        assert_eq!(paths, [Path::new("edge-2"), Path::new("edge-3")]);
        assert_eq!(
            (s.specs[1].from, s.text.as_str()),
            (Some(Time::After(Duration::from_secs(60))), "edge-2,edge-3@+1m..")
        );
        for bad in ["a,,b", "a,", ",a", "a,b@x..y"] {
            assert!(bad.parse::<SideSpecs>().is_err(), "{bad}");
        }
    }

    #[test]
    fn sides_parse() {
        let s: SideSpec = "rec/a".parse().unwrap();
        assert_eq!((s.path, s.from, s.to), ("rec/a".into(), None, None));
        let s: SideSpec = "rec@+30s..+2m".parse().unwrap();
        assert_eq!(s.path, PathBuf::from("rec"));
        assert_eq!(s.from, Some(Time::After(Duration::from_secs(30))));
        assert_eq!(s.to, Some(Time::After(Duration::from_secs(120))));
        let s: SideSpec = "me@host/rec@2026-11-23T03:12:00Z..".parse().unwrap();
        assert_eq!(s.path, PathBuf::from("me@host/rec"));
        assert_eq!((s.from, s.to), (Some(Time::At(t("2026-11-23T03:12:00Z"))), None));
        let s: SideSpec = "rec@..90s".parse().unwrap();
        assert_eq!((s.from, s.to), (None, Some(Time::After(Duration::from_secs(90)))));
        // An '@' with no range is part of the path.
        assert_eq!("a@b".parse::<SideSpec>().unwrap().path, PathBuf::from("a@b"));
        for bad in ["rec@soon..later", "@1s..2s", "rec@+1x.."] {
            let e = bad.parse::<SideSpec>().unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{bad}: {e}");
        }
    }

    #[test]
    fn ranges_select_polls_or_say_why_not() {
        let t0 = t("2026-11-23T03:00:00Z");
        let times: Vec<SystemTime> = (0..10).map(|i| t0 + Duration::from_secs(i * 10)).collect();
        let sel = |s: &str| s.parse::<SideSpec>().unwrap().select(&times);
        assert_eq!(sel("r"), Ok(0..10));
        assert_eq!(sel("r@+20s..+50s"), Ok(2..5));
        assert_eq!(sel("r@..+15s"), Ok(0..2));
        assert_eq!(sel("r@2026-11-23T03:01:00Z.."), Ok(6..10));
        assert_eq!(sel("r@03:00:30..03:01"), Ok(3..6), "times of day, on the first poll's day");
        assert!(sel("r@+50s..+20s").unwrap_err().contains("empty"));
        assert!(sel("r@+30s..+30s").unwrap_err().contains("empty"));
        let e = sel("r@+5m..").unwrap_err();
        assert!(e.contains("outside the recording") && e.contains("2026-11-23T03:01:30Z"), "{e}");
        assert!(sel("r@2026-11-22T00:00:00Z..2026-11-22T01:00:00Z").unwrap_err().contains("outside"));
        assert!(sel("r@+11s..+12s").unwrap_err().contains("holds no polls"));
        assert!("r".parse::<SideSpec>().unwrap().select(&[]).unwrap_err().contains("no polls"));
        // Offsets that would overflow the clock are refused when parsed, not added.
        let e = "r@..+10000000000000000000s".parse::<SideSpec>().unwrap_err();
        assert!(e.contains("longer than 100 years"), "{e}");
        assert_eq!(sel("r@..+36500d"), Ok(0..10), "100 years is still an offset");
    }
}
