//! `least_request_experimental` (gRFC A48): sample `choiceCount` READY endpoints uniformly with
//! replacement and send the RPC to the one with the fewest outstanding requests. Every RPC counts,
//! whatever its kind or status.

use rand::RngCore;
use serde_json::{json, Value};

use crate::config::fields::{ConfigError, Fields};
use crate::config::spec::Spec;
use crate::endpoints::{outstanding_count_policy, Endpoints};
use crate::p2c::{self, Sampling};
use crate::{Clock, Nanos, Pick, Policy, RpcKind};

/// The policy's gRPC name.
pub const NAME: &str = "least_request_experimental";

/// Configuration of `least_request_experimental`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Endpoints sampled per pick: default 2; below 2 is rejected; above 10 is clamped to 10.
    pub choice_count: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { choice_count: 2 }
    }
}

impl Spec for Config {
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError> {
        Ok(Config {
            choice_count: f.choice_count()?,
        })
    }

    fn to_json(&self) -> Value {
        json!({ "choiceCount": self.choice_count })
    }

    fn build(&self, _now: Nanos) -> Box<dyn Policy> {
        Box::new(LeastRequest::new(*self))
    }
}

/// The `least_request_experimental` policy.
#[derive(Debug)]
pub struct LeastRequest {
    config: Config,
    endpoints: Endpoints<u32>,
    clock: Clock,
}

impl LeastRequest {
    /// A policy with no endpoints.
    pub fn new(config: Config) -> Self {
        LeastRequest {
            config,
            endpoints: Endpoints::default(),
            clock: Clock::default(),
        }
    }
}

impl Policy for LeastRequest {
    outstanding_count_policy!(|n| Some(f64::from(n)));

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        self.clock.advance(now);
        let ready = self.endpoints.ready();
        if ready.is_empty() {
            return self.endpoints.unready();
        }
        let endpoints = &self.endpoints;
        let slot = p2c::pick(
            ready,
            self.config.choice_count,
            Sampling::WithReplacement,
            rng,
            |s| endpoints.slot(s).data as f64,
        );
        self.endpoints.send(slot, kind)
    }
}
