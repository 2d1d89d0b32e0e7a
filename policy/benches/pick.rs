//! The hot path: one pick plus its completion, for every policy at 2, 20, 200 and 1000 READY
//! endpoints, next to the reference, tower's `balance::p2c::Balance` over `load::PeakEwma`
//! services (ready + call + completion of a trivial inner service, polled with a no-op waker).
//!
//! Run: `cargo bench -p lblab-policy --bench pick -- --warm-up-time 1 --measurement-time 2`.
//! A sample is the thread's CPU time per call ([`common::thread_cpu`]), not wall time.
//! Each iteration advances the clock by 1 µs, picks a unary call and completes it at once with a
//! per-endpoint elapsed time and an ORCA report (which only weighted_round_robin reads), so every
//! estimator does its full update.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use lblab_policy::{Pick, RpcKind};
use tower::balance::p2c::Balance;
use tower::Service;

mod common;
use common::{outcome, setup, thread_cpu, tower_balance, POLICIES};

const SIZES: [u32; 4] = [2, 20, 200, 1000];

fn policies(c: &mut Criterion) {
    let mut group = c.benchmark_group("pick_done");
    for &(name, entry) in POLICIES {
        for n in SIZES {
            let (mut policy, mut rng, mut now) = setup(entry, n);
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter_custom(|iters| {
                    let start = thread_cpu();
                    for _ in 0..iters {
                        now += 1_000;
                        match policy.pick(black_box(now), RpcKind::Unary, &mut rng) {
                            Pick::Endpoint(t) => {
                                let o = outcome(t.endpoint());
                                policy.on_done(now, t, black_box(o));
                            }
                            other => panic!("{name}: {other:?}"),
                        }
                    }
                    thread_cpu() - start
                })
            });
        }
    }
    group.finish();
}

fn tower_p2c_peak_ewma(c: &mut Criterion) {
    let mut group = c.benchmark_group("pick_done");
    let waker = futures_util::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    for n in SIZES {
        let mut balance = tower_balance(n);
        let mut once = |balance: &mut Balance<_, ()>| {
            match balance.poll_ready(&mut cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => panic!("tower: {e}"),
                Poll::Pending => panic!("tower: not ready"),
            }
            let fut = pin!(balance.call(()));
            match fut.poll(&mut cx) {
                Poll::Ready(Ok(())) => {}
                _ => panic!("tower: the inner service answers at once"),
            }
        };
        for _ in 0..20 * n {
            once(&mut balance); // discover every service and warm the estimates
        }
        group.bench_with_input(BenchmarkId::new("tower_p2c_peak_ewma", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let start = thread_cpu();
                for _ in 0..iters {
                    once(&mut balance);
                }
                thread_cpu() - start
            })
        });
    }
    group.finish();
}

criterion_group!(benches, policies, tower_p2c_peak_ewma);
criterion_main!(benches);
