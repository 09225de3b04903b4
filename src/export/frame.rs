//! `/api/v1/frame`: one poll's whole state for `bbrtop --connect` on another host, as a
//! recording encodes a poll (`record::frame`). It names every peer, port and user of the host, so
//! it is served as the JSON API is: only with `--web.enable-api` and behind the same auth. A poll
//! is encoded once however many remote TUIs read it, and at most [`FRAME_RESPONSES`] frames are
//! under way at once, each handed to the connection a chunk at a time, so slow readers hold a
//! bounded number of frames.

use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use tokio::sync::OwnedSemaphorePermit;

/// Frame responses under way at once; past this, 503. Remote TUIs poll once a second and a
/// frame takes milliseconds to send, so a few slots serve many of them.
pub const FRAME_RESPONSES: usize = 4;
/// Bytes handed to the connection at a time: the slot is held until the last chunk is taken.
const CHUNK: usize = 256 << 10;

/// The frames of one exporter: its host's facts, and the latest poll's frame.
pub struct Frames {
    system: SystemInfo,
    /// The snapshot last encoded, and its frame. The `Weak` keeps the snapshot's address from
    /// being reused (so a new poll never matches) without keeping its sockets alive.
    last: Mutex<(Weak<Snapshot>, Bytes)>,
}

impl Frames {
    /// Frames that carry `system`, the watched namespace's host facts.
    pub fn new(system: SystemInfo) -> Frames {
        Frames { system, last: Mutex::new((Weak::new(), Bytes::new())) }
    }

    /// `snap`'s frame: the one already encoded, or encoded now (a blocking call).
    pub fn of(&self, snap: &Arc<Snapshot>) -> anyhow::Result<Bytes> {
        {
            let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if std::ptr::eq(last.0.as_ptr(), Arc::as_ptr(snap)) {
                return Ok(last.1.clone());
            }
        }
        let frame = Bytes::from(crate::record::frame::encode(snap, &self.system)?);
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = (Arc::downgrade(snap), frame.clone());
        Ok(frame)
    }
}

/// A frame as a response body, a chunk at a time (slices of the shared frame, no copies), holding
/// its response slot until the last chunk is taken.
pub struct FrameBody {
    rest: Bytes,
    _slot: OwnedSemaphorePermit,
}

impl FrameBody {
    pub fn new(frame: Bytes, slot: OwnedSemaphorePermit) -> FrameBody {
        FrameBody { rest: frame, _slot: slot }
    }
}

impl Body for FrameBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.rest.len().min(CHUNK);
        Poll::Ready(Some(Ok(Frame::data(self.rest.split_to(n)))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn a_poll_is_encoded_once_and_a_new_one_again() {
        let frames = Frames::new(SystemInfo { host: "edge-1".into(), ..SystemInfo::default() });
        let snap = Arc::new(Snapshot::empty(Default::default()));
        let a = frames.of(&snap).unwrap();
        assert_eq!(a.as_ptr(), frames.of(&snap).unwrap().as_ptr(), "the same poll: the same bytes");
        let (back, sys) = crate::record::frame::decode(&a).unwrap();
        assert_eq!((back.seq, sys.host.as_str()), (0, "edge-1"));
        let next = Arc::new(Snapshot { seq: 1, ..(*snap).clone() });
        let b = frames.of(&next).unwrap();
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_eq!(crate::record::frame::decode(&b).unwrap().0.seq, 1);
    }

    #[test]
    fn the_body_is_the_frame_in_chunks_and_frees_its_slot_at_the_end() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let slots = Arc::new(tokio::sync::Semaphore::new(1));
        let frame = Bytes::from((0..CHUNK * 2 + 7).map(|i| i as u8).collect::<Vec<_>>());
        let mut body = FrameBody::new(frame.clone(), Arc::clone(&slots).try_acquire_owned().unwrap());
        assert_eq!(body.size_hint().exact(), Some(frame.len() as u64));
        let mut got = Vec::new();
        rt.block_on(async {
            while let Some(f) = body.frame().await {
                let chunk = f.unwrap().into_data().unwrap();
                assert!(chunk.len() <= CHUNK);
                got.extend_from_slice(&chunk);
            }
        });
        assert_eq!(got, frame);
        assert_eq!(slots.available_permits(), 0, "held while the body lives");
        drop(body);
        assert_eq!(slots.available_permits(), 1);
    }
}
