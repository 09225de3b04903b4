//! The remote's poller: a frame every interval, decoded, given per-socket history, and published
//! with the remote's own health first among the collectors; a poll that gets no frame publishes
//! why (and no sockets), and the next poll tries again. Each poll asks for the changes since the
//! remote's poll it decoded last, so beside idle sockets a frame is a few KB.

use super::client::{Client, Fetched};
use crate::runtime::{Published, Runtime};
use bbrtop_core::rule::RuleConfig;
use bbrtop_core::snapshot::rebuilt::Rebuilt;
use bbrtop_core::snapshot::status::{Cause, Health, Reason};
use bbrtop_core::snapshot::{CollectorStatus, Snapshot};
use bbrtop_core::system::SystemInfo;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A frame's bytes as a snapshot (without history) and the remote host's facts; a frame of
/// changes applies to the poll given, the one decoded last.
pub type Decode = fn(&[u8], Option<&Snapshot>) -> anyhow::Result<(Snapshot, SystemInfo)>;

/// The remote's poll decoded last, as it came (the remote's seq, no history).
type Held = Option<(Snapshot, SystemInfo)>;

/// The remote's poller, and the host facts of its latest frame.
pub struct Remote {
    pub runtime: Runtime,
    system: Arc<Mutex<Option<SystemInfo>>>,
}

impl Remote {
    /// Polls `client` every `interval`, keeping `history` samples per socket.
    pub fn start(
        client: Client,
        decode: Decode,
        interval: Duration,
        history: usize,
    ) -> std::io::Result<Remote> {
        let system = Arc::new(Mutex::new(None));
        let mut poller = Poller::new(&client.target().shown, decode, interval, history, Arc::clone(&system));
        let first = Arc::new(poller.waiting());
        let mut held = None;
        let runtime = Runtime::every(first, interval, move |p: &Published| {
            let t = Instant::now();
            let got = next(&client, poller.decode, &mut held);
            p.publish(Arc::new(poller.step(got, t.elapsed(), SystemTime::now())));
        })?;
        Ok(Remote { runtime, system })
    }

    /// The remote host's facts, once a frame has come.
    pub fn system(&self) -> Option<SystemInfo> {
        self.system.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The remote's latest poll: the changes since the one `held` where the remote holds it too, else
/// a keyframe. Frames of changes that do not apply (the remote restarted, or damage) are asked
/// again as a keyframe, once; a poll that gets nothing forgets what was held.
fn next(client: &Client, decode: Decode, held: &mut Held) -> Result<(Snapshot, SystemInfo), String> {
    let got = match held.take() {
        Some(h) => match client.fetch(Some(h.0.seq)) {
            Ok(Fetched::Held) => Ok(h),
            Ok(Fetched::Frame(bytes)) => decode(&bytes, Some(&h.0)).or_else(|_| keyframe(client, decode)),
            Err(e) => Err(e.to_string()),
        },
        None => keyframe(client, decode),
    }?;
    *held = Some(got.clone());
    Ok(got)
}

fn keyframe(client: &Client, decode: Decode) -> Result<(Snapshot, SystemInfo), String> {
    match client.fetch(None).map_err(|e| e.to_string())? {
        Fetched::Frame(bytes) => decode(&bytes, None).map_err(|e| format!("not a bbrtop frame: {e:#}")),
        Fetched::Held => Err("the remote answered 304 to a request for a whole frame".into()),
    }
}

/// What the poller keeps from one frame to the next.
struct Poller {
    decode: Decode,
    rebuilt: Rebuilt,
    status: CollectorStatus,
    /// Our own poll count: the remote's restarts from 1 when it restarts.
    seq: u64,
    /// The remote's alert rule, which an empty snapshot carries too.
    rule: RuleConfig,
    every: String,
    system: Arc<Mutex<Option<SystemInfo>>>,
}

impl Poller {
    fn new(
        shown: &str,
        decode: Decode,
        interval: Duration,
        history: usize,
        system: Arc<Mutex<Option<SystemInfo>>>,
    ) -> Poller {
        let every = humantime::format_duration(interval).to_string();
        let status = CollectorStatus {
            name: "remote",
            role: Some(format!("reads {shown} every {every}")),
            health: Health::Waiting,
            ..CollectorStatus::default()
        };
        Poller {
            decode,
            rebuilt: Rebuilt::new(history),
            status,
            seq: 0,
            rule: RuleConfig::default(),
            every,
            system,
        }
    }

    /// What is shown before the first answer.
    fn waiting(&self) -> Snapshot {
        Snapshot { collectors: vec![self.status.clone()], ..Snapshot::empty(self.rule) }
    }

    /// The snapshot to publish after a poll that took `took` and got `got`, at `now`.
    fn step(
        &mut self,
        got: Result<(Snapshot, SystemInfo), String>,
        took: Duration,
        now: SystemTime,
    ) -> Snapshot {
        self.seq += 1;
        let s = &mut self.status;
        s.polls_total += 1;
        s.last_duration_seconds = took.as_secs_f64();
        match got {
            Ok((mut snap, sys)) => {
                if s.health != Health::Ok {
                    tracing::info!(remote = s.role.as_deref(), "frames coming");
                }
                (s.health, s.last_success_at) = (Health::Ok, Some(now));
                self.rebuilt.add(&mut snap);
                (snap.seq, self.rule) = (self.seq, snap.rule);
                snap.collectors.insert(0, s.clone());
                *self.system.lock().unwrap_or_else(|e| e.into_inner()) = Some(sys);
                snap
            }
            Err(why) => {
                let health = Health::Degraded(Reason::new(
                    Cause::Remote,
                    format!("{why}; retrying every {}", self.every),
                ));
                if s.health != health {
                    tracing::warn!(remote = s.role.as_deref(), error = why, "no frame");
                }
                s.errors_total += 1;
                s.health = health;
                Snapshot {
                    seq: self.seq,
                    taken_at: now,
                    collectors: vec![s.clone()],
                    ..Snapshot::empty(self.rule)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::seam::Now;
    use bbrtop_core::seam::feed_dump;
    use bbrtop_core::testing::record;
    use bbrtop_engine::{Engine, EngineConfig};

    fn no_decode(_: &[u8], _: Option<&Snapshot>) -> anyhow::Result<(Snapshot, SystemInfo)> {
        anyhow::bail!("unused")
    }

    /// The engine's snapshot of one socket with this srtt, as a frame carries it: no history.
    fn frame(engine: &mut Engine, now: Now, srtt_us: u32) -> (Snapshot, SystemInfo) {
        let dump = bbrtop_core::wire::Dump {
            sockets: vec![record(7, "bbr").srtt_us(srtt_us).build()],
            ..Default::default()
        };
        feed_dump(engine, dump, now);
        let mut snap = (*engine.tick(now)).clone();
        use bbrtop_core::snapshot::{HistoryView, SocketView};
        let bare = snap.sockets.iter().map(|v| SocketView { history: HistoryView::none(), ..v });
        snap.sockets = bbrtop_core::snapshot::Sockets::of_views(bare, *snap.sockets.at());
        (snap, SystemInfo { host: "edge-1".into(), ..SystemInfo::default() })
    }

    fn good_frame() -> Vec<u8> {
        let mut engine = Engine::new(EngineConfig::default());
        let (snap, sys) = frame(&mut engine, Now::system(), 12_000);
        crate::record::frame::encode(&snap, &sys, None).unwrap()
    }

    /// A remote's bytes are not to be trusted: a frame cut short anywhere, or with its framing
    /// damaged, is an error (which the header shows), never a panic (which ends the TUI).
    #[test]
    fn a_cut_or_misframed_frame_is_an_error() {
        let good = good_frame();
        assert!(crate::record::frame::decode(&good, None).is_ok());
        for i in 0..good.len() {
            assert!(crate::record::frame::decode(&good[..i], None).is_err(), "cut at {i}");
        }
        // The magic line and the first part's length.
        for i in 0..crate::record::frame::MAGIC.len() + 8 {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            assert!(crate::record::frame::decode(&bad, None).is_err(), "byte {i} flipped");
        }
    }

    /// Bytes flipped inside the Parquet pages: parquet 60's reader panics on some
    /// (arrow-buffer's `BitChunks::new`, "offset + len out of bounds", reading definition
    /// levels); `frame::decode` contains them (`crate::contained`), so each is an error.
    #[test]
    fn a_damaged_frame_is_an_error_not_a_panic() {
        let good = good_frame();
        let step = (good.len() / 500).max(1);
        let mut errors = 0;
        for i in (0..good.len()).step_by(step) {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            errors += usize::from(crate::record::frame::decode(&bad, None).is_err());
        }
        assert!(errors > 0, "flipped bytes are noticed somewhere");
    }

    #[test]
    fn frames_get_history_and_failures_say_why_with_nothing_shown() {
        let system = Arc::new(Mutex::new(None));
        let mut p =
            Poller::new("https://edge-1:9100", no_decode, Duration::from_secs(1), 60, Arc::clone(&system));
        assert_eq!(p.waiting().collectors[0].health, Health::Waiting);
        let mut engine = Engine::new(EngineConfig::default());
        let mut now = Now::system();
        let took = Duration::from_millis(3);
        let mut seqs = Vec::new();
        for (i, srtt) in [10_000, 11_000].into_iter().enumerate() {
            now = now.after(Duration::from_secs(1));
            let snap = p.step(Ok(frame(&mut engine, now, srtt)), took, now.wall);
            assert_eq!(snap.sockets.to_vec()[0].history.len(), i + 1);
            assert_eq!(snap.collectors[0].name, "remote");
            assert_eq!(snap.collectors[0].health, Health::Ok);
            assert_eq!(snap.collectors[1].name, "netlink", "the remote's own collectors follow");
            seqs.push(snap.seq);
        }
        assert_eq!(system.lock().unwrap().as_ref().map(|s| s.host.as_str()), Some("edge-1"));

        let down = p.step(Err("connection refused".into()), took, now.wall);
        assert!(down.sockets.is_empty() && down.collectors.len() == 1, "{down:?}");
        let Health::Degraded(r) = &down.collectors[0].health else { panic!("{down:?}") };
        assert_eq!(r.detail, "connection refused; retrying every 1s");
        assert_eq!((down.collectors[0].errors_total, down.collectors[0].polls_total), (1, 3));
        seqs.push(down.seq);

        // Back: the socket's history goes on from where it was.
        now = now.after(Duration::from_secs(1));
        let back = p.step(Ok(frame(&mut engine, now, 12_000)), took, now.wall);
        let srtts: Vec<u32> = back.sockets.to_vec()[0].history.iter().map(|s| s.srtt_us).collect();
        assert_eq!(srtts, vec![10_000, 11_000, 12_000]);
        seqs.push(back.seq);
        assert_eq!(seqs, vec![1, 2, 3, 4], "every publish is newer than the last, whatever the remote's seq");
    }
}
