//! `bbrtop snapshot`: one poll, printed as a table or JSON.

use super::Failure;
use super::args::PollArgs;
use crate::collect::InetDiag;
use crate::engine::first_sight::FirstSight;
use crate::engine::snapshot::{CollectorStatus, SocketView};
use crate::engine::{Engine, EngineConfig, Now, aggregate};
use crate::output::{json, table};
use anyhow::Context;
use clap::Args;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Mutex, mpsc};

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
    let diag = InetDiag::open(a.poll.source.netns.as_ref(), cfg.filter.state_set())
        .map_err(Failure::from_collect)?;
    if a.json { stream_json(diag, cfg) } else { print_table(diag, cfg) }
}

/// The table needs every row before it can size its columns.
fn print_table(mut diag: InetDiag, cfg: EngineConfig) -> Result<(), Failure> {
    let mut engine = Engine::new(cfg);
    let now = Now::system();
    diag.dump_into(&mut engine, now).map_err(Failure::from_collect)?;
    let snap = engine.tick(now);
    let sockets: Vec<_> = snap.sockets.iter().collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    table::write(&mut out, &sockets)
        .and_then(|()| out.flush())
        .or_else(ignore_broken_pipe)
        .context("writing to stdout")?;
    // The process ends next: freeing every record one by one would be wasted work.
    std::mem::forget(snap);
    std::mem::forget(engine);
    Ok(())
}

/// JSON is written while the kernel is still dumping: one thread reads and parses the dump and
/// derives each socket's values (the [`FirstSight`] sink), encoder threads turn batches of sockets
/// into JSON, and this one writes the batches in order. The stages overlap, so the command takes about as long as the
/// kernel's dump rather than the sum of every stage.
fn stream_json(mut diag: InetDiag, cfg: EngineConfig) -> Result<(), Failure> {
    let now = Now::system();
    let (tx, rx) = mpsc::sync_channel::<(usize, Vec<SocketView>)>(32);
    let reader = std::thread::spawn(move || {
        let mut seq = 0;
        let mut sink = FirstSight::new(cfg, |views| {
            // A send fails only once the writer has gone, which it reports itself.
            let _ = tx.send((seq, views));
            seq += 1;
        });
        diag.dump_into(&mut sink, now).map(|()| sink.stats())
    });

    let mut out = Some(std::io::BufWriter::with_capacity(1 << 20, raw_stdout()?));
    let mut doc = None;
    let mut write = Ok(());
    let mut batches = Vec::new();
    let rx = Mutex::new(rx);
    // Written buffers come back for the next batches: fresh megabytes would each be mapped,
    // faulted in and zeroed.
    let spare: Mutex<Vec<Vec<u8>>> = Mutex::default();
    let encoders = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
    std::thread::scope(|s| {
        let (done_tx, done) = mpsc::sync_channel(32);
        for _ in 0..encoders {
            let (rx, done_tx, spare) = (&rx, done_tx.clone(), &spare);
            s.spawn(move || {
                while let Ok((seq, views)) = rx.lock().map_err(|_| ()).and_then(|r| r.recv().map_err(|_| ()))
                {
                    let mut buf = spare.lock().ok().and_then(|mut s| s.pop()).unwrap_or_default();
                    buf.clear();
                    // About 1.3 KB a socket: sized once, the buffer is never regrown and copied.
                    buf.reserve(views.len() * 1536);
                    let encoded = json::encode_sockets(&mut buf, &views).map(|()| buf);
                    if done_tx.send((seq, encoded, views)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        // Batches finish out of order; they are written in the order the kernel listed them.
        // Every batch is taken, even after a write error, so no thread ever blocks.
        let mut pending = BTreeMap::new();
        for (seq, encoded, views) in done {
            pending.insert(seq, (encoded, views));
            while let Some((encoded, views)) = pending.remove(&batches.len()) {
                match encoded {
                    Ok(buf) => {
                        if write.is_ok() {
                            write =
                                open_doc(&mut doc, &mut out, now).and_then(|d| d.encoded(&buf, views.len()));
                        }
                        if let Ok(mut s) = spare.lock() {
                            s.push(buf);
                        }
                    }
                    Err(e) => {
                        if write.is_ok() {
                            write = Err(e);
                        }
                    }
                }
                batches.push(views);
            }
        }
    });
    let stats = reader
        .join()
        .map_err(|_| Failure::Runtime(anyhow::anyhow!("the netlink reader panicked")))?
        .map_err(Failure::from_collect)?;
    let mut netlink = CollectorStatus::netlink();
    netlink.saw_dump(&stats);
    let by_cc = aggregate::by_cc(batches.iter().flatten());
    let collectors = [netlink, CollectorStatus::bpf_off()];
    write
        .and_then(|()| open_doc(&mut doc, &mut out, now).map(|_| ()))
        .and_then(|()| doc.take().map_or(Ok(()), |d| d.end(&by_cc, &collectors)?.flush()))
        .or_else(ignore_broken_pipe)
        .context("writing to stdout")?;
    // The process ends next: freeing every record one by one would be wasted work.
    std::mem::forget(batches);
    Ok(())
}

/// The document, begun on first use: an error before any socket arrives leaves stdout empty.
fn open_doc<'a, W: Write>(
    doc: &'a mut Option<json::DocStream<W>>,
    out: &mut Option<W>,
    now: Now,
) -> std::io::Result<&'a mut json::DocStream<W>> {
    if let Some(w) = out.take() {
        *doc = Some(json::DocStream::begin(w, now.wall)?);
    }
    doc.as_mut().ok_or_else(|| std::io::Error::other("the output was already closed"))
}

/// `bbrtop snapshot | head` is not an error.
pub fn ignore_broken_pipe(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::BrokenPipe { Ok(()) } else { Err(e) }
}

/// Standard output without std's line buffering, which would search each 1 MiB write for a
/// newline: the JSON has one, at the end.
fn raw_stdout() -> Result<std::fs::File, Failure> {
    use std::os::fd::AsFd;
    let fd = std::io::stdout().as_fd().try_clone_to_owned().context("duplicating stdout")?;
    Ok(std::fs::File::from(fd))
}
