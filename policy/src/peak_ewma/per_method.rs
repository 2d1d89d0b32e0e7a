//! `lblabAblation.perMethod`: per-method estimates, the superset the proposal's author ran and
//! left out of the minimal policy. Each method the channel calls gets its own
//! [`PeakEwmaPolicy`], with its own estimates and its own outstanding counts, as if each method
//! had a channel of its own (which a service owner can already build without any new policy).
//! A light method's estimate is then not lifted by a heavy method's answers, and a backend slow
//! on one method is avoided for that method only.
//!
//! What it gives up: an endpoint's load from the other methods does not count in a method's cost,
//! and each method learns, decays and probes on its own, so a channel with many methods has
//! that many estimates per endpoint to keep warm.

use rand::RngCore;

use super::{Config, PeakEwmaPolicy};
use crate::{
    Connectivity, EndpointId, EndpointView, Nanos, Outcome, Pick, Policy, RpcKind, Ticket,
};

/// The most methods kept apart; calls of later methods share the last instance.
pub const MAX_METHODS: usize = 256;

/// `peak_ewma_experimental` with `perMethod`: one instance per method.
#[derive(Debug)]
pub struct PerMethod {
    /// The configuration of every instance (with `perMethod` off).
    config: Config,
    instances: Vec<PeakEwmaPolicy>,
    /// The endpoint list and the connectivity states seen so far, replayed into an instance
    /// made for a method called for the first time.
    endpoints: Vec<EndpointId>,
    states: Vec<(EndpointId, Connectivity)>,
}

impl PerMethod {
    /// A policy with no endpoints; `config.ablation.per_method` is ignored.
    pub fn new(mut config: Config) -> Self {
        config.ablation.per_method = false;
        PerMethod {
            config,
            instances: vec![PeakEwmaPolicy::new(config)],
            endpoints: Vec::new(),
            states: Vec::new(),
        }
    }

    /// The instance of `method`, made (and told the endpoints and their states) on first use.
    fn instance(&mut self, now: Nanos, method: u32) -> &mut PeakEwmaPolicy {
        let m = (method as usize).min(MAX_METHODS - 1);
        while self.instances.len() <= m {
            let mut p = PeakEwmaPolicy::new(self.config);
            p.set_endpoints(now, &self.endpoints);
            for &(e, s) in &self.states {
                p.on_connectivity(now, e, s);
            }
            self.instances.push(p);
        }
        &mut self.instances[m]
    }
}

impl Policy for PerMethod {
    fn name(&self) -> &'static str {
        super::NAME
    }

    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]) {
        self.endpoints = endpoints.to_vec();
        self.states.retain(|(e, _)| endpoints.contains(e));
        for p in &mut self.instances {
            p.set_endpoints(now, endpoints);
        }
    }

    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity) {
        if !self.endpoints.contains(&endpoint) {
            return;
        }
        match self.states.iter_mut().find(|(e, _)| *e == endpoint) {
            Some((_, s)) => *s = state,
            None => self.states.push((endpoint, state)),
        }
        for p in &mut self.instances {
            p.on_connectivity(now, endpoint, state);
        }
    }

    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick {
        self.pick_method(now, kind, 0, rng)
    }

    fn pick_method(
        &mut self,
        now: Nanos,
        kind: RpcKind,
        method: u32,
        rng: &mut dyn RngCore,
    ) -> Pick {
        let m = (method as usize).min(MAX_METHODS - 1) as u32;
        match self.instance(now, m).pick(now, kind, rng) {
            Pick::Endpoint(t) => Pick::Endpoint(t.with_method(m)),
            other => other,
        }
    }

    fn on_done(&mut self, now: Nanos, ticket: Ticket, outcome: Outcome) {
        let m = ticket.method() as usize;
        if let Some(p) = self.instances.get_mut(m) {
            p.on_done(now, ticket, outcome);
        }
    }

    /// The first method's view, with the outstanding calls of every method.
    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView> {
        let mut view = self.instances[0].endpoint_view(now, endpoint)?;
        view.outstanding = self
            .instances
            .iter()
            .filter_map(|p| p.endpoint_view(now, endpoint))
            .map(|v| v.outstanding)
            .sum();
        Some(view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    const MS: Nanos = 1_000_000;

    fn ready(p: &mut PerMethod, n: u32) {
        let ids: Vec<EndpointId> = (0..n).map(EndpointId).collect();
        p.set_endpoints(0, &ids);
        for id in ids {
            p.on_connectivity(0, id, Connectivity::Ready);
        }
    }

    fn call(p: &mut PerMethod, now: Nanos, method: u32, rtt: Nanos, rng: &mut SmallRng) -> u32 {
        let Pick::Endpoint(t) = p.pick_method(now, RpcKind::Unary, method, rng) else {
            panic!("nothing picked");
        };
        let e = t.endpoint().0;
        assert_eq!(t.method(), method);
        p.on_done(now + rtt, t, Outcome::new(Status::Ok, rtt));
        e
    }

    #[test]
    fn a_slow_answer_on_one_method_does_not_lift_the_other_methods_estimate() {
        let mut p = PerMethod::new(Config::default());
        ready(&mut p, 2);
        let mut rng = SmallRng::seed_from_u64(1);
        // Both endpoints answer method 0 in 1 ms; then endpoint answers method 1 in 100 ms.
        for i in 0..200 {
            call(&mut p, i * MS, 0, MS, &mut rng);
        }
        let mut slow_seen = false;
        for i in 200..400 {
            let e = call(
                &mut p,
                i * MS,
                1,
                if i % 2 == 0 { 100 * MS } else { MS },
                &mut rng,
            );
            slow_seen |= e == 0;
        }
        assert!(slow_seen);
        // Method 0's instance never saw a 100 ms answer: its costs are ~1 ms on both endpoints.
        for e in 0..2 {
            let v = p.instances[0]
                .endpoint_view(400 * MS, EndpointId(e))
                .unwrap();
            assert!(v.cost.unwrap() < 2.0 * MS as f64, "{v:?}");
        }
        assert_eq!(p.instances.len(), 2);
    }

    #[test]
    fn a_method_first_called_late_sees_the_endpoints_and_their_states() {
        let mut p = PerMethod::new(Config::default());
        ready(&mut p, 3);
        p.on_connectivity(0, EndpointId(2), Connectivity::TransientFailure);
        let mut rng = SmallRng::seed_from_u64(2);
        for i in 0..100 {
            let e = call(&mut p, i * MS, 5, MS, &mut rng);
            assert_ne!(e, 2, "picked an endpoint that is not READY");
        }
        assert_eq!(p.instances.len(), 6);
        // A ticket of a removed method's instance... every method's calls are counted.
        let Pick::Endpoint(t) = p.pick_method(200 * MS, RpcKind::Unary, 5, &mut rng) else {
            panic!()
        };
        let v = p.endpoint_view(200 * MS, t.endpoint()).unwrap();
        assert_eq!(v.outstanding, 1);
        p.on_done(201 * MS, t, Outcome::new(Status::Ok, MS));
    }
}
