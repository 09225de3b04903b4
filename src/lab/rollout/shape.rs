//! The rollout a user shapes: the client populations (from a YAML file, `--lab.populations.file FILE`) and
//! the response mix (`--sizes 15kB=70%,200kB=25%,2MB=5%`), each checked whole with a one-line
//! error that names what is wrong. The guide's are the defaults. Pure.

use super::{POPULATIONS, Population};
use bbrtop_core::units::interned::intern;
use serde::Deserialize;
use std::time::Duration;

/// The most populations a run takes: each is a lab per box (four), with its delay line's
/// threads, on the machine that runs them all.
pub const MAX_POPULATIONS: usize = 6;
/// The largest response a mix may ask for (the exchange's bound).
pub const MAX_RESPONSE: u64 = 64 << 20;
/// User populations' address blocks start here: 10.64.0.0/16 on, outside the blocks the built-in
/// databases map (the guide's 10.61 to 10.63), so a population is labelled by its own `asn`.
const FIRST_USER_NET: u8 = 64;

/// The response sizes asked for, with their shares in tenths of a percent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mix {
    pub shares: Vec<(u64, u32)>,
}

impl Mix {
    /// The guide's: 88% 8 kB, 10% 50 kB, 2% 200 kB (16 kB on average, 200 kB at p99).
    pub fn guide() -> Mix {
        Mix { shares: vec![(8_000, 880), (50_000, 100), (200_000, 20)] }
    }

    /// `SIZE=SHARE%,...`: sizes in bytes (B, kB, MB, GB, KiB, MiB, GiB), shares to a tenth of a
    /// percent that sum to 100%.
    pub fn parse(s: &str) -> Result<Mix, String> {
        let err = |why: String| format!("{why} (e.g. 15kB=70%,200kB=25%,2MB=5%)");
        let mut shares: Vec<(u64, u32)> = Vec::new();
        for part in s.split(',') {
            let (size, share) =
                part.split_once('=').ok_or_else(|| err(format!("{part:?} is not SIZE=SHARE%")))?;
            let bytes = parse_bytes(size).map_err(&err)?;
            if bytes > MAX_RESPONSE {
                return Err(err(format!("{size} is larger than the largest response, 64 MiB")));
            }
            let permille = parse_permille(share).map_err(&err)?;
            if shares.iter().any(|(b, _)| *b == bytes) {
                return Err(err(format!("{size} is given twice")));
            }
            shares.push((bytes, permille));
        }
        let total: u32 = shares.iter().map(|(_, p)| p).sum();
        if total != 1000 {
            return Err(err(format!("the shares sum to {}%, not 100%", f64::from(total) / 10.0)));
        }
        Ok(Mix { shares })
    }

    /// The sizes asked in turn on each connection: each size as many times as its share, in the
    /// order given, the shares' common factor taken out (the guide's is 44 of 8 kB, 5 of 50 kB
    /// and one of 200 kB in every 50).
    pub fn cycle(&self) -> Vec<u64> {
        let g = self.shares.iter().fold(0, |g, (_, p)| gcd(g, *p)).max(1);
        self.shares.iter().flat_map(|(b, p)| std::iter::repeat_n(*b, (p / g) as usize)).collect()
    }

    /// The average response, in bytes.
    pub fn mean_bytes(&self) -> f64 {
        self.shares.iter().map(|(b, p)| *b as f64 * f64::from(*p) / 1000.0).sum()
    }

    /// "88% 8 kB, 10% 50 kB, 2% 200 kB (16 kB on average)".
    pub fn describe(&self) -> String {
        let each: Vec<String> = self
            .shares
            .iter()
            .map(|(b, p)| format!("{}% {}", trim(f64::from(*p) / 10.0), bytes(*b as f64)))
            .collect();
        format!("{} ({} on average)", each.join(", "), bytes(self.mean_bytes()))
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn trim(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

/// Bytes in kB or MB, as the mix is written.
pub fn bytes(b: f64) -> String {
    match b {
        b if b >= 1e6 => format!("{} MB", trim((b / 1e5).round() / 10.0)),
        b if b >= 1e3 => format!("{} kB", trim((b / 1e2).round() / 10.0)),
        b => format!("{b:.0} B"),
    }
}

/// A number and its unit suffix.
fn split_number(s: &str) -> Option<(f64, String)> {
    let t = s.trim();
    let at = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let n: f64 = t[..at].parse().ok().filter(|n: &f64| n.is_finite())?;
    Some((n, t[at..].trim().to_lowercase()))
}

/// Bytes: a number with B, kB, MB, GB (powers of 1000) or KiB, MiB, GiB (of 1024), any case.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let bad = || format!("size {s:?}: expected bytes such as 250kB, 3MB or 1.5MiB");
    let (n, unit) = split_number(s).ok_or_else(bad)?;
    let mult = match unit.as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let b = (n * mult).round();
    if !(1.0..=1e12).contains(&b) {
        return Err(format!("size {s:?}: out of range (1 B to 1 TB)"));
    }
    Ok(b as u64)
}

/// A bit rate: a number with bit, kbit, Mbit or Gbit (an optional "/s"), any case.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let bad = || format!("rate {s:?}: expected a bit rate such as 20Mbit, 500kbit or 1Gbit/s");
    let (n, unit) = split_number(s).ok_or_else(bad)?;
    let mult = match unit.strip_suffix("/s").unwrap_or(&unit) {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        _ => return Err(bad()),
    };
    let r = (n * mult).round();
    if !(10e3..=10e9).contains(&r) {
        return Err(format!("rate {s:?}: out of range (10kbit to 10Gbit)"));
    }
    Ok(r as u64)
}

/// A share as "12.5%", in tenths of a percent, above 0 and at most 100%.
fn parse_permille(s: &str) -> Result<u32, String> {
    let bad = || format!("share {s:?}: expected a percentage such as 70% or 2.5%");
    let (n, unit) = split_number(s).ok_or_else(bad)?;
    if unit != "%" {
        return Err(bad());
    }
    let tenths = n * 10.0;
    if tenths.fract() != 0.0 || tenths <= 0.0 || tenths > 1000.0 {
        return Err(format!("share {s:?}: above 0% and at most 100%, to a tenth of a percent"));
    }
    Ok(tenths as u32)
}

/// A YAML value given as a number or as text with a unit.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Quantity {
    Number(f64),
    Text(String),
}

/// The file's schema (docs/roll-out.md, "The rollout").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    populations: Vec<Entry>,
    /// The response mix, as `--sizes` takes it (the flag, when given, wins).
    sizes: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    rate: Quantity,
    rtt: String,
    loss: Option<Quantity>,
    buffer: Option<Quantity>,
    #[serde(default)]
    cross_traffic: bool,
    asn: Option<u32>,
}

/// The populations and the mix a file gives.
#[derive(Debug, PartialEq)]
pub struct Shaped {
    pub populations: Vec<Population>,
    pub sizes: Option<Mix>,
}

/// A populations file: one error line for the first thing wrong, naming its population.
pub fn parse_file(text: &str) -> Result<Shaped, String> {
    let f: File = serde_norway::from_str(text).map_err(|e| e.to_string().replace('\n', " "))?;
    if f.populations.is_empty() || f.populations.len() > MAX_POPULATIONS {
        return Err(format!("populations: 1 to {MAX_POPULATIONS}, not {}", f.populations.len()));
    }
    let mut out: Vec<Population> = Vec::new();
    for (i, e) in f.populations.iter().enumerate() {
        let p = population(e, FIRST_USER_NET + i as u8)
            .map_err(|why| format!("population {} ({:?}): {why}", i + 1, e.name))?;
        if out.iter().any(|o| o.name == p.name) {
            return Err(format!("population {} ({:?}): the name is given twice", i + 1, e.name));
        }
        out.push(p);
    }
    let sizes = f.sizes.as_deref().map(Mix::parse).transpose().map_err(|e| format!("sizes: {e}"))?;
    Ok(Shaped { populations: out, sizes })
}

fn population(e: &Entry, net: u8) -> Result<Population, String> {
    let ok_name = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if e.name.is_empty() || e.name.len() > 24 || !e.name.chars().all(ok_name) {
        return Err("a name is 1 to 24 letters, digits, '-', '_' or '.'".into());
    }
    let rate = match &e.rate {
        Quantity::Number(n) => parse_rate(&format!("{n}bit"))?,
        Quantity::Text(t) => parse_rate(t)?,
    };
    let rtt = bbrtop_core::time_input::parse_duration(&e.rtt)
        .map_err(|_| format!("rtt {:?}: expected a time such as 70ms", e.rtt))?;
    if rtt.is_zero() || rtt > Duration::from_secs(2) {
        return Err(format!("rtt {:?}: above 0 and at most 2s", e.rtt));
    }
    let (loss, given) = match &e.loss {
        None => (0.0, String::new()),
        Some(Quantity::Number(n)) => (*n, n.to_string()),
        Some(Quantity::Text(t)) => match split_number(t) {
            Some((n, u)) if u == "%" => (n / 100.0, t.clone()),
            _ => {
                return Err(format!("loss {t:?}: expected a percentage such as 0.5% (or a fraction, 0.005)"));
            }
        },
    };
    if !(0.0..=0.5).contains(&loss) {
        return Err(format!("loss {given:?}: from 0 to 50%"));
    }
    // One bandwidth-delay product by default, and never under ten full packets.
    let bdp = (rate as f64 * rtt.as_secs_f64() / 8.0) as u64;
    let buffer = match &e.buffer {
        None => bdp.max(10 * u64::from(super::PACKET_BYTES)),
        Some(Quantity::Number(n)) => parse_bytes(&format!("{n}"))?,
        Some(Quantity::Text(t)) => parse_bytes(t)?,
    };
    if buffer < u64::from(super::PACKET_BYTES) || buffer > 64_000_000 {
        return Err(format!("buffer {buffer} B: from one full packet (1514 B) to 64 MB"));
    }
    Ok(Population {
        name: intern(&e.name),
        net,
        rtt,
        loss,
        rate_bit_per_sec: rate,
        queue_bytes: buffer as u32,
        cross_traffic: e.cross_traffic,
        asn: e.asn,
    })
}

/// The rollout as it runs: the populations and the mix, the guide's unless given.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    pub populations: Vec<Population>,
    pub mix: Mix,
}

impl Default for Shape {
    fn default() -> Self {
        Shape { populations: POPULATIONS.to_vec(), mix: Mix::guide() }
    }
}

impl Shape {
    /// Every population without its cross traffic (`--without-cross-traffic`).
    pub fn without_cross_traffic(mut self) -> Shape {
        self.populations.iter_mut().for_each(|p| p.cross_traffic = false);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guides_mix_is_the_cycle_the_rollout_always_asked() {
        let c = Mix::guide().cycle();
        assert_eq!(c.len(), 50);
        assert_eq!(c.iter().filter(|b| **b == 8_000).count(), 44);
        assert_eq!(&c[44..], [50_000, 50_000, 50_000, 50_000, 50_000, 200_000]);
        assert_eq!(Mix::guide().describe(), "88% 8 kB, 10% 50 kB, 2% 200 kB (16 kB on average)");
    }

    #[test]
    fn a_mix_parses_to_its_shares_and_cycle() {
        let m = Mix::parse("15kB=70%,200kB=25%,2MB=5%").unwrap();
        assert_eq!(m.shares, [(15_000, 700), (200_000, 250), (2_000_000, 50)]);
        assert_eq!(m.cycle().len(), 20);
        assert_eq!(m.cycle().iter().filter(|b| **b == 2_000_000).count(), 1);
        assert_eq!(m.describe(), "70% 15 kB, 25% 200 kB, 5% 2 MB (160.5 kB on average)");
        assert_eq!(Mix::parse("1MiB=99.5%,10B=0.5%").unwrap().cycle().len(), 200);
    }

    #[test]
    fn a_bad_mix_is_one_line_naming_what_is_wrong() {
        for (s, says) in [
            ("15kB=70%,200kB=25%", "the shares sum to 95%, not 100%"),
            ("15kB", "\"15kB\" is not SIZE=SHARE%"),
            ("15kB=70,2MB=30%", "share \"70\": expected a percentage"),
            ("15 parsecs=100%", "size \"15 parsecs\": expected bytes"),
            ("1GB=100%", "larger than the largest response"),
            ("1kB=50%,1000B=50%", "1000B is given twice"),
            ("1kB=0.25%,2kB=99.75%", "to a tenth of a percent"),
            ("", "\"\" is not SIZE=SHARE%"),
        ] {
            let e = Mix::parse(s).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{s}: {e}");
        }
    }

    #[test]
    fn a_populations_file_gives_each_its_path_and_block() {
        let text = "populations:
  - name: api-eu
    rate: 50Mbit
    rtt: 30ms
    loss: 0.2%
    buffer: 500kB
    asn: 64600
  - name: far
    rate: 5Mbit/s
    rtt: 200ms
    cross_traffic: true
sizes: 4kB=100%
";
        let s = parse_file(text).unwrap();
        let [eu, far] = s.populations.as_slice() else { panic!("{s:?}") };
        assert_eq!(
            (eu.name, eu.net, eu.rate_bit_per_sec, eu.queue_bytes),
            ("api-eu", 64, 50_000_000, 500_000)
        );
        assert_eq!((eu.rtt, eu.asn, eu.cross_traffic), (Duration::from_millis(30), Some(64600), false));
        assert!((eu.loss - 0.002).abs() < 1e-12);
        // No buffer: one bandwidth-delay product (5 Mbit/s x 200 ms = 125 kB).
        assert_eq!((far.net, far.queue_bytes, far.cross_traffic, far.asn), (65, 125_000, true, None));
        assert_eq!(s.sizes, Some(Mix { shares: vec![(4_000, 1000)] }));
    }

    #[test]
    fn a_bad_populations_file_is_one_line_naming_the_population() {
        let one =
            |body: &str| format!("populations:\n  - name: ok\n    rate: 10Mbit\n    rtt: 10ms\n  - {body}\n");
        for (text, says) in [
            (
                one("name: b\n    rate: 20 Mbps\n    rtt: 10ms"),
                "population 2 (\"b\"): rate \"20 Mbps\": expected a bit rate",
            ),
            (one("name: b\n    rate: 10Mbit\n    rtt: soon"), "population 2 (\"b\"): rtt \"soon\""),
            (one("name: b\n    rate: 10Mbit\n    rtt: 10ms\n    loss: 60%"), "loss \"60%\": from 0 to 50%"),
            (
                one("name: b\n    rate: 10Mbit\n    rtt: 10ms\n    buffer: 100B"),
                "buffer 100 B: from one full packet",
            ),
            (
                one("name: ok\n    rate: 10Mbit\n    rtt: 10ms"),
                "population 2 (\"ok\"): the name is given twice",
            ),
            (one("name: b c\n    rate: 10Mbit\n    rtt: 10ms"), "a name is 1 to 24 letters"),
            (one("name: b\n    rate: 10Mbit\n    rtt: 10ms\n    colour: red"), "unknown field `colour`"),
            (one("name: b\n    rtt: 10ms"), "missing field `rate`"),
            ("populations: []\n".into(), "populations: 1 to 6, not 0"),
            ("populations: [".into(), ""),
        ] {
            let e = parse_file(&text).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{text}: {e}");
        }
    }

    #[test]
    fn units() {
        assert_eq!(parse_rate("20Mbit"), Ok(20_000_000));
        assert_eq!(parse_rate("1.5gbit/s"), Ok(1_500_000_000));
        assert!(parse_rate("5bit").unwrap_err().contains("out of range"));
        assert_eq!(parse_bytes("3MB"), Ok(3_000_000));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536));
        assert_eq!(parse_bytes("1514"), Ok(1514));
        assert!(parse_bytes("0kB").unwrap_err().contains("out of range"));
    }

    #[test]
    fn no_cross_traffic_takes_the_distant_download_out() {
        let d = Shape::default();
        assert_eq!(d.populations.iter().filter(|p| p.cross_traffic).count(), 1);
        assert!(d.without_cross_traffic().populations.iter().all(|p| !p.cross_traffic));
    }
}
