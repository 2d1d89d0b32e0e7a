//! `peak_ewma_experimental` shared across threads the way a gRPC client holds a picker: every
//! endpoint's state behind its own lock (striped state, as grpc-java keeps per-subchannel state in
//! the subchannel's own object), the pick counter an atomic, and no lock over the whole policy on
//! the pick path. The estimate's arithmetic is the sans-IO policy's own ([`super::split_cost`],
//! [`super::split_observe`]), so the two cannot drift apart.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rand::RngCore;

use super::{
    split_cost, split_observe, Ablation, Config, DecayMode, Idle, Initial, Load, PeakEwma, Split,
};
use crate::estimator::Moment;
use crate::p2c;
use crate::shared::{SharedPicker, SharedTicket};
use crate::Nanos;

/// `peak_ewma_experimental` with per-endpoint locks (see the module docs). Supports the
/// semantics whose estimate is the split one ([`Ablation::split`]), the default among them.
#[derive(Debug)]
pub struct SharedPeakEwma {
    ablation: Ablation,
    choices: u32,
    split: Split,
    /// Picks made so far: the idle decay's pick clock.
    picks: AtomicU64,
    slots: Box<[Mutex<Load>]>,
    indices: Box<[u32]>,
}

/// The configuration is one the shared picker does not implement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the shared peak_ewma picker implements the default estimate (error-aware, time-weighted) and its split variations only")]
pub struct Unsupported;

impl SharedPeakEwma {
    /// A picker over `endpoints` READY endpoints, all unsampled.
    pub fn new(config: Config, endpoints: u32) -> Result<Self, Unsupported> {
        let a = config.ablation;
        // Without a decay factor per call (see `Moment::unscaled`), the variations that weigh a
        // sample by the wall-clock decay of the stored estimate are not supported.
        if !a.split()
            || a.decay != DecayMode::TimeWeighted
            || (a.blend_time.is_none() && (a.idle_decay_time.is_some() || a.idle == Idle::Frozen))
        {
            return Err(Unsupported);
        }
        let initial = match a.initial {
            Initial::Penalty => 0,
            Initial::Prior | Initial::FirstSample => config.default_rtt,
        };
        let fresh = || {
            Mutex::new(Load {
                rtt: PeakEwma::new(initial, Moment::unscaled(0)),
                peak: 0.0,
                errors: 0.0,
                peak_stamp: 0,
                outstanding: 0,
                sampled: false,
                picks_at: 0,
            })
        };
        Ok(SharedPeakEwma {
            ablation: a,
            choices: config.choice_count,
            split: Split::new(config.decay_time, &a),
            picks: AtomicU64::new(0),
            slots: (0..endpoints).map(|_| fresh()).collect(),
            indices: (0..endpoints).collect(),
        })
    }

    fn load(&self, i: u32) -> std::sync::MutexGuard<'_, Load> {
        // A panic while holding an endpoint's lock leaves plain numbers behind: keep using them.
        self.slots[i as usize]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl SharedPicker for SharedPeakEwma {
    fn name(&self) -> &'static str {
        "peak_ewma"
    }

    fn pick(&self, now: Nanos, rng: &mut dyn RngCore) -> Option<SharedTicket> {
        if self.indices.is_empty() {
            return None;
        }
        let picks = self.picks.load(Ordering::Relaxed);
        let (a, split) = (&self.ablation, &self.split);
        // Each candidate's cost is read under its own lock; another thread may change it before
        // the outstanding count below is raised, as in grpc-java's least_request picker.
        let i = p2c::pick(
            &self.indices,
            self.choices,
            p2c::Sampling::Distinct,
            rng,
            |i| split_cost(a, split, picks, &self.load(i), now),
        );
        self.picks.fetch_add(1, Ordering::Relaxed);
        let mut load = self.load(i);
        load.outstanding = load.outstanding.saturating_add(1);
        Some(SharedTicket::of(i))
    }

    fn done(&self, ticket: SharedTicket, now: Nanos, elapsed: Nanos, ok: bool) {
        let picks = self.picks.load(Ordering::Relaxed);
        let a = &self.ablation;
        let mut load = self.load(ticket.endpoint);
        load.outstanding = load.outstanding.saturating_sub(1);
        let at = Moment::unscaled(now);
        if !load.sampled && a.initial != Initial::Prior {
            load.rtt.replace(at, elapsed);
            load.errors = if ok { 0.0 } else { 1.0 };
        } else {
            split_observe(a, &self.split, picks, &mut load, at, elapsed, !ok);
        }
        load.sampled = true;
        load.picks_at = picks;
    }

    fn endpoints(&self) -> usize {
        self.slots.len()
    }

    fn bytes_per_endpoint(&self) -> usize {
        std::mem::size_of::<Mutex<Load>>() + std::mem::size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peak_ewma::PeakEwmaPolicy;
    use crate::shared::{LeastRequest, RoundRobin};
    use crate::{Connectivity, EndpointId, Outcome, Pick, Policy, RpcKind, Status};
    use rand::{rngs::SmallRng, SeedableRng};

    fn elapsed(endpoint: u32, k: u64) -> Nanos {
        // Endpoint 0 is ten times slower; the rest vary a little.
        let base = if endpoint == 0 { 20_000_000 } else { 2_000_000 };
        base + (k * 7919 + u64::from(endpoint) * 104_729) % 500_000
    }

    #[test]
    fn picks_what_the_sans_io_policy_picks() {
        let n = 20;
        let mut policy = PeakEwmaPolicy::new(Config::default());
        let ids: Vec<EndpointId> = (0..n).map(EndpointId).collect();
        policy.set_endpoints(0, &ids);
        for &id in &ids {
            policy.on_connectivity(0, id, Connectivity::Ready);
        }
        let shared = SharedPeakEwma::new(Config::default(), n).expect("the default is supported");
        let (mut r1, mut r2) = (SmallRng::seed_from_u64(3), SmallRng::seed_from_u64(3));
        let mut open: Vec<(crate::Ticket, SharedTicket, Nanos)> = Vec::new();
        let mut now = 0;
        for k in 0..20_000u64 {
            now += 100_000;
            let Pick::Endpoint(t) = policy.pick(now, RpcKind::Unary, &mut r1) else {
                panic!("READY endpoints");
            };
            let s = shared.pick(now, &mut r2).expect("READY endpoints");
            assert_eq!(t.endpoint().0, s.endpoint, "pick {k}");
            let done_at = now + elapsed(s.endpoint, k);
            open.push((t, s, done_at));
            // Complete the calls that have ended, in order of picking.
            let mut i = 0;
            while i < open.len() {
                if open[i].2 <= now {
                    let (t, s, at) = open.remove(i);
                    let e = elapsed(s.endpoint, 0).min(at);
                    let ok = k % 17 != 0;
                    let status = if ok { Status::Ok } else { Status::Error };
                    policy.on_done(now, t, Outcome::new(status, e));
                    shared.done(s, now, e, ok);
                } else {
                    i += 1;
                }
            }
        }
    }

    #[test]
    fn variations_it_cannot_weigh_are_refused() {
        let mut config = Config::default();
        config.ablation.idle = Idle::Frozen;
        assert_eq!(SharedPeakEwma::new(config, 3).unwrap_err(), Unsupported);
    }

    #[test]
    fn threads_leave_no_call_outstanding_and_avoid_the_slow_endpoint() {
        let n = 20;
        let pickers: Vec<Box<dyn SharedPicker>> = vec![
            Box::new(RoundRobin::new(n, 0)),
            Box::new(LeastRequest::new(n, 2)),
            Box::new(SharedPeakEwma::new(Config::default(), n).expect("supported")),
        ];
        for picker in &pickers {
            let to_slow = std::sync::atomic::AtomicU64::new(0);
            std::thread::scope(|scope| {
                for thread in 0..4u64 {
                    let (picker, to_slow) = (&**picker, &to_slow);
                    scope.spawn(move || {
                        let mut rng = SmallRng::seed_from_u64(thread);
                        for k in 0..5_000u64 {
                            let now = 1_000_000_000 + k * 100_000;
                            let t = picker.pick(now, &mut rng).expect("READY endpoints");
                            if t.endpoint == 0 {
                                to_slow.fetch_add(1, Ordering::Relaxed);
                            }
                            let e = elapsed(t.endpoint, k);
                            picker.done(t, now + e, e, true);
                        }
                    });
                }
            });
            let share = to_slow.load(Ordering::Relaxed) as f64 / 20_000.0;
            match picker.name() {
                "round_robin" => assert!((share - 0.05).abs() < 0.01, "{share}"),
                "peak_ewma" => assert!(share < 0.01, "peak_ewma sent {share} to the slow one"),
                _ => {}
            }
        }
        let lr = LeastRequest::new(n, 2);
        let mut rng = SmallRng::seed_from_u64(1);
        let tickets: Vec<_> = (0..100)
            .map(|_| lr.pick(0, &mut rng).expect("ready"))
            .collect();
        for t in tickets {
            lr.done(t, 1, 1, true);
        }
        assert!(lr
            .outstanding
            .iter()
            .all(|c| c.load(Ordering::Relaxed) == 0));
    }
}
