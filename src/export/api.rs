//! The JSON API's socket table, streamed: it names every peer, port and user of the host, so it is
//! served only when asked for (`--web.enable-api`), behind the same auth as `/metrics`, to at most
//! [`API_RESPONSES`] readers at once, and written a chunk at a time, so a slow reader holds a
//! megabyte, not the whole table (130 MB at 100k sockets).

use crate::output::json::{DocStream, encode_sockets};
use bbrtop_core::snapshot::Snapshot;
use bytes::Bytes;
use hyper::body::{Body, Frame};
use std::convert::Infallible;
use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

/// API responses under way at once; past this, 503.
pub const API_RESPONSES: usize = 2;
/// Bytes per chunk handed to the connection.
const CHUNK: usize = 256 << 10;
/// Chunks written ahead of a slow reader.
const AHEAD: usize = 4;
/// Sockets encoded at a time.
const BATCH: usize = 512;

/// A response body fed by a channel, a chunk at a time.
pub struct ChannelBody(mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

/// Bytes written into the channel, a chunk at a time; a reader that went away is a broken pipe.
struct ChannelWriter {
    buf: Vec<u8>,
    tx: mpsc::Sender<Bytes>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx.blocking_send(chunk).map_err(|_| std::io::ErrorKind::BrokenPipe.into())
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// The `snapshot --json` document of `snap`, written on a blocking thread as the reader takes
/// it; `permit` is held until the last byte is handed over.
pub fn sockets_body(snap: Arc<Snapshot>, permit: OwnedSemaphorePermit) -> ChannelBody {
    let (tx, rx) = mpsc::channel(AHEAD);
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        // An error is a reader that went away: the document simply stops.
        let _ = write_doc(&snap, ChannelWriter { buf: Vec::with_capacity(CHUNK), tx });
    });
    ChannelBody(rx)
}

fn write_doc(snap: &Snapshot, out: ChannelWriter) -> std::io::Result<()> {
    let mut doc = DocStream::begin(out, snap.taken_at)?;
    let mut buf = Vec::new();
    let mut views = snap.sockets.iter().peekable();
    let mut batch = Vec::with_capacity(BATCH);
    while views.peek().is_some() {
        batch.clear();
        batch.extend(views.by_ref().take(BATCH));
        buf.clear();
        encode_sockets(&mut buf, &batch)?;
        doc.encoded(&buf, batch.len())?;
    }
    let responses = bbrtop_core::snapshot::totals::response_rows(&snap.totals);
    doc.end(&snap.by_cc, &snap.collectors, &responses)?.flush()
}
