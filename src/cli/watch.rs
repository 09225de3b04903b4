//! `bbrtop watch`: poll every --interval and stream NDJSON until interrupted.

use super::Failure;
use super::args::PollArgs;
use super::snapshot::ignore_broken_pipe;
use crate::output::json;
use anyhow::Context;
use bbrtop_core::snapshot::closed_since;
use clap::Args;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub poll: PollArgs,
    /// One JSON object per socket per poll (the only format; the flag documents it).
    #[arg(long)]
    pub ndjson: bool,
    /// Stop after this many polls (default: until SIGINT or SIGTERM).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Stream one JSON object per closed flow (eBPF close records) instead of live sockets.
    #[arg(long)]
    pub closed: bool,
}

pub fn run(a: WatchArgs) -> Result<(), Failure> {
    let started =
        super::startup::start(&a.poll, Default::default(), None, &mut |line| tracing::warn!("{line}"))?;
    if a.closed && started.bpf.attached.is_empty() {
        return Err(Failure::Runtime(anyhow::anyhow!("--closed needs eBPF, which is off")));
    }
    let (published, stop) = (started.runtime.published(), &started.stop);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let (mut seq, mut polls, mut closed_seq) = (0, 0u64, 0u64);
    while !stop.load(Ordering::Relaxed) && a.count.is_none_or(|n| polls < n) {
        let Some(snap) = published.wait_newer(seq, Duration::from_millis(100)) else { continue };
        seq = snap.seq;
        polls += 1;
        let res = if a.closed {
            // The snapshot keeps the latest records only: say how many fell out between polls.
            let (new, missed) = closed_since(&snap.closed, Some(closed_seq));
            if missed > 0 {
                tracing::warn!(missed, "closed records missed between polls");
            }
            closed_seq = new.last().map_or(closed_seq, |c| c.seq);
            new.iter().try_for_each(|c| json::write_line(&mut out, c))
        } else {
            snap.sockets.iter().try_for_each(|s| {
                json::write_line(&mut out, &json::SocketLine { ts: snap.taken_at, seq, socket: &s })
            })
        }
        .and_then(|()| out.flush());
        if let Err(e) = res {
            // A closed pipe ends the stream quietly; anything else is an error.
            return ignore_broken_pipe(e).context("writing to stdout").map_err(Failure::from);
        }
    }
    Ok(())
}
