//! `bbrtop record DIR`: every poll's state into a recording (`crate::record`), until interrupted
//! or `--count` polls; read back by `bbrtop replay` and `bbrtop compare`, and by DuckDB or pandas.

use super::Failure;
use super::args::{PollArgs, parse_duration_in, parse_size};
use super::startup;
use crate::record::{Layout, RecordOptions, Recorder};
use anyhow::Context;
use bbrtop_core::system::SystemInfo;
use clap::Args;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The recording's directory (created if missing; an existing recording is continued).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub poll: PollArgs,
    #[command(flatten)]
    pub peers: super::peers::PeerArgs,
    /// A chunk's length: files are cut (and retention applied) this often; each chunk starts with
    /// every socket's row, and holds only changes after.
    #[arg(long = "record.chunk", value_name = "DURATION", default_value = "1m", value_parser = parse_chunk)]
    pub chunk: Duration,
    /// A segment's length: the chunk under way is written in segments, each a pair of files
    /// readable once renamed from .tmp (as soon as its polls cover this long), so a crash or
    /// SIGKILL loses at most this long of polls. A closed chunk's segments become its two files.
    #[arg(long = "record.segment", value_name = "DURATION", default_value = "5s", value_parser = parse_segment)]
    pub segment: Duration,
    /// Delete chunks older than this (e.g. 7d). Default: keep them.
    #[arg(long = "record.retention.time", value_name = "DURATION", value_parser = parse_retention)]
    pub max_age: Option<Duration>,
    /// Delete the oldest chunks while the recording is larger than this (e.g. 10GiB, 500MB).
    /// Default: no limit.
    #[arg(long = "record.retention.size", value_name = "SIZE", value_parser = parse_size)]
    pub max_bytes: Option<u64>,
    /// Where chunks go: flat, in DIR itself; or hive, in Hive-style partitions
    /// DIR/host=NAME/date=YYYY-MM-DD/ (the UTC date of each chunk's first poll), so that one glob
    /// over many hosts' recordings reads as one table with host and date columns.
    #[arg(long = "record.layout", value_name = "LAYOUT", default_value = "flat")]
    pub layout: LayoutChoice,
    /// The host= partition's name with --record.layout hive: a letter or digit, then letters,
    /// digits, '.', '-' and '_'. Default: the host name (/proc/sys/kernel/hostname).
    #[arg(long = "record.host", value_name = "NAME")]
    pub host: Option<String>,
    /// Stop after this many polls (default: until SIGINT or SIGTERM; SIGHUP does not stop it,
    /// it reads the --peer-groups databases again).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Start the built-in lab (as `bbrtop --lab` does) and record it. Torn down on exit.
    #[arg(long, conflicts_with = "netns")]
    pub lab: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutChoice {
    Flat,
    Hive,
}

fn parse_chunk(s: &str) -> Result<Duration, String> {
    parse_duration_in(s, "chunk", Duration::from_secs(1), Duration::from_secs(24 * 3600))
}

pub(super) fn parse_segment(s: &str) -> Result<Duration, String> {
    parse_duration_in(s, "segment", Duration::from_millis(100), Duration::from_secs(24 * 3600))
}

fn parse_retention(s: &str) -> Result<Duration, String> {
    parse_duration_in(s, "retention", Duration::from_secs(1), Duration::from_secs(100 * 365 * 24 * 3600))
}

fn usage(e: anyhow::Error) -> Failure {
    Failure::Usage(format!("{e:#}"))
}

/// The layout the flags ask for: the hive layout's host named by `--record.host`, else this
/// host's name.
fn layout(a: &RecordArgs) -> Result<Layout, Failure> {
    if a.layout == LayoutChoice::Flat {
        return match a.host {
            Some(_) => {
                Err(Failure::Usage("--record.host names the host= partition of --record.layout hive".into()))
            }
            None => Ok(Layout::Flat),
        };
    }
    let host = a.host.clone().unwrap_or_else(|| bbrtop_collect::host::system_info(None).host);
    crate::record::layout::check_host(&host).map_err(|e| Failure::Usage(format!("--record.host: {e}")))?;
    Ok(Layout::Hive { host })
}

pub fn run(a: RecordArgs) -> Result<(), Failure> {
    let opts = RecordOptions {
        chunk: a.chunk,
        segment: a.segment,
        max_age: a.max_age,
        max_bytes: a.max_bytes,
        layout: layout(&a)?,
    };
    // SIGHUP reads the databases again and does not stop a recorder: as Prometheus and the
    // exporter, a daemon (under systemd or nohup) is reloaded by it, not ended. A lab's recording
    // is a terminal's: its hang-up ends it, and the lab is torn down.
    startup::HUP_RELOADS.store(!a.lab, Ordering::Relaxed);
    // The directory first: a recording that cannot be written should not wait for the lab.
    let placeholder = SystemInfo::default();
    drop(Recorder::create(&a.dir, opts.clone(), &placeholder).map_err(usage)?);
    let (peers, geo_files) = a.peers.load()?;
    let geo = std::sync::Arc::clone(&peers.geo);
    let lab = a.lab.then(startup::live_lab);
    let started = startup::start(&a.poll, peers, lab, &mut |line| tracing::warn!("{line}"))?;
    let _reload = super::reload::start(geo_files, geo, std::sync::Arc::clone(&started.stop))
        .context("starting the database reloader")?;
    let sys = bbrtop_collect::host::system_info(started.netns.as_ref());
    let mut rec = Recorder::create(&a.dir, opts, &sys).map_err(usage)?;
    tracing::info!(dir = %rec.dir().display(), chunk = ?a.chunk, "recording");
    let (published, stop) = (started.runtime.published(), &started.stop);
    let (mut seq, mut cost) = (0, Cost::default());
    while !stop.load(Ordering::Relaxed) && a.count.is_none_or(|n| cost.polls < n) {
        let Some(snap) = published.wait_newer(seq, Duration::from_millis(100)) else { continue };
        seq = snap.seq;
        let t = Instant::now();
        rec.write(&snap).with_context(|| format!("recording into {}", a.dir.display()))?;
        cost.add(&snap, t.elapsed());
    }
    let t = Instant::now();
    let copied = rec.rows_copied();
    let bytes = rec.finish().with_context(|| format!("finishing the recording in {}", a.dir.display()))?;
    cost.writing += t.elapsed();
    cost.report(bytes, copied);
    Ok(())
}

/// What recording cost, beside what polling did: the figures `bench/` and docs/recordings.md quote.
#[derive(Default)]
struct Cost {
    polls: u64,
    socket_polls: u64,
    writing: Duration,
    polling: Duration,
}

impl Cost {
    fn add(&mut self, snap: &bbrtop_core::snapshot::Snapshot, writing: Duration) {
        self.polls += 1;
        self.socket_polls += snap.sockets.len() as u64;
        self.writing += writing;
        let polled: f64 = snap.collectors.iter().map(|c| c.last_duration_seconds).sum();
        self.polling += Duration::try_from_secs_f64(polled).unwrap_or_default();
    }

    /// `copied`: keyframe rows copied from the chunk before (the sockets that did not move).
    fn report(&self, bytes: u64, copied: u64) {
        let per = |d: Duration| d.as_secs_f64() * 1e3 / self.polls.max(1) as f64;
        tracing::info!(
            polls = self.polls,
            socket_polls = self.socket_polls,
            bytes,
            bytes_per_socket_poll = format!("{:.2}", bytes as f64 / self.socket_polls.max(1) as f64),
            record_ms_per_poll = format!("{:.3}", per(self.writing)),
            collect_ms_per_poll = format!("{:.3}", per(self.polling)),
            keyframe_rows_copied = copied,
            "recording ended"
        );
    }
}
