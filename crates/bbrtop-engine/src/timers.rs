//! Sockets that must be looked at again at some time though they may not move: a quiet socket
//! whose inflation spell is open (its alert fires at onset + hold, and the spell ends when no ACK
//! came within the rule's activity window) and a closing socket that may linger. A queue by due
//! time, so a poll looks at the sockets whose time came, not at every socket.

use bbrtop_core::model::Cookie;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

#[derive(Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, Cookie)>>,
}

impl Timers {
    /// Arms `cookie`'s timer for `due`, unless it is armed for earlier already (`armed`, the
    /// socket's own record of it, is then left as it is): an early look is harmless, it re-arms.
    pub(crate) fn arm(&mut self, armed: &mut Option<Instant>, cookie: Cookie, due: Instant) {
        if armed.is_none_or(|a| due < a) {
            *armed = Some(due);
            self.heap.push(Reverse((due, cookie)));
        }
    }

    /// The sockets whose timers are due at `now`, each with the time it was armed for; the
    /// caller looks only at those whose own record still names that time (a socket re-armed
    /// earlier, or ended, leaves a stale entry behind).
    pub(crate) fn due(&mut self, now: Instant) -> Vec<(Instant, Cookie)> {
        let mut out = Vec::new();
        while let Some(Reverse((at, c))) = self.heap.peek().copied() {
            if at > now {
                break;
            }
            self.heap.pop();
            out.push((at, c));
        }
        // A burst (every socket of a first dump armed at once) leaves no standing allocation.
        if self.heap.capacity() > 4 * self.heap.len() + 1024 {
            self.heap.shrink_to(2 * self.heap.len());
        }
        out
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn due_in_order_and_earliest_wins() {
        let t0 = Instant::now();
        let at = |s| t0 + Duration::from_secs(s);
        let mut q = Timers::default();
        let (mut a, mut b) = (None, None);
        q.arm(&mut a, 1, at(5));
        q.arm(&mut b, 2, at(2));
        q.arm(&mut a, 1, at(9));
        assert_eq!(a, Some(at(5)), "a later time does not replace an earlier one");
        q.arm(&mut a, 1, at(1));
        assert_eq!(q.due(at(0)), []);
        assert_eq!(q.due(at(2)), [(at(1), 1), (at(2), 2)]);
        assert_eq!(q.due(at(10)), [(at(5), 1)], "the stale entry comes out; the caller skips it");
        assert_eq!(q.len(), 0);
    }
}
