//! `bbrtop compare A B`: two recordings, or two ranges of one, side by side (`crate::compare`).
//! Reads each side's polls in batches and summarises its sockets as it goes.

use super::Failure;
use crate::compare::range::{SideSpec, SideSpecs};
use crate::compare::summary::Summarizer;
use crate::compare::{Comparison, Side, SideHead, plot, table};
use crate::record::Recording;
use anyhow::Context;
use bbrtop_core::geo::Geo;
use bbrtop_core::peer_groups::PeerGroups;
use bbrtop_core::stats;
use clap::Args;
use std::path::PathBuf;

/// Polls decoded at a time: bounds the memory a long recording takes while it is read.
const BATCH: usize = 600;

/// The sides' syntax and the method, for `--help` (its figures from the code that uses them).
fn long_help() -> String {
    format!(
        "Each side is PATH[@FROM..TO]: a recording (a directory `bbrtop record` or `bbrtop lab --record`
wrote, or one chunk's *.polls.parquet file), optionally cut to the polls at or after FROM and
before TO; or several, comma-separated (a canary against the rest: each host's recording), and
then a row per host too. A PATH may hold * and ? in its segments (quoted, so that bbrtop expands
it: 'fleet/host=edge-*'), each match a recording (at most {max_paths} paths at a segment and
{max_dirs} directories read), and a directory of several hosts' trees
(--record.layout hive) is each host's recording. FROM and TO are RFC 3339 times (2026-11-23T03:12:00Z) or offsets from the
recording's first poll (+90s, +5m); either may be left out. Examples:
  bbrtop compare lab/cubic lab/bbr
  bbrtop compare rec@..2026-11-23T12:00:00Z rec@2026-11-23T12:00:00Z..
  bbrtop compare rec@+0s..+10m rec@+50m..+60m --json
  bbrtop compare edge-2,edge-3,edge-4 canary
  bbrtop compare 'fleet/host=edge-*' fleet/host=canary

Each socket is summarised over its polls first (its srtt percentiles and median inflation, its
throughput and goodput as bytes sent and acked over its recorded life, its retransmitted over
sent bytes); every figure is then the median over sockets of that socket figure, per group (all
sockets, each cc, each peer group with --peer-groups.file, and each peer AS and country with
the databases --peer-groups.asn.file and --peer-groups.country.file name: the {} with the most
bytes sent over both sides, the rest as \"other\"). B-A comes with a {:.0}% percentile
bootstrap interval over sockets ({} resamples, seed {}: the same input gives the same output);
with fewer than {} sockets on a side there is no interval, and the table says so.

Each side's ccs (shares of sockets and bytes) say what the comparison can claim: both sides of
one cc (no cc's share moving by {:.0} points or more) give no cc verdict, whatever differs (time
and neighbours); most sockets moving from one cc to another give one, observed; a mix that moved
otherwise gives none. Two recordings are never a randomized experiment (`bbrtop experiment` is);
a cc that ran on both sides and kept its share is shown as the control: what time and neighbours
did without a change of cc.",
        crate::compare::report::TOP_LABELS,
        stats::CONFIDENCE * 100.0,
        stats::RESAMPLES,
        stats::SEED,
        stats::MIN_SOCKETS,
        crate::compare::contrast::SAME_SHARE * 100.0,
        max_paths = crate::record::glob::MAX_PATHS,
        max_dirs = crate::record::glob::MAX_DIRS,
    )
}

#[derive(Args, Debug)]
#[command(after_long_help = long_help())]
pub struct CompareArgs {
    /// The first side (A): PATH[@FROM..TO], or several comma-separated (see --help).
    #[arg(value_name = "A", value_parser = |s: &str| s.parse::<SideSpecs>())]
    pub a: SideSpecs,
    /// The second side (B); differences are B - A, and "worse" means worse on B.
    #[arg(value_name = "B", value_parser = |s: &str| s.parse::<SideSpecs>())]
    pub b: SideSpecs,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write the srtt distributions (a CDF per side and cc) as DIR/compare-srtt-cdf.svg
    /// (DIR created if missing), as `bbrtop lab --plot DIR` writes its figures.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// CIDR groups (YAML, as `export` takes): a row per peer group too. A regular file of at
    /// most 1 MiB.
    #[arg(long = "peer-groups.file", value_name = "FILE")]
    pub peer_groups: Option<PathBuf>,
    /// A MaxMind-format ASN database (GeoLite2-ASN, GeoIP2-ISP, DB-IP ASN lite): a row per
    /// peer AS too (the top ones by bytes). At most 256 MiB.
    #[arg(long = "peer-groups.asn.file", value_name = "FILE")]
    pub asn_db: Option<PathBuf>,
    /// A MaxMind-format Country or City database (GeoLite2, GeoIP2, DB-IP lite): a row per peer
    /// country too (the top ones by bytes). At most 256 MiB.
    #[arg(long = "peer-groups.country.file", value_name = "FILE")]
    pub country_db: Option<PathBuf>,
}

/// The recordings a side names: each of its paths' (a glob's matches, a directory of several
/// hosts' trees as each host's: [`crate::record::layout::recordings`]), with the path's range.
fn expand(specs: &SideSpecs) -> Result<Vec<SideSpec>, Failure> {
    let mut out = Vec::new();
    for spec in &specs.specs {
        let paths =
            crate::record::layout::recordings(&spec.path).map_err(|e| Failure::Usage(e.to_string()))?;
        if paths.len() == 1 && paths[0] == spec.path {
            out.push(spec.clone());
            continue;
        }
        // The range as given, after the path: `fleet/host=*@+1m..` is `fleet/host=a@+1m..`, ...
        let range = spec.text.strip_prefix(&*spec.path.to_string_lossy()).unwrap_or_default();
        out.extend(paths.into_iter().map(|path| {
            let text = format!("{}{range}", path.display());
            SideSpec { path, text, ..spec.clone() }
        }));
    }
    Ok(out)
}

/// One side read from its recordings: every socket of each in its range summarised, each
/// recording's apart (cookies are one kernel's: two hosts may share them), named for its host.
fn read_side(specs: &SideSpecs, groups: &PeerGroups, geo: &Geo) -> Result<Side, Failure> {
    let expanded = expand(specs)?;
    let mut parts = expanded.iter().map(|s| read_one(s, groups, geo));
    let first = parts.next().expect("a side names a recording")?;
    let mut side = Side { head: SideHead { spec: specs.text.clone(), ..first.head }, ..first };
    for part in parts {
        let part = part?;
        let h = &mut side.head;
        (h.from, h.to) = (h.from.min(part.head.from), h.to.max(part.head.to));
        (h.polls, h.sockets) = (h.polls + part.head.polls, h.sockets + part.head.sockets);
        h.hosts.extend(part.head.hosts);
        side.sockets.extend(part.sockets);
        side.responses.extend(part.responses);
    }
    Ok(side)
}

/// One recording's range, summarised.
fn read_one(spec: &SideSpec, groups: &PeerGroups, geo: &Geo) -> Result<Side, Failure> {
    let mut rec = Recording::open(&spec.path).map_err(|e| Failure::Usage(format!("{e:#}")))?;
    super::failure::warn_skipped(&spec.path, rec.skipped());
    let times: Vec<_> = rec.polls().iter().map(|p| p.at).collect();
    let range = spec.select(&times).map_err(Failure::Usage)?;
    let mut sum = Summarizer::new(groups, geo);
    let reading = || format!("reading {}", spec.path.display());
    // The response times counted before the range, which the range's last poll's counts include.
    let before = match range.start {
        0 => None,
        s => rec.read(s - 1..s).with_context(reading)?.pop().map(|p| p.totals),
    };
    let mut last = Vec::new();
    let mut at = range.start;
    while at < range.end {
        let end = (at + BATCH).min(range.end);
        let snaps = rec.read(at..end).with_context(reading)?;
        for s in &snaps {
            sum.add(s);
        }
        if let Some(s) = snaps.last() {
            last.clone_from(&s.totals);
        }
        at = end;
    }
    // The hive layout's host= partition first: what --record.host named it.
    let named = rec.partition_host().map(String::from).or_else(|| Some(rec.system().host.clone()));
    let host = named.filter(|h| !h.is_empty()).unwrap_or_else(|| {
        let name = spec.path.file_name().unwrap_or(spec.path.as_os_str());
        name.to_string_lossy().into_owned()
    });
    let mut sockets = sum.finish();
    sockets.iter_mut().for_each(|s| s.host.clone_from(&host));
    let head = SideHead {
        spec: spec.text.clone(),
        from: times[range.start],
        to: times[range.end - 1],
        polls: range.len(),
        sockets: sockets.len(),
        hosts: vec![host],
    };
    let responses = crate::compare::responses::over_range(&head.hosts[0], before.as_deref(), &last);
    Ok(Side { head, sockets, responses })
}

pub fn run(a: CompareArgs) -> Result<(), Failure> {
    let groups = super::args::peer_groups(a.peer_groups.as_deref())?;
    let geo = super::args::geo(a.asn_db.as_deref(), a.country_db.as_deref())?;
    let (mut sa, mut sb) = (read_side(&a.a, &groups, &geo)?, read_side(&a.b, &groups, &geo)?);
    crate::compare::report::bound_labels(&mut sa.sockets, &mut sb.sockets);
    let cmp = Comparison::new(&sa, &sb, a.peer_groups.is_some());
    if let Some(dir) = &a.plot {
        super::print::plot(dir, plot::FILE, plot::rtt_cdf(&sa, &sb), a.json)?;
    }
    super::print::report(a.json, &cmp, table::render)?;
    Ok(())
}
