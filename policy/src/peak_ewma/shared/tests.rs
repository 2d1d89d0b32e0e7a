//! The concurrent policy against the sans-IO one, and under threads.
use super::*;
use crate::peak_ewma::{Idle, PeakEwmaPolicy};
use crate::shared::ConcurrentPolicy;
use crate::shared::{LeastRequest, RoundRobin};
use crate::{Connectivity, EndpointId, Outcome, Pick, Policy, RpcKind, Status};
use rand::{rngs::SmallRng, SeedableRng};

fn elapsed(endpoint: u32, k: u64) -> Nanos {
    // Endpoint 0 is ten times slower; the rest vary a little.
    let base = if endpoint == 0 { 20_000_000 } else { 2_000_000 };
    base + (k * 7919 + u64::from(endpoint) * 104_729) % 500_000
}

#[test]
fn picks_what_the_sans_io_policy_picks() {
    let n = 20;
    let mut policy = PeakEwmaPolicy::new(Config::default());
    let ids: Vec<EndpointId> = (0..n).map(EndpointId).collect();
    policy.set_endpoints(0, &ids);
    for &id in &ids {
        policy.on_connectivity(0, id, Connectivity::Ready);
    }
    let shared = SharedPeakEwma::new(Config::default(), n).expect("the default is supported");
    let (mut r1, mut r2) = (SmallRng::seed_from_u64(3), SmallRng::seed_from_u64(3));
    let mut open: Vec<(crate::Ticket, SharedTicket, Nanos)> = Vec::new();
    let mut now = 0;
    for k in 0..20_000u64 {
        now += 100_000;
        let Pick::Endpoint(t) = policy.pick(now, RpcKind::Unary, &mut r1) else {
            panic!("READY endpoints");
        };
        let s = shared.pick(now, &mut r2).expect("READY endpoints");
        assert_eq!(t.endpoint().0, s.endpoint, "pick {k}");
        let done_at = now + elapsed(s.endpoint, k);
        open.push((t, s, done_at));
        // Complete the calls that have ended, in order of picking.
        let mut i = 0;
        while i < open.len() {
            if open[i].2 <= now {
                let (t, s, at) = open.remove(i);
                let e = elapsed(s.endpoint, 0).min(at);
                let ok = k % 17 != 0;
                let status = if ok { Status::Ok } else { Status::Error };
                policy.on_done(now, t, Outcome::new(status, e));
                shared.done(s, now, e, ok);
            } else {
                i += 1;
            }
        }
    }
}

/// Drives the sans-IO policy and the shared one with the same events from one thread: list
/// changes, connectivity, unary calls and streams, every status, completions out of order and
/// tickets gone stale. They must pick the same endpoints and show the same costs.
fn same_as_sans_io(events: &[(u8, u8, u8)], config: Config) {
    let mut policy = PeakEwmaPolicy::new(config);
    let shared = SharedPeakEwma::with_config(config).expect("supported");
    let (mut r1, mut r2) = (SmallRng::seed_from_u64(9), SmallRng::seed_from_u64(9));
    let mut open: Vec<(crate::Ticket, crate::Ticket, Nanos)> = Vec::new();
    let mut now: Nanos = 1;
    for (k, &(op, x, y)) in events.iter().enumerate() {
        now += 50_000 + u64::from(x) * 40_000;
        match op % 8 {
            0 => {
                let ids: Vec<EndpointId> = (0..6u32)
                    .filter(|i| (x >> i) & 1 == 1 || *i == u32::from(y % 6))
                    .map(EndpointId)
                    .collect();
                policy.set_endpoints(now, &ids);
                ConcurrentPolicy::set_endpoints(&shared, now, &ids);
            }
            1 => {
                let state = [
                    Connectivity::Ready,
                    Connectivity::Ready,
                    Connectivity::Connecting,
                    Connectivity::TransientFailure,
                    Connectivity::Idle,
                ][usize::from(y % 5)];
                let id = EndpointId(u32::from(x % 6));
                policy.on_connectivity(now, id, state);
                ConcurrentPolicy::on_connectivity(&shared, now, id, state);
            }
            2..=5 => {
                let kind = if y % 7 == 0 {
                    RpcKind::Streaming
                } else {
                    RpcKind::Unary
                };
                match (
                    policy.pick(now, kind, &mut r1),
                    shared.pick_call(now, kind, &mut r2),
                ) {
                    (Pick::Endpoint(t), Pick::Endpoint(s)) => {
                        assert_eq!(t.endpoint(), s.endpoint(), "event {k}");
                        let elapsed = if t.endpoint().0 == 0 {
                            9_000_000
                        } else {
                            1_000_000
                        };
                        open.push((t, s, elapsed + u64::from(y) * 10_000));
                    }
                    (Pick::Queue, Pick::Queue) | (Pick::Fail, Pick::Fail) => {}
                    (a, b) => panic!("event {k}: sans-IO {a:?}, shared {b:?}"),
                }
            }
            _ => {
                if open.is_empty() {
                    continue;
                }
                let (t, s, elapsed) = open.remove(usize::from(x) % open.len());
                let status = [
                    Status::Ok,
                    Status::Ok,
                    Status::Error,
                    Status::DeadlineExceeded,
                    Status::Cancelled,
                ][usize::from(y % 5)];
                policy.on_done(now, t, Outcome::new(status, elapsed));
                ConcurrentPolicy::on_done(&shared, now, s, Outcome::new(status, elapsed));
            }
        }
        for id in (0..6).map(EndpointId) {
            let (a, b) = (
                Policy::endpoint_view(&policy, now, id),
                ConcurrentPolicy::endpoint_view(&shared, now, id),
            );
            assert_eq!(a, b, "event {k}, endpoint {id:?}");
        }
    }
}

proptest::proptest! {
    #[test]
    fn the_shared_policy_is_the_sans_io_policy(
        events in proptest::collection::vec((0u8..8, 0u8..64, 0u8..35), 1..300),
    ) {
        same_as_sans_io(&events, Config::default());
        let mut config = Config::default();
        config.ablation.streams = super::super::Streams::Outstanding;
        same_as_sans_io(&events, config);
    }
}

#[test]
fn picks_while_the_list_changes_leave_nothing_outstanding() {
    let policy = SharedPeakEwma::new(Config::default(), 8).expect("supported");
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for thread in 0..3u64 {
            let (policy, stop) = (&policy, &stop);
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(thread);
                let mut k = 0u64;
                while !stop.load(Ordering::Relaxed) || k < 1000 {
                    k += 1;
                    let now = 1_000_000 + k * 1000;
                    match policy.pick_call(now, RpcKind::Unary, &mut rng) {
                        Pick::Endpoint(t) => {
                            assert!(t.endpoint().0 < 12, "{t:?}");
                            let outcome = Outcome::new(Status::Ok, 1_000 + k % 7_000);
                            ConcurrentPolicy::on_done(policy, now + 500, t, outcome);
                        }
                        Pick::Queue | Pick::Fail => {}
                    }
                }
            });
        }
        // Meanwhile endpoints come and go, connect and fail.
        let mut rng = SmallRng::seed_from_u64(99);
        for round in 0..2_000u64 {
            let now = 1_000_000 + round * 3_000;
            if round % 50 == 0 {
                let ids: Vec<EndpointId> = (0..12)
                    .filter(|_| rng.next_u32() % 3 != 0)
                    .map(EndpointId)
                    .collect();
                ConcurrentPolicy::set_endpoints(&policy, now, &ids);
            }
            let id = EndpointId(rng.next_u32() % 12);
            let state = if rng.next_u32() % 2 == 0 {
                Connectivity::Ready
            } else {
                Connectivity::TransientFailure
            };
            ConcurrentPolicy::on_connectivity(&policy, now, id, state);
        }
        stop.store(true, Ordering::Relaxed);
    });
    for id in (0..12).map(EndpointId) {
        if let Some(view) = ConcurrentPolicy::endpoint_view(&policy, 1 << 40, id) {
            assert_eq!(view.outstanding, 0, "{id:?}: {view:?}");
        }
    }
}

#[test]
fn variations_it_cannot_weigh_are_refused() {
    let mut config = Config::default();
    config.ablation.idle = Idle::Frozen;
    assert_eq!(SharedPeakEwma::new(config, 3).unwrap_err(), Unsupported);
}

#[test]
fn threads_leave_no_call_outstanding_and_avoid_the_slow_endpoint() {
    let n = 20;
    let pickers: Vec<Box<dyn SharedPicker>> = vec![
        Box::new(RoundRobin::new(n, 0)),
        Box::new(LeastRequest::new(n, 2)),
        Box::new(SharedPeakEwma::new(Config::default(), n).expect("supported")),
    ];
    for picker in &pickers {
        let to_slow = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|scope| {
            for thread in 0..4u64 {
                let (picker, to_slow) = (&**picker, &to_slow);
                scope.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(thread);
                    for k in 0..5_000u64 {
                        let now = 1_000_000_000 + k * 100_000;
                        let t = picker.pick(now, &mut rng).expect("READY endpoints");
                        if t.endpoint == 0 {
                            to_slow.fetch_add(1, Ordering::Relaxed);
                        }
                        let e = elapsed(t.endpoint, k);
                        picker.done(t, now + e, e, true);
                    }
                });
            }
        });
        let share = to_slow.load(Ordering::Relaxed) as f64 / 20_000.0;
        match picker.name() {
            "round_robin" => assert!((share - 0.05).abs() < 0.01, "{share}"),
            "peak_ewma" => assert!(share < 0.01, "peak_ewma sent {share} to the slow one"),
            _ => {}
        }
    }
    let lr = LeastRequest::new(n, 2);
    let mut rng = SmallRng::seed_from_u64(1);
    let tickets: Vec<_> = (0..100)
        .map(|_| lr.pick(0, &mut rng).expect("ready"))
        .collect();
    for t in tickets {
        lr.done(t, 1, 1, true);
    }
    assert!(lr
        .outstanding
        .iter()
        .all(|c| c.load(Ordering::Relaxed) == 0));
}
