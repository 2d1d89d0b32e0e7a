//! An lblab policy behind a tower [`Service`](tower::Service): client-side load balancing for any tonic client.
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
//! - picks with [`Policy::pick`](lblab_policy::Policy::pick) under the balancer's lock, or, for a policy with a concurrent
//!   form ([`ConcurrentPolicy`](lblab_policy::shared::ConcurrentPolicy), which peak_ewma's default has), with no lock over the policy, as
//!   gRPC's pickers are called from many threads at once; "queue" waits for the next connectivity change (bounded by the
//!   call's deadline), "fail" fails the call with UNAVAILABLE;
//! - completes the policy's ticket exactly once, when the call ends: at the response trailers
//!   (their `grpc-status` and ORCA `endpoint-load-metrics-bin` report go into the
//!   [`Outcome`](lblab_policy::Outcome)), at a trailers-only error response, at a transport error, or when the caller
//!   drops the call — DEADLINE_EXCEEDED if the request's `grpc-timeout` had passed, else
//!   CANCELLED;
//! - enforces the request's `grpc-timeout` and fails it with DEADLINE_EXCEEDED;
//! - maps connectivity from the real connections: a connection attempt in progress is CONNECTING,
//!   a refused or failed one TRANSIENT_FAILURE (sticky until READY, as gRPC reports it) with gRPC's
//!   reconnect backoff, an HTTP/2 connection READY once the server has sent its preface (its
//!   SETTINGS, as gRPC's channels wait for: a listener that accepts TCP but never answers keeps
//!   the endpoint CONNECTING until the attempt's timeout); when a connection ends (the server
//!   closed it or it failed) the endpoint goes IDLE and a new connection is attempted at once, as
//!   gRPC's petiole policies do, unless it ended before it served any call (a server that sends
//!   GOAWAY on every connection): then the new attempt waits gRPC's backoff, which grows with
//!   each such connection in a row, so such a server is not reconnected to thousands of times a
//!   second;
//! - drives the policy's timers ([`Policy::next_timer`](lblab_policy::Policy::next_timer));
//! - for a policy that asks for them ([`Policy::probe_interval`](lblab_policy::Policy::probe_interval)), sends each READY endpoint a
//!   `grpc.health.v1.Health/Check` every interval on its own connection, at most one pending.
//!
//! A call is unary unless the request carries [`RpcKind::Streaming`](lblab_policy::RpcKind::Streaming) in its extensions
//! (`request.extensions_mut().insert(RpcKind::Streaming)`); the policy sees the kind at pick and
//! completion and decides what a stream counts for (peak_ewma: nothing by default, see its
//! `lblabAblation.streams`). To learn which endpoint a call went to, put a [`Picked`] in its
//! extensions.
//!
//! Endpoints are `http://host:port` URIs (plaintext HTTP/2), or `https://host:port` with a TLS
//! [`Transport`](crate::transport::Transport) in the options. Not done here: out-of-band ORCA reports (the ORCA streaming
//! service) and retries.

mod balancer;
mod body;
mod completion;
mod conn;
mod options;
mod outages;
mod probe;
mod service;
mod shared;
#[cfg(test)]
mod tests;

pub(crate) use conn::{error_chain, refused_by_client, MAX_HEADER_LIST_SIZE};

/// A boxed error, as tower's middleware returns them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub use balancer::{Balancer, EndpointUpdater};
pub use body::PolicyBody;
pub use options::BalancerOptions;
pub use outages::{Outage, MAX_OUTAGES_KEPT};
pub use service::{Picked, PolicyService};
