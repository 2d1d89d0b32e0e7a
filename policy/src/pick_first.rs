//! `pick_first`: every RPC goes to the first READY endpoint in list order.

use rand::RngCore;

use crate::endpoints::Endpoints;
use crate::{
    Clock, Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind, Ticket,
};

/// `pick_first` has no configuration fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config;

/// The `pick_first` policy.
#[derive(Debug, Default)]
pub struct PickFirst {
    endpoints: Endpoints<u32>,
    clock: Clock,
}

impl PickFirst {
    /// A policy with no endpoints.
    pub fn new(_config: Config) -> Self {
        Self::default()
    }
}

impl Policy for PickFirst {
    fn name(&self) -> &'static str {
        "pick_first"
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        self.clock.advance(now);
        self.endpoints.set(endpoints, || 0);
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        self.clock.advance(now);
        self.endpoints.set_state(endpoint, state);
    }

    fn pick(&mut self, now: Nanos, kind: RpcKind, _rng: &mut dyn RngCore) -> Pick {
        self.clock.advance(now);
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
