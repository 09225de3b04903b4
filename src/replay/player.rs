//! The player: which recorded poll is shown, whether it plays, how fast, and the time controls.
//! Time comes in as a parameter (`now`) and nothing sleeps: the TUI's loop asks how long to wait
//! ([`Player::wait`]) and calls [`Player::advance`] when it wakes.

use super::{Histories, Polls, format_time};
use bbrtop_core::snapshot::Snapshot;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// A time control, as the keys ask for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Control {
    TogglePause,
    /// One poll forward (+1) or back (-1); pauses first.
    Step(i8),
    /// Seconds forward (+) or back (-): the poll at or before that time, and at least one poll on.
    Skip(i32),
    /// The poll at or before a time (the first poll, for a time before the recording).
    Goto(SystemTime),
    /// The next (forward) or previous alert onset.
    Onset {
        forward: bool,
    },
    /// Twice / half as fast.
    Faster,
    Slower,
}

#[derive(Clone, Debug)]
pub struct PlayerOptions {
    /// Polls of history per socket, the shown one included (the live TUI keeps 60).
    pub history: usize,
    /// 1.0: the recorded pace.
    pub speed: f64,
}

impl Default for PlayerOptions {
    fn default() -> Self {
        PlayerOptions { history: DEFAULT_HISTORY, speed: 1.0 }
    }
}

/// Polls of history the replay shows by default: five minutes at 1 s polls.
pub const DEFAULT_HISTORY: usize = 300;

/// The slowest and fastest play.
pub const MIN_SPEED: f64 = 1.0 / 16.0;
pub const MAX_SPEED: f64 = 64.0;

/// Between two polls further apart than this the recorder was not running: such a gap plays as
/// [`GAP_PLAYED`] instead of keeping the screen still for its length.
const GAP: Duration = Duration::from_secs(60);
const GAP_PLAYED: Duration = Duration::from_secs(1);

/// Polls decoded at once while a window's history is rebuilt: bounds the memory a seek takes.
const BATCH: usize = 32;

/// Where the player is, for the header.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    /// The poll shown (from 0) of `len`.
    pub index: usize,
    pub len: usize,
    /// When the poll shown was taken.
    pub at: SystemTime,
    pub playing: bool,
    pub speed: f64,
    /// What the last control could not do ("no alert onset after this poll").
    pub note: Option<String>,
}

impl Status {
    /// Paused at the last poll: the end of the recording.
    pub fn at_end(&self) -> bool {
        !self.playing && self.index + 1 == self.len
    }
}

pub struct Player<P> {
    polls: P,
    histories: Histories,
    pos: usize,
    shown: Arc<Snapshot>,
    playing: bool,
    speed: f64,
    /// When the next poll is shown, while playing.
    due: Option<Instant>,
    note: Option<String>,
}

impl<P: Polls> Player<P> {
    /// Shows the first poll, playing from `now`.
    pub fn new(mut polls: P, opts: PlayerOptions, now: Instant) -> anyhow::Result<Player<P>> {
        anyhow::ensure!(!polls.is_empty(), "the recording holds no complete poll");
        let mut histories = Histories::new(opts.history);
        let shown = load(&mut polls, &mut histories, 0)?;
        let mut p = Player {
            polls,
            histories,
            pos: 0,
            shown,
            playing: true,
            speed: opts.speed.clamp(MIN_SPEED, MAX_SPEED),
            due: None,
            note: None,
        };
        p.schedule(now);
        Ok(p)
    }

    /// What the polls are read from.
    pub fn polls(&self) -> &P {
        &self.polls
    }

    /// The snapshot of the poll shown, each socket with its history up to it.
    pub fn shown(&self) -> &Arc<Snapshot> {
        &self.shown
    }

    pub fn status(&self) -> Status {
        Status {
            index: self.pos,
            len: self.polls.len(),
            at: self.polls.at(self.pos),
            playing: self.playing,
            speed: self.speed,
            note: self.note.clone(),
        }
    }

    /// How long until the next poll is due (`None`: paused).
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        self.due.filter(|_| self.playing).map(|d| d.saturating_duration_since(now))
    }

    /// Plays on to the poll due at `now`; whether the poll shown changed. Pauses at the last poll.
    pub fn advance(&mut self, now: Instant) -> anyhow::Result<bool> {
        let Some(mut due) = self.due.filter(|d| self.playing && now >= *d) else { return Ok(false) };
        let mut pos = self.pos;
        // Each poll in turn, at its recorded distance from the one before (a slow frame catches
        // up, it does not shift the rest of the play).
        while pos + 1 < self.polls.len() && now >= due {
            pos += 1;
            if pos + 1 < self.polls.len() {
                due += self.interval(pos + 1);
            }
        }
        self.due = Some(due);
        self.show(pos)?;
        Ok(true)
    }

    /// Applies a time control at `now`.
    pub fn control(&mut self, c: Control, now: Instant) -> anyhow::Result<()> {
        self.note = None;
        let last = self.polls.len() - 1;
        match c {
            Control::TogglePause if self.playing => self.pause(),
            Control::TogglePause if self.pos == last => {
                self.note = Some("end of the recording: seek back to play".into())
            }
            Control::TogglePause => {
                self.playing = true;
                self.schedule(now);
            }
            Control::Step(by) => {
                self.pause();
                self.show(self.pos.saturating_add_signed(by.into()).min(last))?;
            }
            Control::Skip(secs) => {
                let at = self.polls.at(self.pos);
                let d = Duration::from_secs(secs.unsigned_abs().into());
                let to = if secs >= 0 {
                    let i = at.checked_add(d).map_or(last, |t| self.at_or_before(t).unwrap_or(0));
                    i.max(self.pos + 1).min(last)
                } else {
                    let i = at.checked_sub(d).and_then(|t| self.at_or_before(t)).unwrap_or(0);
                    i.min(self.pos.saturating_sub(1))
                };
                self.seek(to, now)?;
            }
            Control::Goto(t) => {
                let to = match self.at_or_before(t) {
                    Some(i) => i,
                    None => {
                        self.note = Some(format!(
                            "{} is before the recording (it starts {})",
                            format_time(t),
                            format_time(self.polls.at(0))
                        ));
                        0
                    }
                };
                if to == last && t > self.polls.at(last) {
                    self.note = Some(format!("{} is after the recording's last poll", format_time(t)));
                }
                self.seek(to, now)?;
            }
            Control::Onset { forward } => {
                let onsets = self.polls.alert_onsets();
                let found = if forward {
                    onsets.iter().find(|&&i| i > self.pos)
                } else {
                    onsets.iter().rev().find(|&&i| i < self.pos)
                };
                match found.copied() {
                    Some(i) => self.seek(i, now)?,
                    None => {
                        let which = if forward { "after" } else { "before" };
                        self.note = Some(format!("no alert onset {which} this poll"));
                    }
                }
            }
            Control::Faster | Control::Slower => {
                let f = if c == Control::Faster { 2.0 } else { 0.5 };
                self.speed = (self.speed * f).clamp(MIN_SPEED, MAX_SPEED);
                if self.playing {
                    self.schedule(now);
                }
            }
        }
        Ok(())
    }

    fn pause(&mut self) {
        self.playing = false;
        self.due = None;
    }

    /// Shows poll `to`; the play stops at the last poll.
    fn show(&mut self, to: usize) -> anyhow::Result<()> {
        if to != self.pos {
            self.shown = load(&mut self.polls, &mut self.histories, to)?;
            self.pos = to;
        }
        if self.pos + 1 == self.polls.len() {
            self.pause();
        }
        Ok(())
    }

    /// A seek: shows poll `to`, and while playing the next poll is due its distance from `now`.
    fn seek(&mut self, to: usize, now: Instant) -> anyhow::Result<()> {
        self.show(to)?;
        if self.playing {
            self.schedule(now);
        }
        Ok(())
    }

    /// The next poll is due its recorded distance from `now`.
    fn schedule(&mut self, now: Instant) {
        if self.pos + 1 >= self.polls.len() {
            return self.pause();
        }
        self.due = Some(now + self.interval(self.pos + 1));
    }

    /// How long poll `i` waits after poll `i - 1` at this speed.
    fn interval(&self, i: usize) -> Duration {
        let d = self.polls.at(i).duration_since(self.polls.at(i - 1)).unwrap_or_default();
        (if d > GAP { GAP_PLAYED } else { d }).div_f64(self.speed)
    }

    /// The last poll taken at or before `t`.
    fn at_or_before(&self, t: SystemTime) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.polls.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.polls.at(mid) <= t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1)
    }
}

/// Poll `pos` with its sockets' histories: the polls since the last one applied, the whole
/// window again after a seek (decoded a batch at a time), or only poll `pos` when the rings
/// already hold its window (a step or a skip back).
fn load<P: Polls>(polls: &mut P, histories: &mut Histories, pos: usize) -> anyhow::Result<Arc<Snapshot>> {
    let mut j = histories.start_for(pos);
    let mut last = None;
    if j > pos {
        last = polls.read(pos..pos + 1)?.pop();
    }
    while j <= pos {
        let end = (j + BATCH).min(pos + 1);
        let snaps = polls.read(j..end)?;
        anyhow::ensure!(snaps.len() == end - j, "polls {j}..{end} read as {} snapshots", snaps.len());
        for s in snaps {
            histories.apply(j, &s);
            last = Some(s);
            j += 1;
        }
    }
    let last = last.ok_or_else(|| anyhow::anyhow!("poll {pos} read as nothing"))?;
    Ok(Arc::new(histories.attach(last, pos)))
}
