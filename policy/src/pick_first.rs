//! `pick_first`: every RPC goes to the first READY endpoint in list order. With
//! `shuffleAddressList` (gRFC A62) the list is shuffled once per address-list update, so clients
//! that all get the same list spread over it instead of all picking its head.

use rand::RngCore;
use serde_json::{json, Value};

use crate::config::{ConfigError, Fields, Spec};
use crate::endpoints::Endpoints;
use crate::{
    Clock, Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind, Ticket,
};

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
}

impl Policy for PickFirst {
    fn name(&self) -> &'static str {
        NAME
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        self.clock.advance(now);
        self.endpoints.set(endpoints, || 0);
        if self.config.shuffle_address_list {
            self.unshuffled = Some(endpoints.to_vec());
        }
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        self.clock.advance(now);
        self.endpoints.set_state(endpoint, state);
    }

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

    fn on_done(&mut self, now: Nanos, ticket: Ticket, _outcome: Outcome) {
        self.clock.advance(now);
        self.endpoints.complete(&ticket);
    }

    fn endpoint_view(&self, _now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        self.endpoints.view(endpoint, |_| None)
    }
}
