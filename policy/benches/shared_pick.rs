//! What a pick costs inside a gRPC client: pick + completion from 1, 2, 4 and 8 threads at once
//! over one shared picker (`lblab_policy::shared`), at 2, 20, 1,000 and 10,000 READY endpoints.
//! round_robin (one atomic index), least_request (atomic counts), peak_ewma (the real client's
//! concurrent policy: each estimate behind a sequence lock, read without writing), weighted_round_robin (the sans-IO policy behind one lock, warmed
//! with ORCA reports) and tower's p2c over `load::PeakEwma` (behind one lock, as tower shares a
//! balancer through one buffer task; pick and completion in one locked call), and
//! peak_ewma_floor (tower's estimate in three relaxed atomics per endpoint: the least any
//! peak-EWMA p2c picker does, a yardstick rather than a policy).
//!
//! A sample's time is the CPU time all threads spent in their calls divided by the number of
//! calls ([`common::thread_cpu`]): what a call costs, including what the threads cost each other
//! (the cache lines they share, a retried read), but not the time another process held the
//! core. With one thread that is the cost of a pick and its completion; the ratio of the two-thread
//! figure to the one-thread figure is how the picker scales (1 if the threads do not slow each
//! other down). `scripts/bench.sh` turns the medians into ratios to round_robin.
//!
//! Run: `cargo bench -p lblab-policy --bench shared_pick -- --warm-up-time 1 --measurement-time 2`.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use lblab_policy::peak_ewma::{shared::SharedPeakEwma, Config};
use lblab_policy::shared::ConcurrentPolicy;
use lblab_policy::shared::{LeastRequest, Locked, RoundRobin, SharedPicker, SharedTicket};
use lblab_policy::{p2c, Connectivity, EndpointId, Nanos, Outcome, Pick, RpcKind, Status};
use rand::{rngs::SmallRng, RngCore, SeedableRng};
use tower::Service;

mod common;
use common::{setup, thread_cpu, tower_balance, Inner, SIMPLE};

const SIZES: [u32; 4] = [2, 20, 1000, 10_000];
const THREADS: [u64; 4] = [1, 2, 4, 8];

type TowerBalance = tower::balance::p2c::Balance<
    tower::discover::ServiceList<
        Vec<tower::load::PeakEwma<Inner, tower::load::CompleteOnResponse>>,
    >,
    (),
>;

/// tower's balancer behind one lock: the pick polls it ready, calls and completes in one go.
struct LockedTower(Mutex<TowerBalance>, u32);

impl SharedPicker for LockedTower {
    fn name(&self) -> &'static str {
        "tower_p2c_peak_ewma"
    }

    fn pick(&self, _now: Nanos, _rng: &mut dyn RngCore) -> Option<SharedTicket> {
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut balance = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match balance.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => {}
            _ => return None,
        }
        let fut = pin!(balance.call(()));
        match fut.poll(&mut cx) {
            Poll::Ready(Ok(())) => Some(SharedTicket::of(0)),
            _ => None,
        }
    }

    fn done(&self, _ticket: SharedTicket, _now: Nanos, _elapsed: Nanos, _ok: bool) {}

    fn endpoints(&self) -> usize {
        self.1 as usize
    }

    fn bytes_per_endpoint(&self) -> usize {
        0
    }
}

/// The least a peak-EWMA p2c picker does, as a yardstick, not a policy: tower's estimate (one
/// `exp` per candidate's cost and one per completion) in three relaxed atomics per endpoint over
/// a READY list that never changes, with distinct draws, cost `estimate × (outstanding + 1)`. No
/// connectivity changes, no generations, and two completions on one endpoint at once may lose a
/// sample; what the shared peak_ewma costs above it is its semantics and its synchronization.
struct PeakEwmaFloor {
    ready: Vec<u32>,
    cells: Vec<FloorCell>,
}

#[derive(Default)]
struct FloorCell {
    outstanding: AtomicU32,
    /// The estimate, ns (f64 bits).
    estimate: AtomicU64,
    /// When the estimate was last written, ns.
    stamp: AtomicU64,
}

/// The floor's decay time: the default `decayTime` (10 s), ns.
const FLOOR_DECAY_NS: f64 = 10e9;

impl FloorCell {
    /// The estimate decayed to `now` and its weight, as tower's `PeakEwma` reads it.
    #[inline]
    fn decayed(&self, now: Nanos) -> (f64, f64) {
        let estimate = f64::from_bits(self.estimate.load(Ordering::Relaxed));
        let idle = now.saturating_sub(self.stamp.load(Ordering::Relaxed)) as f64;
        let weight = (-idle / FLOOR_DECAY_NS).exp();
        (estimate, weight)
    }
}

impl SharedPicker for PeakEwmaFloor {
    fn name(&self) -> &'static str {
        "peak_ewma_floor"
    }

    fn pick(&self, now: Nanos, rng: &mut dyn RngCore) -> Option<SharedTicket> {
        let i = p2c::pick(&self.ready, 2, p2c::Sampling::Distinct, rng, |i| {
            let cell = &self.cells[i as usize];
            let (estimate, weight) = cell.decayed(now);
            estimate * weight * (f64::from(cell.outstanding.load(Ordering::Relaxed)) + 1.0)
        });
        self.cells[i as usize]
            .outstanding
            .fetch_add(1, Ordering::Relaxed);
        Some(SharedTicket::of(i))
    }

    fn done(&self, ticket: SharedTicket, now: Nanos, elapsed: Nanos, _ok: bool) {
        let cell = &self.cells[ticket.endpoint as usize];
        cell.outstanding.fetch_sub(1, Ordering::Relaxed);
        let (estimate, weight) = cell.decayed(now);
        let rtt = elapsed as f64;
        let next = if rtt > estimate {
            rtt
        } else {
            estimate * weight + rtt * (1.0 - weight)
        };
        cell.estimate.store(next.to_bits(), Ordering::Relaxed);
        cell.stamp.store(now, Ordering::Relaxed);
    }

    fn endpoints(&self) -> usize {
        self.ready.len()
    }

    fn bytes_per_endpoint(&self) -> usize {
        std::mem::size_of::<FloorCell>() + std::mem::size_of::<u32>()
    }
}

fn pickers(n: u32) -> Vec<Box<dyn SharedPicker>> {
    let warmed = |entry: &str| setup(entry, n).0;
    let mut tower = tower_balance(n);
    {
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        for _ in 0..20 * n.min(1000) {
            if let Poll::Ready(Ok(())) = tower.poll_ready(&mut cx) {
                let _ = pin!(tower.call(())).poll(&mut cx);
            }
        }
    }
    vec![
        Box::new(RoundRobin::new(n, 0)),
        Box::new(LeastRequest::new(n, 2)),
        Box::new(SharedPeakEwma::new(Config::default(), n).expect("the default is supported")),
        Box::new(concurrent("peak_ewma_simple", SIMPLE, n)),
        Box::new(Locked::new(
            warmed(r#"{"weighted_round_robin":{"blackoutPeriod":"0s"}}"#),
            n,
            0,
        )),
        Box::new(LockedTower(Mutex::new(tower), n)),
        Box::new(PeakEwmaFloor {
            ready: (0..n).collect(),
            cells: (0..n).map(|_| FloorCell::default()).collect(),
        }),
    ]
}

/// Runs `iters` pick + completion calls split over `threads` threads; returns the CPU time
/// the threads spent in them, summed.
fn run(picker: &dyn SharedPicker, threads: u64, iters: u64) -> Duration {
    let per = iters.div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(t + 1);
                    let mut now: Nanos = 3_000_000_000;
                    let start = thread_cpu();
                    for k in 0..per {
                        now += 1_000;
                        let ticket = picker.pick(now, &mut rng).expect("READY endpoints");
                        let elapsed = 1_000_000 + u64::from(ticket.endpoint % 13) * 100_000 + k % 7;
                        picker.done(ticket, now, elapsed, true);
                    }
                    thread_cpu() - start
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a picking thread finished"))
            .sum()
    })
}

/// A configuration's concurrent picker (`PolicyConfig::build_concurrent`) over `n` READY
/// endpoints, reported as `name`.
fn concurrent(name: &'static str, entry: &str, n: u32) -> Concurrent {
    let doc = format!(r#"{{"loadBalancingConfig":[{entry}]}}"#);
    let policy = lblab_policy::config::parse_service_config(&doc)
        .expect("valid config")
        .build_concurrent()
        .expect("the config has a concurrent form");
    let ids: Vec<EndpointId> = (0..n).map(EndpointId).collect();
    policy.set_endpoints(0, &ids);
    for &id in &ids {
        policy.on_connectivity(0, id, Connectivity::Ready);
    }
    Concurrent(name, policy, n)
}

/// A [`ConcurrentPolicy`] driven as a [`SharedPicker`].
struct Concurrent(&'static str, Arc<dyn ConcurrentPolicy>, u32);

impl SharedPicker for Concurrent {
    fn name(&self) -> &'static str {
        self.0
    }

    fn pick(&self, now: Nanos, rng: &mut dyn RngCore) -> Option<SharedTicket> {
        match self.1.pick_call(now, RpcKind::Unary, rng) {
            Pick::Endpoint(ticket) => Some(SharedTicket::with(ticket)),
            Pick::Queue | Pick::Fail => None,
        }
    }

    fn done(&self, ticket: SharedTicket, now: Nanos, elapsed: Nanos, ok: bool) {
        if let Some(ticket) = ticket.into_inner() {
            let status = if ok { Status::Ok } else { Status::Error };
            self.1.on_done(now, ticket, Outcome::new(status, elapsed));
        }
    }

    fn endpoints(&self) -> usize {
        self.2 as usize
    }

    fn bytes_per_endpoint(&self) -> usize {
        0
    }
}

fn shared(c: &mut Criterion) {
    let mut group = c.benchmark_group("shared_pick_done");
    for n in SIZES {
        for picker in pickers(n) {
            for threads in THREADS {
                let id = BenchmarkId::new(format!("{}/{threads}", picker.name()), n);
                group.bench_with_input(id, &n, |b, _| {
                    b.iter_custom(|iters| run(&*picker, threads, iters))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, shared);
criterion_main!(benches);
