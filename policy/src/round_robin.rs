//! `round_robin`: READY endpoints in turn, starting at a random offset each time the READY set
//! changes (as gRPC's picker does when it is rebuilt).

use rand::{Rng, RngCore};
use serde_json::{json, Value};

use crate::config::fields::{ConfigError, Fields};
use crate::config::spec::Spec;
use crate::endpoints::{outstanding_count_policy, Endpoints};
use crate::{Clock, Nanos, Pick, Policy, RpcKind};

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
    outstanding_count_policy!(|_| None);

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
}
