//! The drivers: what sends the calls. The open loop paces itself on one dispatcher thread along
//! the merged arrival schedule ([`OpenLoop`]); the closed loop keeps each client's `concurrency`
//! slots busy, each starting its next call when its previous one ends. Both take their times and
//! kinds from the model's arrival schedule, as the simulator does.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use lblab_model::arrival::{ClientArrivals, OpenLoop};
use lblab_policy::{Nanos, RpcKind};
use lblab_record::RequestResult;
use lblab_wire::timer;
use lblab_wire::Clock;
use tokio::runtime::Handle;

use super::client::{call_once, Client};
use super::recorder::{Event, Overload, Pending, Sink};
use crate::balance::Picked;

/// What both drivers share (the clients apart: they are not `Sync`, so they move to the
/// dispatcher thread).
pub(super) struct Drive<'a> {
    /// Model time.
    pub clock: Clock,
    /// The load generator's runtime, where calls run.
    pub handle: Handle,
    /// Where calls report their end.
    pub sink: &'a Sink,
    /// Calls under way.
    pub in_flight: &'a Arc<AtomicUsize>,
    /// Per-call deadline.
    pub deadline: Duration,
    /// Streams still open then are cut off (dropped), as in the simulator: run end + drain.
    pub stream_bound: Duration,
    /// Calls in flight above which open-loop arrivals are dropped.
    pub max_in_flight: usize,
    /// How long the dispatcher spins before each send time at most ([`timer::Pacer`]).
    pub spin: Duration,
    /// Whether the run was asked to stop.
    pub stopped: &'a (dyn Fn() -> bool + Sync),
    /// End of the run (warm-up + duration), ns.
    pub end: Nanos,
    /// Open loop: the most calls to send.
    pub max_calls: Option<u64>,
    /// Open loop: a rate schedule's time warp.
    pub warp: Option<&'a crate::schedule::Warp>,
    /// Closed loop: when each slot runs (default: all from time 0 to the end).
    pub slot_spans: Option<&'a [crate::schedule::SlotSpan]>,
}

/// Why an open-loop arrival cannot be sent now, if it cannot: the load generator drops what it
/// cannot send in time (cheaply, so that it catches up) instead of falling ever further behind.
fn overloaded(d: &Drive<'_>, late: Nanos) -> Overload {
    if late >= d.deadline.as_nanos() as Nanos {
        Overload::Behind
    } else if d.in_flight.load(Ordering::Acquire) >= d.max_in_flight {
        Overload::InFlight
    } else {
        Overload::No
    }
}

/// The open loop, on the calling (dispatcher) thread: sleeps precisely until each intended send
/// time (spinning only as long before it as its sleeps lately overslept) and spawns the call. Returns the arrivals dispatched.
pub(super) fn open_loop(d: &Drive<'_>, clients: &[Client], schedule: OpenLoop) -> u64 {
    let mut calls = 0u64;
    let mut pacer = timer::Pacer::new(d.spin);
    for arrival in schedule {
        if (d.stopped)() || d.max_calls.is_some_and(|max| calls >= max) {
            break;
        }
        let t = d.warp.map_or(arrival.at, |w| w.map(arrival.at));
        let kind = arrival.kind;
        pacer.sleep_until(d.clock.instant(t));
        calls += 1;
        let late = d.clock.now().saturating_sub(t);
        let overload = overloaded(d, late);
        if overload != Overload::No {
            d.sink.send(Event::dropped(t, kind, Some(late), overload));
            continue;
        }
        spawn_open_call(d, &clients[arrival.client as usize], t, kind, calls);
    }
    calls
}

/// One open-loop call, on the runtime. Its deadline runs from its intended send time, as a real
/// caller's would; one that cannot leave in time is not sent.
fn spawn_open_call(d: &Drive<'_>, client: &Client, intended: Nanos, kind: RpcKind, id: u64) {
    let pending = Pending::start(intended, kind, d.sink, d.in_flight);
    let mut client = client.clone();
    let (clock, deadline, stream_bound) = (d.clock, d.deadline, d.stream_bound);
    d.handle.spawn(async move {
        let lateness = clock.now().saturating_sub(intended);
        let Some(remaining) = deadline
            .checked_sub(Duration::from_nanos(lateness))
            .filter(|r| !r.is_zero())
        else {
            pending.finish(Event::dropped(
                intended,
                kind,
                Some(lateness),
                Overload::Behind,
            ));
            return;
        };
        let picked = Picked::new();
        let streams_end = stream_bound.saturating_sub(Duration::from_nanos(intended));
        let result = call_once(
            &mut client,
            id,
            kind,
            remaining,
            streams_end,
            picked.clone(),
        )
        .await;
        pending.finish(Event::Done {
            intended,
            backend: picked.get().map(|e| e.0),
            kind,
            end: clock.now(),
            result,
            lateness: Some(lateness),
            overload: Overload::No,
        });
    });
}

/// The closed loop: starts every client's slots on the runtime and waits (on the calling thread)
/// until the run ends or is stopped. A slot's calls are counted in flight like open-loop calls,
/// so the drain waits for them and the ones cut off are counted as dropped.
pub(super) fn closed_loop(d: &Drive<'_>, clients: &[Client], arrivals: Vec<ClientArrivals>) {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let budget = Arc::new(Budget {
        left: AtomicU64::new(d.max_calls.unwrap_or(u64::MAX)),
        slots: AtomicUsize::new(0),
    });
    for (client, mut arrivals) in clients.iter().zip(arrivals) {
        let starts = arrivals.starts();
        let arrivals = Arc::new(Mutex::new(arrivals));
        for (i, at) in starts.into_iter().enumerate() {
            let span = d.slot_spans.and_then(|s| s.get(i).copied());
            let start = span.map_or(at, |s| s.start);
            budget.slots.fetch_add(1, Ordering::AcqRel);
            let slot = Slot {
                start,
                stop_at: span.map_or(Nanos::MAX, |s| s.stop),
                client: client.clone(),
                arrivals: arrivals.clone(),
                sink: d.sink.clone(),
                in_flight: d.in_flight.clone(),
                stop: stop.clone(),
                budget: budget.clone(),
                clock: d.clock,
                deadline: d.deadline,
                stream_bound: d.stream_bound,
            };
            d.handle.spawn(slot.run());
        }
    }
    // Until the end, a stop, or (with a call budget) every slot has ended.
    while d.clock.now() < d.end && !(d.stopped)() && budget.slots.load(Ordering::Acquire) > 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
}

/// A closed loop's calls left to start (`--total`) and its slots still running.
struct Budget {
    left: AtomicU64,
    slots: AtomicUsize,
}

impl Budget {
    /// Takes one call from the budget; `false` when none is left.
    fn take(&self) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// Counts its slot out when the slot ends, however it ends.
struct SlotGuard(Arc<Budget>);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.0.slots.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One closed-loop slot: a call at a time.
struct Slot {
    /// When its first call starts.
    start: Nanos,
    /// When it stops starting calls (a falling concurrency schedule).
    stop_at: Nanos,
    client: Client,
    arrivals: Arc<Mutex<ClientArrivals>>,
    sink: Sink,
    in_flight: Arc<AtomicUsize>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    budget: Arc<Budget>,
    clock: Clock,
    deadline: Duration,
    stream_bound: Duration,
}

impl Slot {
    /// The client's schedule, shared by its slots. A slot that panicked cannot leave it
    /// inconsistent: recover the guard.
    fn schedule(&self) -> MutexGuard<'_, ClientArrivals> {
        self.arrivals.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn run(mut self) {
        let _guard = SlotGuard(self.budget.clone());
        tokio::time::sleep_until(self.clock.instant(self.start).into()).await;
        let mut id = 0;
        // Failed calls in a row, which the slot backs off after (`retry_wait`).
        let mut failures = 0u32;
        loop {
            let now = self.clock.now();
            if self.stop.load(Ordering::Relaxed) || now >= self.stop_at || !self.budget.take() {
                return;
            }
            let Some(arrived) = self.schedule().arrive(now) else {
                return;
            };
            let kind = arrived.kind;
            id += 1;
            let pending = Pending::start(now, kind, &self.sink, &self.in_flight);
            let picked = Picked::new();
            let result = call_once(
                &mut self.client,
                id,
                kind,
                self.deadline,
                self.stream_bound,
                picked.clone(),
            )
            .await;
            let done = self.clock.now();
            pending.finish(Event::Done {
                intended: now,
                backend: picked.get().map(|e| e.0),
                kind,
                end: done,
                result,
                lateness: Some(0),
                overload: Overload::No,
            });
            failures = match result {
                RequestResult::Ok => 0,
                _ => failures.saturating_add(1),
            };
            let Some(next) = self.schedule().after_completion(done, now, failures) else {
                return;
            };
            if next > done {
                tokio::time::sleep_until(self.clock.instant(next).into()).await;
            }
        }
    }
}
