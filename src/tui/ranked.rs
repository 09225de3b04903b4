//! An ordered set that also answers by rank: which item is the nth, and what rank an item has.
//! The socket table needs both at every frame (the rows on screen, the selected socket's row)
//! over up to 100k rows while a few of them move, which neither a `BTreeSet` (no ranks) nor a
//! sorted `Vec` (a move shifts the rest) does cheaply.
//!
//! Items are kept in sorted blocks of at most [`MAX`]: an insert or a removal shifts one block,
//! and a rank sums the lengths of the blocks before (a few hundred at 100k items).

/// A block is split when it grows past this, and merged with the next when both fit in it.
const MAX: usize = 1024;

#[derive(Clone, Debug)]
pub struct Ranked<T> {
    /// Sorted blocks, none empty, each block's items before the next block's.
    blocks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Ranked<T> {
    fn default() -> Self {
        Ranked { blocks: Vec::new(), len: 0 }
    }
}

impl<T: Ord> Ranked<T> {
    /// The set of `items`, sorted already and without duplicates.
    pub fn from_sorted(items: Vec<T>) -> Ranked<T> {
        debug_assert!(items.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
        let len = items.len();
        let mut blocks = Vec::with_capacity(len.div_ceil(MAX / 2));
        let mut it = items.into_iter().peekable();
        while it.peek().is_some() {
            blocks.push(it.by_ref().take(MAX / 2).collect());
        }
        Ranked { blocks, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The block `x` is in, or would go in.
    fn block_of(&self, x: &T) -> usize {
        let i = self.blocks.partition_point(|b| b.last().is_some_and(|l| l < x));
        i.min(self.blocks.len().saturating_sub(1))
    }

    /// Adds `x`; false if it was there.
    pub fn insert(&mut self, x: T) -> bool {
        if self.blocks.is_empty() {
            self.blocks.push(vec![x]);
            self.len = 1;
            return true;
        }
        let b = self.block_of(&x);
        let block = &mut self.blocks[b];
        let Err(at) = block.binary_search(&x) else { return false };
        block.insert(at, x);
        self.len += 1;
        if block.len() > MAX {
            let upper = block.split_off(block.len() / 2);
            self.blocks.insert(b + 1, upper);
        }
        true
    }

    /// Takes `x` out; false if it was not there.
    pub fn remove(&mut self, x: &T) -> bool {
        if self.blocks.is_empty() {
            return false;
        }
        let b = self.block_of(x);
        let Ok(at) = self.blocks[b].binary_search(x) else { return false };
        self.blocks[b].remove(at);
        self.len -= 1;
        if self.blocks[b].is_empty() {
            self.blocks.remove(b);
        } else if b + 1 < self.blocks.len() && self.blocks[b].len() + self.blocks[b + 1].len() <= MAX / 2 {
            // Removals would otherwise leave many small blocks, and ranks would count them all.
            let next = self.blocks.remove(b + 1);
            self.blocks[b].extend(next);
        }
        true
    }

    /// How many items come before `x`, if it is there.
    pub fn rank(&self, x: &T) -> Option<usize> {
        if self.blocks.is_empty() {
            return None;
        }
        let b = self.block_of(x);
        let at = self.blocks[b].binary_search(x).ok()?;
        Some(self.blocks[..b].iter().map(Vec::len).sum::<usize>() + at)
    }

    /// The items from rank `from` on, in order.
    pub fn iter_from(&self, from: usize) -> impl Iterator<Item = &T> + '_ {
        let mut skip = from;
        let mut first = self.blocks.len();
        for (i, b) in self.blocks.iter().enumerate() {
            if skip < b.len() {
                first = i;
                break;
            }
            skip -= b.len();
        }
        self.blocks[first.min(self.blocks.len())..].iter().flatten().skip(skip)
    }

    /// The item of rank `i`.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.iter_from(i).next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Inserts and removals, in any order, leave what a `BTreeSet` would, with its ranks.
        #[test]
        fn it_agrees_with_a_sorted_set(
            start in proptest::collection::btree_set(0u32..5000, 0..3000),
            ops in proptest::collection::vec((any::<bool>(), 0u32..5000), 0..3000),
        ) {
            let mut r = Ranked::from_sorted(start.iter().copied().collect());
            let mut s = start;
            for (add, x) in ops {
                if add {
                    prop_assert_eq!(r.insert(x), s.insert(x));
                } else {
                    prop_assert_eq!(r.remove(&x), s.remove(&x));
                }
            }
            prop_assert_eq!(r.len(), s.len());
            let all: Vec<u32> = r.iter_from(0).copied().collect();
            prop_assert_eq!(&all, &s.iter().copied().collect::<Vec<_>>());
            for (i, x) in s.iter().enumerate().step_by(37) {
                prop_assert_eq!(r.rank(x), Some(i));
                prop_assert_eq!(r.get(i), Some(x));
                prop_assert_eq!(r.iter_from(i).next(), Some(x));
            }
            prop_assert_eq!(r.get(s.len()), None);
            prop_assert_eq!(r.rank(&5001), None);
        }
    }
}
