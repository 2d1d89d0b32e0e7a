//! What both pick benchmarks share: the policies, their warm-up and tower's balancer.
#![allow(dead_code)] // each benchmark uses its own part

use std::convert::Infallible;
use std::time::Duration;

use lblab_policy::{
    config, Connectivity, EndpointId, LoadReport, Nanos, Outcome, Pick, Policy, RpcKind, Status,
};
use rand::{rngs::SmallRng, SeedableRng};
use tower::balance::p2c::Balance;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PeakEwma};

/// `(bench name, loadBalancingConfig entry)`.
pub const POLICIES: &[(&str, &str)] = &[
    ("pick_first", r#"{"pick_first":{}}"#),
    ("round_robin", r#"{"round_robin":{}}"#),
    ("least_request", r#"{"least_request_experimental":{}}"#),
    (
        "weighted_round_robin",
        r#"{"weighted_round_robin":{"blackoutPeriod":"0s"}}"#,
    ),
    ("peak_ewma", r#"{"peak_ewma_experimental":{}}"#),
    ("peak_ewma_simple", SIMPLE),
    ("finagle_peak_ewma", r#"{"finagle_peak_ewma":{}}"#),
    ("envoy_peak_ewma", r#"{"envoy_peak_ewma":{}}"#),
    (
        "peak_ewma_on_read_distinct",
        r#"{"peak_ewma_experimental":{"lblabAblation":{"decay":"on_read","sampling":"distinct"}}}"#,
    ),
    (
        "outlier_detection_peak_ewma",
        r#"{"outlier_detection_experimental":{"successRateEjection":{},"failurePercentageEjection":{},"childPolicy":[{"peak_ewma_experimental":{}}]}}"#,
    ),
];

/// The design search's `simple` candidate (a plain time-weighted EWMA decaying toward 0 on the
/// wall clock, the stall-aware cost, failures ignored): the one-rule policy the semantics issue
/// weighs against the default, so its decision can weigh what each costs.
pub const SIMPLE: &str = r#"{"peak_ewma_experimental":{"lblabAblation":{"initial":"zero","idle":"to_zero","peak":"blend","stall":true,"errorPenalty":0,"failures":"ignore"}}}"#;

/// The calling thread's CPU time. The benchmarks report CPU time per call rather than wall time:
/// on a shared 2-core machine other work inflates wall time, not the thread's own CPU time
/// (contention between the picking threads, the cache lines they share, still shows).
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes only the `timespec` it is given, which lives on this stack.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "the thread CPU clock is readable");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

pub fn outcome(e: EndpointId) -> Outcome {
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
pub fn setup(entry: &str, n: u32) -> (Box<dyn Policy>, SmallRng, Nanos) {
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

pub type Inner = tower::util::ServiceFn<fn(()) -> std::future::Ready<Result<(), Infallible>>>;

fn answer(_: ()) -> std::future::Ready<Result<(), Infallible>> {
    std::future::ready(Ok(()))
}

/// tower's P2C over `n` peak-EWMA services with linkerd's parameters (30 ms, 10 s).
pub fn tower_balance(n: u32) -> Balance<ServiceList<Vec<PeakEwma<Inner, CompleteOnResponse>>>, ()> {
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
