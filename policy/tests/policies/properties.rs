//! Invariants under random operation sequences, for every policy config (and outlier detection
//! wrapping each): no pick of an endpoint that is not READY for the caller or is ejected, the
//! right Queue/Fail answer, finite non-negative costs, exact outstanding accounting (no underflow,
//! no leak) and no panic — also with clocks that go backwards and absurd completion times.

use std::collections::BTreeMap;

use lblab_policy::{
    Connectivity, EndpointId, EndpointView, LoadReport, Nanos, Outcome, Pick, Policy, RpcKind,
    Status, Ticket,
};
use proptest::prelude::*;
use rand::{rngs::SmallRng, SeedableRng};

use crate::harness::{config, SEC};

/// Child policies: `(label, entry, counts streaming calls, resets accounting on becoming READY)`.
pub(crate) const CHILDREN: &[(&str, &str, bool, bool)] = &[
    ("pick_first", r#"{"pick_first":{}}"#, true, false),
    ("round_robin", r#"{"round_robin":{}}"#, true, false),
    (
        "least_request",
        r#"{"least_request_experimental":{}}"#,
        true,
        false,
    ),
    (
        "least_request(3)",
        r#"{"least_request_experimental":{"choiceCount":3}}"#,
        true,
        false,
    ),
    ("wrr", r#"{"weighted_round_robin":{}}"#, true, false),
    (
        "wrr(fast)",
        r#"{"weighted_round_robin":{"blackoutPeriod":"0s","weightExpirationPeriod":"5s","weightUpdatePeriod":"0.1s","errorUtilizationPenalty":3.5}}"#,
        true,
        false,
    ),
    (
        "wrr(oob)",
        r#"{"weighted_round_robin":{"enableOobLoadReport":true,"blackoutPeriod":"1s"}}"#,
        true,
        false,
    ),
    ("peak_ewma", r#"{"peak_ewma_experimental":{}}"#, false, true),
    (
        "peak_ewma(on_read,with_replacement)",
        r#"{"peak_ewma_experimental":{"lblabAblation":{"decay":"on_read","sampling":"with_replacement"}}}"#,
        false,
        true,
    ),
    (
        "peak_ewma(streams=outstanding)",
        r#"{"peak_ewma_experimental":{"lblabAblation":{"streams":"outstanding"}}}"#,
        true,
        true,
    ),
    (
        "peak_ewma(streams=count,on_read)",
        r#"{"peak_ewma_experimental":{"lblabAblation":{"streams":"count","decay":"on_read"}}}"#,
        true,
        true,
    ),
    (
        "peak_ewma(10,tiny)",
        r#"{"peak_ewma_experimental":{"choiceCount":10,"decayTime":"0.000000001s","defaultRtt":"0.000000001s"}}"#,
        false,
        true,
    ),
    (
        "peak_ewma(huge)",
        r#"{"peak_ewma_experimental":{"choiceCount":3,"decayTime":"18446744073.709551615s","defaultRtt":"18446744073.709551615s"}}"#,
        false,
        true,
    ),
    ("envoy_peak_ewma", r#"{"envoy_peak_ewma":{}}"#, true, false),
    (
        "envoy_peak_ewma(tiny)",
        r#"{"envoy_peak_ewma":{"decayTime":"0.001s","aggregationInterval":"0.001s","maxSamplesPerHost":1,"defaultRtt":"0.001s","penaltyValue":1e-300}}"#,
        true,
        false,
    ),
    (
        "finagle_peak_ewma",
        r#"{"finagle_peak_ewma":{}}"#,
        false,
        true,
    ),
];

/// Outlier detection tuned to eject often: short interval, low volumes, threshold 0.
fn outlier_detection(child: &str) -> String {
    format!(
        r#"{{"outlier_detection_experimental":{{"interval":"1s","baseEjectionTime":"2s","maxEjectionTime":"5s","maxEjectionPercent":50,"successRateEjection":{{"stdevFactor":100,"minimumHosts":1,"requestVolume":1}},"failurePercentageEjection":{{"threshold":0,"minimumHosts":1,"requestVolume":1}},"childPolicy":[{child}]}}}}"#
    )
}

const IDS: u32 = 8;

#[derive(Debug, Clone)]
enum Op {
    SetEndpoints(Vec<u32>),
    State(u32, Connectivity),
    Pick(RpcKind),
    Done {
        which: usize,
        status: Status,
        elapsed: Nanos,
        load: Option<LoadReport>,
    },
    /// Fire the policy's timer if it is due within a minute, moving the clock to it.
    Timer,
    /// Call `on_timer(now)` whatever `next_timer` says.
    SpuriousTimer,
    Oob(u32, LoadReport),
    Forward(Nanos),
    Backward(Nanos),
}

fn connectivity() -> impl Strategy<Value = Connectivity> {
    prop_oneof![
        1 => Just(Connectivity::Idle),
        1 => Just(Connectivity::Connecting),
        4 => Just(Connectivity::Ready),
        2 => Just(Connectivity::TransientFailure),
    ]
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        Just(Status::Ok),
        Just(Status::Error),
        Just(Status::Cancelled),
        Just(Status::DeadlineExceeded),
    ]
}

fn elapsed() -> impl Strategy<Value = Nanos> {
    prop_oneof![
        2 => Just(0u64),
        4 => 0u64..100_000_000,
        2 => 0u64..60 * SEC,
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

fn metric() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => Just(0.0),
        6 => 0.0..2.0f64,
        2 => 0.0..1e6f64,
        1 => Just(-1.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(1e308),
        1 => Just(1e-300),
    ]
}

fn load_report() -> impl Strategy<Value = LoadReport> {
    (metric(), metric(), metric(), metric()).prop_map(|(cpu, app, qps, eps)| LoadReport {
        cpu_utilization: cpu,
        application_utilization: app,
        rps_fractional: qps,
        eps,
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => prop::collection::vec(0..IDS, 0..10).prop_map(Op::SetEndpoints),
        5 => (0..IDS, connectivity()).prop_map(|(e, s)| Op::State(e, s)),
        10 => prop_oneof![4 => Just(RpcKind::Unary), 1 => Just(RpcKind::Streaming)].prop_map(Op::Pick),
        7 => (any::<usize>(), status(), elapsed(), prop::option::weighted(0.5, load_report()))
            .prop_map(|(which, status, elapsed, load)| Op::Done { which, status, elapsed, load }),
        2 => Just(Op::Timer),
        1 => Just(Op::SpuriousTimer),
        1 => (0..IDS, load_report()).prop_map(|(e, r)| Op::Oob(e, r)),
        3 => prop_oneof![
            5 => 0u64..10_000_000,
            3 => 0u64..5 * SEC,
            1 => Just(1_000_000 * SEC),
        ].prop_map(Op::Forward),
        1 => (0u64..5 * SEC).prop_map(Op::Backward),
    ]
}

/// One policy under test and the caller's model of it.
struct Run {
    label: String,
    policy: Box<dyn Policy>,
    counts_streaming: bool,
    resets_on_ready: bool,
    may_eject: bool,
    now: Nanos,
    rng: SmallRng,
    /// Listed endpoints in list order (duplicates removed) and the state the caller last reported.
    listed: Vec<EndpointId>,
    caller: BTreeMap<EndpointId, Connectivity>,
    /// Bumped whenever the policy must stop counting the endpoint's earlier tickets.
    epoch: BTreeMap<EndpointId, u64>,
    tickets: Vec<(Ticket, u64)>,
    /// The policy's view of every id after the last op.
    views: BTreeMap<EndpointId, Option<EndpointView>>,
}

impl Run {
    fn new(label: String, entry: &str, counts_streaming: bool, resets_on_ready: bool) -> Run {
        let start = 1_000 * SEC;
        let mut run = Run {
            may_eject: label.starts_with("outlier_detection"),
            label,
            policy: config(entry).build(start),
            counts_streaming,
            resets_on_ready,
            now: start,
            rng: SmallRng::seed_from_u64(7),
            listed: Vec::new(),
            caller: BTreeMap::new(),
            epoch: BTreeMap::new(),
            tickets: Vec::new(),
            views: BTreeMap::new(),
        };
        run.check();
        run
    }

    fn ids() -> impl Iterator<Item = EndpointId> {
        (0..IDS).map(EndpointId)
    }

    fn view(&self, e: EndpointId) -> Option<EndpointView> {
        self.views.get(&e).copied().flatten()
    }

    fn apply(&mut self, op: &Op) {
        let now = self.now;
        match op {
            Op::SetEndpoints(ids) => {
                let ids: Vec<EndpointId> = ids.iter().map(|&i| EndpointId(i)).collect();
                self.policy.set_endpoints(now, &ids);
                let mut listed = Vec::new();
                for &id in &ids {
                    if !listed.contains(&id) {
                        listed.push(id);
                    }
                }
                for id in Self::ids() {
                    let was = self.listed.contains(&id);
                    let is = listed.contains(&id);
                    if was != is {
                        *self.epoch.entry(id).or_default() += 1;
                    }
                    if is && !was {
                        self.caller.insert(id, Connectivity::Idle);
                    }
                    if !is {
                        self.caller.remove(&id);
                    }
                }
                self.listed = listed;
            }
            Op::State(e, s) => {
                let id = EndpointId(*e);
                self.policy.on_connectivity(now, id, *s);
                if let Some(c) = self.caller.get_mut(&id) {
                    *c = *s;
                }
            }
            Op::Pick(kind) => self.pick(*kind),
            Op::Done {
                which,
                status,
                elapsed,
                load,
            } => {
                if !self.tickets.is_empty() {
                    let (ticket, _) = self.tickets.swap_remove(which % self.tickets.len());
                    let outcome = Outcome {
                        status: *status,
                        elapsed: *elapsed,
                        load: *load,
                    };
                    self.policy.on_done(now, ticket, outcome);
                }
            }
            Op::Timer => {
                if let Some(t) = self.policy.next_timer() {
                    if t <= now.saturating_add(60 * SEC) {
                        self.now = now.max(t);
                        self.policy.on_timer(self.now, &mut self.rng);
                    }
                }
            }
            Op::SpuriousTimer => self.policy.on_timer(now, &mut self.rng),
            Op::Oob(e, r) => self.policy.on_load_report(now, EndpointId(*e), r),
            Op::Forward(dt) => self.now = now.saturating_add(*dt),
            Op::Backward(dt) => self.now = now.saturating_sub(*dt),
        }
        self.check();
    }

    fn pick(&mut self, kind: RpcKind) {
        let label = &self.label;
        let visible: Vec<Connectivity> = self
            .listed
            .iter()
            .map(|&id| self.view(id).expect("listed").state)
            .collect();
        let any_ready = visible.contains(&Connectivity::Ready);
        let any_connecting = visible
            .iter()
            .any(|s| matches!(s, Connectivity::Idle | Connectivity::Connecting));
        match self.policy.pick(self.now, kind, &mut self.rng) {
            Pick::Endpoint(t) => {
                let e = t.endpoint();
                assert_eq!(t.kind(), kind, "{label}");
                assert!(self.listed.contains(&e), "{label}: picked unlisted {e}");
                assert_eq!(
                    self.caller[&e],
                    Connectivity::Ready,
                    "{label}: picked {e}, which the caller last saw {:?}",
                    self.caller[&e]
                );
                assert_eq!(
                    self.view(e).map(|v| v.state),
                    Some(Connectivity::Ready),
                    "{label}: picked {e}, ejected or not READY to the policy"
                );
                if self.label == "pick_first" {
                    let first = self
                        .listed
                        .iter()
                        .find(|id| self.caller[id] == Connectivity::Ready);
                    assert_eq!(Some(&e), first, "pick_first: not the first READY");
                }
                self.tickets
                    .push((t, self.epoch.get(&e).copied().unwrap_or(0)));
            }
            Pick::Queue => assert!(
                !any_ready && any_connecting,
                "{label}: Queue with visible states {visible:?}"
            ),
            Pick::Fail => assert!(
                !any_ready && !any_connecting,
                "{label}: Fail with visible states {visible:?}"
            ),
        }
    }

    /// Reads every endpoint's view and checks it against the model.
    fn check(&mut self) {
        let label = self.label.clone();
        for id in Self::ids() {
            let before = self.view(id);
            let now_view = self.policy.endpoint_view(self.now, id);
            assert_eq!(
                now_view.is_some(),
                self.listed.contains(&id),
                "{label}: view of {id} vs the list {:?}",
                self.listed
            );
            if let Some(v) = now_view {
                let became_ready = v.state == Connectivity::Ready
                    && before.is_none_or(|b| b.state != Connectivity::Ready);
                if self.resets_on_ready && became_ready {
                    *self.epoch.entry(id).or_default() += 1;
                }
                let caller = self.caller[&id];
                assert!(
                    v.state == caller
                        || (self.may_eject && v.state == Connectivity::TransientFailure),
                    "{label}: {id} looks {:?} to the policy, the caller said {caller:?}",
                    v.state
                );
                if let Some(c) = v.cost {
                    assert!(c.is_finite() && c >= 0.0, "{label}: cost of {id} is {c}");
                }
                let epoch = self.epoch.get(&id).copied().unwrap_or(0);
                let expected = self
                    .tickets
                    .iter()
                    .filter(|(t, ep)| {
                        t.endpoint() == id
                            && *ep == epoch
                            && (self.counts_streaming || t.kind() == RpcKind::Unary)
                    })
                    .count();
                assert_eq!(
                    v.outstanding as usize, expected,
                    "{label}: outstanding of {id}"
                );
            }
            self.views.insert(id, now_view);
        }
    }

    /// Completes every ticket still held; afterwards nothing may be outstanding.
    fn finish(&mut self) {
        while let Some((t, _)) = self.tickets.pop() {
            self.policy
                .on_done(self.now, t, Outcome::new(Status::Ok, 1_000_000));
        }
        self.check();
        for &id in &self.listed {
            let v = self.policy.endpoint_view(self.now, id).expect("listed");
            assert_eq!(v.outstanding, 0, "{}: leak on {id}", self.label);
        }
    }
}

fn every_config() -> Vec<(String, String, bool, bool)> {
    let mut v = Vec::new();
    for &(label, entry, streaming, resets) in CHILDREN {
        v.push((label.to_string(), entry.to_string(), streaming, resets));
        v.push((
            format!("outlier_detection({label})"),
            outlier_detection(entry),
            streaming,
            resets,
        ));
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_policy_keeps_its_invariants(ops in prop::collection::vec(op(), 1..120)) {
        for (label, entry, streaming, resets) in every_config() {
            let mut run = Run::new(label, &entry, streaming, resets);
            for op in &ops {
                run.apply(op);
            }
            run.finish();
        }
    }
}

/// A scenario the random sequences reach rarely: everything READY, many calls, ejections and
/// reconnects, then everything completed.
#[test]
fn busy_scenario_keeps_the_invariants() {
    let mut ops = vec![Op::SetEndpoints((0..IDS).collect())];
    for e in 0..IDS {
        ops.push(Op::State(e, Connectivity::Ready));
    }
    for round in 0..60u32 {
        for _ in 0..20 {
            ops.push(Op::Pick(RpcKind::Unary));
        }
        ops.push(Op::Pick(RpcKind::Streaming));
        for k in 0..15usize {
            let status = if k % 3 == 0 {
                Status::Error
            } else {
                Status::Ok
            };
            let load = LoadReport {
                cpu_utilization: 0.1 + f64::from(round % 5) / 10.0,
                rps_fractional: 100.0,
                ..Default::default()
            };
            ops.push(Op::Done {
                which: k * 7,
                status,
                elapsed: 1_000_000 * (k as u64 + 1),
                load: Some(load),
            });
        }
        ops.push(Op::Forward(300_000_000));
        ops.push(Op::Timer);
        if round % 10 == 5 {
            ops.push(Op::State(round % IDS, Connectivity::TransientFailure));
            ops.push(Op::State(round % IDS, Connectivity::Ready));
        }
        if round % 17 == 3 {
            ops.push(Op::Backward(SEC));
        }
    }
    for (label, entry, streaming, resets) in every_config() {
        let mut run = Run::new(label, &entry, streaming, resets);
        for op in &ops {
            run.apply(op);
        }
        run.finish();
    }
}
