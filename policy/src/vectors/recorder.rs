//! The generator: a policy's scenarios say what happens; the recorder runs them and writes what
//! the policy did.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::draws::Draws;
use super::format::{kind_name, state_name, status_name};
use super::subject::{pick_json, Shows, Subject};
use crate::{
    Connectivity, EndpointId, Nanos, Outcome, Pick, RpcKind, Status, Ticket, NANOS_PER_SEC,
};

/// A millisecond, for scenario times.
pub(super) const MS: Nanos = 1_000_000;
/// A second, for scenario times.
pub(super) const SEC: Nanos = NANOS_PER_SEC;

pub(super) struct Recorder {
    shows: Shows,
    subject: Subject,
    list: Vec<EndpointId>,
    now: Nanos,
    calls: HashMap<u32, Ticket>,
    next_call: u32,
    steps: Vec<Value>,
}

impl Recorder {
    fn new(policy: &str, shows: Shows, config: &Value) -> Recorder {
        Recorder {
            shows,
            subject: Subject::build(policy, config).expect("scenario configs are valid"),
            list: Vec::new(),
            now: 0,
            calls: HashMap::new(),
            next_call: 0,
            steps: Vec::new(),
        }
    }

    fn at(&mut self, at: Nanos) {
        assert!(at >= self.now, "scenario time goes backwards");
        self.now = at;
    }

    fn push(&mut self, mut step: Map<String, Value>, extra: Option<(&str, Value)>) {
        let mut expect = Map::new();
        if let Some((k, v)) = extra {
            expect.insert(k.into(), v);
        }
        expect.extend(self.subject.expect(self.shows, self.now, &self.list));
        step.insert("expect".into(), Value::Object(expect));
        self.steps.push(Value::Object(step));
    }

    fn step(op: &str, at: Nanos) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("op".into(), json!(op));
        m.insert("at_ns".into(), json!(at));
        m
    }

    pub(super) fn set_endpoints(&mut self, at: Nanos, ids: &[u32]) {
        self.at(at);
        let ids: Vec<EndpointId> = ids.iter().map(|&i| EndpointId(i)).collect();
        self.subject.policy().set_endpoints(at, &ids);
        self.list.clear();
        for id in ids {
            if !self.list.contains(&id) {
                self.list.push(id);
            }
        }
        let mut s = Self::step("set_endpoints", at);
        s.insert(
            "endpoints".into(),
            json!(self.list.iter().map(|e| e.0).collect::<Vec<_>>()),
        );
        self.push(s, None);
    }

    pub(super) fn state(&mut self, at: Nanos, id: u32, state: Connectivity) {
        self.at(at);
        self.subject
            .policy()
            .on_connectivity(at, EndpointId(id), state);
        let mut s = Self::step("connectivity", at);
        s.insert("endpoint".into(), json!(id));
        s.insert("state".into(), json!(state_name(state)));
        self.push(s, None);
    }

    /// How many endpoints the picker sees as READY at `at`.
    pub(super) fn ready_count(&self, at: Nanos) -> usize {
        self.subject.ready(at, &self.list).len()
    }

    pub(super) fn ready_all(&mut self, at: Nanos, ids: &[u32]) {
        self.set_endpoints(at, ids);
        for &id in ids {
            self.state(at, id, Connectivity::Ready);
        }
    }

    /// A pick with these draws; returns the call id if it picked an endpoint.
    pub(super) fn pick(&mut self, at: Nanos, kind: RpcKind, draws: &[usize]) -> Option<u32> {
        self.at(at);
        let ready = self.subject.ready(at, &self.list);
        let mut rng = Draws::indices(ready.len().max(1), draws);
        let pick = self.subject.policy().pick(at, kind, &mut rng);
        assert!(
            rng.used_exactly(),
            "scenario draws {draws:?} at {at} do not fit"
        );
        let mut s = Self::step("pick", at);
        s.insert("kind".into(), json!(kind_name(kind)));
        s.insert("draws".into(), json!(draws));
        s.insert(
            "drawn".into(),
            json!(draws.iter().map(|&i| ready[i].0).collect::<Vec<_>>()),
        );
        let result = pick_json(&pick);
        let call = match pick {
            Pick::Endpoint(t) => {
                let id = self.next_call;
                self.next_call += 1;
                self.calls.insert(id, t);
                s.insert("call".into(), json!(id));
                Some(id)
            }
            Pick::Queue | Pick::Fail => None,
        };
        self.push(s, Some(("pick", result)));
        call
    }

    pub(super) fn unary(&mut self, at: Nanos, draws: &[usize]) -> u32 {
        self.pick(at, RpcKind::Unary, draws).expect("an endpoint")
    }

    pub(super) fn done(&mut self, at: Nanos, call: u32, status: Status, elapsed: Nanos) {
        self.at(at);
        let ticket = self.calls.remove(&call).expect("a call in flight");
        let kind = ticket.kind();
        self.subject
            .policy()
            .on_done(at, ticket, Outcome::new(status, elapsed));
        let mut s = Self::step("done", at);
        s.insert("call".into(), json!(call));
        s.insert("kind".into(), json!(kind_name(kind)));
        s.insert("status".into(), json!(status_name(status)));
        s.insert("elapsed_ns".into(), json!(elapsed));
        self.push(s, None);
    }

    /// A call picked and completed at once on `endpoint` (its index drawn twice: a
    /// with-replacement child such as least_request then picks it whatever the costs).
    pub(super) fn call_on(&mut self, at: Nanos, endpoint: u32, status: Status) {
        let ready = self.subject.ready(at, &self.list);
        let i = ready
            .iter()
            .position(|&e| e == EndpointId(endpoint))
            .expect("endpoint READY");
        let draws: &[usize] = if ready.len() == 1 { &[] } else { &[i, i] };
        let call = self.unary(at, draws);
        self.done(at, call, status, MS);
    }

    pub(super) fn timer(&mut self, at: Nanos, enforcement_draws: &[usize]) {
        self.at(at);
        let mut rng = Draws::indices(100, enforcement_draws);
        self.subject.policy().on_timer(at, &mut rng);
        assert!(
            rng.used_exactly(),
            "scenario enforcement draws {enforcement_draws:?} at {at} do not fit"
        );
        let mut s = Self::step("timer", at);
        s.insert("enforcement_draws".into(), json!(enforcement_draws));
        self.push(s, None);
    }

    pub(super) fn check(&mut self, at: Nanos) {
        self.at(at);
        self.push(Self::step("check", at), None);
    }

    fn finish(self, name: &str, description: &str, config: Value) -> Value {
        json!({
            "name": name,
            "description": description,
            "config": config,
            "steps": self.steps,
        })
    }
}

pub(super) struct Sequences {
    pub(super) policy: &'static str,
    /// What the policy's expectations show.
    pub(super) shows: Shows,
    pub(super) out: Vec<Value>,
    /// `lblabAblation` fields every sequence's config carries (the semantics the file encodes).
    pub(super) pin: Option<Value>,
}

impl Sequences {
    pub(super) fn add(
        &mut self,
        name: &str,
        description: &str,
        config: Value,
        run: impl FnOnce(&mut Recorder),
    ) {
        let mut config = config;
        if let Some(pin) = &self.pin {
            config["lblabAblation"] = pin.clone();
        }
        let mut r = Recorder::new(self.policy, self.shows, &config);
        run(&mut r);
        self.out.push(r.finish(name, description, config));
    }
}

/// A small deterministic generator (splitmix64) for the long traces: the same numbers on every
/// platform, without depending on a crate's algorithm choices.
pub(super) struct SplitMix(pub(super) u64);

impl SplitMix {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `d` distinct indices out of `n`, in draw order.
    pub(super) fn distinct(&mut self, n: usize, d: usize) -> Vec<usize> {
        let mut out = Vec::new();
        while out.len() < d.min(n) {
            let i = self.below(n as u64) as usize;
            if !out.contains(&i) {
                out.push(i);
            }
        }
        out
    }
}
