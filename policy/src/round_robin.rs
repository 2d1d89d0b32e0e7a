//! `round_robin`: READY endpoints in turn, starting at a random offset each time the READY set
//! changes (as gRPC's picker does when it is rebuilt).

use rand::{Rng, RngCore};
use serde_json::{json, Value};

use crate::config::{ConfigError, Fields, Spec};
use crate::endpoints::Endpoints;
use crate::{
    Clock, Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind, Ticket,
};

/// The policy's gRPC name.
pub const NAME: &str = "round_robin";

/// `round_robin` has no configuration fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config;

impl Spec for Config {
    fn parse(_f: &mut Fields<'_>) -> Result<Self, ConfigError> {
        Ok(Config)
    }

    fn to_json(&self) -> Value {
        json!({})
    }

    fn build(&self, _now: Nanos) -> Box<dyn Policy> {
        Box::new(RoundRobin::new(*self))
    }
}

/// The `round_robin` policy.
#[derive(Debug, Default)]
pub struct RoundRobin {
    endpoints: Endpoints<u32>,
    clock: Clock,
    next: usize,
    /// The READY-set version `next` was randomized for.
    seeded_for: Option<u64>,
}

impl RoundRobin {
    /// A policy with no endpoints.
    pub fn new(_config: Config) -> Self {
        Self::default()
    }
}

impl Policy for RoundRobin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        self.clock.advance(now);
        self.endpoints.set(endpoints, || 0);
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        self.clock.advance(now);
        self.endpoints.set_state(endpoint, state);
    }

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        self.clock.advance(now);
        let ready = self.endpoints.ready();
        let n = ready.len();
        if n == 0 {
            return self.endpoints.unready();
        }
        if self.seeded_for != Some(self.endpoints.version) {
            self.seeded_for = Some(self.endpoints.version);
            self.next = rng.random_range(0..n);
        }
        let slot = ready[self.next % n];
        self.next = (self.next + 1) % n;
        self.endpoints.send(slot, kind)
    }

    fn on_done(&mut self, now: Nanos, ticket: Ticket, _outcome: Outcome) {
        self.clock.advance(now);
        self.endpoints.complete(&ticket);
    }

    fn endpoint_view(&self, _now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        self.endpoints.view(endpoint, |_| None)
    }
}
