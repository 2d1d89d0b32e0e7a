//! A fleet of tonic gRPC servers that execute lblab's backend behaviour model in wall-clock time.
//!
//! Each backend of a scenario becomes a real gRPC server on its own TCP port (loopback by
//! default). Its behaviour is not re-implemented here: every server runs the model crate's
//! [`Backend`](lblab_model::backend::Backend) state machine — workers, FIFO queue, service-time
//! draws, and the fault timeline — and this crate only supplies wall-clock time and real sockets:
//!
//! - service delays end at the model's `done_at` on a [precise timer](timer) (tokio's 1 ms timer
//!   is too coarse for millisecond service times); the error actually given is measured per
//!   request ([`DelayAccuracy`]);
//! - a crash closes the listener and cuts every connection, and a restart binds the same port
//!   again; a black hole accepts calls and never answers; a fail-fast fault answers UNAVAILABLE;
//!   a full queue answers RESOURCE_EXHAUSTED; the group's network round trip is added as delay
//!   that holds no worker (half before arrival, half after the answer);
//! - every answer carries an ORCA load report from the model in the `endpoint-load-metrics-bin`
//!   trailer ([`orca`]), and every server offers the standard `grpc.health.v1.Health` service.
//!
//! The service is the lab's own `lblab.v1.Echo` ([`pb::echo`]): a unary `Unary` and a
//! server-streaming `ServerStream`.
//!
//! This crate is not a load generator (that is `lblab-loadgen`) and holds no policy.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let scenario = lblab_model::Scenario::load("scenarios/one-slow.toml".as_ref())?;
//! let fleet = lblab_backend::Fleet::start(&scenario.backends, &Default::default()).await?;
//! for (spec, addr) in scenario.backends.iter().zip(fleet.addrs()) {
//!     println!("{} {addr}", spec.name);
//! }
//! let accuracy = fleet.shutdown().await;
//! println!("delay error p99 {:.0} µs", accuracy.p99_us);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod fleet;
mod node;

pub use fleet::{DelayAccuracy, Fleet, FleetOptions};
pub use node::ReplyStream;

use lblab_message::setting::{Named, Names, Setting};
use lblab_model::backend::BackendParams;
use lblab_model::dist::Dist;
use lblab_model::fault::Timeline;
use lblab_model::scenario::BackendSpec;

/// Why the fleet could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// A socket or thread could not be set up.
    #[error("{what}: {cause}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause (in the message, not a `source()`, so it is printed once).
        cause: std::io::Error,
    },
    /// The fleet cannot listen where it was told to.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// The options make no sense for this fleet.
    #[error("{0}")]
    Config(String),
}

/// A fleet that cannot listen where it was told to; the setting that says where
/// ([`Setting::Listen`]) is spelt by whoever renders it ([`Named`]).
#[derive(Debug)]
pub enum ListenError {
    /// Backend `i` listens on `port + i`, and the last one would be past 65535.
    PastLastPort {
        /// The first backend's port.
        port: u16,
        /// How many backends.
        backends: usize,
    },
    /// Another process uses a backend's address.
    InUse {
        /// The backend's name.
        backend: String,
        /// Its address.
        addr: std::net::SocketAddr,
        /// The operating system's error (in the message, not a `source()`, so it is printed
        /// once).
        cause: std::io::Error,
    },
}

impl Named for ListenError {
    fn named(&self, names: Names) -> String {
        let listen = names(Setting::Listen);
        match self {
            ListenError::PastLastPort { port, backends } => {
                format!("{listen} port {port} + {backends} backends runs past 65535")
            }
            ListenError::InUse {
                backend,
                addr,
                cause,
            } => format!(
                "backend {backend} cannot listen on {addr}: another process is using that \
                 address (choose a free port with {listen}, or port 0 for free ports): {cause}"
            ),
        }
    }
}

lblab_message::display_named!(ListenError);

impl std::error::Error for ListenError {}

/// Backends that answer at once: the same count and names as `backends`, no service time, no
/// faults, no network delay, and enough workers that nothing queues. Latency against them is the
/// harness's own floor.
pub fn zero_delay(backends: &[BackendSpec]) -> Vec<BackendSpec> {
    backends
        .iter()
        .map(|b| BackendSpec {
            network_rtt: 0,
            params: BackendParams {
                workers: 1_000_000,
                queue_limit: 0,
                service_time: Dist::Constant(0.0),
                stream_duration: Dist::Constant(0.0),
                method_factors: Vec::new(),
            },
            timeline: Timeline::default(),
            median_service: 0,
            ..b.clone()
        })
        .collect()
}
