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

use super::split::idle_exponent;
use super::{
    split_cost, split_cost_with, split_sample, Ablation, Config, DecayMode, Initial, Load, Peak,
    PeakEwma, Split, NAME,
};
use crate::endpoints::Endpoints;
use crate::estimator::Moment;
use crate::p2c::{self, Sampling};
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
    /// `ablation` is [`Ablation::DEFAULT`]: picks run code specialised for it.
    default: bool,
    /// Two distinct candidates per pick, compared through bounds on their weights
    /// ([`SharedPeakEwma::two_distinct`]).
    two: bool,
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
            default: a == Ablation::DEFAULT,
            two: a.sampling == Sampling::Distinct
                && config.choice_count.clamp(1, p2c::MAX_CHOICES) == 2
                && bounds_apply(&a),
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
    /// [`ConcurrentPolicy::pick_call`] under the semantics `a` (`self.ablation`, or the same
    /// as a constant so that the default's choices fold away).
    #[inline(always)]
    fn pick_as(&self, a: &Ablation, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        let (split, ready) = (&self.split, &self.ready);
        let mut spins = 0u32;
        let (slot, cell) = loop {
            let before = ready.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let n = ready.len.load(Ordering::Relaxed) as usize;
                let picks = self.picks.load(Ordering::Relaxed);
                // Each candidate's cost is read on its own; another thread may change it before
                // the outstanding count below is raised, as in grpc-java's least_request picker.
                let picked = if n < 2 || !self.two {
                    (n > 0).then(|| {
                        let cost = |s: u32| {
                            self.cells.get(s).map_or(f64::INFINITY, |cell| {
                                split_cost(a, split, picks, &cell.read(), now)
                            })
                        };
                        let slot = p2c::pick_by(
                            n,
                            |i| ready.entry(i),
                            self.choices,
                            a.sampling,
                            rng,
                            cost,
                        );
                        (slot, None)
                    })
                } else {
                    Some(self.two_distinct(a, n, picks, now, rng))
                };
                let queue = ready.queue.load(Ordering::Relaxed);
                // Orders the list's loads before the second sequence load.
                fence(Ordering::Acquire);
                if ready.seq.load(Ordering::Relaxed) == before {
                    match picked {
                        Some(picked) => break picked,
                        None if queue => return Pick::Queue,
                        None => return Pick::Fail,
                    }
                }
            }
            // The list changed under the draw: draw again from the new one.
            back_off(&mut spins);
        };
        self.picks.fetch_add(1, Ordering::Relaxed);
        let cell = match cell {
            Some(cell) => cell,
            None => self.cell(slot),
        };
        let generation = if a.streams.outstanding(kind) {
            cell.count(now)
        } else {
            cell.generation()
        };
        let id = EndpointId(cell.id.load(Ordering::Relaxed));
        Pick::Endpoint(Ticket::new(id, slot, generation, kind))
    }

    /// The cheaper of two distinct READY entries (`n >= 2`), drawn from `rng` exactly as
    /// [`p2c::pick_by`] draws them and chosen as it chooses (the second only if strictly
    /// cheaper), with the slot's cell. Each candidate's idle weight `e^x` is first bounded
    /// without computing it ([`exp_bounds`]); the cost being monotonic in the weight
    /// ([`split_cost_with`]), the costs at the bounds decide the pick unless their ranges
    /// overlap, and only then are both computed exactly as [`split_cost`] computes them. So
    /// the pick is always the one exact costs make, and usually takes no `exp`.
    #[inline(always)]
    fn two_distinct(
        &self,
        a: &Ablation,
        n: usize,
        picks: u64,
        now: Nanos,
        rng: &mut dyn RngCore,
    ) -> (u32, Option<&Cell>) {
        let first = p2c::index(rng, n);
        let (s1, c1, lo1, hi1) = self.bounded(a, first, picks, now);
        let second = loop {
            let i = p2c::index(rng, n);
            if i != first {
                break i;
            }
        };
        let (s2, c2, lo2, hi2) = self.bounded(a, second, picks, now);
        let second_cheaper = if hi2 < lo1 {
            true
        } else if lo2 >= hi1 {
            false
        } else {
            // Too close to call from the bounds (or not a number): the exact costs, from the
            // cells as they are now (what one thread reads twice is the same).
            let exact = |cell: Option<&Cell>| {
                cell.map_or(f64::INFINITY, |cell| {
                    split_cost(a, &self.split, picks, &cell.read(), now)
                })
            };
            exact(c2) < exact(c1)
        };
        if second_cheaper {
            (s2, c2)
        } else {
            (s1, c1)
        }
    }

    /// READY entry `i`: its slot, its cell, and a lower and an upper bound on its cost at `now`
    /// (both infinite without a cell, as [`split_cost`] is then taken to be).
    #[inline(always)]
    fn bounded(
        &self,
        a: &Ablation,
        i: usize,
        picks: u64,
        now: Nanos,
    ) -> (u32, Option<&Cell>, f64, f64) {
        let split = &self.split;
        let slot = self.ready.entry(i);
        let cell = self.cells.get(slot);
        let (lo, hi) = match cell {
            Some(cell) => {
                let load = cell.read();
                let (wlo, whi) = exp_bounds(idle_exponent(a, split, picks, &load, now, true));
                let (clo, chi) = (
                    split_cost_with(a, split, &load, now, wlo),
                    split_cost_with(a, split, &load, now, whi),
                );
                (clo.min(chi), clo.max(chi))
            }
            None => (f64::INFINITY, f64::INFINITY),
        };
        (slot, cell, lo, hi)
    }
}

/// Whether [`SharedPeakEwma::two_distinct`] may bound costs through the idle weight alone: the
/// cost is [`split_cost_with`] of that weight and no other `exp` (no decaying peak), and no
/// penalty for unsampled endpoints.
fn bounds_apply(a: &Ablation) -> bool {
    a.initial != Initial::Penalty && !matches!(a.peak, Peak::Decaying | Peak::Refutable)
}

/// How far [`exp_bounds`] widens its approximation each way (2^-16): the approximation's own
/// error is below 3e-7 and `f64::exp`'s below an ulp, so `e^x` lies well inside.
const EXP_MARGIN: f64 = 1.0 / 65_536.0;

/// Bounds `(lo, hi)` on what `x.exp()` returns, for `x <= 0`, from a few multiplications: `e^x`
/// as `2^n × e^y` with `|y| <= ln 2 / 2` and `e^y` to its Taylor polynomial of degree 6
/// (remainder below `|y|^7 / 7! × e^|y|`, under 3e-7 of `e^y`), widened by [`EXP_MARGIN`].
/// Below −700 (where the result is smaller than 1e-304) the bounds are `(0, 1)`; for anything
/// else (positive, not a number) `(0, ∞)`, which decides nothing.
#[inline(always)]
fn exp_bounds(x: f64) -> (f64, f64) {
    if !(-700.0..=0.0).contains(&x) {
        return if x < -700.0 {
            (0.0, 1.0)
        } else {
            (0.0, f64::INFINITY)
        };
    }
    let t = x * std::f64::consts::LOG2_E;
    // Truncation toward zero of `t − 0.5` (<= 0) rounds `t` to the nearest integer: n in
    // [−1010, 0], and `t − n` is exact.
    let n = (t - 0.5) as i64;
    let y = (t - n as f64) * std::f64::consts::LN_2;
    let y2 = y * y;
    let p = 1.0
        + y
        + y2 * (0.5 + y * (1.0 / 6.0))
        + y2 * y2 * ((1.0 / 24.0) + y * (1.0 / 120.0) + y2 * (1.0 / 720.0));
    // 2^n, a normal number for n >= −1022.
    let e = p * f64::from_bits(((n + 1023) as u64) << 52);
    (e * (1.0 - EXP_MARGIN), e * (1.0 + EXP_MARGIN))
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
        if self.default {
            self.pick_as(&Ablation::DEFAULT, now, kind, rng)
        } else {
            self.pick_as(&self.ablation, now, kind, rng)
        }
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
