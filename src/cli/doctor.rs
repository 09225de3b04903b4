//! `bbrtop doctor`: check the host's BBR setup. Exit 0 all well, 1 warnings, 2 failures.

use super::Failure;
use super::args::parse_duration;
use crate::doctor::{self, Bdp, Check, Status, host};
use bbrtop_collect::InetDiag;
use bbrtop_collect::netns::NetnsSpec;
use bbrtop_core::model::StateSet;
use clap::Args;
use std::io::Write;

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Judge the socket buffers against this path: RATE RTT, e.g. `--bdp 1gbit 100ms` (below 2x
    /// its BDP is a warning). Without it the buffer checks only say what path each carries.
    #[arg(long, num_args = 2, value_names = ["RATE", "RTT"])]
    pub bdp: Option<Vec<String>>,
    /// Also check another network namespace and report where it differs from the host.
    #[arg(long, value_name = "NAME|PATH", value_parser = super::args::parse_netns)]
    pub netns: Option<NetnsSpec>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print only the commands that would fix what is wrong (nothing is changed). A sysctl is kept
    /// in /etc/sysctl.d/90-bbrtop.conf by a line that replaces its own, so it can be run again.
    #[arg(long)]
    pub fix: bool,
}

fn bdp(a: &DoctorArgs) -> Result<Option<Bdp>, Failure> {
    let Some(v) = &a.bdp else { return Ok(None) };
    let rate = doctor::parse_rate(&v[0]).map_err(Failure::Usage)?;
    let rtt = parse_duration(&v[1]).map_err(Failure::Usage)?;
    if rtt.is_zero() || rtt > std::time::Duration::from_secs(10) {
        return Err(Failure::Usage(format!(
            "invalid --bdp RTT {:?}: must be above zero and at most 10s",
            v[1]
        )));
    }
    Ok(Some(Bdp { rate_bits_per_sec: rate, rtt_seconds: rtt.as_secs_f64() }))
}

/// Readings and the live check in the calling thread's namespace.
fn readings() -> doctor::Readings {
    let mut r = host::read_readings();
    r.live = InetDiag::open(None, StateSet::default_filter())
        .and_then(|mut d| d.dump())
        .ok()
        .map(|d| host::live_of(&d));
    r
}

/// Runs doctor and returns its exit code (0, 1 or 2).
pub fn run(a: DoctorArgs) -> Result<u8, Failure> {
    let bdp = bdp(&a)?;
    let mut checks = doctor::checks(&readings(), bdp);
    if let Some(ns) = &a.netns {
        let r = bbrtop_collect::netns::run_in(ns, readings).map_err(Failure::from_netns)?;
        let theirs = doctor::checks(&r, bdp);
        checks.extend(doctor::netns_checks(&checks, &theirs));
    }
    let mut out = std::io::stdout().lock();
    let res = if a.json {
        crate::output::json::write_line(&mut out, &checks)
    } else if a.fix {
        write_fixes(&mut out, &checks)
    } else {
        write_table(&mut out, &checks)
    };
    res.or_else(super::snapshot::ignore_broken_pipe).map_err(|e| Failure::Runtime(e.into()))?;
    Ok(doctor::exit_code(&checks))
}

fn write_table(w: &mut impl Write, checks: &[Check]) -> std::io::Result<()> {
    let name_w = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let val_w = checks.iter().map(|c| c.value.len()).max().unwrap_or(0).min(40);
    for c in checks {
        writeln!(w, "{:<4}  {:<name_w$}  {:<val_w$}  {}", c.status.label(), c.name, c.value, c.why)?;
        if c.status >= Status::Warn {
            for f in &c.fix {
                writeln!(w, "{:<4}  {:<name_w$}  fix: {f}", "", "")?;
            }
        }
    }
    Ok(())
}

fn write_fixes(w: &mut impl Write, checks: &[Check]) -> std::io::Result<()> {
    writeln!(w, "# bbrtop doctor --fix: review, then run as root. Nothing has been changed.")?;
    for c in checks.iter().filter(|c| c.status > Status::Ok && !c.fix.is_empty()) {
        writeln!(w, "# {}: {}", c.name, c.value)?;
        for f in &c.fix {
            writeln!(w, "{f}")?;
        }
    }
    Ok(())
}
