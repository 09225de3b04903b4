//! A poll's sockets rebuilt from its rows in the sockets table and the sockets of the poll
//! before. A keyframe's rows are the whole state; a later poll's rows replace, add or remove the
//! sockets they name, and every other socket keeps its entry (the same allocation) from the poll
//! before: rebuilding costs what changed, as writing did, and a reader that keeps consecutive
//! polls (the replay) holds an idle socket once.

use super::sockets::{Decoded, Kind};
use bbrtop_core::snapshot::{Sockets, ViewAt};

/// The sockets at a poll viewed as of `at`: `rows` (the poll's) applied to `before` (the poll
/// before's), or alone when the poll is a keyframe (`key`).
pub fn apply(before: &Sockets, key: bool, rows: impl IntoIterator<Item = Decoded>, at: ViewAt) -> Sockets {
    let (gone, came): (Vec<Decoded>, Vec<Decoded>) = rows.into_iter().partition(|r| r.kind == Kind::Gone);
    let mut fresh = Sockets::of_views(came.into_iter().map(Decoded::into_view), at);
    if key {
        return fresh;
    }
    let mut state = before.clone();
    let map = state.map_mut();
    for g in &gone {
        map.remove(&g.record.cookie);
    }
    for (cookie, slot) in fresh.map_mut().iter() {
        map.insert(*cookie, slot.clone());
    }
    Sockets::new(std::mem::take(map), at)
}
