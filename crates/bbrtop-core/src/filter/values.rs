//! The values words take: ports, addresses, states, and numbers in a column's unit (`100ms`,
//! `10Mbit/s`, `1%`, `2x`), each turned into the unit the column holds.

use super::error::FilterError;
use crate::columns::{Column, Unit};
use crate::model::TcpState;
use ipnet::{IpNet, Ipv4Net};
use std::net::IpAddr;

/// Parses `10.0.0.0/8`, `2001:db8::/32` or a bare address (a /32 or /128).
/// An IPv4 network written IPv4-mapped (`::ffff:10.0.0.0/104`) is taken as the IPv4 one, since
/// sockets' addresses are compared in their canonical form.
pub fn parse_cidr(s: &str) -> Result<IpNet, FilterError> {
    let net = match s.parse::<IpNet>() {
        Ok(n) => n.trunc(),
        Err(_) => s.parse::<IpAddr>().map(IpNet::from).map_err(|_| FilterError::Cidr(s.to_string()))?,
    };
    Ok(match net {
        IpNet::V6(n) if n.prefix_len() >= 96 => match n.addr().to_ipv4_mapped() {
            Some(v4) => Ipv4Net::new(v4, n.prefix_len() - 96).map_or(net, IpNet::V4),
            None => net,
        },
        _ => net,
    })
}

/// A port, 1-65535; `:443` as `ss` writes it too.
pub fn parse_port(s: &str) -> Result<u16, FilterError> {
    match s.strip_prefix(':').unwrap_or(s).parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(FilterError::Port(s.to_string())),
    }
}

pub fn parse_state(s: &str) -> Result<TcpState, FilterError> {
    s.parse::<TcpState>().map_err(|e| FilterError::State(e.to_string()))
}

/// What a column's values are typed as, for the error that names it.
fn expected(unit: Unit) -> &'static str {
    match unit {
        Unit::Micros => "a time such as 100ms, 1.5s or 500us",
        Unit::BytesPerSec => "a bit rate such as 10Mbit/s, 1Gbit or 500kbit (or 10Mbps as ss writes it)",
        Unit::Share => "a percentage such as 1% or 0.5%",
        Unit::Ratio => "a ratio such as 2x or 1.5",
        Unit::Gain | Unit::Gains => "a number such as 1.25",
        Unit::Count | Unit::Addr | Unit::Text => "a number such as 10",
    }
}

/// What one of `unit`'s suffixes turns its number into in the column's own unit, as a multiplier
/// and a divisor (a division by 100 or 8 is exact where a multiplication by 0.01 is not: `3%` is
/// then the same 0.03 as 30 bytes of 1000); `None` for a suffix the unit does not take. Suffixes
/// are matched without regard to case.
fn scale(unit: Unit, suffix: &str) -> Option<(f64, f64)> {
    let s = suffix.to_lowercase();
    match unit {
        Unit::Micros => match s.as_str() {
            "us" | "µs" => Some((1.0, 1.0)),
            "ms" => Some((1e3, 1.0)),
            "s" => Some((1e6, 1.0)),
            _ => None,
        },
        // Bits per second, as the table shows rates and `ss` prints them (`Mbps` is megabits
        // there), into bytes per second.
        Unit::BytesPerSec => {
            let bits = s.strip_suffix("/s").unwrap_or(&s);
            let prefix = bits.strip_suffix("bit").or_else(|| s.strip_suffix("bps"))?;
            let m = match prefix {
                "" => 1.0,
                "k" => 1e3,
                "m" => 1e6,
                "g" => 1e9,
                "t" => 1e12,
                _ => return None,
            };
            Some((m, 8.0))
        }
        Unit::Share => (s == "%").then_some((1.0, 100.0)),
        Unit::Ratio => matches!(s.as_str(), "" | "x").then_some((1.0, 1.0)),
        Unit::Gain | Unit::Gains | Unit::Count => s.is_empty().then_some((1.0, 1.0)),
        Unit::Addr | Unit::Text => None,
    }
}

/// `text` as a value of column `c`, in the column's unit: `100ms` is 100000 for a column of
/// microseconds. A number with no unit where the column needs one, a unit it does not take, or no
/// number at all is an error naming what it takes.
pub fn parse_value(c: &Column, text: &str) -> Result<f64, FilterError> {
    let err = || FilterError::Value { key: c.key.into(), value: text.into(), expected: expected(c.unit) };
    let split = text.find(|ch: char| !(ch.is_ascii_digit() || ch == '.')).unwrap_or(text.len());
    let (num, suffix) = text.split_at(split);
    // A number too long for an f64 reads as infinity: refused, as any other non-number.
    let n: f64 = num.parse().ok().filter(|n: &f64| n.is_finite()).ok_or_else(err)?;
    let (mul, div) = scale(c.unit, suffix).ok_or_else(err)?;
    Ok(n * mul / div)
}
