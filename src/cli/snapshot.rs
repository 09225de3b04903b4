//! `bbrtop snapshot`: one poll, printed as a table or JSON.

use super::Failure;
use super::args::PollArgs;
use crate::collect::InetDiag;
use crate::engine::{Engine, Now, Update};
use crate::output::{json, table};
use anyhow::Context;
use clap::Args;
use std::io::Write;

#[derive(Args, Debug)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub poll: PollArgs,
    /// Print JSON (field names carry their units; see README) instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: SnapshotArgs) -> Result<(), Failure> {
    let cfg = a.poll.engine_config();
    let mut diag = InetDiag::open(a.poll.source.netns.as_ref(), cfg.filter.state_set())
        .map_err(Failure::from_collect)?;
    let dump = diag.dump().map_err(Failure::from_collect)?;
    let mut engine = Engine::new(cfg);
    let now = Now::system();
    engine.apply(Update::Dump(dump), now);
    let snap = engine.tick(now);
    let sockets: Vec<_> = snap.sockets.iter().collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let res = if a.json {
        json::write_line(&mut out, &json::SnapshotDoc::new(&snap, sockets))
    } else {
        table::write(&mut out, &sockets)
    };
    res.and_then(|()| out.flush()).or_else(ignore_broken_pipe).context("writing to stdout")?;
    // The process ends next: freeing every record one by one would be wasted work.
    std::mem::forget(snap);
    std::mem::forget(engine);
    Ok(())
}

/// `bbrtop snapshot | head` is not an error.
pub fn ignore_broken_pipe(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::BrokenPipe { Ok(()) } else { Err(e) }
}
