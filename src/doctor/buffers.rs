//! The socket buffer limits. They are judged only against a path the user names (`--bdp RATE
//! RTT`: below 2x its BDP is a warning): an API or edge host needs no 25 MB window, so any default
//! path would fail ordinary hosts and make the exit code useless across a fleet. Without one,
//! each check says what path its limit carries.

use super::{Bdp, Check, Readings, Status, check, fix, unreadable};

/// The most these sysctls hold: the kernel keeps them as an int.
const SYSCTL_MAX: u64 = i32::MAX as u64;

/// The rates a limit's reach is told at when no path is named.
const RATES: [(f64, &str); 2] = [(1e9, "1 Gbit/s"), (100e6, "100 Mbit/s")];

/// One buffer sysctl as read.
#[derive(Clone, Copy)]
enum Limit {
    /// net.core.[rw]mem_max: the most SO_RCVBUF/SO_SNDBUF may ask for.
    Max(u64),
    /// net.ipv4.tcp_[rw]mem: min, default and max; autotuning grows a window up to the max.
    Autotuned([u64; 3]),
}

impl Limit {
    fn bytes(self) -> u64 {
        match self {
            Limit::Max(v) | Limit::Autotuned([.., v]) => v,
        }
    }

    fn value(self) -> String {
        match self {
            Limit::Max(v) => v.to_string(),
            Limit::Autotuned([a, b, c]) => format!("{a} {b} {c}"),
        }
    }

    /// The value that raises the limit to `need`, the rest kept.
    fn raised(self, need: u64) -> String {
        match self {
            Limit::Max(_) => need.to_string(),
            Limit::Autotuned([a, b, _]) => format!("{a} {b} {need}"),
        }
    }

    fn caps(self) -> &'static str {
        match self {
            Limit::Max(_) => "applications that set SO_RCVBUF/SO_SNDBUF are capped",
            Limit::Autotuned(_) => "autotuning grows a window up to the max",
        }
    }
}

/// The four buffer checks, against `bdp` where the user named one.
pub fn checks(r: &Readings, bdp: Option<Bdp>) -> [Check; 4] {
    [
        judge("net.core.rmem_max", r.rmem_max.map(Limit::Max), bdp),
        judge("net.core.wmem_max", r.wmem_max.map(Limit::Max), bdp),
        judge("net.ipv4.tcp_rmem", r.tcp_rmem.map(Limit::Autotuned), bdp),
        judge("net.ipv4.tcp_wmem", r.tcp_wmem.map(Limit::Autotuned), bdp),
    ]
}

fn judge(name: &str, limit: Option<Limit>, bdp: Option<Bdp>) -> Check {
    let Some(l) = limit else {
        return unreadable(name, if bdp.is_some() { Status::Warn } else { Status::Info });
    };
    let Some(bdp) = bdp else {
        let why = format!("{}; {}. --bdp RATE RTT judges it against your path.", reach(l.bytes()), l.caps());
        return check(name, Status::Info, l.value(), &why, &[]);
    };
    let need = bdp.bytes().saturating_mul(2).min(SYSCTL_MAX);
    let capped = if need == SYSCTL_MAX {
        format!(" (capped at {SYSCTL_MAX}, the most the kernel takes)")
    } else {
        String::new()
    };
    let note = format!(
        "BDP {} bytes ({:.0} Mbit/s x {:.0} ms); a window needs about 2x BDP of buffer{capped}.",
        bdp.bytes(),
        bdp.rate_bits_per_sec / 1e6,
        bdp.rtt_seconds * 1e3
    );
    if l.bytes() >= need {
        check(name, Status::Ok, l.value(), &note, &[])
    } else {
        let why = format!("{} is below 2x BDP: {}. {note}", l.bytes(), l.caps());
        check(name, Status::Warn, l.value(), &why, &fix::sysctl(name, &l.raised(need)))
    }
}

/// The paths `bytes` of buffer carries: a window needs about 2x BDP of buffer, so half of it is
/// the most in flight; e.g. "4 MiB carries 1 Gbit/s up to 17 ms, 100 Mbit/s up to 168 ms".
fn reach(bytes: u64) -> String {
    let in_flight_bits = bytes as f64 / 2.0 * 8.0;
    let at: Vec<String> = RATES
        .iter()
        .map(|(rate, label)| format!("{label} up to {}", millis(in_flight_bits / rate * 1e3)))
        .collect();
    format!("{} carries {} (a window needs about 2x BDP of buffer)", size(bytes), at.join(", "))
}

/// Bytes in KiB or MiB: "208 KiB", "4 MiB", "23.8 MiB".
fn size(bytes: u64) -> String {
    let (unit, name) = if bytes >= 1 << 20 { (1u64 << 20, "MiB") } else { (1 << 10, "KiB") };
    if bytes.is_multiple_of(unit) {
        format!("{} {name}", bytes / unit)
    } else {
        format!("{:.1} {name}", bytes as f64 / unit as f64)
    }
}

fn millis(ms: f64) -> String {
    if ms >= 10.0 { format!("{ms:.0} ms") } else { format!("{ms:.1} ms") }
}
