//! The hot path: one pick plus its completion, for every policy at 2, 20, 200 and 1000 READY
//! endpoints, next to the reference, tower's `balance::p2c::Balance` over `load::PeakEwma`
//! services (ready + call + completion of a trivial inner service, polled with a no-op waker).
//!
//! Run: `cargo bench -p lblab-policy --bench pick -- --warm-up-time 1 --measurement-time 2`.
//! Each iteration advances the clock by 1 µs, picks a unary call and completes it at once with a
//! per-endpoint elapsed time and an ORCA report (which only weighted_round_robin reads), so every
//! estimator does its full update.

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use lblab_policy::{
    config, Connectivity, EndpointId, LoadReport, Nanos, Outcome, Pick, Policy, RpcKind, Status,
};
use rand::{rngs::SmallRng, SeedableRng};
use tower::balance::p2c::Balance;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PeakEwma};
use tower::Service;

const SIZES: [u32; 4] = [2, 20, 200, 1000];

/// `(bench name, loadBalancingConfig entry)`.
const POLICIES: &[(&str, &str)] = &[
    ("pick_first", r#"{"pick_first":{}}"#),
    ("round_robin", r#"{"round_robin":{}}"#),
    ("least_request", r#"{"least_request_experimental":{}}"#),
    (
        "weighted_round_robin",
        r#"{"weighted_round_robin":{"blackoutPeriod":"0s"}}"#,
    ),
    ("peak_ewma", r#"{"peak_ewma_experimental":{}}"#),
    (
        "peak_ewma_on_read_distinct",
        r#"{"peak_ewma_experimental":{"lblabAblation":{"decay":"on_read","sampling":"distinct"}}}"#,
    ),
    (
        "outlier_detection_peak_ewma",
        r#"{"outlier_detection_experimental":{"successRateEjection":{},"failurePercentageEjection":{},"childPolicy":[{"peak_ewma_experimental":{}}]}}"#,
    ),
];

fn outcome(e: EndpointId) -> Outcome {
    let load = LoadReport {
        cpu_utilization: 0.5,
        application_utilization: 0.0,
        rps_fractional: 100.0 + f64::from(e.0 % 7) * 10.0,
        eps: 0.0,
    };
    Outcome::new(Status::Ok, 1_000_000 + u64::from(e.0 % 13) * 100_000).with_load(load)
}

/// A policy with `n` READY endpoints, warmed up: every endpoint has taken calls and reports, and
/// the timers due in the first 2 s have fired (so weighted_round_robin runs its EDF schedule).
fn setup(entry: &str, n: u32) -> (Box<dyn Policy>, SmallRng, Nanos) {
    let doc = format!(r#"{{"loadBalancingConfig":[{entry}]}}"#);
    let mut policy = config::parse_service_config(&doc)
        .expect("valid config")
        .build(0);
    let ids: Vec<EndpointId> = (0..n).map(EndpointId).collect();
    policy.set_endpoints(0, &ids);
    for &id in &ids {
        policy.on_connectivity(0, id, Connectivity::Ready);
    }
    let mut rng = SmallRng::seed_from_u64(1);
    let mut now: Nanos = 0;
    for _ in 0..20 * n {
        now += 1_000;
        if let Pick::Endpoint(t) = policy.pick(now, RpcKind::Unary, &mut rng) {
            let o = outcome(t.endpoint());
            policy.on_done(now, t, o);
        }
    }
    now = now.max(2_000_000_000);
    while let Some(t) = policy.next_timer().filter(|&t| t <= now) {
        policy.on_timer(t, &mut rng);
    }
    (policy, rng, now)
}

fn policies(c: &mut Criterion) {
    let mut group = c.benchmark_group("pick_done");
    for &(name, entry) in POLICIES {
        for n in SIZES {
            let (mut policy, mut rng, mut now) = setup(entry, n);
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter(|| {
                    now += 1_000;
                    match policy.pick(black_box(now), RpcKind::Unary, &mut rng) {
                        Pick::Endpoint(t) => {
                            let o = outcome(t.endpoint());
                            policy.on_done(now, t, black_box(o));
                        }
                        other => panic!("{name}: {other:?}"),
                    }
                })
            });
        }
    }
    group.finish();
}

type Inner = tower::util::ServiceFn<fn(()) -> std::future::Ready<Result<(), Infallible>>>;

fn answer(_: ()) -> std::future::Ready<Result<(), Infallible>> {
    std::future::ready(Ok(()))
}

/// tower's P2C over `n` peak-EWMA services with linkerd's parameters (30 ms, 10 s).
fn tower_balance(n: u32) -> Balance<ServiceList<Vec<PeakEwma<Inner, CompleteOnResponse>>>, ()> {
    let services: Vec<_> = (0..n)
        .map(|_| {
            let inner: Inner = tower::service_fn(answer as fn(()) -> _);
            PeakEwma::new(
                inner,
                Duration::from_millis(30),
                10e9,
                CompleteOnResponse::default(),
            )
        })
        .collect();
    Balance::new(ServiceList::new(services))
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
            b.iter(|| once(&mut balance))
        });
    }
    group.finish();
}

criterion_group!(benches, policies, tower_p2c_peak_ewma);
criterion_main!(benches);
