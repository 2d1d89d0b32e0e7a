//! `finagle_peak_ewma`: Finagle's peak EWMA balancer (`Balancers.p2cPeakEwma`), written here as a
//! reference to compare the proposal against. It is an lblab name, not a gRPC policy.
//!
//! What Finagle does (`finagle-core`, `loadbalancer/PeakEwma.scala` and the P2C balancer it
//! joins), and therefore what this policy does, as a fixed combination of
//! [`crate::peak_ewma`]'s variations:
//!
//! - **Estimate.** Starts at 0. A sample above the stored estimate replaces it (the peak);
//!   otherwise `estimate × w + rtt × (1 − w)` with `w = e^(−Δt/τ)`, `Δt` the time since the last
//!   read or update ([`crate::estimator::DecayMode::OnRead`]).
//! - **Decay on read.** Every cost read first decays the stored estimate toward 0 and moves its
//!   stamp to now ([`crate::peak_ewma::Idle::ToZero`]).
//! - **Cost.** `estimate × (pending + 1)`; an endpoint without a sample costs 0 while nothing is
//!   pending and `penalty + pending` while calls are ([`crate::peak_ewma::Initial::Penalty`];
//!   Finagle's penalty is `Long.MaxValue >> 16` ns, here any value above every measured cost).
//! - **Pick.** Two distinct endpoints, the cheaper wins.
//! - Config: `decayTime` (Finagle's default 10 s). Only unary RPCs count, as in the proposal.

use serde_json::{json, Value};

use crate::config::fields::{ConfigError, Fields};
use crate::config::spec::Spec;
use crate::estimator::DecayMode;
use crate::p2c::Sampling;
use crate::peak_ewma::{self, Ablation, Failures, Idle, Initial, Peak, PeakEwmaPolicy, Streams};
use crate::{duration, Nanos, Policy, NANOS_PER_SEC};

/// The policy's name (an lblab name, not a gRPC policy).
pub const NAME: &str = "finagle_peak_ewma";

/// Configuration of `finagle_peak_ewma`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// `decayTime`: the time constant τ, ns. Default 10 s; must be > 0.
    pub decay_time: Nanos,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            decay_time: 10 * NANOS_PER_SEC,
        }
    }
}

impl Config {
    /// The `peak_ewma_experimental` configuration that behaves as Finagle does.
    pub fn as_peak_ewma(&self) -> peak_ewma::Config {
        peak_ewma::Config {
            choice_count: 2,
            decay_time: self.decay_time,
            // Unused: an endpoint without a sample costs 0 or the penalty.
            default_rtt: 1,
            ablation: Ablation {
                decay: DecayMode::OnRead,
                sampling: Sampling::Distinct,
                streams: Streams::Ignore,
                initial: Initial::Penalty,
                idle: Idle::ToZero,
                error_penalty: None,
                // What it inherited from the default of the first two design rounds, pinned so
                // that the reference does not move with the default.
                peak: Peak::Jump,
                stall: false,
                failures: Failures::Hold,
                ..Ablation::default()
            },
        }
    }
}

impl Spec for Config {
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError> {
        let d = Config::default();
        Ok(Config {
            decay_time: f.positive_duration("decayTime", d.decay_time)?,
        })
    }

    fn to_json(&self) -> Value {
        json!({ "decayTime": duration::format(self.decay_time) })
    }

    fn build(&self, _now: Nanos) -> Box<dyn Policy> {
        Box::new(PeakEwmaPolicy::named(NAME, self.as_peak_ewma()))
    }
}
