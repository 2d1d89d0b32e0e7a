//! The endpoint table every policy keeps: ids, connectivity, per-endpoint policy state, the list of
//! READY endpoints to pick from, and generations that make stale tickets harmless.

use std::collections::HashMap;

use crate::{Connectivity, EndpointId, EndpointView, Pick, RpcKind, Ticket};

/// One endpoint's slot.
#[derive(Debug)]
pub(crate) struct Slot<S> {
    pub(crate) id: EndpointId,
    pub(crate) state: Connectivity,
    /// Bumped whenever tickets issued so far must stop counting against this slot (slot reuse, or a
    /// policy that resets its accounting).
    pub(crate) generation: u32,
    pub(crate) live: bool,
    /// Position in the endpoint list (keeps the READY list in list order).
    pos: u32,
    pub(crate) data: S,
}

/// Endpoints in list order with their per-endpoint policy state `S`.
#[derive(Debug)]
pub(crate) struct Endpoints<S> {
    slots: Vec<Slot<S>>,
    index: HashMap<EndpointId, u32>,
    /// Live slots in the order of the last `set` call.
    order: Vec<u32>,
    /// Live READY slots, in list order. Picks sample from this.
    ready: Vec<u32>,
    free: Vec<u32>,
    /// Incremented whenever `ready` changes, so pickers can notice.
    pub(crate) version: u64,
}

impl<S> Default for Endpoints<S> {
    fn default() -> Self {
        Endpoints {
            slots: Vec::new(),
            index: HashMap::new(),
            order: Vec::new(),
            ready: Vec::new(),
            free: Vec::new(),
            version: 0,
        }
    }
}

impl<S> Endpoints<S> {
    /// Replaces the endpoint list; `init` makes the state of each new endpoint. Duplicate ids in
    /// `ids` count once.
    pub(crate) fn set(&mut self, ids: &[EndpointId], mut init: impl FnMut() -> S) {
        // id -> already placed in the new order (to skip duplicates)
        let mut keep: HashMap<EndpointId, bool> = HashMap::with_capacity(ids.len());
        for &id in ids {
            keep.insert(id, false);
        }
        // Remove endpoints no longer listed.
        for &slot in &self.order {
            let s = &mut self.slots[slot as usize];
            if !keep.contains_key(&s.id) {
                s.live = false;
                s.generation = s.generation.wrapping_add(1);
                self.index.remove(&s.id);
                self.free.push(slot);
            }
        }
        self.order.clear();
        for &id in ids {
            if let Some(placed) = keep.get_mut(&id) {
                if *placed {
                    continue; // duplicate id in the list
                }
                *placed = true;
            }
            let slot = match self.index.get(&id) {
                Some(&slot) => slot,
                None => {
                    let slot = match self.free.pop() {
                        Some(slot) => {
                            let s = &mut self.slots[slot as usize];
                            s.id = id;
                            s.state = Connectivity::Idle;
                            s.live = true;
                            s.data = init();
                            slot
                        }
                        None => {
                            self.slots.push(Slot {
                                id,
                                state: Connectivity::Idle,
                                generation: 0,
                                live: true,
                                pos: 0,
                                data: init(),
                            });
                            (self.slots.len() - 1) as u32
                        }
                    };
                    self.index.insert(id, slot);
                    slot
                }
            };
            self.slots[slot as usize].pos = self.order.len() as u32;
            self.order.push(slot);
        }
        self.rebuild_ready();
    }

    /// Sets one endpoint's state. Returns the slot and the previous state, or `None` for an unknown
    /// endpoint.
    pub(crate) fn set_state(
        &mut self,
        id: EndpointId,
        state: Connectivity,
    ) -> Option<(u32, Connectivity)> {
        let &slot = self.index.get(&id)?;
        let s = &mut self.slots[slot as usize];
        let old = s.state;
        s.state = state;
        let pos = s.pos;
        if (old == Connectivity::Ready) != (state == Connectivity::Ready) {
            // Insert or remove in place, keeping list order: O(log n) search plus a memmove, so
            // bringing up n endpoints one by one costs O(n²) copies of 4 bytes, not n rebuilds.
            let slots = &self.slots;
            let i = self.ready.partition_point(|&r| slots[r as usize].pos < pos);
            if state == Connectivity::Ready {
                self.ready.insert(i, slot);
            } else if self.ready.get(i) == Some(&slot) {
                self.ready.remove(i);
            }
            self.version = self.version.wrapping_add(1);
        }
        Some((slot, old))
    }

    fn rebuild_ready(&mut self) {
        self.ready.clear();
        for &slot in &self.order {
            if self.slots[slot as usize].state == Connectivity::Ready {
                self.ready.push(slot);
            }
        }
        self.version = self.version.wrapping_add(1);
    }

    /// READY slots in list order.
    #[inline]
    pub(crate) fn ready(&self) -> &[u32] {
        &self.ready
    }

    /// What to do when nothing is READY: queue while something may still connect, fail when all
    /// endpoints are in TRANSIENT_FAILURE or there are none.
    pub(crate) fn unready(&self) -> Pick {
        let connecting = self.order.iter().any(|&s| {
            matches!(
                self.slots[s as usize].state,
                Connectivity::Idle | Connectivity::Connecting
            )
        });
        if connecting {
            Pick::Queue
        } else {
            Pick::Fail
        }
    }

    #[inline]
    pub(crate) fn slot(&self, slot: u32) -> &Slot<S> {
        &self.slots[slot as usize]
    }

    #[inline]
    pub(crate) fn slot_mut(&mut self, slot: u32) -> &mut Slot<S> {
        &mut self.slots[slot as usize]
    }

    /// Slots, live or free (slot indices are `0..len`).
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The slot of a known endpoint.
    pub(crate) fn lookup(&self, id: EndpointId) -> Option<u32> {
        self.index.get(&id).copied()
    }

    /// Makes a ticket for an RPC sent to `slot`.
    #[inline]
    pub(crate) fn ticket(&self, slot: u32, kind: RpcKind) -> Ticket {
        let s = &self.slots[slot as usize];
        Ticket::new(s.id, slot, s.generation, kind)
    }

    /// The slot state a ticket still counts against, or `None` if the endpoint was removed or its
    /// accounting was reset since the ticket was issued.
    #[inline]
    pub(crate) fn redeem(&mut self, ticket: &Ticket) -> Option<&mut S> {
        let s = self.slots.get_mut(ticket.slot() as usize)?;
        if s.live && s.generation == ticket.generation() && s.id == ticket.endpoint() {
            Some(&mut s.data)
        } else {
            None
        }
    }

    /// Makes every ticket issued so far for `slot` stale.
    pub(crate) fn bump_generation(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        s.generation = s.generation.wrapping_add(1);
    }
}

impl<S> Endpoints<S> {
    /// The READY list and all slots, borrowed together so a picker can mutate per-endpoint state
    /// while it walks the candidates.
    #[inline]
    pub(crate) fn ready_and_slots_mut(&mut self) -> (&[u32], &mut [Slot<S>]) {
        (&self.ready, &mut self.slots)
    }
}

/// Policies whose only per-endpoint state is a count of outstanding RPCs.
impl Endpoints<u32> {
    /// Counts an RPC sent to `slot` and returns its ticket.
    #[inline]
    pub(crate) fn send(&mut self, slot: u32, kind: RpcKind) -> Pick {
        let outstanding = &mut self.slot_mut(slot).data;
        *outstanding = outstanding.saturating_add(1);
        Pick::Endpoint(self.ticket(slot, kind))
    }

    /// Un-counts a completed RPC (a stale ticket changes nothing).
    #[inline]
    pub(crate) fn complete(&mut self, ticket: &Ticket) {
        if let Some(outstanding) = self.redeem(ticket) {
            *outstanding = outstanding.saturating_sub(1);
        }
    }

    /// The view of `endpoint`, with `cost` computed from its outstanding count.
    pub(crate) fn view(
        &self,
        endpoint: EndpointId,
        cost: impl Fn(u32) -> Option<f64>,
    ) -> Option<EndpointView> {
        let s = self.slot(self.lookup(endpoint)?);
        Some(EndpointView {
            state: s.state,
            outstanding: s.data,
            cost: cost(s.data),
        })
    }
}

/// The [`Policy`](crate::Policy) methods that every policy whose only per-endpoint state is an
/// outstanding count (fields `endpoints: Endpoints<u32>` and `clock: Clock`, a `NAME` const in
/// its module) writes the same way: everything but `pick`. The endpoint view's cost is `$cost` of
/// the count; `after_set` names a method called with the new list after each `set_endpoints`.
macro_rules! outstanding_count_policy {
    ($cost:expr $(, after_set: $after_set:path)?) => {
        fn name(&self) -> &'static str {
            NAME
        }

        fn set_endpoints(&mut self, now: $crate::Nanos, endpoints: &[$crate::EndpointId]) {
            self.clock.advance(now);
            self.endpoints.set(endpoints, || 0);
            $($after_set(self, endpoints);)?
        }

        fn on_connectivity(
            &mut self,
            now: $crate::Nanos,
            endpoint: $crate::EndpointId,
            state: $crate::Connectivity,
        ) {
            self.clock.advance(now);
            self.endpoints.set_state(endpoint, state);
        }

        fn on_done(&mut self, now: $crate::Nanos, ticket: $crate::Ticket, _outcome: $crate::Outcome) {
            self.clock.advance(now);
            self.endpoints.complete(&ticket);
        }

        fn endpoint_view(
            &self,
            _now: $crate::Nanos,
            endpoint: $crate::EndpointId,
        ) -> Option<$crate::EndpointView> {
            self.endpoints.view(endpoint, $cost)
        }
    };
}
pub(crate) use outstanding_count_policy;
