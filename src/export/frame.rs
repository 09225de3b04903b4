//! `/api/v1/frame`: one poll's whole state for `bbrtop --connect` on another host, as a
//! recording encodes a poll (`record::frame`). It names every peer, port and user of the host, so
//! it is served as the JSON API is: only with `--web.enable-api` and behind the same auth.
//!
//! A remote TUI asks for the changes since the poll it holds (`?since=SEQ`): the exporter keeps
//! the last [`BASES`] polls it framed, and answers a frame of changes since one of them, a
//! keyframe for any other (the reader's first, or one fallen behind), and 304 for the poll the
//! reader holds already. A poll's frame against a base is encoded once however many remote TUIs
//! read it, and at most [`FRAME_RESPONSES`] frames are under way at once, each handed to the
//! connection a chunk at a time, so slow readers hold a bounded number of frames.

use bbrtop_core::snapshot::Snapshot;
use bbrtop_core::system::SystemInfo;
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::collections::VecDeque;
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

/// Polls a frame of changes may be taken since: the last ones framed. Each shares with the poll
/// after it the entry of every socket that did not move, so holding them costs what moved between
/// them; a reader that polls at the exporter's interval asks since the newest.
pub const BASES: usize = 4;

/// The frames of one exporter: its host's facts, the polls framed lately, the latest one's frames.
pub struct Frames {
    system: SystemInfo,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The polls framed lately, oldest first.
    bases: VecDeque<Arc<Snapshot>>,
    /// The latest poll framed, and its frames by the base they were taken since (`None`: its
    /// keyframe). The `Weak` keeps the snapshot's address from being reused (so a new poll never
    /// matches).
    latest: Weak<Snapshot>,
    frames: Vec<(Option<u64>, Bytes)>,
}

/// What a reader that holds a poll gets.
#[derive(Debug)]
pub enum Answer {
    /// The poll it holds is the latest.
    Held,
    Frame(Bytes),
}

impl Frames {
    /// Frames that carry `system`, the watched namespace's host facts.
    pub fn new(system: SystemInfo) -> Frames {
        Frames { system, state: Mutex::default() }
    }

    /// `snap`'s frame for a reader that holds poll `since`: the changes since it if it is among
    /// the polls framed lately, else a keyframe; one already encoded, or encoded now (a blocking
    /// call, under the lock, so that readers asking at once wait for one encoding).
    pub fn of(&self, snap: &Arc<Snapshot>, since: Option<u64>) -> anyhow::Result<Answer> {
        if since == Some(snap.seq) {
            return Ok(Answer::Held);
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !std::ptr::eq(st.latest.as_ptr(), Arc::as_ptr(snap)) {
            (st.latest, st.frames) = (Arc::downgrade(snap), Vec::new());
            if st.bases.back().is_none_or(|b| b.seq != snap.seq) {
                st.bases.push_back(Arc::clone(snap));
            }
            while st.bases.len() > BASES {
                st.bases.pop_front();
            }
        }
        let base = since.and_then(|s| st.bases.iter().find(|b| b.seq == s && b.seq < snap.seq)).cloned();
        let key = base.as_ref().map(|b| b.seq);
        if let Some((_, f)) = st.frames.iter().find(|(k, _)| *k == key) {
            return Ok(Answer::Frame(f.clone()));
        }
        let frame = Bytes::from(crate::record::frame::encode(snap, &self.system, base.as_deref())?);
        st.frames.push((key, frame.clone()));
        Ok(Answer::Frame(frame))
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

    fn frame(a: Answer) -> Bytes {
        match a {
            Answer::Frame(f) => f,
            Answer::Held => panic!("a frame, not 304"),
        }
    }

    #[test]
    fn a_poll_is_encoded_once_and_a_new_one_again() {
        let frames = Frames::new(SystemInfo { host: "edge-1".into(), ..SystemInfo::default() });
        let snap = Arc::new(Snapshot::empty(Default::default()));
        let a = frame(frames.of(&snap, None).unwrap());
        assert_eq!(
            a.as_ptr(),
            frame(frames.of(&snap, None).unwrap()).as_ptr(),
            "the same poll: the same bytes"
        );
        let (back, sys) = crate::record::frame::decode(&a, None).unwrap();
        assert_eq!((back.seq, sys.host.as_str()), (0, "edge-1"));
        let next = Arc::new(Snapshot { seq: 1, ..(*snap).clone() });
        let b = frame(frames.of(&next, None).unwrap());
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_eq!(crate::record::frame::decode(&b, None).unwrap().0.seq, 1);
    }

    /// Polls of `n` sockets a second apart, socket 1 moving.
    fn polls(n: u64) -> Vec<Arc<Snapshot>> {
        use bbrtop_core::seam::{Now, feed_dump};
        use bbrtop_core::testing::record;
        let mut e = bbrtop_engine::Engine::new(Default::default());
        let t0 = Now::system();
        (0..n)
            .map(|i| {
                let now = t0.after(std::time::Duration::from_secs(i));
                let socks = (1..=500)
                    .map(|c| record(c, "bbr").bytes_acked(if c == 1 { i * 1000 } else { 5 }).build());
                feed_dump(
                    &mut e,
                    bbrtop_core::wire::Dump { sockets: socks.collect(), ..Default::default() },
                    now,
                );
                e.tick(now)
            })
            .collect()
    }

    /// A reader that holds one of the last polls framed gets the changes since it; one that holds
    /// an older poll, or one this exporter never framed, a keyframe; one that holds the latest, 304.
    #[test]
    fn changes_since_a_poll_framed_lately_else_a_keyframe() {
        let frames = Frames::new(SystemInfo::default());
        let snaps = polls(BASES as u64 + 3);
        let key = |s: &Arc<Snapshot>| frame(frames.of(s, None).unwrap());
        let k0 = key(&snaps[0]);
        let (held, _) = crate::record::frame::decode(&k0, None).unwrap();
        assert!(matches!(frames.of(&snaps[0], Some(snaps[0].seq)).unwrap(), Answer::Held));
        let changes = frame(frames.of(&snaps[1], Some(snaps[0].seq)).unwrap());
        assert!(crate::record::frame::decode(&changes, None).is_err(), "changes, not a keyframe");
        let (back, _) = crate::record::frame::decode(&changes, Some(&held)).unwrap();
        let doc = |s: &Snapshot| serde_json::to_value(s).unwrap();
        assert_eq!(doc(&back), doc(&snaps[1]));
        let again = frame(frames.of(&snaps[1], Some(snaps[0].seq)).unwrap());
        assert_eq!(again.as_ptr(), changes.as_ptr(), "encoded once per poll and base");
        // Never framed: a keyframe.
        assert_eq!(frame(frames.of(&snaps[1], Some(9_999)).unwrap()), key(&snaps[1]));
        for s in &snaps[2..] {
            key(s);
        }
        // Poll 1 has fallen out of the last BASES framed: a keyframe; the one before the
        // latest is still held.
        let last = snaps.last().unwrap();
        assert_eq!(frame(frames.of(last, Some(snaps[1].seq)).unwrap()), key(last));
        let before = &snaps[snaps.len() - 2];
        assert_ne!(frame(frames.of(last, Some(before.seq)).unwrap()), key(last));
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
