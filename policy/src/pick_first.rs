//! `pick_first`: every RPC goes to the first READY endpoint in list order. With
//! `shuffleAddressList` (gRFC A62) the list is shuffled once per address-list update, so clients
//! that all get the same list spread over it instead of all picking its head.

use rand::RngCore;
use serde_json::{json, Value};

use crate::config::fields::{ConfigError, Fields};
use crate::config::spec::Spec;
use crate::endpoints::{outstanding_count_policy, Endpoints};
use crate::{Clock, EndpointId, Nanos, Pick, Policy, RpcKind};

/// The policy's gRPC name.
pub const NAME: &str = "pick_first";

/// `pick_first`'s configuration (gRFC A62).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config {
    /// `shuffleAddressList`: shuffle each new address list before using it (default false).
    pub shuffle_address_list: bool,
}

impl Spec for Config {
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError> {
        Ok(Config {
            shuffle_address_list: f.bool("shuffleAddressList", false)?,
        })
    }

    fn to_json(&self) -> Value {
        json!({ "shuffleAddressList": self.shuffle_address_list })
    }

    fn build(&self, _now: Nanos) -> Box<dyn Policy> {
        Box::new(PickFirst::new(*self))
    }
}

/// The `pick_first` policy.
#[derive(Debug, Default)]
pub struct PickFirst {
    config: Config,
    endpoints: Endpoints<u32>,
    clock: Clock,
    /// A list still to be shuffled: the shuffle needs the randomness only a pick brings, so the
    /// list is used in its given order until the next pick.
    unshuffled: Option<Vec<EndpointId>>,
}

impl PickFirst {
    /// A policy with no endpoints.
    pub fn new(config: Config) -> Self {
        PickFirst {
            config,
            ..Self::default()
        }
    }

    /// Keeps a new list to be shuffled at the next pick, if the config says to shuffle.
    fn keep_for_shuffle(&mut self, endpoints: &[EndpointId]) {
        if self.config.shuffle_address_list {
            self.unshuffled = Some(endpoints.to_vec());
        }
    }
}

impl Policy for PickFirst {
    outstanding_count_policy!(|_| None, after_set: Self::keep_for_shuffle);

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        self.clock.advance(now);
        if let Some(mut ids) = self.unshuffled.take() {
            // Fisher–Yates; the modulo bias of a 64-bit draw is far below anything measurable.
            for i in (1..ids.len()).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                ids.swap(i, j);
            }
            // The same ids in a new order: every endpoint keeps its state.
            self.endpoints.set(&ids, || 0);
        }
        let Some(&slot) = self.endpoints.ready().first() else {
            return self.endpoints.unready();
        };
        self.endpoints.send(slot, kind)
    }
}
