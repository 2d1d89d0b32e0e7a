//! The trait a policy's module implements for its `Config`, beside the algorithm; the policy
//! table (`crate::registry`) reaches every policy through it.

use std::fmt;

use serde_json::Value;

use super::fields::{ConfigError, Fields};
use crate::{Nanos, Policy};

/// What a policy's module implements for its `Config`, beside the algorithm: reading the config
/// object, writing it back, building the policy.
pub(crate) trait Spec: fmt::Debug {
    /// Reads, validates and clamps the fields of the policy's config object. Fields it does not
    /// read are rejected afterwards as unknown.
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError>
    where
        Self: Sized;

    /// The normalized config object, every default filled in (without the policy name).
    fn to_json(&self) -> Value;

    /// Builds the policy. `now` starts any interval timers.
    fn build(&self, now: Nanos) -> Box<dyn Policy>;

    /// Builds the policy for many threads at once, if it has such a form for this config (see
    /// [`PolicyConfig::build_concurrent`](crate::config::PolicyConfig::build_concurrent)).
    fn build_concurrent(&self) -> Option<std::sync::Arc<dyn crate::shared::ConcurrentPolicy>> {
        None
    }

    /// See [`PolicyConfig::warmup_need`](crate::config::PolicyConfig::warmup_need); most policies need no time.
    fn warmup_need(&self) -> Option<(Nanos, String)> {
        None
    }

    /// A label other than the name without `_experimental`, if the policy has one.
    fn label(&self) -> Option<String> {
        None
    }

    /// See [`PolicyConfig::warnings`](crate::config::PolicyConfig::warnings); most configs have nothing to warn about.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}
