//! The exporter's connection slots (`--web.max-connections`), and which connection gives way when
//! they run out.
//!
//! A slot is taken when a connection is accepted, before a byte is read. A connection *holds* its
//! slot only while it is answering a request that passed auth (any request but the probes, when
//! no users are configured), from its headers until its response is handed over; otherwise it
//! waits: accepted and not yet asking (slowloris), idle between keep-alive requests, asking a
//! probe, or refused by auth. Past the cap, a new connection takes the slot of the connection that
//! has waited longest since it was accepted or last held its slot, which is closed; only when
//! every slot is held is the new one closed at once. This is nginx's rule (idle and not-yet-asking
//! connections are "reusable", and the oldest is closed to admit a new one when connections run
//! out): idle keep-alives, probes, wrong passwords and slow clients only push each other out, and a
//! scrape always gets a slot unless as many authorized requests are under way as there are slots.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// What [`Table::admit`] decided for a new connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit<T> {
    /// In, under this id; the waiting connection whose slot it took, if any, goes.
    In { id: u64, evicted: Option<T> },
    /// Every slot is held.
    Full,
}

/// The slots as plain data. `T` is what a connection is closed with.
#[derive(Debug)]
pub struct Table<T> {
    max: usize,
    /// Ids of connections and of their turns at waiting, from one counter: a lower turn waited
    /// longer.
    next: u64,
    /// Every connection: its closer, and its turn while it waits (None while it holds its slot).
    conns: HashMap<u64, (T, Option<u64>)>,
    /// The waiting connections by turn, longest waiting first.
    waiting: BTreeMap<u64, u64>,
}

impl<T> Table<T> {
    pub fn new(max: usize) -> Table<T> {
        Table { max: max.max(1), next: 0, conns: HashMap::new(), waiting: BTreeMap::new() }
    }

    fn ticket(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }

    pub fn admit(&mut self, closer: T) -> Admit<T> {
        let evicted = if self.conns.len() < self.max {
            None
        } else {
            let Some((_, id)) = self.waiting.pop_first() else { return Admit::Full };
            self.conns.remove(&id).map(|(closer, _)| closer)
        };
        let id = self.ticket();
        self.conns.insert(id, (closer, Some(id)));
        self.waiting.insert(id, id);
        Admit::In { id, evicted }
    }

    /// The connection is answering a request that passed auth: it keeps its slot meanwhile.
    pub fn hold(&mut self, id: u64) {
        if let Some((_, turn)) = self.conns.get_mut(&id)
            && let Some(t) = turn.take()
        {
            self.waiting.remove(&t);
        }
    }

    /// The held request was answered: the connection waits again, as the newest to.
    pub fn wait(&mut self, id: u64) {
        let turn = self.next;
        if let Some((_, t @ None)) = self.conns.get_mut(&id) {
            *t = Some(turn);
            self.waiting.insert(turn, id);
            self.next += 1;
        }
    }

    /// The connection ended (or was evicted): its slot is free.
    pub fn release(&mut self, id: u64) {
        if let Some((_, Some(t))) = self.conns.remove(&id) {
            self.waiting.remove(&t);
        }
    }

    /// (waiting, held).
    pub fn counts(&self) -> (usize, usize) {
        (self.waiting.len(), self.conns.len() - self.waiting.len())
    }
}

/// The table shared by the accept loops and the connections.
#[derive(Clone)]
pub struct Slots(Arc<Mutex<Table<oneshot::Sender<()>>>>);

impl Slots {
    pub fn new(max: usize) -> Slots {
        Slots(Arc::new(Mutex::new(Table::new(max))))
    }

    /// A slot for a new connection, and what tells it it was evicted; None when full.
    pub fn admit(&self) -> Option<(Slot, oneshot::Receiver<()>)> {
        let (tx, rx) = oneshot::channel();
        match self.lock().admit(tx) {
            Admit::In { id, evicted } => {
                if let Some(close) = evicted {
                    let _ = close.send(());
                }
                Some((Slot { slots: self.clone(), id }, rx))
            }
            Admit::Full => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table<oneshot::Sender<()>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection's slot: freed when dropped.
pub struct Slot {
    slots: Slots,
    id: u64,
}

impl Slot {
    /// Held until the [`Holding`] returned is dropped (with the response's body, once sent).
    pub fn hold(self: &Arc<Self>) -> Holding {
        self.slots.lock().hold(self.id);
        Holding(Arc::clone(self))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().release(self.id);
    }
}

/// A request's hold on its connection's slot; the connection waits again when it is dropped.
pub struct Holding(Arc<Slot>);

impl Drop for Holding {
    fn drop(&mut self) {
        self.0.slots.lock().wait(self.0.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_the_longest_waiting_connection_gives_way() {
        let mut t = Table::new(3);
        assert_eq!(t.admit("a"), Admit::In { id: 0, evicted: None });
        assert_eq!(t.admit("b"), Admit::In { id: 1, evicted: None });
        assert_eq!(t.admit("c"), Admit::In { id: 2, evicted: None });
        // a answers a scrape, then waits again: now it has waited least.
        t.hold(0);
        t.wait(0);
        assert_eq!(t.admit("d"), Admit::In { id: 4, evicted: Some("b") });
        assert_eq!(t.admit("e"), Admit::In { id: 5, evicted: Some("c") });
        assert_eq!(t.admit("f"), Admit::In { id: 6, evicted: Some("a") });
        assert_eq!(t.counts(), (3, 0));
    }

    #[test]
    fn a_held_slot_never_gives_way_and_full_means_every_slot_held() {
        let mut t = Table::new(2);
        assert_eq!(t.admit("a"), Admit::In { id: 0, evicted: None });
        assert_eq!(t.admit("b"), Admit::In { id: 1, evicted: None });
        t.hold(0);
        assert_eq!(t.admit("c"), Admit::In { id: 2, evicted: Some("b") }, "a is held; b goes");
        t.hold(2);
        assert_eq!(t.counts(), (0, 2));
        assert_eq!(t.admit("d"), Admit::Full);
        // A second hold or a stray wait changes nothing; a wait frees the slot to give way again.
        t.hold(2);
        t.wait(9);
        assert_eq!(t.admit("d"), Admit::Full);
        t.wait(2);
        assert_eq!(t.admit("d"), Admit::In { id: 4, evicted: Some("c") });
        t.release(0);
        assert_eq!(t.admit("e"), Admit::In { id: 5, evicted: None });
        assert_eq!(t.counts(), (2, 0));
    }

    #[test]
    fn an_evicted_or_released_connection_is_gone_for_good() {
        let mut t = Table::new(1);
        assert_eq!(t.admit(0), Admit::In { id: 0, evicted: None });
        assert_eq!(t.admit(1), Admit::In { id: 1, evicted: Some(0) });
        // The evicted connection ends later: its hold, wait and release change nothing.
        t.hold(0);
        t.wait(0);
        t.release(0);
        assert_eq!(t.counts(), (1, 0));
        t.release(1);
        assert_eq!(t.counts(), (0, 0));
    }

    #[test]
    fn an_evicted_connection_is_told_and_a_dropped_slot_is_freed() {
        let slots = Slots::new(1);
        let (first, mut told) = slots.admit().unwrap();
        assert!(told.try_recv().is_err(), "not evicted yet");
        let (second, _) = slots.admit().unwrap();
        assert_eq!(told.try_recv(), Ok(()), "the waiting one gave way");
        drop(first);
        let second = Arc::new(second);
        let holding = second.hold();
        assert!(slots.admit().is_none(), "the one slot is held");
        drop(holding);
        let (_third, _) = slots.admit().expect("answered: the slot gives way again");
        assert_eq!(slots.lock().counts(), (1, 0));
        drop(second);
        assert_eq!(slots.lock().counts(), (1, 0), "a gone connection's drop frees nothing else");
    }
}
