//! The exporter's connection slots (`--web.max-connections`), kept for clients that proved
//! themselves.
//!
//! A slot is taken when a connection is accepted, before a byte is read, so slow clients that
//! never finish their headers (slowloris) used to hold every slot and have Prometheus' scrapes
//! closed at once. Now a connection is *pending* until a request of its own passes auth (any
//! request, when no users are configured), then *proven*. A new connection past the cap takes the
//! slot of the oldest pending one, which is closed; only when every slot is held by a proven
//! connection is the new one closed at once. So a scrape, whose headers arrive at once, always
//! gets a slot, and slow or unauthenticated clients only ever push each other out.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// What [`Table::admit`] decided for a new connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit<T> {
    /// In, under this id; the pending connection whose slot it took, if any, goes.
    In { id: u64, evicted: Option<T> },
    /// Every slot is held by a proven connection.
    Full,
}

/// The slots as plain data: which connections are pending (oldest first) and which are proven.
/// `T` is what a pending connection is closed with.
#[derive(Debug)]
pub struct Table<T> {
    max: usize,
    next: u64,
    pending: BTreeMap<u64, T>,
    proven: HashSet<u64>,
}

impl<T> Table<T> {
    pub fn new(max: usize) -> Table<T> {
        Table { max: max.max(1), next: 0, pending: BTreeMap::new(), proven: HashSet::new() }
    }

    pub fn admit(&mut self, closer: T) -> Admit<T> {
        let evicted = if self.pending.len() + self.proven.len() < self.max {
            None
        } else {
            match self.pending.pop_first() {
                Some((_, oldest)) => Some(oldest),
                None => return Admit::Full,
            }
        };
        let id = self.next;
        self.next += 1;
        self.pending.insert(id, closer);
        Admit::In { id, evicted }
    }

    /// The connection passed auth: it keeps its slot.
    pub fn prove(&mut self, id: u64) {
        if self.pending.remove(&id).is_some() {
            self.proven.insert(id);
        }
    }

    /// The connection ended (or was evicted): its slot is free.
    pub fn release(&mut self, id: u64) {
        self.pending.remove(&id);
        self.proven.remove(&id);
    }

    /// (pending, proven).
    pub fn counts(&self) -> (usize, usize) {
        (self.pending.len(), self.proven.len())
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
    pub fn prove(&self) {
        self.slots.lock().prove(self.id);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().release(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_the_oldest_pending_connection_gives_way() {
        let mut t = Table::new(3);
        assert_eq!(t.admit("a"), Admit::In { id: 0, evicted: None });
        assert_eq!(t.admit("b"), Admit::In { id: 1, evicted: None });
        t.prove(0);
        assert_eq!(t.admit("c"), Admit::In { id: 2, evicted: None });
        // Full: b is the oldest pending (a is proven and stays).
        assert_eq!(t.admit("d"), Admit::In { id: 3, evicted: Some("b") });
        assert_eq!(t.admit("e"), Admit::In { id: 4, evicted: Some("c") });
        assert_eq!(t.counts(), (2, 1));
        t.prove(3);
        t.prove(4);
        assert_eq!(t.admit("f"), Admit::Full, "every slot proven: the new one is refused");
        t.release(0);
        assert_eq!(t.admit("g"), Admit::In { id: 5, evicted: None });
        assert_eq!(t.counts(), (1, 2));
    }

    #[test]
    fn an_evicted_or_released_connection_is_gone_for_good() {
        let mut t = Table::new(1);
        assert_eq!(t.admit(0), Admit::In { id: 0, evicted: None });
        assert_eq!(t.admit(1), Admit::In { id: 1, evicted: Some(0) });
        // The evicted connection ends later: its release and a late prove change nothing.
        t.prove(0);
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
        assert_eq!(told.try_recv(), Ok(()), "the pending one gave way");
        drop(first);
        second.prove();
        assert!(slots.admit().is_none(), "the one slot is held by a proven connection");
        drop(second);
        assert!(slots.admit().is_some());
    }
}
