//! Sans-IO client-side load-balancing policies with gRPC's semantics.
//!
//! Every policy in lblab is written once, here, as a state machine that never reads a clock, never
//! touches a socket and never uses a global random number generator. Time is a [`Nanos`] value
//! from an arbitrary origin and randomness is a `&mut dyn RngCore`; both are arguments. The same
//! code therefore runs with virtual time inside the simulator (`lblab-sim`) and with wall-clock time
//! inside a real tonic client (`lblab-loadgen`).
//!
//! This crate is *not* a gRPC client: it does not connect, retry or resolve names. It decides which
//! endpoint an RPC goes to and learns from how the RPC went.
//!
//! # Policies
//!
//! | gRPC name | module | what it routes by |
//! |---|---|---|
//! | `pick_first` | [`pick_first`] | list order |
//! | `round_robin` | [`round_robin`] | turn |
//! | `least_request_experimental` (gRFC A48) | [`least_request`] | outstanding requests, P2C |
//! | `weighted_round_robin` (gRFC A58) | [`weighted_round_robin`] | ORCA load reports, EDF |
//! | `outlier_detection_experimental` (gRFC A50) | [`outlier_detection`] | wraps a child; ejects failing endpoints |
//! | `peak_ewma_experimental` (proposed) | [`peak_ewma`] | peak-EWMA RTT × (outstanding + 1), P2C |
//! | `envoy_peak_ewma` (lblab reference: Envoy's balancer) | [`envoy_peak_ewma`] | whole-ms EWMA × (active + 1), folded every interval, two distinct choices |
//! | `finagle_peak_ewma` (lblab reference: Finagle's balancer) | [`finagle_peak_ewma`] | peak EWMA decayed on read × (pending + 1), cost 0 or a penalty before the first sample, two distinct choices |
//!
//! Policies are built from gRPC service-config JSON with [`config::parse_service_config`] and
//! [`config::PolicyConfig::build`]. Envoy xDS forms (a `Cluster`'s `load_balancing_policy`, gRFC
//! A52's `TypedStruct`) map onto these configs with [`xds::parse`].
//!
//! [`vectors`] generates language-neutral conformance vectors (JSON) for
//! `peak_ewma_experimental`, `least_request_experimental` and `outlier_detection_experimental`, and
//! replays them against this crate; `conformance/README.md` documents the format.
//!
//! # Adding a policy
//!
//! A policy is one file and one table line. The file, `src/<module>.rs`, holds its name
//! (`pub const NAME`), its `Config` and the policy itself, and implements `config::spec::Spec`
//! for its `Config`: parsing from JSON with the `config::fields::Fields` reader (which ignores
//! unknown fields as gRPC does, reporting them for the lab's warnings, and names the field in
//! every error), validation and clamps, normalization back
//! to JSON, building the policy, and, if it has them, a warm-up need and a label. The line,
//! `Variant(module)`, goes into the `policies!` table below, which declares the module and
//! generates [`config::PolicyConfig`], [`config::SUPPORTED`] and the parser's table
//! (`registry.rs`). Then a row in the table above, and its tests: a file in `tests/policies/`
//! and an entry in the harness's `EVERY_POLICY`. A new table line is checked by unit tests in
//! `config/mod.rs`: its name is unique and its default config parses back from its normalized
//! JSON.
//!
//! # Call order
//!
//! A [`Policy`] is driven by its owner (the simulator or a client) like this:
//!
//! 1. [`Policy::set_endpoints`] with the resolved endpoint list (again whenever it changes; calls
//!    in flight on removed endpoints may still complete and are then ignored).
//! 2. [`Policy::on_connectivity`] whenever an endpoint's connection changes state. New endpoints
//!    start [`Connectivity::Idle`]; only [`Connectivity::Ready`] endpoints are picked.
//! 3. For every RPC, [`Policy::pick`]. A [`Pick::Endpoint`] carries a [`Ticket`] that must be given
//!    back, exactly once, to [`Policy::on_done`] when the RPC ends. [`Pick::Queue`] means "wait for
//!    a connectivity change and pick again"; [`Pick::Fail`] means fail the RPC with UNAVAILABLE.
//! 4. Out-of-band ORCA load reports, if the owner subscribes to them, go to
//!    [`Policy::on_load_report`].
//! 5. After every call into the policy, [`Policy::next_timer`] says when the policy next wants
//!    [`Policy::on_timer`] (outlier-detection intervals, WRR weight updates).
//!
//! Time passed to any method should not go backwards; if it does, the policy clamps it to the latest
//! time it has seen, so a misbehaving clock can never produce a panic, a NaN or a negative duration.
//!
//! # Example
//!
//! ```
//! use lblab_policy::{config, Connectivity, EndpointId, Outcome, Pick, RpcKind, Status};
//! use rand::{rngs::SmallRng, SeedableRng};
//!
//! let cfg = config::parse_service_config(
//!     r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{"decayTime":"5s"}}]}"#,
//! )?;
//! let mut policy = cfg.build(0);
//! let endpoints = [EndpointId(1), EndpointId(2)];
//! policy.set_endpoints(0, &endpoints);
//! for &e in &endpoints {
//!     policy.on_connectivity(0, e, Connectivity::Ready);
//! }
//! let mut rng = SmallRng::seed_from_u64(7);
//! let now = 1_000_000;
//! if let Pick::Endpoint(ticket) = policy.pick(now, RpcKind::Unary, &mut rng) {
//!     let endpoint = ticket.endpoint();
//!     // ... send the RPC to `endpoint`, then:
//!     policy.on_done(now + 2_000_000, ticket, Outcome::new(Status::Ok, 2_000_000));
//!     # let _ = endpoint;
//! }
//! # Ok::<(), lblab_policy::config::ConfigError>(())
//! ```

#![warn(missing_docs)]

pub mod config;
pub mod duration;
mod endpoints;
pub mod estimator;
pub mod fingerprint;
pub mod heap;
pub mod json;
pub mod p2c;
pub mod shared;
pub mod vectors;
pub mod xds;
#[macro_use]
mod registry;

// The policy table: one line per policy, `Variant(module)` (`src/<module>.rs`), in the order
// `config::SUPPORTED` lists them. Each line declares the module and adds the policy to
// `config::PolicyConfig`, `config::SUPPORTED` and the parser's table.
policies! {
    /// `pick_first`.
    PickFirst(pick_first),
    /// `round_robin`.
    RoundRobin(round_robin),
    /// `least_request_experimental`.
    LeastRequest(least_request),
    /// `weighted_round_robin`.
    WeightedRoundRobin(weighted_round_robin),
    /// `outlier_detection_experimental`, with its child.
    OutlierDetection(outlier_detection),
    /// `peak_ewma_experimental`.
    PeakEwma(peak_ewma),
    /// `envoy_peak_ewma`: Envoy's shipped balancer, as a reference.
    EnvoyPeakEwma(envoy_peak_ewma),
    /// `finagle_peak_ewma`: Finagle's balancer, as a reference.
    FinaglePeakEwma(finagle_peak_ewma),
}

use std::fmt;

pub use rand::RngCore;

/// Time in nanoseconds from an arbitrary origin chosen by the policy's owner.
pub type Nanos = u64;

/// Nanoseconds in one second.
pub const NANOS_PER_SEC: Nanos = 1_000_000_000;

/// An endpoint, identified by a small number chosen by the policy's owner (an index into its own
/// table of addresses or channels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EndpointId(pub u32);

impl fmt::Display for EndpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "endpoint {}", self.0)
    }
}

/// gRPC connectivity state of one endpoint's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Connectivity {
    /// Not connected and not trying to.
    Idle,
    /// Connecting.
    Connecting,
    /// Connected and able to take RPCs. Only READY endpoints are picked.
    Ready,
    /// The last connection attempt failed.
    TransientFailure,
}

/// Whether an RPC is unary or streaming. Latency-based estimators learn from unary RPCs only: a
/// stream's duration is not a latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RpcKind {
    /// One request, one response.
    Unary,
    /// A streaming RPC of any direction.
    Streaming,
}

/// How an RPC ended, in the coarse classes the policies care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// `OK`.
    Ok,
    /// `DEADLINE_EXCEEDED`: the RPC ran out of time. Still a latency sample for peak EWMA.
    DeadlineExceeded,
    /// `CANCELLED` by the client: not a latency sample.
    Cancelled,
    /// Any other non-OK status (`UNAVAILABLE`, `INTERNAL`, ...).
    Error,
}

impl Status {
    /// Whether outlier detection counts this as a success.
    pub fn is_ok(self) -> bool {
        self == Status::Ok
    }
}

/// An ORCA-style load report (`xds.data.orca.v3.OrcaLoadReport`): the fields the policies read.
/// A value of 0 means "not reported".
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadReport {
    /// CPU utilization, usually in `[0, 1]` (may exceed 1 on some platforms).
    pub cpu_utilization: f64,
    /// Application-defined utilization; preferred over CPU utilization when set.
    pub application_utilization: f64,
    /// Queries per second served.
    pub rps_fractional: f64,
    /// Errors per second.
    pub eps: f64,
}

/// How an RPC ended, reported to [`Policy::on_done`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// The RPC's final status.
    pub status: Status,
    /// Client-observed time from sending the request to the end of the RPC (for unary RPCs the
    /// response), in nanoseconds.
    pub elapsed: Nanos,
    /// A per-call ORCA load report from the response trailers, if any.
    pub load: Option<LoadReport>,
}

impl Outcome {
    /// An outcome without a load report.
    pub fn new(status: Status, elapsed: Nanos) -> Self {
        Outcome {
            status,
            elapsed,
            load: None,
        }
    }

    /// Attaches a per-call load report.
    pub fn with_load(mut self, load: LoadReport) -> Self {
        self.load = Some(load);
        self
    }
}

/// Proof that an RPC was sent to an endpoint. It must be handed back to [`Policy::on_done`] exactly
/// once; it cannot be cloned, so an RPC cannot be completed twice, and it names its endpoint, so it
/// cannot be completed against the wrong one.
#[must_use = "every picked RPC must be completed with Policy::on_done"]
#[derive(Debug, PartialEq, Eq)]
pub struct Ticket {
    endpoint: EndpointId,
    slot: u32,
    generation: u32,
    kind: RpcKind,
    method: u32,
}

impl Ticket {
    pub(crate) fn new(endpoint: EndpointId, slot: u32, generation: u32, kind: RpcKind) -> Self {
        Ticket {
            endpoint,
            slot,
            generation,
            kind,
            method: 0,
        }
    }

    /// The same ticket, for a call of `method`.
    pub(crate) fn with_method(mut self, method: u32) -> Self {
        self.method = method;
        self
    }

    /// The method this ticket was picked for ([`Policy::pick_method`]; 0 from [`Policy::pick`]).
    pub fn method(&self) -> u32 {
        self.method
    }

    /// The endpoint the RPC must be sent to.
    pub fn endpoint(&self) -> EndpointId {
        self.endpoint
    }

    /// The kind of RPC this ticket was picked for.
    pub fn kind(&self) -> RpcKind {
        self.kind
    }

    pub(crate) fn slot(&self) -> u32 {
        self.slot
    }

    pub(crate) fn generation(&self) -> u32 {
        self.generation
    }
}

/// The result of [`Policy::pick`], like a gRPC picker's result.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum Pick {
    /// Send the RPC to [`Ticket::endpoint`].
    Endpoint(Ticket),
    /// Nothing is READY yet but something is connecting: hold the RPC and pick again after the next
    /// connectivity change.
    Queue,
    /// Nothing is READY and nothing is connecting (or there are no endpoints): fail the RPC with
    /// `UNAVAILABLE`.
    Fail,
}

/// A load-balancing policy: a sans-IO state machine. See the [crate docs](crate) for the call
/// order.
pub trait Policy: Send + fmt::Debug {
    /// The policy's gRPC name, e.g. `"round_robin"`.
    fn name(&self) -> &'static str;

    /// Replaces the endpoint list. Endpoints already known keep their state; new ones start
    /// [`Connectivity::Idle`]; removed ones are forgotten, and their outstanding tickets complete
    /// harmlessly.
    fn set_endpoints(&mut self, now: Nanos, endpoints: &[EndpointId]);

    /// Reports a connectivity change of one endpoint. Unknown endpoints are ignored.
    fn on_connectivity(&mut self, now: Nanos, endpoint: EndpointId, state: Connectivity);

    /// Picks an endpoint for one RPC.
    fn pick(&mut self, now: Nanos, kind: RpcKind, rng: &mut dyn RngCore) -> Pick;

    /// Picks an endpoint for one RPC of `method`, an index the channel gives each method it
    /// calls (gRPC hands a picker the call's method: `PickInfo.FullMethodName` in Go,
    /// `PickSubchannelArgs.getMethodDescriptor()` in Java). Policies that score every call alike
    /// ignore it, which is the default.
    fn pick_method(
        &mut self,
        now: Nanos,
        kind: RpcKind,
        method: u32,
        rng: &mut dyn RngCore,
    ) -> Pick {
        let _ = method;
        self.pick(now, kind, rng)
    }

    /// Completes an RPC picked earlier.
    fn on_done(&mut self, now: Nanos, ticket: Ticket, outcome: Outcome);

    /// Delivers an out-of-band load report for `endpoint`. Policies that do not use load reports
    /// ignore it.
    fn on_load_report(&mut self, now: Nanos, endpoint: EndpointId, report: &LoadReport) {
        let _ = (now, endpoint, report);
    }

    /// If the policy wants out-of-band load reports, the period at which the owner should ask the
    /// endpoints for them.
    fn oob_reporting_period(&self) -> Option<Nanos> {
        None
    }

    /// If the policy wants out-of-band latency probes (lblab-only: peak_ewma's
    /// `lblabAblation.probeInterval`), how often the owner should send each READY endpoint one: a
    /// unary `grpc.health.v1.Health/Check` on the endpoint's own connection, at most one
    /// outstanding per endpoint. A probe is not a call: it is never picked, carries no load and
    /// gives no RTT sample; the owner reports it with [`Policy::on_probe_sent`] and
    /// [`Policy::on_probe_done`].
    fn probe_interval(&self) -> Option<Nanos> {
        None
    }

    /// A probe was sent to `endpoint` at `now`.
    fn on_probe_sent(&mut self, now: Nanos, endpoint: EndpointId) {
        let _ = (now, endpoint);
    }

    /// The probe sent to `endpoint` ended at `now`: `answered` if the endpoint answered it (with
    /// any status), false if it failed without an answer (the connection was refused or lost).
    fn on_probe_done(&mut self, now: Nanos, endpoint: EndpointId, answered: bool) {
        let _ = (now, endpoint, answered);
    }

    /// When the policy next wants [`Policy::on_timer`] to be called, if ever.
    fn next_timer(&self) -> Option<Nanos> {
        None
    }

    /// Runs the policy's periodic work due at or before `now`.
    fn on_timer(&mut self, now: Nanos, rng: &mut dyn RngCore) {
        let _ = (now, rng);
    }

    /// The policy's view of one endpoint, for reports and tests: its state as the policy sees it
    /// and its current cost where the policy has one (lower is better).
    fn endpoint_view(&self, now: Nanos, endpoint: EndpointId) -> Option<EndpointView>;
}

/// A policy's view of one endpoint, from [`Policy::endpoint_view`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EndpointView {
    /// Connectivity as the policy's picker sees it (an ejected endpoint is TRANSIENT_FAILURE).
    pub state: Connectivity,
    /// Outstanding RPCs the policy counts for this endpoint.
    pub outstanding: u32,
    /// The policy's cost for this endpoint (lower is better), if the policy has one.
    pub cost: Option<f64>,
}

/// Latest time seen by a policy: makes a clock that goes backwards harmless.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Clock {
    latest: Nanos,
}

impl Clock {
    /// Returns `max(now, latest seen)` and remembers it.
    #[inline]
    pub(crate) fn advance(&mut self, now: Nanos) -> Nanos {
        if now > self.latest {
            self.latest = now;
        }
        self.latest
    }

    /// The latest time seen, without advancing.
    #[inline]
    pub(crate) fn latest(&self) -> Nanos {
        self.latest
    }
}
