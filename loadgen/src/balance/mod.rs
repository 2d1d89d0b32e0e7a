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
//! - picks with [`Policy::pick`] under the balancer's lock, or, for a policy with a concurrent
//!   form ([`ConcurrentPolicy`], which peak_ewma's default has), with no lock over the policy, as
//!   gRPC's pickers are called from many threads at once; "queue" waits for the next connectivity change (bounded by the
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
//!   gRPC's petiole policies do, unless it ended before it served any call (a server that sends
//!   GOAWAY on every connection): then the new attempt waits gRPC's backoff, which grows with
//!   each such connection in a row, so such a server is not reconnected to thousands of times a
//!   second;
//! - drives the policy's timers ([`Policy::next_timer`]);
//! - for a policy that asks for them ([`Policy::probe_interval`]), sends each READY endpoint a
//!   `grpc.health.v1.Health/Check` every interval on its own connection, at most one pending.
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
use lblab_policy::shared::{ConcurrentPolicy, Concurrently};
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

mod balancer;
mod body;
mod conn;
mod outages;
mod probe;
mod service;
mod shared;
#[cfg(test)]
mod tests;

use conn::manage;
pub(crate) use conn::{error_chain, refused_by_client, MAX_HEADER_LIST_SIZE};
use service::status_class;

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
    /// The latest connection generation that served a call (a response came back on it): a
    /// connection that ends without having served one is reconnected after a backoff.
    served: AtomicU64,
    broken: Notify,
    state: Mutex<Connectivity>,
    outages: Mutex<Outages>,
    /// A probe ([`Policy::probe_interval`]) to the endpoint is pending.
    probing: std::sync::atomic::AtomicBool,
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

struct Shared {
    clock: Clock,
    /// The policy for everything that is serialized (endpoint list, connectivity, timers) and,
    /// without a concurrent form, for picks and completions too.
    core: Mutex<Core>,
    /// The policy's concurrent form, if it has one: picks and completions call it without the
    /// core's lock (the core holds the same policy as a [`Concurrently`]).
    concurrent: Option<Arc<dyn ConcurrentPolicy>>,
    /// Every endpoint ever in the list, by [`EndpointId`]: ids are never reused, so an endpoint
    /// that leaves and comes back keeps its id.
    slots: RwLock<Vec<Arc<Slot>>>,
    options: BalancerOptions,
    /// Notified on every connectivity change, for calls waiting on a "queue" pick.
    changed: Notify,
    /// Calls whose answer carried an ORCA load report.
    load_reports: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One policy instance and its connections; see the [module docs](self). Dropping it stops its
/// connection and timer tasks; services already handed out keep working with the connections they
/// have but no longer reconnect.
pub struct Balancer {
    shared: Arc<Shared>,
    timer: AbortHandle,
    /// The probe task, for a policy that asks for probes.
    probes: Option<AbortHandle>,
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
pub struct EndpointUpdater(std::sync::Weak<Shared>);

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

/// Completes a call's ticket exactly once; on drop, as DEADLINE_EXCEEDED or CANCELLED.
struct Completion {
    shared: Arc<Shared>,
    ticket: Option<Ticket>,
    started: Nanos,
    deadline: Option<tokio::time::Instant>,
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
