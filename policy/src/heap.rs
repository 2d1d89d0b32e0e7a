//! Min-heaps over [`std::collections::BinaryHeap`], which pops its greatest entry:
//! [`Earliest`] wraps an entry so that the heap pops the one with the smallest
//! [`HeapKey::key`] first, the rest of the entry taking no part in the order or in equality.
//! Weighted round robin's schedule, the simulator's event queue and the fleet's timer are such
//! heaps.

use std::cmp::Ordering;
use std::ops::{Deref, DerefMut};

/// What orders an entry of a min-heap ([`Earliest`]): the smallest key is popped first.
pub trait HeapKey {
    /// The order: a time, then a tie-breaker such as an insertion sequence.
    type Key: Ord;
    /// This entry's key.
    fn key(&self) -> Self::Key;
}

/// An entry of a min-heap: ordered by its [`HeapKey::key`], reversed. It dereferences to the
/// entry, and an entry changed through `BinaryHeap::peek_mut` is sifted to its new place.
#[derive(Debug, Clone, Copy)]
pub struct Earliest<T>(pub T);

impl<T: HeapKey> PartialEq for Earliest<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}

impl<T: HeapKey> Eq for Earliest<T> {}

impl<T: HeapKey> PartialOrd for Earliest<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: HeapKey> Ord for Earliest<T> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.key().cmp(&self.0.key())
    }
}

impl<T> Deref for Earliest<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Earliest<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BinaryHeap;

    #[derive(Debug)]
    struct Job {
        at: u64,
        seq: u64,
        name: &'static str,
    }

    impl HeapKey for Job {
        type Key = (u64, u64);
        fn key(&self) -> (u64, u64) {
            (self.at, self.seq)
        }
    }

    #[test]
    fn the_smallest_key_pops_first_and_the_payload_takes_no_part() {
        let mut heap = BinaryHeap::new();
        for (at, seq, name) in [(5, 1, "c"), (2, 3, "b"), (2, 2, "a"), (9, 4, "d")] {
            heap.push(Earliest(Job { at, seq, name }));
        }
        let order: Vec<_> = std::iter::from_fn(|| heap.pop().map(|j| j.name)).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
        let a = Earliest(Job {
            at: 1,
            seq: 1,
            name: "x",
        });
        assert!(
            a == Earliest(Job {
                at: 1,
                seq: 1,
                name: "y"
            })
        );
        assert!(
            a > Earliest(Job {
                at: 1,
                seq: 2,
                name: "x"
            })
        );
    }

    #[test]
    fn an_entry_moved_through_peek_mut_is_sifted() {
        let mut heap: BinaryHeap<_> = [(1, "a"), (2, "b"), (3, "c")]
            .map(|(at, name)| Earliest(Job { at, seq: 0, name }))
            .into();
        heap.peek_mut().expect("an entry").at = 10;
        assert_eq!(heap.pop().map(|j| j.name), Some("b"));
    }
}
