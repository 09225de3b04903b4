//! `bbrtop snapshot`: one poll, printed as a table or JSON.

use super::Failure;
use super::args::PollArgs;
use crate::output::{json, table};
use anyhow::Context;
use bbrtop_collect::{CollectError, InetDiag};
use bbrtop_core::seam::DumpSink;
use bbrtop_core::seam::Now;
use bbrtop_core::snapshot::aggregate;
use bbrtop_core::snapshot::{CcAggregate, CollectorStatus, SocketView};
use bbrtop_engine::first_sight::FirstSight;
use bbrtop_engine::{Engine, EngineConfig};
use clap::Args;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Mutex, mpsc};

#[derive(Args, Debug)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub poll: PollArgs,
    /// Print JSON (field names carry their units; see docs/reference/json.md) instead of a table.
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
    let sockets = snap.sockets.to_vec();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    table::write(&mut out, &sockets.iter().collect::<Vec<_>>())
        .and_then(|()| out.flush())
        .or_else(ignore_broken_pipe)
        .context("writing to stdout")?;
    // The process ends next: freeing every record one by one would be wasted work.
    std::mem::forget(snap);
    std::mem::forget(engine);
    Ok(())
}

/// JSON is written while the kernel is still dumping (see [`stream_doc`]).
fn stream_json(mut diag: InetDiag, cfg: EngineConfig) -> Result<(), Failure> {
    let out = std::io::BufWriter::with_capacity(1 << 20, raw_stdout()?);
    stream_doc(move |sink, now| diag.dump_into(sink, now), cfg, Now::system(), out).map(drop)
}

/// A dump's sockets, derived as they arrive.
type Batch = (usize, Vec<SocketView>);

/// Writes the document of the dump `read` feeds: one thread reads and parses the dump and
/// derives each socket's values (the [`FirstSight`] sink), encoder threads turn batches of
/// sockets into JSON, and this one writes the batches in order. The stages overlap, so the
/// command takes about as long as the kernel's dump rather than the sum of every stage. Returns
/// the writer, unless the reader went away (a closed pipe is not an error).
fn stream_doc<W: Write>(
    read: impl FnOnce(&mut dyn DumpSink, Now) -> Result<(), CollectError> + Send + 'static,
    cfg: EngineConfig,
    now: Now,
    out: W,
) -> Result<Option<W>, Failure> {
    let (tx, rx) = mpsc::sync_channel::<Batch>(32);
    let cfg_loopback = cfg.rule.loopback;
    let reader = std::thread::spawn(move || {
        let mut seq = 0;
        let mut sink = FirstSight::new(cfg, |views| {
            // A send fails only once the writer has gone, which it reports itself.
            let _ = tx.send((seq, views));
            seq += 1;
        });
        read(&mut sink, now).map(|()| sink.stats())
    });
    let mut doc = DocWriter { out: Some(out), doc: None, now, error: Ok(()) };
    let batches = encode_in_order(rx, |encoded, count| doc.batch(encoded, count));
    let stats = reader
        .join()
        .map_err(|_| Failure::Runtime(anyhow::anyhow!("the netlink reader panicked")))?
        .map_err(Failure::from_collect)?;
    let mut netlink = CollectorStatus::netlink();
    netlink.saw_dump(&stats, now.wall);
    let by_cc = aggregate::by_cc(batches.iter().flatten(), cfg_loopback);
    let written = match doc.finish(&by_cc, &[netlink, CollectorStatus::bpf_off()]) {
        Ok(w) => Some(w),
        Err(e) => ignore_broken_pipe(e).context("writing to stdout").map(|()| None)?,
    };
    // The process ends next: freeing every record one by one would be wasted work.
    std::mem::forget(batches);
    Ok(written)
}

/// Encodes batches on up to four threads and hands each to `write` in the order the kernel
/// listed its sockets; returns the batches, for the totals. Every batch is taken, even after a
/// write error, so no thread ever blocks.
fn encode_in_order(
    rx: mpsc::Receiver<Batch>,
    mut write: impl FnMut(std::io::Result<&[u8]>, usize),
) -> Vec<Vec<SocketView>> {
    let rx = Mutex::new(rx);
    // Written buffers come back for the next batches: fresh megabytes would each be mapped,
    // faulted in and zeroed.
    let spare: Mutex<Vec<Vec<u8>>> = Mutex::default();
    let encoders = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
    let mut batches = Vec::new();
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
        // Batches finish out of order.
        let mut pending = BTreeMap::new();
        for (seq, encoded, views) in done {
            pending.insert(seq, (encoded, views));
            while let Some((encoded, views)) = pending.remove(&batches.len()) {
                match encoded {
                    Ok(buf) => {
                        write(Ok(&buf), views.len());
                        if let Ok(mut s) = spare.lock() {
                            s.push(buf);
                        }
                    }
                    Err(e) => write(Err(e), 0),
                }
                batches.push(views);
            }
        }
    });
    batches
}

/// The document being written: begun on first use, so an error before any socket arrives leaves
/// the output empty; the first write error is kept and ends the writing.
struct DocWriter<W: Write> {
    out: Option<W>,
    doc: Option<json::DocStream<W>>,
    now: Now,
    error: std::io::Result<()>,
}

impl<W: Write> DocWriter<W> {
    fn batch(&mut self, encoded: std::io::Result<&[u8]>, count: usize) {
        if self.error.is_ok() {
            self.error = encoded.and_then(|buf| self.open()?.encoded(buf, count));
        }
    }

    fn open(&mut self) -> std::io::Result<&mut json::DocStream<W>> {
        if let Some(w) = self.out.take() {
            self.doc = Some(json::DocStream::begin(w, self.now.wall)?);
        }
        self.doc.as_mut().ok_or_else(|| std::io::Error::other("the output was already closed"))
    }

    fn finish(mut self, by_cc: &[CcAggregate], collectors: &[CollectorStatus]) -> std::io::Result<W> {
        std::mem::replace(&mut self.error, Ok(()))?;
        self.open()?;
        let doc = self.doc.take().ok_or_else(|| std::io::Error::other("the output was already closed"))?;
        // One poll: no response has had time to be delivered.
        let mut w = doc.end(by_cc, collectors, &[])?;
        w.flush()?;
        Ok(w)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::seam::feed_dump;
    use bbrtop_core::wire::{DumpParser, Progress, fixtures};

    /// The two implementations of the seam agree: a dump streamed through the one-shot sink gives
    /// the very document the engine publishes for it (as `/api/sockets` serves it).
    #[test]
    fn a_dump_streamed_is_the_document_the_engine_publishes() {
        let mut parser = DumpParser::new();
        assert_eq!(parser.feed(&fixtures::mixed_dump()), Ok(Progress::Done { interrupted: false }));
        let dump = parser.finish();
        assert_eq!(dump.sockets.len(), 5);
        let (cfg, now) = (EngineConfig::default(), Now::system());

        let mut engine = Engine::new(cfg.clone());
        feed_dump(&mut engine, dump.clone(), now);
        let snap = engine.tick(now);
        let mut whole = Vec::new();
        let views = snap.sockets.to_vec();
        json::write_line(&mut whole, &json::SnapshotDoc::new(&snap, views.iter().collect(), &[])).unwrap();

        let read = move |sink: &mut dyn DumpSink, now| {
            feed_dump(sink, dump, now);
            Ok(())
        };
        let streamed = stream_doc(read, cfg, now, Vec::new()).unwrap().unwrap();
        let (whole, streamed) = (String::from_utf8(whole).unwrap(), String::from_utf8(streamed).unwrap());
        assert!(whole.contains(r#""cc":"cubic""#) && whole.contains("2001:db8::1"), "{whole}");
        assert_eq!(streamed, whole);
    }
}
