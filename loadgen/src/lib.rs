//! An open-loop tonic load generator, and the adapter that puts any lblab policy inside a tonic
//! client.
//!
//! - [`balance`]: [`Balancer`](balance::Balancer) and its tower
//!   [`PolicyService`](balance::PolicyService): one HTTP/2 connection per endpoint, an lblab
//!   [`Policy`](lblab_policy::Policy) picking among them, connectivity from the real connections,
//!   ORCA trailers fed back to the policy. A public API: any tonic application can use it (see
//!   `harness/examples/balanced_client.rs`, which also starts a fleet).
//! - [`run`]: one run of one scenario policy against a set of targets — open-loop arrivals paced by
//!   a precise dispatcher thread, latency from the intended send time, dispatch lateness apart,
//!   per-call deadlines, every request accounted for in the simulator's results schema, and the
//!   client's CPU time per call.
//! - [`tower_p2c`]: tower's own `p2c` + `PeakEwma` balancer as the reference policy
//!   `tower_p2c_peak_ewma`.
//!
//! - [`target`], [`transport`], [`method`], [`reflection`]: what lets it call someone else's
//!   service — `host:port` lists and `dns:///` names re-resolved during a run, TLS with rustls and
//!   the HTTP/2 probe before a run, and any unary method with its schema from server reflection
//!   or `.proto` files.
//!
//! This crate does not start servers (that is `lblab-backend`; `lblab-harness` runs the two
//! together) and holds no policy logic of its own. Its wire format comes from `lblab-wire`.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::{Duration, Instant};
//! let scenario = lblab_model::Scenario::load("scenarios/one-slow.toml".as_ref())?;
//! let targets = vec![lblab_loadgen::target::Target::of_addr("127.0.0.1:50051".parse()?)];
//! let options = lblab_loadgen::run::RunOptions::new(Instant::now() + Duration::from_secs(1));
//! let run = lblab_loadgen::run::run_policy(&scenario, &scenario.policies[0], &targets, &options)?;
//! println!("p99 {} ms", run.result.summary.p99_ms);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod balance;
pub mod cpu;
pub mod incidents;
pub mod machine;
pub mod metadata;
pub mod method;
pub mod reflection;
pub mod report;
pub mod run;
pub mod schedule;
pub mod target;
pub mod tower_p2c;
pub mod transport;

use lblab_message::setting::{Named, Names, Setting};

/// Why a load run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadgenError {
    /// A thread or runtime could not be started.
    #[error("{what}: {cause}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause (in the message, not a `source()`, so it is printed once).
        cause: std::io::Error,
    },
    /// The policy is not one the real harness runs.
    #[error("policy `{policy}` selects `{name}`, which the real harness does not run")]
    Unsupported {
        /// Policy label.
        policy: String,
        /// Selected policy name.
        name: String,
    },
    /// The target list is not one: an entry that is not `host:port`, a `dns:` target with
    /// others.
    #[error(transparent)]
    TargetList(#[from] target::TargetListError),
    /// A target that cannot be used: it does not resolve, or makes no URI.
    #[error("{target}: {problem}")]
    Target {
        /// The target as given.
        target: String,
        /// What is wrong.
        #[source]
        problem: target::TargetProblem,
    },
    /// The method or its request (`--call`, `--data`, `--proto`, `--protoset`).
    #[error(transparent)]
    Method(#[from] method::MethodError),
    /// The TLS settings.
    #[error(transparent)]
    Tls(#[from] transport::TlsError),
    /// Server reflection could not be asked: no connection to the target.
    #[error("server reflection: cannot connect to {addr}: {}", lblab_message::text::error_chain(source.as_ref()))]
    ReflectionUnreachable {
        /// The target's address.
        addr: std::net::SocketAddr,
        /// Why (the probe's, the connection's or the time-out's error).
        source: balance::BoxError,
    },
    /// The server answered reflection with an error (every target would say the same).
    #[error(transparent)]
    ReflectionRefused(#[from] ReflectionRefused),
    /// No target could be reached to ask for a schema.
    #[error(
        "no target could be asked for the schema of {service}: {}",
        unreachable.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    NoReflection {
        /// The service.
        service: String,
        /// Each target's [`LoadgenError::ReflectionUnreachable`].
        unreachable: Vec<LoadgenError>,
    },
    /// A policy's config that the load generator cannot build.
    #[error("policy {policy}: {source}")]
    Policy {
        /// The policy's label.
        policy: String,
        /// What is wrong.
        source: balance::BoxError,
    },
    /// A thread of the run panicked.
    #[error("the {0} thread panicked")]
    Panicked(&'static str),
    /// The workload's arrival schedule cannot be made.
    #[error("workload.rate: {0}")]
    Schedule(#[source] lblab_model::arrival::ExpError),
    /// No target accepted a connection: nothing could be measured.
    #[error(
        "no target could be connected to (tried for up to {waited:?}), so nothing can be measured: {}",
        targets.iter().map(|(t, why)| format!("{t} ({why})")).collect::<Vec<_>>().join(", ")
    )]
    Unreachable {
        /// How long connections were tried.
        waited: std::time::Duration,
        /// Each target and why it could not be reached (the connection's last error).
        targets: Vec<(String, String)>,
    },
}

/// A server that answered reflection with an error; the hint names the settings that give the
/// schema without it, spelt by whoever renders it ([`Named`]).
#[derive(Debug)]
pub struct ReflectionRefused {
    /// The target's address.
    pub addr: std::net::SocketAddr,
    /// The gRPC status's description.
    pub code: String,
    /// Its message.
    pub message: String,
}

impl Named for ReflectionRefused {
    fn named(&self, names: Names) -> String {
        format!(
            "server reflection at {}: {}: {}; without reflection, give the schema as .proto files \
             ({} FILE, {} DIR) or a compiled protoset ({} FILE)",
            self.addr,
            self.code,
            self.message,
            names(Setting::Proto),
            names(Setting::ImportPath),
            names(Setting::Protoset)
        )
    }
}

lblab_message::display_named!(ReflectionRefused);

impl std::error::Error for ReflectionRefused {}
