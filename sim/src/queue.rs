//! The event queue: a binary heap ordered by `(time, insertion sequence)`, so events scheduled for
//! the same instant run in the order they were scheduled (FIFO). Scheduling into the past is a bug
//! in the engine and panics.
//!
//! Events scheduled a fixed delay ahead (deadlines) arrive in time order, so they go to a plain FIFO
//! lane instead of the heap ([`EventQueue::schedule_in_order`]): profiling showed heap pops were a
//! third of the simulator's time with one deadline per request in flight in the heap. Both lanes
//! share the sequence counter, so the tie rule holds across them.

use std::collections::{BinaryHeap, VecDeque};

use lblab_policy::heap::{Earliest, HeapKey};
use lblab_policy::Nanos;

struct Entry<E> {
    at: Nanos,
    seq: u64,
    event: E,
}

impl<E> HeapKey for Entry<E> {
    type Key = (Nanos, u64);
    #[inline]
    fn key(&self) -> (Nanos, u64) {
        (self.at, self.seq)
    }
}

/// A min-queue of events by time, FIFO among equal times.
pub struct EventQueue<E> {
    heap: BinaryHeap<Earliest<Entry<E>>>,
    lane: VecDeque<Entry<E>>,
    seq: u64,
    now: Nanos,
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            lane: VecDeque::new(),
            seq: 0,
            now: 0,
        }
    }

    /// The time of the last popped event.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at `at` (>= now).
    #[inline]
    pub fn schedule(&mut self, at: Nanos, event: E) {
        assert!(
            at >= self.now,
            "event scheduled in the past: {at} < {}",
            self.now
        );
        self.seq += 1;
        self.heap.push(Earliest(Entry {
            at,
            seq: self.seq,
            event,
        }));
    }

    /// Schedules `event` at `at`, which must be no earlier than any event already scheduled this
    /// way (true of events a fixed delay ahead of a clock that only moves forward).
    #[inline]
    pub fn schedule_in_order(&mut self, at: Nanos, event: E) {
        assert!(
            at >= self.now,
            "event scheduled in the past: {at} < {}",
            self.now
        );
        assert!(
            self.lane.back().is_none_or(|last| last.at <= at),
            "in-order lane scheduled out of order"
        );
        self.seq += 1;
        self.lane.push_back(Entry {
            at,
            seq: self.seq,
            event,
        });
    }

    /// Events waiting in the in-order lane.
    #[inline]
    pub fn lane_len(&self) -> usize {
        self.lane.len()
    }

    /// Drops the in-order lane's events that `keep` rejects, except the last, whose time stays
    /// the lane's latest. For events made moot before their time (the deadline of a call that
    /// already ended): left in the lane they would pile up to the rate times the delay, however
    /// few are live. The order of the rest, and so every outcome, is unchanged.
    pub fn compact_lane(&mut self, mut keep: impl FnMut(&E) -> bool) {
        let last = self.lane.len().saturating_sub(1);
        let mut i = 0;
        self.lane.retain(|e| {
            let kept = i == last || keep(&e.event);
            i += 1;
            kept
        });
    }

    /// Pops the earliest event and advances the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let from_lane = match (self.heap.peek(), self.lane.front()) {
            (Some(h), Some(l)) => l.key() < h.key(),
            (None, Some(_)) => true,
            (_, None) => false,
        };
        let e = if from_lane {
            self.lane.pop_front()?
        } else {
            self.heap.pop()?.0
        };
        self.now = e.at;
        Some((e.at, e.event))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len() + self.lane.len()
    }

    /// Whether no events wait.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lane.is_empty()
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simultaneous_events_run_in_fifo_order() {
        let mut q = EventQueue::new();
        q.schedule(5, 'a');
        q.schedule(1, 'b');
        q.schedule(5, 'c');
        q.schedule(5, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'a', 'c', 'd']);
    }

    #[test]
    fn in_order_lane_interleaves_by_time_then_sequence() {
        let mut q = EventQueue::new();
        q.schedule_in_order(5, 'a');
        q.schedule(5, 'b');
        q.schedule(3, 'c');
        q.schedule_in_order(7, 'd');
        q.schedule(7, 'e');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['c', 'a', 'b', 'd', 'e']);
    }

    #[test]
    fn pops_in_the_order_of_a_reference_heap_under_random_interleaving() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut rng = SmallRng::seed_from_u64(7);
        let mut q = EventQueue::new();
        let mut reference = BinaryHeap::new();
        let (mut seq, mut now) = (0u64, 0u64);
        for _ in 0..20_000 {
            if rng.random_bool(0.55) {
                // Few distinct times, so many ties are broken by the sequence.
                let at = now + rng.random_range(0..8u64);
                seq += 1;
                q.schedule(at, seq);
                reference.push(Reverse((at, seq)));
            } else {
                let got = q.pop();
                let want = reference.pop().map(|Reverse(e)| e);
                assert_eq!(got, want);
                if let Some((at, _)) = got {
                    now = at;
                }
            }
        }
        while let Some(Reverse(want)) = reference.pop() {
            assert_eq!(q.pop(), Some(want));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn compacting_the_lane_keeps_the_order_and_the_last_event() {
        let mut q = EventQueue::new();
        for (at, e) in [(1, 'a'), (2, 'x'), (3, 'b'), (4, 'y')] {
            q.schedule_in_order(at, e);
        }
        q.schedule(2, 'h');
        q.compact_lane(|e| *e != 'x' && *e != 'y');
        assert_eq!(q.lane_len(), 3);
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'h', 'b', 'y']);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_into_the_past_is_a_bug() {
        let mut q = EventQueue::new();
        q.schedule(10, ());
        q.pop();
        q.schedule(9, ());
    }
}
