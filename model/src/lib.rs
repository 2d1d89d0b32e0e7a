//! What lblab's simulator and real harness share: the scenario format and the backend behaviour
//! model. What a run records, and how it is read back, is `lblab_record`'s.
//!
//! - [`scenario`]: the TOML scenario file ([`Scenario::load`]) and its validation.
//! - [`fault`]: faults on a timeline, turned into a piecewise-constant speed per backend.
//! - [`group`] and [`limits`]: a `[[fleet]]` group and the numeric limits of a scenario, on a
//!   floor of their own because both the scenario and the fault checks use them.
//! - [`backend`]: a sans-IO backend (workers, queue, service times, faults) that the simulator
//!   runs in virtual time and `lblab backend` runs in wall-clock time.
//! - [`method`]: a workload's methods, each with its share of calls and its work factor.
//! - [`probe`]: what an out-of-band probe (a health Check, an HTTP/2 PING) sees of each fault.
//! - [`vary`]: a scenario with fields set by dotted path, for sweeps over the scenario space.
//! - `testing` (cargo feature `testing`): `ScenarioBuilder`, small scenarios for tests.
//!
//! This crate does no I/O except reading scenario files and service-config files.
//!
//! ```
//! let scenario = lblab_model::Scenario::parse(r#"
//!     name = "tiny"
//!     [workload]
//!     rate = 100
//!     duration = "2s"
//!     [[fleet]]
//!     name = "main"
//!     count = 2
//!     service_time = { dist = "constant", value = "1ms" }
//!     [[policies]]
//!     name = "rr"
//!     config = '{"loadBalancingConfig":[{"round_robin":{}}]}'
//! "#)?;
//! assert_eq!(scenario.backends.len(), 2);
//! # Ok::<(), lblab_model::FileError>(())
//! ```

#![warn(missing_docs)]

pub mod arrival;
pub mod backend;
pub mod backoff;
pub mod budget;
pub mod dist;
pub mod fault;
pub mod find;
pub mod group;
pub mod limits;
mod locate;
pub mod method;
pub mod overrides;
pub mod probe;
pub mod scenario;
// Test helpers: compiled for this crate's own tests, and for other crates' tests through the
// `testing` feature (a dev-dependency), never into a release build.
mod summary;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
/// Durations in scenario files, one floor down in `lblab_record` (a run's results and a sweep's
/// points are read back with them too).
pub use lblab_message::setting;
pub mod units;
pub mod vary;

pub use scenario::Scenario;

/// An error in a scenario file (or any file lblab reads or writes): one type for all of them.
pub use lblab_message::FileError;
