//! [`Balancer`]: made from a policy or a service config, its service, its endpoint list.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use http::Uri;
use lblab_policy::config::{self, ConfigError};
use lblab_policy::shared::{ConcurrentPolicy, Concurrently};
use lblab_policy::{Connectivity, EndpointId, Nanos, Policy};
use lblab_wire::Clock;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::options::BalancerOptions;
use super::outages::Outage;
use super::service::PolicyService;
use super::shared::{lock, Core, Shared};

/// One policy instance and its connections; see the [module docs](crate::balance). Dropping it stops its
/// connection and timer tasks; services already handed out keep working with the connections they
/// have but no longer reconnect.
pub struct Balancer {
    pub(super) shared: Arc<Shared>,
    pub(super) timer: AbortHandle,
    /// The probe task, for a policy that asks for probes.
    pub(super) probes: Option<AbortHandle>,
}

impl std::fmt::Debug for Balancer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Balancer")
            .field("endpoints", &self.shared.all_slots().len())
            .finish()
    }
}

/// Updates a [`Balancer`]'s endpoint list from elsewhere; see [`Balancer::updater`].
#[derive(Debug, Clone)]
pub struct EndpointUpdater(pub(super) std::sync::Weak<Shared>);

impl EndpointUpdater {
    /// [`Balancer::set_endpoints`], if the balancer still exists.
    pub fn set_endpoints(&self, endpoints: Vec<Uri>) -> Option<Vec<EndpointId>> {
        Some(self.0.upgrade()?.set_endpoints(endpoints))
    }
}

impl Balancer {
    /// A balancer over `endpoints`, `http://host:port` URIs (endpoint `i` is
    /// [`EndpointId`]`(i)` to the policy). Must be called inside a tokio runtime: it spawns one
    /// connection task per endpoint and a timer task.
    pub fn new(policy: Box<dyn Policy>, endpoints: Vec<Uri>, options: BalancerOptions) -> Balancer {
        Self::with(policy, None, endpoints, options)
    }

    /// [`new`](Self::new) for a policy's concurrent form: picks and completions call it from the
    /// callers' threads without the balancer's lock ([`PolicyConfig::build_concurrent`]).
    ///
    /// [`PolicyConfig::build_concurrent`]: lblab_policy::config::PolicyConfig::build_concurrent
    pub fn concurrent(
        policy: Arc<dyn ConcurrentPolicy>,
        endpoints: Vec<Uri>,
        options: BalancerOptions,
    ) -> Balancer {
        let serialized = Box::new(Concurrently(policy.clone()));
        Self::with(serialized, Some(policy), endpoints, options)
    }

    /// A balancer from a validated policy config: its concurrent form if it has one, else the
    /// policy behind the balancer's lock.
    pub fn from_config(
        config: &config::PolicyConfig,
        endpoints: Vec<Uri>,
        options: BalancerOptions,
    ) -> Balancer {
        let origin = options.origin.unwrap_or_else(Instant::now);
        let options = BalancerOptions {
            origin: Some(origin),
            ..options
        };
        match config.build_concurrent() {
            Some(policy) => Balancer::concurrent(policy, endpoints, options),
            None => Balancer::new(config.build(Clock::new(origin).now()), endpoints, options),
        }
    }

    fn with(
        policy: Box<dyn Policy>,
        concurrent: Option<Arc<dyn ConcurrentPolicy>>,
        endpoints: Vec<Uri>,
        options: BalancerOptions,
    ) -> Balancer {
        let clock = Clock::new(options.origin.unwrap_or_else(Instant::now));
        let shared = Arc::new(Shared {
            clock,
            core: Mutex::new(Core {
                policy,
                rng: SmallRng::seed_from_u64(options.seed),
            }),
            concurrent,
            slots: RwLock::new(Vec::new()),
            options,
            changed: Notify::new(),
            load_reports: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&shared);
        let tick = shared.options.timer_tick;
        let timer = tokio::spawn(async move {
            let mut interval = tokio::time::interval(tick);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                let Some(shared) = weak.upgrade() else { return };
                let now = shared.clock.now();
                Shared::timers(&mut shared.core(), now);
            }
        });
        let probes = shared.core().policy.probe_interval().map(|interval| {
            let weak = Arc::downgrade(&shared);
            let every = Duration::from_nanos(interval.max(1));
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(shared) = weak.upgrade() else { return };
                    shared.send_probes();
                }
            })
            .abort_handle()
        });
        let balancer = Balancer {
            shared,
            timer: timer.abort_handle(),
            probes,
        };
        balancer.set_endpoints(endpoints);
        balancer
    }

    /// Replaces the endpoint list, as a name resolver's update does in gRPC: endpoints already
    /// in the list keep their connection and state; one that was in the list before keeps its
    /// [`EndpointId`]; a new one gets the next id and is connected; one no longer listed is
    /// disconnected and removed from the policy. Returns the ids of `endpoints`, in order
    /// (duplicates are listed once). Must be called inside a tokio runtime.
    pub fn set_endpoints(&self, endpoints: Vec<Uri>) -> Vec<EndpointId> {
        self.shared.set_endpoints(endpoints)
    }

    /// A handle that updates the endpoint list ([`set_endpoints`](Self::set_endpoints)) from
    /// another task, e.g. a name resolver's; it does nothing once the balancer is dropped.
    pub fn updater(&self) -> EndpointUpdater {
        EndpointUpdater(Arc::downgrade(&self.shared))
    }

    /// A balancer from a gRPC service config (`{"loadBalancingConfig":[...]}`): the first policy
    /// of lblab's that the list names, in its concurrent form if it has one
    /// ([`from_config`](Self::from_config)).
    pub fn from_service_config(
        service_config: &str,
        endpoints: Vec<Uri>,
        options: BalancerOptions,
    ) -> Result<Balancer, ConfigError> {
        let cfg = config::parse_service_config(service_config)?;
        Ok(Balancer::from_config(&cfg, endpoints, options))
    }

    /// The tower service to give a tonic client. Cheap to clone.
    pub fn service(&self) -> PolicyService {
        PolicyService {
            shared: self.shared.clone(),
        }
    }

    /// Every endpoint's connectivity as the policy was told it, by [`EndpointId`] (an endpoint
    /// removed from the list is IDLE).
    pub fn connectivity(&self) -> Vec<Connectivity> {
        self.shared
            .all_slots()
            .iter()
            .map(|s| *lock(&s.state))
            .collect()
    }

    /// How many answers carried an ORCA load report (`endpoint-load-metrics-bin`) so far.
    pub fn load_reports(&self) -> u64 {
        self.shared.load_reports.load(Ordering::Relaxed)
    }

    /// Every endpoint's outages so far, oldest first: connections lost, and stretches in which
    /// connection attempts failed.
    pub fn outages(&self) -> Vec<Vec<Outage>> {
        self.shared
            .all_slots()
            .iter()
            .map(|s| lock(&s.outages).list.clone())
            .collect()
    }

    /// Waits until every endpoint has left CONNECTING/IDLE (or `timeout` passes) and returns how
    /// many are READY.
    pub async fn wait_connected(&self, timeout: Duration) -> usize {
        let end = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.shared.changed.notified();
            let states: Vec<Connectivity> = self
                .shared
                .all_slots()
                .iter()
                .filter(|s| s.active.load(Ordering::Acquire))
                .map(|s| *lock(&s.state))
                .collect();
            let settled = states
                .iter()
                .all(|s| matches!(s, Connectivity::Ready | Connectivity::TransientFailure));
            let ready = states.iter().filter(|s| **s == Connectivity::Ready).count();
            if settled || tokio::time::Instant::now() >= end {
                return ready;
            }
            let _ = tokio::time::timeout_at(end, changed).await;
        }
    }

    /// Whether picks and completions call the policy's concurrent form without the balancer's
    /// lock ([`concurrent`](Self::concurrent)).
    pub fn is_concurrent(&self) -> bool {
        self.shared.concurrent.is_some()
    }

    /// Runs `f` with the policy and the current time, e.g. to read [`Policy::endpoint_view`].
    pub fn inspect<R>(&self, f: impl FnOnce(&dyn Policy, Nanos) -> R) -> R {
        let now = self.shared.clock.now();
        f(self.shared.core().policy.as_ref(), now)
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.timer.abort();
        if let Some(p) = &self.probes {
            p.abort();
        }
        for slot in self.shared.all_slots() {
            if let Some(t) = lock(&slot.task).take() {
                t.abort();
            }
        }
    }
}
