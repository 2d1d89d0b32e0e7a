//! An lblab policy behind a tower [`Service`]: client-side load balancing for any tonic client.
//!
//! [`Balancer`] owns one HTTP/2 connection per endpoint (hyper's client connection, with no
//! buffer task between the call and the connection) and one policy instance. Its [`PolicyService`] is what a generated tonic client wraps:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use lblab_wire::pb::echo::{echo_client::EchoClient, CallRequest};
//! use lblab_loadgen::balance::{Balancer, BalancerOptions};
//!
//! let endpoints = vec![
//!     "http://127.0.0.1:50051".parse()?,
//!     "http://127.0.0.1:50052".parse()?,
//! ];
//! let balancer = Balancer::from_service_config(
//!     r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}"#,
//!     endpoints,
//!     BalancerOptions::default(),
//! )?;
//! let mut client = EchoClient::new(balancer.service());
//! let reply = client.unary(CallRequest::default()).await?;
//! # let _ = reply; Ok(()) }
//! ```
//!
//! What it does for every call, as a gRPC channel with that policy would:
//! - picks with [`Policy::pick`]; "queue" waits for the next connectivity change (bounded by the
//!   call's deadline), "fail" fails the call with UNAVAILABLE;
//! - completes the policy's ticket exactly once, when the call ends: at the response trailers
//!   (their `grpc-status` and ORCA `endpoint-load-metrics-bin` report go into the
//!   [`Outcome`]), at a trailers-only error response, at a transport error, or when the caller
//!   drops the call — DEADLINE_EXCEEDED if the request's `grpc-timeout` had passed, else
//!   CANCELLED;
//! - enforces the request's `grpc-timeout` and fails it with DEADLINE_EXCEEDED;
//! - maps connectivity from the real connections: a connection attempt in progress is CONNECTING,
//!   a refused or failed one TRANSIENT_FAILURE (sticky until READY, as gRPC reports it) with gRPC's
//!   reconnect backoff, an established HTTP/2 connection READY; when a connection ends (the server
//!   closed it or it failed) the endpoint goes IDLE and a new connection is attempted at once, as
//!   gRPC's petiole policies do;
//! - drives the policy's timers ([`Policy::next_timer`]).
//!
//! A call is unary unless the request carries [`RpcKind::Streaming`] in its extensions
//! (`request.extensions_mut().insert(RpcKind::Streaming)`); the policy sees the kind at pick and
//! completion and decides what a stream counts for (peak_ewma: nothing by default, see its
//! `lblabAblation.streams`). To learn which endpoint a call went to, put a [`Picked`] in its
//! extensions.
//!
//! Endpoints are `http://host:port` URIs (plaintext HTTP/2), or `https://host:port` with a TLS
//! [`Transport`] in the options. Not done here: out-of-band ORCA reports (the ORCA streaming
//! service) and retries.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Uri;
use http_body::{Body, Frame, SizeHint};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use lblab_model::backoff::Backoff;
use lblab_policy::config::{self, ConfigError};
use lblab_policy::{
    Connectivity, EndpointId, Nanos, Outcome, Pick, Policy, RpcKind, Status, Ticket,
};
use lblab_wire::orca;
use lblab_wire::Clock;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tower::Service;

use crate::transport::Transport;

/// A boxed error, as tower's middleware returns them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Options of a [`Balancer`].
#[derive(Debug, Clone)]
pub struct BalancerOptions {
    /// Time 0 of the policy's clock (default: when the balancer is made).
    pub origin: Option<Instant>,
    /// Seed of the policy's random draws (picks) and of the backoff jitter.
    pub seed: u64,
    /// Reconnect backoff.
    pub backoff: Backoff,
    /// Timeout of one connection attempt (gRPC's minimum: 20 s).
    pub connect_timeout: Duration,
    /// How often the balancer checks whether the policy's timer is due.
    pub timer_tick: Duration,
    /// How connections are made: plaintext, or TLS for `https://` endpoints.
    pub transport: Transport,
    /// The `:authority` of every request instead of the endpoint's `host:port` (gRPC's channel
    /// authority; with TLS, also the name the server's certificate must have).
    pub authority: Option<http::uri::Authority>,
    /// HTTP/2 keepalive: a PING this often (also while no call is open), and the connection is
    /// closed if its answer takes longer than the second value (`None`: no keepalive).
    pub keepalive: Option<(Duration, Duration)>,
}

impl Default for BalancerOptions {
    fn default() -> Self {
        BalancerOptions {
            origin: None,
            seed: 0,
            backoff: Backoff::default(),
            connect_timeout: Duration::from_secs(20),
            timer_tick: Duration::from_millis(10),
            transport: Transport::plaintext(),
            authority: None,
            keepalive: None,
        }
    }
}

/// Which endpoint a call was sent to: put one in a request's extensions and read it afterwards.
/// Clones share the value.
#[derive(Debug, Clone)]
pub struct Picked(Arc<AtomicU32>);

impl Default for Picked {
    fn default() -> Self {
        Picked(Arc::new(AtomicU32::new(u32::MAX)))
    }
}

impl Picked {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the endpoint.
    pub fn set(&self, endpoint: EndpointId) {
        self.0.store(endpoint.0, Ordering::Relaxed);
    }

    /// The endpoint the call went to, if it was sent.
    pub fn get(&self) -> Option<EndpointId> {
        match self.0.load(Ordering::Relaxed) {
            u32::MAX => None,
            id => Some(EndpointId(id)),
        }
    }
}

struct Core {
    policy: Box<dyn Policy>,
    rng: SmallRng,
}

/// One endpoint's connection, if it has one.
#[derive(Clone)]
struct Conn {
    generation: u64,
    send: SendRequest<tonic::body::Body>,
    /// `scheme://authority` of the endpoint, for the request URI.
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
}

struct Slot {
    uri: Uri,
    /// Its connection task while the endpoint is in the list; `None` once it was removed.
    task: Mutex<Option<AbortHandle>>,
    /// True while the endpoint is in the policy's list: only then are its changes reported.
    active: std::sync::atomic::AtomicBool,
    channel: Mutex<Option<Conn>>,
    generation: AtomicU64,
    broken: Notify,
    state: Mutex<Connectivity>,
    outages: Mutex<Outages>,
}

/// A stretch of time an endpoint had no connection after having had one, or could not be
/// connected to at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outage {
    /// When it began (the connection ended, or the first attempt failed), ns on the balancer's
    /// clock (0 for anything before its origin).
    pub start: Nanos,
    /// When the endpoint was READY again; `None` if it had not been by the time it was read.
    pub end: Option<Nanos>,
    /// True if a working connection was lost; false if no attempt had succeeded since the
    /// balancer started.
    pub lost: bool,
    /// Failed connection attempts during it.
    pub failed_attempts: u32,
    /// How many outages this record stands for: 1, or more once an endpoint has had more than
    /// [`MAX_OUTAGES_KEPT`] and later ones are merged into the last record (which then spans
    /// from the first of them to the end of the last, up time between them included).
    pub merged: u32,
    /// The last error seen: why the connection ended, or why the last attempt failed.
    pub error: Option<String>,
}

/// Outage records kept per endpoint; later outages are merged into the last record, so memory
/// stays bounded however often a connection fails.
pub const MAX_OUTAGES_KEPT: usize = 1024;

#[derive(Default)]
struct Outages {
    list: Vec<Outage>,
    /// An outage is in progress (the last record).
    open: bool,
    /// Some connection has worked.
    connected_once: bool,
}

impl Outages {
    fn begin(&mut self, now: Nanos, error: Option<String>, failed: bool) {
        if self.open {
            if let Some(o) = self.list.last_mut() {
                o.failed_attempts += u32::from(failed);
                o.error = error.or(o.error.take());
            }
            return;
        }
        self.open = true;
        if self.list.len() >= MAX_OUTAGES_KEPT {
            if let Some(o) = self.list.last_mut() {
                o.merged += 1;
                o.end = None;
                o.failed_attempts += u32::from(failed);
                o.error = error.or(o.error.take());
                return;
            }
        }
        self.list.push(Outage {
            start: now,
            end: None,
            lost: self.connected_once,
            failed_attempts: u32::from(failed),
            merged: 1,
            error,
        });
    }

    fn end(&mut self, now: Nanos) {
        self.connected_once = true;
        if std::mem::take(&mut self.open) {
            if let Some(o) = self.list.last_mut() {
                o.end = Some(now);
            }
        }
    }
}

struct Shared {
    clock: Clock,
    core: Mutex<Core>,
    /// Every endpoint ever in the list, by [`EndpointId`]: ids are never reused, so an endpoint
    /// that leaves and comes back keeps its id.
    slots: RwLock<Vec<Arc<Slot>>>,
    options: BalancerOptions,
    /// Notified on every connectivity change, for calls waiting on a "queue" pick.
    changed: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.core)
    }

    /// Runs the policy's timer if it is due. Call with the core locked.
    fn timers(core: &mut Core, now: Nanos) {
        if core.policy.next_timer().is_some_and(|t| t <= now) {
            let Core { policy, rng } = core;
            policy.on_timer(now, rng);
        }
    }

    fn slot(&self, idx: usize) -> Option<Arc<Slot>> {
        self.slots
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(idx)
            .cloned()
    }

    fn set_state(&self, idx: usize, state: Connectivity) {
        let Some(slot) = self.slot(idx) else { return };
        {
            let mut s = lock(&slot.state);
            // Sticky TRANSIENT_FAILURE: reconnect attempts after a failure are not reported.
            if *s == state
                || (*s == Connectivity::TransientFailure && state == Connectivity::Connecting)
            {
                return;
            }
            *s = state;
        }
        let now = self.clock.now();
        {
            let mut core = self.core();
            // Checked with the core locked: a removed endpoint's last change never reaches the
            // policy after its removal.
            if !slot.active.load(Ordering::Acquire) {
                return;
            }
            core.policy
                .on_connectivity(now, EndpointId(idx as u32), state);
            Self::timers(&mut core, now);
        }
        self.changed.notify_waiters();
    }

    fn channel(&self, idx: usize) -> Option<Conn> {
        lock(&self.slot(idx)?.channel).clone()
    }

    fn mark_broken(&self, idx: usize, generation: u64, why: Option<String>) {
        let Some(slot) = self.slot(idx) else { return };
        if slot.generation.load(Ordering::Acquire) == generation {
            lock(&slot.outages).begin(self.clock.now(), why, false);
            slot.broken.notify_one();
        }
    }

    fn complete(
        &self,
        ticket: Ticket,
        started: Nanos,
        status: Status,
        load: Option<lblab_policy::LoadReport>,
    ) {
        let now = self.clock.now();
        let outcome = Outcome {
            status,
            elapsed: now.saturating_sub(started),
            load,
        };
        let mut core = self.core();
        core.policy.on_done(now, ticket, outcome);
        Self::timers(&mut core, now);
    }
}

/// One policy instance and its connections; see the [module docs](self). Dropping it stops its
/// connection and timer tasks; services already handed out keep working with the connections they
/// have but no longer reconnect.
pub struct Balancer {
    shared: Arc<Shared>,
    timer: AbortHandle,
}

impl std::fmt::Debug for Balancer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Balancer")
            .field("endpoints", &self.shared.all_slots().len())
            .finish()
    }
}

impl Shared {
    fn all_slots(&self) -> Vec<Arc<Slot>> {
        self.slots.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// See [`Balancer::set_endpoints`].
    fn set_endpoints(self: &Arc<Shared>, endpoints: Vec<Uri>) -> Vec<EndpointId> {
        let mut active = Vec::with_capacity(endpoints.len());
        let mut start = Vec::new();
        {
            let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
            for uri in endpoints {
                let idx = match slots.iter().position(|s| s.uri == uri) {
                    Some(i) => i,
                    None => {
                        slots.push(Arc::new(Slot {
                            uri,
                            task: Mutex::new(None),
                            active: std::sync::atomic::AtomicBool::new(false),
                            channel: Mutex::new(None),
                            generation: AtomicU64::new(0),
                            broken: Notify::new(),
                            state: Mutex::new(Connectivity::Idle),
                            outages: Mutex::new(Outages::default()),
                        }));
                        slots.len() - 1
                    }
                };
                let id = EndpointId(idx as u32);
                if !active.contains(&id) {
                    active.push(id);
                }
            }
            for (idx, slot) in slots.iter().enumerate() {
                let listed = active.contains(&EndpointId(idx as u32));
                let running = lock(&slot.task).is_some();
                if listed && !running {
                    start.push((idx, slot.clone()));
                } else if !listed && running {
                    slot.active.store(false, Ordering::Release);
                    if let Some(t) = lock(&slot.task).take() {
                        t.abort();
                    }
                    lock(&slot.channel).take();
                    *lock(&slot.state) = Connectivity::Idle;
                }
            }
        }
        // The policy learns the list before any new endpoint reports a change.
        let now = self.clock.now();
        {
            let mut core = self.core();
            core.policy.set_endpoints(now, &active);
            Self::timers(&mut core, now);
        }
        for (idx, slot) in start {
            *lock(&slot.state) = Connectivity::Idle;
            slot.active.store(true, Ordering::Release);
            let rng = SmallRng::seed_from_u64(self.options.seed ^ (0x5EED_0000 + idx as u64));
            let handle = tokio::spawn(manage(self.clone(), idx, rng));
            *lock(&slot.task) = Some(handle.abort_handle());
        }
        self.changed.notify_waiters();
        active
    }
}

/// Updates a [`Balancer`]'s endpoint list from elsewhere; see [`Balancer::updater`].
#[derive(Debug, Clone)]
pub struct EndpointUpdater(std::sync::Weak<Shared>);

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
        let clock = Clock::new(options.origin.unwrap_or_else(Instant::now));
        let shared = Arc::new(Shared {
            clock,
            core: Mutex::new(Core {
                policy,
                rng: SmallRng::seed_from_u64(options.seed),
            }),
            slots: RwLock::new(Vec::new()),
            options,
            changed: Notify::new(),
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
        let balancer = Balancer {
            shared,
            timer: timer.abort_handle(),
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
    /// of lblab's that the list names.
    pub fn from_service_config(
        service_config: &str,
        endpoints: Vec<Uri>,
        options: BalancerOptions,
    ) -> Result<Balancer, ConfigError> {
        let cfg = config::parse_service_config(service_config)?;
        let origin = options.origin.unwrap_or_else(Instant::now);
        let policy = cfg.build(Clock::new(origin).now());
        Ok(Balancer::new(
            policy,
            endpoints,
            BalancerOptions {
                origin: Some(origin),
                ..options
            },
        ))
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

    /// Runs `f` with the policy and the current time, e.g. to read [`Policy::endpoint_view`].
    pub fn inspect<R>(&self, f: impl FnOnce(&dyn Policy, Nanos) -> R) -> R {
        let now = self.shared.clock.now();
        f(self.shared.core().policy.as_ref(), now)
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.timer.abort();
        for slot in self.shared.all_slots() {
            if let Some(t) = lock(&slot.task).take() {
                t.abort();
            }
        }
    }
}

/// Why a connection attempt failed.
type ConnectError = Box<dyn std::error::Error + Send + Sync>;

/// Opens one HTTP/2 connection to `uri` and spawns its connection task, which tells `shared` when
/// the connection ends.
async fn connect(
    shared: &Arc<Shared>,
    idx: usize,
    uri: &Uri,
    generation: u64,
    options: &BalancerOptions,
) -> Result<Conn, ConnectError> {
    let endpoint = uri
        .authority()
        .ok_or("endpoint URI has no host:port")?
        .clone();
    let scheme = uri.scheme().cloned().unwrap_or(http::uri::Scheme::HTTP);
    let tls = options.transport.is_tls();
    match (scheme.as_str(), tls) {
        ("http", false) | ("https", true) => {}
        ("http", true) => return Err("a TLS balancer needs https:// endpoints".into()),
        ("https", false) => {
            return Err(
                "https:// endpoint without TLS settings (BalancerOptions::transport)".into(),
            )
        }
        (other, _) => return Err(format!("unsupported endpoint scheme {other:?}").into()),
    }
    let port = endpoint.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let host = endpoint.host();
    // An IPv6 literal comes bracketed in a URI (`[::1]`); the resolver wants it bare.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addr = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => std::net::SocketAddr::new(ip, port),
        Err(_) => tokio::net::lookup_host((bare, port))
            .await?
            .next()
            .ok_or_else(|| format!("{host} resolves to no address"))?,
    };
    let stream = options.transport.connect(host, addr).await?;
    let authority = options.authority.clone().unwrap_or(endpoint);
    let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
    builder.timer(TokioTimer::new());
    if let Some((interval, timeout)) = options.keepalive {
        builder
            .keep_alive_interval(interval)
            .keep_alive_timeout(timeout)
            .keep_alive_while_idle(true);
    }
    let (send, conn) = builder.handshake(TokioIo::new(stream)).await?;
    let weak = Arc::downgrade(shared);
    tokio::spawn(async move {
        let why = match conn.await {
            Ok(()) => "the server closed the connection".to_string(),
            Err(e) => error_chain(&e),
        };
        if let Some(shared) = weak.upgrade() {
            shared.mark_broken(idx, generation, Some(why));
        }
    });
    Ok(Conn {
        generation,
        send,
        scheme,
        authority,
    })
}

/// `e` and its causes, `: `-separated.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Keeps one endpoint connected and its connectivity reported.
async fn manage(shared: Arc<Shared>, idx: usize, mut rng: SmallRng) {
    let Some(slot) = shared.slot(idx) else { return };
    let (uri, options) = (&slot.uri, &shared.options);
    let mut attempt = 0u32;
    loop {
        shared.set_state(idx, Connectivity::Connecting);
        let generation = slot.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let attempt_result = tokio::time::timeout(
            options.connect_timeout,
            connect(&shared, idx, uri, generation, options),
        )
        .await
        .unwrap_or_else(|_| Err("connection attempt timed out".into()));
        match attempt_result {
            Ok(conn) => {
                *lock(&slot.channel) = Some(conn);
                lock(&slot.outages).end(shared.clock.now());
                attempt = 0;
                shared.set_state(idx, Connectivity::Ready);
                slot.broken.notified().await;
                lock(&slot.channel).take();
                // gRPC: READY -> IDLE when the connection goes, and petiole policies ask for a new
                // connection at once.
                shared.set_state(idx, Connectivity::Idle);
            }
            Err(e) => {
                lock(&slot.outages).begin(shared.clock.now(), Some(error_chain(e.as_ref())), true);
                shared.set_state(idx, Connectivity::TransientFailure);
                tokio::time::sleep(Duration::from_nanos(
                    options.backoff.delay(attempt, &mut rng),
                ))
                .await;
                attempt = attempt.saturating_add(1);
            }
        }
    }
}

/// The tower service of a [`Balancer`]: `http::Request` in, `http::Response<PolicyBody>` out. Its
/// errors are gRPC statuses: UNAVAILABLE when no endpoint is READY or the connection failed,
/// DEADLINE_EXCEEDED when the request's `grpc-timeout` passed.
#[derive(Clone)]
pub struct PolicyService {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for PolicyService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PolicyService")
    }
}

/// Parses a `grpc-timeout` header (`1S`, `250m`, ...).
fn grpc_timeout(headers: &http::HeaderMap) -> Option<Duration> {
    let v = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = v.split_at(v.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Maps a `grpc-status` code to the policy's classes.
fn status_class(headers: &http::HeaderMap) -> Option<Status> {
    let code: i32 = headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(match tonic::Code::from_i32(code) {
        tonic::Code::Ok => Status::Ok,
        tonic::Code::DeadlineExceeded => Status::DeadlineExceeded,
        tonic::Code::Cancelled => Status::Cancelled,
        _ => Status::Error,
    })
}

type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<http::Response<PolicyBody>, tonic::Status>> + Send>>;

impl Service<http::Request<tonic::body::Body>> for PolicyService {
    type Response = http::Response<PolicyBody>;
    type Error = tonic::Status;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), tonic::Status>> {
        // Readiness is decided per call by the pick (which may wait for a connection).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> ResponseFuture {
        let shared = self.shared.clone();
        Box::pin(call(shared, req))
    }
}

async fn call(
    shared: Arc<Shared>,
    req: http::Request<tonic::body::Body>,
) -> Result<http::Response<PolicyBody>, tonic::Status> {
    let kind = req
        .extensions()
        .get::<RpcKind>()
        .copied()
        .unwrap_or(RpcKind::Unary);
    let deadline = grpc_timeout(req.headers()).map(|d| tokio::time::Instant::now() + d);
    let picked = req.extensions().get::<Picked>().cloned();
    let (ticket, started, mut conn) = loop {
        let changed = shared.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let now = shared.clock.now();
        let pick = {
            let mut core = shared.core();
            Shared::timers(&mut core, now);
            let Core { policy, rng } = &mut *core;
            policy.pick(now, kind, rng)
        };
        match pick {
            Pick::Endpoint(ticket) => {
                let idx = ticket.endpoint().0 as usize;
                match shared.channel(idx) {
                    Some(conn) => break (ticket, now, conn),
                    None => {
                        // READY to the policy, but the connection just went: fail like gRPC's
                        // picker would after a disconnect.
                        shared.complete(ticket, now, Status::Error, None);
                        return Err(tonic::Status::unavailable("connection lost"));
                    }
                }
            }
            Pick::Fail => return Err(tonic::Status::unavailable("no READY endpoint")),
            Pick::Queue => match deadline {
                Some(at) => {
                    if tokio::time::timeout_at(at, changed).await.is_err() {
                        return Err(tonic::Status::deadline_exceeded(
                            "deadline exceeded waiting for a connection",
                        ));
                    }
                }
                None => changed.await,
            },
        }
    };
    let idx = ticket.endpoint().0 as usize;
    if let Some(p) = &picked {
        p.set(ticket.endpoint());
    }
    let mut completion = Completion {
        shared: shared.clone(),
        ticket: Some(ticket),
        started,
        deadline,
    };
    // The request URI: the endpoint's scheme and authority with the call's path.
    let (mut parts, body) = req.into_parts();
    let mut uri = http::uri::Parts::default();
    uri.scheme = Some(conn.scheme.clone());
    uri.authority = Some(conn.authority.clone());
    uri.path_and_query = parts.uri.path_and_query().cloned();
    match Uri::from_parts(uri) {
        Ok(u) => parts.uri = u,
        Err(e) => {
            completion.finish(Status::Error, None);
            return Err(tonic::Status::internal(format!("bad request URI: {e}")));
        }
    }
    let req = http::Request::from_parts(parts, body);
    let generation = conn.generation;
    let send = async {
        conn.send.ready().await?;
        conn.send.send_request(req).await
    };
    let response = match deadline {
        Some(at) => match tokio::time::timeout_at(at, send).await {
            Ok(r) => r,
            Err(_) => {
                completion.finish(Status::DeadlineExceeded, None);
                return Err(tonic::Status::deadline_exceeded("deadline exceeded"));
            }
        },
        None => send.await,
    };
    let response = match response {
        Ok(r) => r,
        Err(e) => {
            // The connection failed under the call: its task notices too, this is only sooner.
            if e.is_closed() || e.is_canceled() {
                shared.mark_broken(idx, generation, Some(error_chain(&e)));
            }
            completion.finish(Status::Error, None);
            let mut status = tonic::Status::unavailable(format!("connection error: {e}"));
            status.set_source(Arc::new(e));
            return Err(status);
        }
    };
    if let Some(status) = status_class(response.headers()) {
        // Trailers-only response: the headers are the trailers.
        completion.finish(status, orca::from_headers(response.headers()));
    }
    let sleep = deadline
        .filter(|_| completion.ticket.is_some())
        .map(|at| Box::pin(tokio::time::sleep_until(at)));
    Ok(response.map(|body| PolicyBody {
        inner: body,
        completion,
        deadline: sleep,
    }))
}

/// Completes a call's ticket exactly once; on drop, as DEADLINE_EXCEEDED or CANCELLED.
struct Completion {
    shared: Arc<Shared>,
    ticket: Option<Ticket>,
    started: Nanos,
    deadline: Option<tokio::time::Instant>,
}

impl Completion {
    fn finish(&mut self, status: Status, load: Option<lblab_policy::LoadReport>) {
        if let Some(t) = self.ticket.take() {
            self.shared.complete(t, self.started, status, load);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if self.ticket.is_some() {
            let expired = self
                .deadline
                .is_some_and(|d| tokio::time::Instant::now() >= d);
            self.finish(
                if expired {
                    Status::DeadlineExceeded
                } else {
                    Status::Cancelled
                },
                None,
            );
        }
    }
}

/// The response body of a [`PolicyService`] call: the connection's body, watched for the trailers
/// that end the call, and cut with DEADLINE_EXCEEDED when the request's deadline passes.
pub struct PolicyBody {
    inner: hyper::body::Incoming,
    completion: Completion,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl std::fmt::Debug for PolicyBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyBody")
            .field("done", &self.completion.ticket.is_none())
            .finish()
    }
}

impl Body for PolicyBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        if this.completion.ticket.is_some() {
            if let Some(sleep) = &mut this.deadline {
                if sleep.as_mut().poll(cx).is_ready() {
                    this.completion.finish(Status::DeadlineExceeded, None);
                    return Poll::Ready(Some(Err(tonic::Status::deadline_exceeded(
                        "deadline exceeded",
                    ))));
                }
            }
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let status = status_class(trailers).unwrap_or(Status::Error);
                    this.completion.finish(status, orca::from_headers(trailers));
                }
            }
            Poll::Ready(Some(Err(_))) => this.completion.finish(Status::Error, None),
            // The body ended without trailers: a protocol error for gRPC.
            Poll::Ready(None) => this.completion.finish(Status::Error, None),
            Poll::Pending => {}
        }
        polled.map_err(|e| {
            let mut status = tonic::Status::unavailable(format!("connection error: {e}"));
            status.set_source(Arc::new(e));
            status
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_units() {
        let mut h = http::HeaderMap::new();
        for (v, d) in [
            ("1S", Duration::from_secs(1)),
            ("250m", Duration::from_millis(250)),
            ("7u", Duration::from_micros(7)),
            ("2M", Duration::from_secs(120)),
        ] {
            h.insert("grpc-timeout", http::HeaderValue::from_static(v));
            assert_eq!(grpc_timeout(&h), Some(d));
        }
        h.insert("grpc-timeout", http::HeaderValue::from_static("x"));
        assert_eq!(grpc_timeout(&h), None);
    }

    #[test]
    fn outages_record_failed_starts_losses_and_stay_bounded() {
        let mut o = Outages::default();
        // Two failed attempts before the first connection: one outage, not a lost connection.
        o.begin(1, Some("refused".into()), true);
        o.begin(2, Some("refused again".into()), true);
        o.end(3);
        assert_eq!(o.list.len(), 1);
        assert_eq!(
            (o.list[0].lost, o.list[0].failed_attempts, o.list[0].end),
            (false, 2, Some(3))
        );
        assert_eq!(o.list[0].error.as_deref(), Some("refused again"));
        // A working connection lost, then back.
        o.begin(10, Some("reset".into()), false);
        o.end(12);
        assert!(o.list[1].lost);
        // Churn beyond the cap merges into the last record: bounded, and the count is kept.
        for t in 0..(2 * MAX_OUTAGES_KEPT as u64) {
            o.begin(100 + 2 * t, None, false);
            o.end(101 + 2 * t);
        }
        assert_eq!(o.list.len(), MAX_OUTAGES_KEPT);
        let total: u64 = o.list.iter().map(|x| u64::from(x.merged)).sum();
        assert_eq!(total, 2 + 2 * MAX_OUTAGES_KEPT as u64);
        assert!(o.list.last().unwrap().end.is_some());
    }
}
