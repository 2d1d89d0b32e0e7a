//! The test harness: one policy, fake endpoints and a virtual clock, so a test reads like a
//! scenario (in the spirit of quinn-proto's `Pair`).
//!
//! - [`Lab::step`] moves the clock, completing the calls in flight and firing the policy's timers in
//!   time order (completions first when they fall on the same instant as a timer).
//! - [`Lab::drive`] sends calls open loop at a constant rate for a while; every call completes
//!   after its endpoint's [`Backend::latency`], with a status from [`Backend::failure_rate`] and the
//!   backend's per-call load report.
//! - [`Lab::burst`] sends calls that complete at once (for exact per-interval counts).
//! - [`Lab::pick`] / [`Lab::done`] drive one call by hand.
//!
//! Tests change backends between steps (`lab.backend(0).latency = 500 * MS`).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};

use lblab_policy::config::{self, PolicyConfig};
use lblab_policy::{
    Connectivity, EndpointId, EndpointView, LoadReport, Nanos, Outcome, Pick, Policy, RngCore,
    RpcKind, Status, Ticket,
};
use rand::{rngs::SmallRng, SeedableRng};

pub const MS: Nanos = 1_000_000;
pub const SEC: Nanos = 1_000_000_000;

/// The config of one `loadBalancingConfig` entry such as `{"round_robin":{}}`.
pub fn config(entry: &str) -> PolicyConfig {
    let doc = format!(r#"{{"loadBalancingConfig":[{entry}]}}"#);
    config::parse_service_config(&doc).unwrap_or_else(|e| panic!("{entry}: {e}"))
}

/// One entry per policy (outlier detection wrapping peak_ewma), labelled, for scenarios that must
/// hold under every policy.
pub const EVERY_POLICY: &[(&str, &str)] = &[
    ("pick_first", r#"{"pick_first":{}}"#),
    ("round_robin", r#"{"round_robin":{}}"#),
    ("least_request", r#"{"least_request_experimental":{}}"#),
    ("wrr", r#"{"weighted_round_robin":{}}"#),
    ("peak_ewma", r#"{"peak_ewma_experimental":{}}"#),
    ("envoy_peak_ewma", r#"{"envoy_peak_ewma":{}}"#),
    ("finagle_peak_ewma", r#"{"finagle_peak_ewma":{}}"#),
    (
        "peak_ewma(penalty, pick_clock)",
        r#"{"peak_ewma_experimental":{"lblabAblation":{"initial":"penalty","idle":"pick_clock"}}}"#,
    ),
    (
        "outlier_detection(peak_ewma)",
        r#"{"outlier_detection_experimental":{"failurePercentageEjection":{},"childPolicy":[{"peak_ewma_experimental":{}}]}}"#,
    ),
];

/// A fake backend: how calls to one endpoint end.
#[derive(Debug, Clone)]
pub struct Backend {
    /// Time from pick to completion.
    pub latency: Nanos,
    /// Share of calls that fail with [`Status::Error`], spread evenly: call `i` fails when
    /// `floor((i+1)·rate) > floor(i·rate)`, so 100 calls at 0.4 fail exactly 40 times.
    pub failure_rate: f64,
    /// Time from pick to completion of a call that fails; `None` is [`Backend::latency`].
    pub failure_latency: Option<Nanos>,
    /// Per-call ORCA report attached to every completion.
    pub load: Option<LoadReport>,
    calls: u64,
}

impl Default for Backend {
    fn default() -> Self {
        Backend {
            latency: 10 * MS,
            failure_rate: 0.0,
            failure_latency: None,
            load: None,
            calls: 0,
        }
    }
}

impl Backend {
    fn outcome(&mut self) -> Outcome {
        let i = self.calls as f64;
        self.calls += 1;
        let fails = ((i + 1.0) * self.failure_rate).floor() > (i * self.failure_rate).floor();
        let (status, elapsed) = match (fails, self.failure_latency) {
            (true, Some(fast)) => (Status::Error, fast),
            (true, None) => (Status::Error, self.latency),
            (false, _) => (Status::Ok, self.latency),
        };
        Outcome {
            status,
            elapsed,
            load: self.load,
        }
    }
}

/// A policy, its endpoints' fake backends and a virtual clock.
pub struct Lab {
    pub policy: Box<dyn Policy>,
    pub now: Nanos,
    pub rng: SmallRng,
    backends: BTreeMap<EndpointId, Backend>,
    in_flight: BinaryHeap<Reverse<(Nanos, u64)>>,
    tickets: HashMap<u64, (Ticket, Outcome)>,
    seq: u64,
    picks: BTreeMap<EndpointId, u64>,
    /// Calls that got [`Pick::Queue`] or [`Pick::Fail`] from [`Lab::send`].
    pub unpicked: u64,
}

impl Lab {
    /// A lab running the policy of one `loadBalancingConfig` entry, with no endpoints, at time 0.
    pub fn new(entry: &str) -> Lab {
        Lab::with_seed(entry, 1)
    }

    pub fn with_seed(entry: &str, seed: u64) -> Lab {
        Lab {
            policy: config(entry).build(0),
            now: 0,
            rng: SmallRng::seed_from_u64(seed),
            backends: BTreeMap::new(),
            in_flight: BinaryHeap::new(),
            tickets: HashMap::new(),
            seq: 0,
            picks: BTreeMap::new(),
            unpicked: 0,
        }
    }

    /// A lab with endpoints `0..n`, all READY, each with a default backend (10 ms, no errors).
    pub fn ready(entry: &str, n: u32) -> Lab {
        let mut lab = Lab::new(entry);
        lab.set_endpoints(&(0..n).collect::<Vec<_>>());
        for e in 0..n {
            lab.set_state(e, Connectivity::Ready);
        }
        lab
    }

    /// Replaces the endpoint list (ids in the given order).
    pub fn set_endpoints(&mut self, ids: &[u32]) {
        let ids: Vec<EndpointId> = ids.iter().map(|&i| EndpointId(i)).collect();
        for &id in &ids {
            self.backends.entry(id).or_default();
        }
        self.policy.set_endpoints(self.now, &ids);
    }

    pub fn set_state(&mut self, e: u32, state: Connectivity) {
        self.policy.on_connectivity(self.now, EndpointId(e), state);
    }

    /// The fake backend of endpoint `e`, to change how its calls end from now on.
    pub fn backend(&mut self, e: u32) -> &mut Backend {
        self.backends.entry(EndpointId(e)).or_default()
    }

    /// Picks for one RPC at the current time.
    pub fn pick(&mut self, kind: RpcKind) -> Pick {
        self.policy.pick(self.now, kind, &mut self.rng)
    }

    /// Picks for one RPC with a caller-given RNG (e.g. a [`Script`]).
    pub fn pick_with(&mut self, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        self.policy.pick(self.now, kind, rng)
    }

    /// Picks for one RPC of `kind` and expects an endpoint.
    pub fn ticket(&mut self, kind: RpcKind) -> Ticket {
        match self.pick(kind) {
            Pick::Endpoint(t) => t,
            other => panic!("expected an endpoint, got {other:?}"),
        }
    }

    /// Picks for one unary RPC and expects an endpoint.
    pub fn unary(&mut self) -> Ticket {
        self.ticket(RpcKind::Unary)
    }

    /// Completes a call at the current time.
    pub fn done(&mut self, ticket: Ticket, status: Status, elapsed: Nanos) {
        self.policy
            .on_done(self.now, ticket, Outcome::new(status, elapsed));
    }

    /// Completes a call at the current time with a full outcome.
    pub fn done_with(&mut self, ticket: Ticket, outcome: Outcome) {
        self.policy.on_done(self.now, ticket, outcome);
    }

    pub fn view(&self, e: u32) -> EndpointView {
        self.policy
            .endpoint_view(self.now, EndpointId(e))
            .unwrap_or_else(|| panic!("endpoint {e} is not in the list"))
    }

    /// The policy's cost for `e` now; panics if the policy has none.
    pub fn cost(&self, e: u32) -> f64 {
        self.view(e)
            .cost
            .unwrap_or_else(|| panic!("no cost for endpoint {e}"))
    }

    /// Moves the clock forward by `dt`: see [`Lab::step_to`].
    pub fn step(&mut self, dt: Nanos) {
        self.step_to(self.now + dt);
    }

    /// Moves the clock to `t`, completing calls in flight and firing due timers in time order.
    pub fn step_to(&mut self, t: Nanos) {
        assert!(t >= self.now, "the lab's clock does not go backwards");
        loop {
            let done_at = self.in_flight.peek().map(|r| r.0 .0).filter(|&d| d <= t);
            let timer_at = self.policy.next_timer().filter(|&d| d <= t);
            match (done_at, timer_at) {
                (Some(d), timer) if timer.is_none_or(|tt| d <= tt) => {
                    let Reverse((_, seq)) = self.in_flight.pop().expect("peeked");
                    let (ticket, outcome) = self.tickets.remove(&seq).expect("in flight");
                    self.now = self.now.max(d);
                    self.policy.on_done(self.now, ticket, outcome);
                }
                (_, Some(tt)) => {
                    self.now = self.now.max(tt);
                    self.policy.on_timer(self.now, &mut self.rng);
                    if let Some(next) = self.policy.next_timer() {
                        assert!(
                            next > self.now,
                            "{}: next_timer {next} not after the timer just fired at {}",
                            self.policy.name(),
                            self.now
                        );
                    }
                }
                (None, None) => break,
                (Some(_), None) => unreachable!("handled by the first arm"),
            }
        }
        self.now = t;
    }

    /// Sends one unary call now; it completes after its backend's latency. Returns the endpoint.
    pub fn send(&mut self) -> Option<EndpointId> {
        match self.pick(RpcKind::Unary) {
            Pick::Endpoint(ticket) => {
                let e = ticket.endpoint();
                *self.picks.entry(e).or_default() += 1;
                let outcome = self.backends.entry(e).or_default().outcome();
                self.seq += 1;
                self.in_flight
                    .push(Reverse((self.now + outcome.elapsed, self.seq)));
                self.tickets.insert(self.seq, (ticket, outcome));
                Some(e)
            }
            Pick::Queue | Pick::Fail => {
                self.unpicked += 1;
                None
            }
        }
    }

    /// Sends calls open loop at `rate` per second for `duration`, then steps to the end of it.
    pub fn drive(&mut self, duration: Nanos, rate: u64) {
        let start = self.now;
        let interval = SEC / rate;
        let mut at = start;
        while at < start + duration {
            self.step_to(at);
            self.send();
            at += interval;
        }
        self.step_to(start + duration);
    }

    /// Sends `n` calls now, each completed at once with its backend's outcome.
    pub fn burst(&mut self, n: u32) {
        for _ in 0..n {
            let ticket = self.unary();
            let e = ticket.endpoint();
            *self.picks.entry(e).or_default() += 1;
            let outcome = self.backends.entry(e).or_default().outcome();
            self.policy.on_done(self.now, ticket, outcome);
        }
    }

    /// Completes every call in flight (stepping the clock to the last completion).
    pub fn finish(&mut self) {
        if let Some(last) = self.in_flight.iter().map(|r| r.0 .0).max() {
            self.step_to(last.max(self.now));
        }
    }

    /// Calls in flight (sent by [`Lab::send`] or [`Lab::drive`]).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Picks counted by [`Lab::send`], [`Lab::drive`] and [`Lab::burst`] since the last reset.
    pub fn picks(&self, e: u32) -> u64 {
        self.picks.get(&EndpointId(e)).copied().unwrap_or(0)
    }

    /// Endpoint `e`'s share of the counted picks.
    pub fn share(&self, e: u32) -> f64 {
        let total: u64 = self.picks.values().sum();
        self.picks(e) as f64 / total.max(1) as f64
    }

    pub fn reset_picks(&mut self) {
        self.picks.clear();
        self.unpicked = 0;
    }
}

/// An RNG that replays a script of `u32`s, so a test can choose which candidates a P2C pick
/// draws. [`draw`] makes the value for "index `i` of `n`".
#[derive(Debug, Default)]
pub struct Script(pub VecDeque<u32>);

impl Script {
    /// A script drawing these indices, each out of `n`.
    pub fn indices(n: usize, indices: &[usize]) -> Script {
        Script(indices.iter().map(|&i| draw(i, n)).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl RngCore for Script {
    fn next_u32(&mut self) -> u32 {
        self.0.pop_front().expect("the script ran out of draws")
    }

    fn next_u64(&mut self) -> u64 {
        (u64::from(self.next_u32()) << 32) | u64::from(self.next_u32())
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(4) {
            let v = self.next_u32().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// The `u32` for which `rng.random_range(0..n)` is `i` in rand 0.9 (widening multiply; the low
/// half stays below `n`, so no second draw is taken). [`script_draws_what_it_says`] checks it.
pub fn draw(i: usize, n: usize) -> u32 {
    assert!(i < n && n <= 1 << 16);
    ((i as u64) << 32).div_ceil(n as u64) as u32
}

#[test]
fn script_draws_what_it_says() {
    use rand::Rng;
    for n in [1usize, 2, 3, 5, 7, 20, 1000] {
        for i in 0..n {
            let mut s = Script::indices(n, &[i]);
            assert_eq!(s.random_range(0..n), i, "{i} of {n}");
            assert!(s.is_empty(), "one draw per index");
        }
    }
}

#[test]
fn step_fires_timers_and_completions_in_time_order() {
    // Outlier detection with a 1 s interval: a failing endpoint is ejected at the first tick
    // after its failed calls complete, not before.
    let mut lab = Lab::ready(
        r#"{"outlier_detection_experimental":{"interval":"1s","failurePercentageEjection":{"minimumHosts":1,"requestVolume":1},"maxEjectionPercent":100,"childPolicy":[{"round_robin":{}}]}}"#,
        1,
    );
    lab.backend(0).failure_rate = 1.0;
    lab.backend(0).latency = 1500 * MS;
    lab.send();
    lab.step(SEC); // tick at 1 s: the call has not completed yet
    assert_eq!(lab.view(0).state, Connectivity::Ready);
    lab.step(SEC); // completes at 1.5 s, ejected at the 2 s tick
    assert_eq!(lab.view(0).state, Connectivity::TransientFailure);
    assert_eq!(lab.in_flight(), 0);
}
