//! What a pick costs inside a gRPC client: pick + completion from 1, 2, 4 and 8 threads at once
//! over one shared picker (`lblab_policy::shared`), at 2, 20, 1,000 and 10,000 READY endpoints.
//! round_robin (one atomic index), least_request (atomic counts), peak_ewma (the real client's
//! concurrent policy: each estimate behind a sequence lock, read without writing), weighted_round_robin (the sans-IO policy behind one lock, warmed
//! with ORCA reports) and tower's p2c over `load::PeakEwma` (behind one lock, as tower shares a
//! balancer through one buffer task; pick and completion in one locked call).
//!
//! A sample's time is the wall time of all threads' calls divided by their number: the inverse of
//! the picker's throughput. `scripts/bench.sh` turns the medians into ratios to round_robin.
//!
//! Run: `cargo bench -p lblab-policy --bench shared_pick -- --warm-up-time 1 --measurement-time 2`.

use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use lblab_policy::peak_ewma::{shared::SharedPeakEwma, Config};
use lblab_policy::shared::{LeastRequest, Locked, RoundRobin, SharedPicker, SharedTicket};
use lblab_policy::Nanos;
use rand::{rngs::SmallRng, RngCore, SeedableRng};
use tower::Service;

mod common;
use common::{setup, tower_balance, Inner};

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
        Box::new(Locked::new(
            warmed(r#"{"weighted_round_robin":{"blackoutPeriod":"0s"}}"#),
            n,
            0,
        )),
        Box::new(LockedTower(Mutex::new(tower), n)),
    ]
}

/// Runs `iters` pick + completion calls split over `threads` threads; returns the wall time.
fn run(picker: &dyn SharedPicker, threads: u64, iters: u64) -> Duration {
    let per = iters.div_ceil(threads);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t + 1);
                let mut now: Nanos = 3_000_000_000;
                for k in 0..per {
                    now += 1_000;
                    let ticket = picker.pick(now, &mut rng).expect("READY endpoints");
                    let elapsed = 1_000_000 + u64::from(ticket.endpoint % 13) * 100_000 + k % 7;
                    picker.done(ticket, now, elapsed, true);
                }
            });
        }
    });
    start.elapsed()
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
