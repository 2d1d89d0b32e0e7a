//! Differential test: `peak_ewma_experimental` with `lblabAblation.decay = "on_read"` against
//! tower 0.5's own `load::PeakEwma`, the reference that ablation stands for.
//!
//! Each random trace drives two tower `PeakEwma` services (around a service that answers at once)
//! and one lblab policy with two READY endpoints through the same operations at the same instants:
//!
//! - *advance*: both clocks move by the same amount (tokio's paused clock, which tower reads);
//! - *read*: tower's `Load::load()` on both services, which decays each estimate and moves its
//!   update time; in lblab a pick of a streaming RPC, which reads both costs (two endpoints, two
//!   distinct draws) and, streams being ignored by default, changes nothing else;
//! - *start*: the same reads, then a unary pick in lblab, and a call to the tower service of the
//!   endpoint lblab picked (tower's pending count is its live handles);
//! - *complete*: one outstanding call ends now, on both sides, with the time since it started as
//!   its RTT.
//!
//! Every read compares lblab's cost (`endpoint_view`) with the cost tower's `load()` returns, and
//! the endpoint lblab picked must be the cheaper by tower's costs too.

use std::convert::Infallible;
use std::future::{ready, Ready};
use std::time::Duration;

use futures_util::FutureExt;
use lblab_policy::{EndpointId, Nanos, Outcome, Pick, Policy, RpcKind, Status, Ticket};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tower::load::peak_ewma::Handle;
use tower::load::{Load, PeakEwma, TrackCompletion};
use tower::{Service, ServiceExt};

use crate::harness::{config, MS, SEC};

/// Keeps tower's completion handle in the response, so the test decides when a call ends (when
/// it drops the handle), as a response body would.
#[derive(Debug, Clone, Copy)]
struct KeepHandle;

impl<V> TrackCompletion<Handle, V> for KeepHandle {
    type Output = Handle;

    fn track_completion(&self, handle: Handle, _: V) -> Handle {
        handle
    }
}

type Inner = tower::util::ServiceFn<fn(()) -> Ready<Result<(), Infallible>>>;
type TowerEwma = PeakEwma<Inner, KeepHandle>;

fn answer(_: ()) -> Ready<Result<(), Infallible>> {
    ready(Ok(()))
}

fn tower_service(default_rtt: Nanos, decay: Nanos) -> TowerEwma {
    let inner: Inner = tower::service_fn(answer as fn(()) -> _);
    PeakEwma::new(
        inner,
        Duration::from_nanos(default_rtt),
        decay as f64,
        KeepHandle,
    )
}

/// tower's `Cost` keeps its `f64` private; its `Debug` form (`Cost(…)`) prints it exactly.
fn tower_load(svc: &TowerEwma) -> f64 {
    let text = format!("{:?}", svc.load());
    text.strip_prefix("Cost(")
        .and_then(|s| s.strip_suffix(')'))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("unexpected tower cost format {text}"))
}

fn tower_call(svc: &mut TowerEwma) -> Handle {
    svc.ready()
        .now_or_never()
        .expect("always ready")
        .expect("infallible");
    svc.call(())
        .now_or_never()
        .expect("answers at once")
        .expect("infallible")
}

struct Call {
    ticket: Ticket,
    handle: Handle,
    sent: Nanos,
}

/// Why a trace diverged from tower.
#[derive(Debug)]
struct Divergence(String);

/// Runs one random trace; returns the number of cost comparisons made.
async fn trace(seed: u64, decay: Nanos, default_rtt: Nanos, ops: usize) -> Result<u32, Divergence> {
    let entry = format!(
        r#"{{"peak_ewma_experimental":{{"decayTime":"{}s","defaultRtt":"{}s","lblabAblation":{{"decay":"on_read","initial":"prior"}}}}}}"#,
        decay as f64 / 1e9,
        default_rtt as f64 / 1e9
    );
    let mut policy: Box<dyn Policy> = config(&entry).build(0);
    let ids = [EndpointId(0), EndpointId(1)];
    policy.set_endpoints(0, &ids);
    for id in ids {
        policy.on_connectivity(0, id, lblab_policy::Connectivity::Ready);
    }
    // tower's estimates start at their creation time, lblab's when the endpoint became READY: both
    // at this trace's time 0.
    let mut towers = [
        tower_service(default_rtt, decay),
        tower_service(default_rtt, decay),
    ];
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut pick_rng = SmallRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut now: Nanos = 0;
    let mut calls: Vec<Call> = Vec::new();
    let mut compared = 0;

    for op in 0..ops {
        match rng.random_range(0..100) {
            // Advance: log-uniform from 1 µs to 3 decay times, sometimes not at all.
            0..=29 => {
                let dt = if rng.random_bool(0.1) {
                    0
                } else {
                    let (lo, hi) = ((1_000f64).ln(), (3.0 * decay as f64).ln());
                    rng.random_range(lo..hi).exp() as Nanos
                };
                now += dt;
                tokio::time::advance(Duration::from_nanos(dt)).await;
            }
            // Read, or start a call (a read, then a unary pick).
            30..=74 => {
                let start = rng.random_bool(0.5) && calls.len() < 50;
                let mut tower_costs = [0.0; 2];
                for (e, id) in ids.iter().enumerate() {
                    let ours = policy
                        .endpoint_view(now, *id)
                        .and_then(|v| v.cost)
                        .expect("peak_ewma has a cost");
                    let theirs = tower_load(&towers[e]);
                    tower_costs[e] = theirs;
                    compared += 1;
                    if (ours - theirs).abs() > 1e-9 * theirs.abs() {
                        return Err(Divergence(format!(
                            "op {op} at {now} ns: endpoint {e} costs {ours} in lblab, {theirs} in tower"
                        )));
                    }
                }
                let kind = if start {
                    RpcKind::Unary
                } else {
                    RpcKind::Streaming
                };
                let Pick::Endpoint(ticket) = policy.pick(now, kind, &mut pick_rng) else {
                    panic!("two READY endpoints")
                };
                let e = ticket.endpoint().0 as usize;
                if tower_costs[e] > tower_costs[1 - e] * (1.0 + 1e-9) {
                    return Err(Divergence(format!(
                        "op {op} at {now} ns: lblab picked endpoint {e} at tower costs {tower_costs:?}"
                    )));
                }
                if start {
                    let handle = tower_call(&mut towers[e]);
                    calls.push(Call {
                        ticket,
                        handle,
                        sent: now,
                    });
                } else {
                    // A stream that ends at once: neither load nor sample.
                    policy.on_done(now, ticket, Outcome::new(Status::Ok, 0));
                }
            }
            // Complete one outstanding call now.
            _ => {
                if calls.is_empty() {
                    continue;
                }
                let i = rng.random_range(0..calls.len());
                let call = calls.swap_remove(i);
                let status = if rng.random_bool(0.2) {
                    Status::Error
                } else {
                    Status::Ok
                };
                policy.on_done(now, call.ticket, Outcome::new(status, now - call.sent));
                drop(call.handle);
            }
        }
    }
    for call in calls {
        policy.on_done(now, call.ticket, Outcome::new(Status::Ok, now - call.sent));
    }
    Ok(compared)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn on_read_ablation_matches_towers_peak_ewma_on_random_traces() {
    let mut compared = 0;
    let mut traces = 0;
    for (decay, default_rtt) in [
        (100 * MS, 30 * MS),
        (SEC, 30 * MS),
        (10 * SEC, 30 * MS),
        (100 * MS, MS),
        (SEC, 500 * MS),
        (10 * SEC, 2 * MS),
    ] {
        for seed in 0..200 {
            match trace(seed, decay, default_rtt, 300).await {
                Ok(n) => compared += n,
                Err(Divergence(why)) => {
                    panic!("decayTime {decay} ns, defaultRtt {default_rtt} ns, seed {seed}: {why}")
                }
            }
            traces += 1;
        }
    }
    assert!(traces >= 1000);
    assert!(compared > 100_000, "only {compared} comparisons");
}
