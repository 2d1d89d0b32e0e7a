//! `peak_ewma_experimental` shared across threads the way a gRPC client holds a picker: many
//! application threads pick and complete calls at once, with no lock over the policy and none on
//! the pick path.
//!
//! Each endpoint's estimate lives in its own [`Cell`]: the estimate's words are atomics behind a
//! sequence lock, so a pick reads a candidate's cost with plain loads and writes
//! nothing (a reader retries if a completion changed the words meanwhile), and only a completion
//! takes the endpoint's write side for the few stores of a sample. The outstanding count shares
//! one atomic word with the endpoint's generation, so the increment at a pick learns which
//! generation it counted against, and a completion for an older generation (the endpoint
//! reconnected or was removed since) changes nothing, as in the sans-IO policy. The cells sit
//! at addresses that never change ([`Arena`]), so a completion finds its cell from the ticket
//! alone. The READY list has a sequence lock of its own: a pick reads its length and the entries
//! it draws and draws again if a connectivity change rewrote the list meanwhile. The pick clock
//! is one atomic counter. No pick or completion allocates or takes a lock another pick waits on.
//!
//! The estimate's arithmetic is the sans-IO policy's own ([`super::split_cost`],
//! [`super::split_sample`] over a [`Load`] rebuilt from the words), so the two cannot drift
//! apart; one thread making the same calls picks exactly what [`super::PeakEwmaPolicy`] picks
//! (`shared/tests.rs` holds the two to that over random events).

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rand::RngCore;

use super::{
    split_cost, split_sample, Ablation, Config, DecayMode, Initial, Load, PeakEwma, Split, NAME,
};
use crate::endpoints::Endpoints;
use crate::estimator::Moment;
use crate::p2c;
use crate::shared::{ConcurrentPolicy, SharedPicker, SharedTicket};
use crate::{
    Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, RpcKind, Status, Ticket,
};

/// The words of a [`Cell`]'s estimate: the stored estimate and the error share (f64 bits), the
/// stamp, the peak (f64 bits) and its stamp, the pick clock at the last sample, whether the
/// endpoint has been sampled.
const WORDS: usize = 7;

/// One endpoint's state: 88 bytes, contiguous with its neighbours' in the [`Arena`]. Not padded
/// to a cache line each: at large fleets the memory a pick walks matters more than false
/// sharing, which only few-endpoint fleets could see, and their threads share the endpoints
/// themselves anyway.
#[derive(Debug, Default)]
struct Cell {
    /// Sequence lock over `words`: odd while a completion writes them. A writer takes it by
    /// moving it from even to odd (so writers exclude each other too).
    seq: AtomicU64,
    /// The generation (high 32 bits) and the calls outstanding (low 32 bits).
    counted: AtomicU64,
    /// The endpoint the slot holds (set when the cell starts over).
    id: AtomicU32,
    words: [AtomicU64; WORDS],
    /// When the endpoint last showed progress while calls were outstanding on it (its last
    /// answer, or the pick that made it busy): outside the sequence lock, since a pick sets it.
    /// Only ever moves forward.
    progress: AtomicU64,
}

const OUTSTANDING: u64 = 0xFFFF_FFFF;

impl Cell {
    fn generation(&self) -> u32 {
        (self.counted.load(Ordering::Acquire) >> 32) as u32
    }

    /// The estimate, consistent (never half of one completion's update), with the outstanding
    /// count as of the read.
    #[inline]
    fn read(&self) -> Load {
        let mut spins = 0u32;
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let w: [u64; WORDS] =
                    std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
                // Orders the word loads before the second sequence load (the seqlock's read fence).
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before {
                    let outstanding = (self.counted.load(Ordering::Relaxed) & OUTSTANDING) as u32;
                    return decode(&w, outstanding, self.progress.load(Ordering::Relaxed));
                }
            }
            // A completion is storing the words.
            back_off(&mut spins);
        }
    }

    /// Runs `f` on the estimate with the write side held, if the cell is still at `generation`,
    /// and stores what `f` left. Returns whether it ran.
    fn update(&self, generation: u32, f: impl FnOnce(&mut Load)) -> bool {
        let seq = self.lock();
        let ran = self.generation() == generation;
        if ran {
            let mut load = self.read_locked();
            f(&mut load);
            self.store(&load);
        }
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
        ran
    }

    /// Starts the cell over for endpoint `id` at `generation` with `load` and nothing
    /// outstanding.
    fn reset(&self, id: EndpointId, generation: u32, load: &Load) {
        let seq = self.lock();
        self.counted
            .store(u64::from(generation) << 32, Ordering::Release);
        self.id.store(id.0, Ordering::Relaxed);
        self.progress.store(load.progress, Ordering::Relaxed);
        self.store(load);
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// Takes the write side: the even sequence it found (now odd until released). A writer
    /// that finds another one at work spins briefly, then yields: on an oversubscribed machine
    /// the holder may have been descheduled mid-update, and the update is a few stores.
    #[inline]
    fn lock(&self) -> u64 {
        let mut spins = 0u32;
        loop {
            let seq = self.seq.load(Ordering::Relaxed);
            if seq & 1 == 0
                && self
                    .seq
                    .compare_exchange_weak(seq, seq | 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                // Orders the odd sequence before the word stores (the seqlock's write fence).
                fence(Ordering::Release);
                return seq;
            }
            back_off(&mut spins);
        }
    }

    fn read_locked(&self) -> Load {
        let w: [u64; WORDS] = std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
        decode(
            &w,
            (self.counted.load(Ordering::Relaxed) & OUTSTANDING) as u32,
            self.progress.load(Ordering::Relaxed),
        )
    }

    fn store(&self, load: &Load) {
        for (word, value) in self.words.iter().zip(encode(load)) {
            word.store(value, Ordering::Relaxed);
        }
    }

    /// Counts a call picked at `now` for this endpoint; returns the generation it counts
    /// against. A call that makes the endpoint busy is progress (the stall-aware cost counts
    /// from it).
    #[inline]
    fn count(&self, now: Nanos) -> u32 {
        let word = self.counted.fetch_add(1, Ordering::AcqRel);
        if word & OUTSTANDING == 0 {
            self.progress.fetch_max(now, Ordering::Relaxed);
        }
        (word >> 32) as u32
    }

    /// Takes back a call counted against `generation`; false (and no change) if the cell has
    /// moved to another generation since.
    #[inline]
    fn uncount(&self, generation: u32) -> bool {
        let mut word = self.counted.load(Ordering::Relaxed);
        loop {
            if (word >> 32) as u32 != generation {
                return false;
            }
            let outstanding = (word & OUTSTANDING).saturating_sub(1);
            let new = (word & !OUTSTANDING) | outstanding;
            match self
                .counted
                .compare_exchange_weak(word, new, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => word = now,
            }
        }
    }
}

fn encode(load: &Load) -> [u64; WORDS] {
    [
        load.rtt.stored().to_bits(),
        load.rtt.stamp(),
        load.errors.to_bits(),
        load.peak.to_bits(),
        load.peak_stamp,
        load.picks_at,
        u64::from(load.sampled),
    ]
}

fn decode(w: &[u64; WORDS], outstanding: u32, progress: Nanos) -> Load {
    Load {
        rtt: PeakEwma::unscaled(f64::from_bits(w[0]), w[1]),
        errors: f64::from_bits(w[2]),
        peak: f64::from_bits(w[3]),
        peak_stamp: w[4],
        picks_at: w[5],
        sampled: w[6] != 0,
        outstanding,
        progress,
        // The shared form has no probes (`with_config` refuses a probeInterval).
        probing: false,
        probe_sent: 0,
        probe_answered: 0,
    }
}

/// Waits a little for a writer to finish: a few stores, unless its thread was descheduled in
/// between, so spin briefly, then give way.
#[inline]
fn back_off(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Grow-only storage at addresses that never change: chunk `k` holds `64 × 2^k` items and is
/// allocated when the first index in it is needed, so a reader never follows a pointer another
/// thread may free, and growing never moves an item another thread reads.
#[derive(Debug, Default)]
struct Arena<T> {
    chunks: [OnceLock<Box<[T]>>; CHUNKS],
}

/// Chunks of an [`Arena`]: room for 64 × (2^26 − 1) items, more than a `u32` counts.
const CHUNKS: usize = 26;

impl<T: Default> Arena<T> {
    /// The chunk and the index in it of item `i`.
    #[inline]
    fn locate(i: u32) -> (usize, usize) {
        let q = u64::from(i) / 64 + 1;
        let k = 63 - q.leading_zeros() as usize;
        (k, (u64::from(i) - 64 * ((1u64 << k) - 1)) as usize)
    }

    #[inline]
    fn get(&self, i: u32) -> Option<&T> {
        let (k, at) = Self::locate(i);
        self.chunks.get(k)?.get()?.get(at)
    }

    /// Item `i`, its chunk allocated if need be (control side only).
    fn ensure(&self, i: u32) -> &T {
        let (k, at) = Self::locate(i);
        let chunk =
            self.chunks[k].get_or_init(|| (0..64usize << k).map(|_| T::default()).collect());
        &chunk[at]
    }
}

/// The READY slots picks draw from, in list order ([`Endpoints::ready`]), behind a sequence lock
/// of their own: the control side rewrites them on a change, a pick reads the length and the
/// entries it draws and draws again if the sequence moved meanwhile.
#[derive(Debug, Default)]
struct Ready {
    /// Odd while the control side rewrites the list.
    seq: AtomicU64,
    len: AtomicU32,
    /// With nothing READY: queue (something may still connect) rather than fail.
    queue: AtomicBool,
    slots: Arena<AtomicU32>,
}

impl Ready {
    /// Entry `i` (`i < len` as read under the same sequence).
    #[inline]
    fn entry(&self, i: usize) -> u32 {
        self.slots
            .get(i as u32)
            .map_or(0, |e| e.load(Ordering::Relaxed))
    }
}

/// The serialized side: the endpoint list and connectivity. A slot's data is the generation its
/// cell was started at.
#[derive(Debug, Default)]
struct Control {
    endpoints: Endpoints<u32>,
    /// The last generation given to a cell (so no ticket of a cell's earlier life matches it).
    generations: u32,
}

/// `peak_ewma_experimental` for many threads at once (see the module docs). Supports the
/// semantics whose estimate is the split one ([`Ablation::split`]), the default among them.
#[derive(Debug)]
pub struct SharedPeakEwma {
    ablation: Ablation,
    choices: u32,
    split: Split,
    initial: Nanos,
    /// Picks made so far: the idle decay's pick clock.
    picks: AtomicU64,
    ready: Ready,
    cells: Arena<Cell>,
    control: Mutex<Control>,
}

/// The configuration is one the shared picker does not implement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the shared peak_ewma picker implements the default estimate (error-aware, time-weighted) and its split variations only")]
pub struct Unsupported;

impl SharedPeakEwma {
    /// A policy with no endpoints.
    pub fn with_config(config: Config) -> Result<Self, Unsupported> {
        let a = config.ablation;
        // Without a decay factor per call (see `Moment::unscaled`), the variations that weigh a
        // sample by the wall-clock decay of the stored estimate are not supported.
        if !a.split()
            || a.probe_interval.is_some()
            || a.decay != DecayMode::TimeWeighted
            || a.needs_decay_factor()
        {
            return Err(Unsupported);
        }
        let initial = match a.initial {
            Initial::Penalty | Initial::Zero => 0,
            Initial::Prior | Initial::FirstSample => config.default_rtt,
        };
        Ok(SharedPeakEwma {
            ablation: a,
            choices: config.choice_count,
            split: Split::new(config.decay_time, &a),
            initial,
            picks: AtomicU64::new(0),
            ready: Ready::default(),
            cells: Arena::default(),
            control: Mutex::new(Control::default()),
        })
    }

    /// A policy over `endpoints` endpoints (ids `0..endpoints`), all READY and unsampled at time
    /// 0: what the benchmark picks from.
    pub fn new(config: Config, endpoints: u32) -> Result<Self, Unsupported> {
        let policy = Self::with_config(config)?;
        let ids: Vec<EndpointId> = (0..endpoints).map(EndpointId).collect();
        policy.set_endpoints(0, &ids);
        {
            let mut control = policy.control();
            for &id in &ids {
                policy.connectivity(&mut control, 0, id, Connectivity::Ready);
            }
            policy.publish(&control);
        }
        Ok(policy)
    }

    /// The cell of a slot the READY list holds (allocated before the list was published).
    #[inline]
    fn cell(&self, slot: u32) -> &Cell {
        self.cells.get(slot).expect("a listed slot has a cell")
    }

    fn control(&self) -> std::sync::MutexGuard<'_, Control> {
        // A panic while holding the lock leaves consistent state behind: keep using it.
        self.control
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A fresh estimate as of `now`, as the sans-IO policy's `fresh`.
    fn fresh(&self, now: Nanos) -> Load {
        Load {
            rtt: PeakEwma::new(self.initial, Moment::unscaled(now)),
            peak: 0.0,
            errors: 0.0,
            peak_stamp: now,
            outstanding: 0,
            sampled: false,
            picks_at: self.picks.load(Ordering::Relaxed),
            progress: now,
            probing: false,
            probe_sent: now,
            probe_answered: 0,
        }
    }

    /// Applies a connectivity change without publishing the READY list.
    fn connectivity(&self, control: &mut Control, now: Nanos, id: EndpointId, state: Connectivity) {
        if let Some((slot, old)) = control.endpoints.set_state(id, state) {
            if state == Connectivity::Ready && old != Connectivity::Ready {
                // A (re)connected endpoint starts over; calls of its old connection no longer
                // count against it.
                self.restart(control, slot, now);
            }
        }
    }

    /// Starts `slot`'s cell over at a new generation with a fresh estimate.
    fn restart(&self, control: &mut Control, slot: u32, now: Nanos) {
        control.generations = control.generations.wrapping_add(1);
        let s = control.endpoints.slot_mut(slot);
        s.data = control.generations;
        let id = s.id;
        self.cells
            .ensure(slot)
            .reset(id, control.generations, &self.fresh(now));
    }

    /// Makes the control side's READY list what picks see.
    fn publish(&self, control: &Control) {
        let (e, r) = (&control.endpoints, &self.ready);
        // One writer: the control lock is held.
        let seq = r.seq.load(Ordering::Relaxed);
        r.seq.store(seq | 1, Ordering::Relaxed);
        fence(Ordering::Release);
        for (i, &slot) in e.ready().iter().enumerate() {
            r.slots.ensure(i as u32).store(slot, Ordering::Relaxed);
        }
        r.len.store(e.ready().len() as u32, Ordering::Relaxed);
        r.queue
            .store(matches!(e.unready(), Pick::Queue), Ordering::Relaxed);
        r.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

impl ConcurrentPolicy for SharedPeakEwma {
    fn policy_name(&self) -> &'static str {
        NAME
    }

    fn set_endpoints(&self, now: Nanos, endpoints: &[EndpointId]) {
        let mut control = self.control();
        let before: Vec<u32> = (0..control.endpoints.len() as u32)
            .filter(|&s| control.endpoints.slot(s).live)
            .collect();
        // New and reused slots are marked with generation 0 and started below.
        control.endpoints.set(endpoints, || 0);
        for slot in 0..control.endpoints.len() as u32 {
            let s = control.endpoints.slot(slot);
            // A slot that left the list retires its cell (its calls stop counting); a new or
            // reused one starts fresh.
            let left = !s.live && before.contains(&slot);
            if left || (s.live && s.data == 0) {
                self.restart(&mut control, slot, now);
            }
        }
        self.publish(&control);
    }

    fn on_connectivity(&self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        let mut control = self.control();
        self.connectivity(&mut control, now, endpoint, state);
        self.publish(&control);
    }

    fn pick_call(&self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        let (a, split, ready) = (&self.ablation, &self.split, &self.ready);
        let mut spins = 0u32;
        let slot = loop {
            let before = ready.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let n = ready.len.load(Ordering::Relaxed) as usize;
                let picks = self.picks.load(Ordering::Relaxed);
                // Each candidate's cost is read on its own; another thread may change it before
                // the outstanding count below is raised, as in grpc-java's least_request picker.
                let slot = (n > 0).then(|| {
                    let cost = |s: u32| {
                        self.cells.get(s).map_or(f64::INFINITY, |cell| {
                            split_cost(a, split, picks, &cell.read(), now)
                        })
                    };
                    p2c::pick_by(n, |i| ready.entry(i), self.choices, a.sampling, rng, cost)
                });
                let queue = ready.queue.load(Ordering::Relaxed);
                // Orders the list's loads before the second sequence load.
                fence(Ordering::Acquire);
                if ready.seq.load(Ordering::Relaxed) == before {
                    match slot {
                        Some(slot) => break slot,
                        None if queue => return Pick::Queue,
                        None => return Pick::Fail,
                    }
                }
            }
            // The list changed under the draw: draw again from the new one.
            back_off(&mut spins);
        };
        self.picks.fetch_add(1, Ordering::Relaxed);
        let cell = self.cell(slot);
        let generation = if a.streams.outstanding(kind) {
            cell.count(now)
        } else {
            cell.generation()
        };
        let id = EndpointId(cell.id.load(Ordering::Relaxed));
        Pick::Endpoint(Ticket::new(id, slot, generation, kind))
    }

    fn on_done(&self, now: Nanos, ticket: Ticket, outcome: Outcome) {
        let (a, kind) = (&self.ablation, ticket.kind());
        if !a.streams.outstanding(kind) {
            return; // by default a stream's duration is not a latency, and streams are not counted
        }
        let Some(cell) = self.cells.get(ticket.slot()) else {
            return;
        };
        if !cell.uncount(ticket.generation()) {
            return;
        }
        if outcome.status == Status::Cancelled {
            return;
        }
        // Whether the endpoint gave no other answer while this call was pending (a stall).
        let previous = cell.progress.fetch_max(now, Ordering::Relaxed);
        let quiet = previous <= now.saturating_sub(outcome.elapsed);
        if !a.streams.samples(kind) {
            return;
        }
        let picks = self.picks.load(Ordering::Relaxed);
        let (rtt, failed) = (outcome.elapsed, outcome.status != Status::Ok);
        cell.update(ticket.generation(), |load| {
            split_sample(
                a,
                &self.split,
                picks,
                load,
                Moment::unscaled(now),
                rtt,
                failed,
                quiet,
            );
        });
    }

    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        let control = self.control();
        let slot = control.endpoints.slot(control.endpoints.lookup(endpoint)?);
        let load = self.cells.get(control.endpoints.lookup(endpoint)?)?.read();
        let picks = self.picks.load(Ordering::Relaxed);
        Some(EndpointView {
            state: slot.state,
            outstanding: load.outstanding,
            cost: Some(split_cost(&self.ablation, &self.split, picks, &load, now)),
        })
    }
}

impl SharedPicker for SharedPeakEwma {
    fn name(&self) -> &'static str {
        "peak_ewma"
    }

    fn pick(&self, now: Nanos, rng: &mut dyn RngCore) -> Option<SharedTicket> {
        match self.pick_call(now, RpcKind::Unary, rng) {
            Pick::Endpoint(ticket) => Some(SharedTicket::with(ticket)),
            Pick::Queue | Pick::Fail => None,
        }
    }

    fn done(&self, ticket: SharedTicket, now: Nanos, elapsed: Nanos, ok: bool) {
        if let Some(ticket) = ticket.into_inner() {
            let status = if ok { Status::Ok } else { Status::Error };
            self.on_done(now, ticket, Outcome::new(status, elapsed));
        }
    }

    fn endpoints(&self) -> usize {
        self.ready.len.load(Ordering::Relaxed) as usize
    }

    fn bytes_per_endpoint(&self) -> usize {
        // The cell, its READY entry and the control side's slot (the arenas' last chunks may be
        // up to half empty: not counted).
        std::mem::size_of::<Cell>()
            + std::mem::size_of::<AtomicU32>()
            + std::mem::size_of::<crate::endpoints::Slot<u32>>()
    }
}

#[cfg(test)]
mod tests;
