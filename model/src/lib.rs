//! What lblab's simulator and real harness share: the scenario format, the backend behaviour
//! model and the results schema.
//!
//! - [`scenario`]: the TOML scenario file ([`Scenario::load`]) and its validation.
//! - [`fault`]: faults on a timeline, turned into a piecewise-constant speed per backend.
//! - [`group`] and [`limits`]: a `[[fleet]]` group and the numeric limits of a scenario, on a
//!   floor of their own because both the scenario and the fault checks use them.
//! - [`backend`]: a sans-IO backend (workers, queue, service times, faults) that the simulator
//!   runs in virtual time and `lblab backend` runs in wall-clock time.
//! - [`results`]: HdrHistogram recording and the files every run writes.
//! - [`method`]: a workload's methods, each with its share of calls and its work factor.
//! - [`vary`]: a scenario with fields set by dotted path, for sweeps over the scenario space.
//! - [`stats`]: medians and confidence intervals across seeds.
//! - `testing` (cargo feature `testing`): `ScenarioBuilder`, small scenarios for tests.
//!
//! This crate does no I/O except reading scenario files and writing results files.
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
//! # Ok::<(), lblab_model::ModelError>(())
//! ```

#![warn(missing_docs)]

pub mod arrival;
pub mod backend;
pub mod backoff;
pub mod budget;
pub mod dist;
pub mod fault;
pub mod group;
pub mod limits;
mod locate;
pub mod method;
pub mod overrides;
pub mod results;
pub mod scenario;
pub mod stats;
// Test helpers: compiled for this crate's own tests, and for other crates' tests through the
// `testing` feature (a dev-dependency), never into a release build.
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod units;
pub mod vary;

pub use scenario::Scenario;

/// An error in a scenario file or while writing results.
///
/// Errors in a scenario name the file, the field (a dotted path such as `fleet[1].workers`) and,
/// when the text is at hand, the line and column, like a compiler:
/// ``one-slow.toml:14:11: `fleet[0].count`: must be at least 1``.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A file could not be read or written.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the schema.
    #[error("{}{message}", location(file, field.as_deref(), *position))]
    Parse {
        /// The file.
        file: String,
        /// Dotted path of the field the parser stopped at, when it can be told.
        field: Option<String>,
        /// 1-based line and column.
        position: Option<(usize, usize)>,
        /// What the parser said.
        message: String,
    },
    /// A value parses but makes no sense.
    #[error("{}{message}", location(file, Some(field), *position))]
    Invalid {
        /// The file.
        file: String,
        /// Dotted path of the field, e.g. `fleet[1].workers`.
        field: String,
        /// 1-based line and column of the field in the file, when known.
        position: Option<(usize, usize)>,
        /// What is wrong and what would be valid.
        message: String,
    },
}

/// `file:line:column: `field`: ` (the parts that are known).
fn location(file: &str, field: Option<&str>, position: Option<(usize, usize)>) -> String {
    let mut s = String::new();
    match (file.is_empty(), position) {
        (false, Some((line, col))) => s.push_str(&format!("{file}:{line}:{col}: ")),
        (false, None) => s.push_str(&format!("{file}: ")),
        (true, Some((line, col))) => s.push_str(&format!("line {line}, column {col}: ")),
        (true, None) => {}
    }
    if let Some(field) = field.filter(|f| !f.is_empty()) {
        s.push_str(&format!("`{field}`: "));
    }
    s
}

impl ModelError {
    pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Self {
        ModelError::Invalid {
            file: String::new(),
            field: field.to_string(),
            position: None,
            message: message.into(),
        }
    }

    /// Names the file the error is in.
    pub fn in_file(self, name: &str) -> Self {
        match self {
            ModelError::Parse {
                field,
                position,
                message,
                ..
            } => ModelError::Parse {
                file: name.into(),
                field,
                position,
                message,
            },
            ModelError::Invalid {
                field,
                position,
                message,
                ..
            } => ModelError::Invalid {
                file: name.into(),
                field,
                position,
                message,
            },
            other => other,
        }
    }

    /// The dotted path of the offending field, if the error has one.
    pub fn field(&self) -> Option<&str> {
        match self {
            ModelError::Parse { field, .. } => field.as_deref(),
            ModelError::Invalid { field, .. } => Some(field),
            ModelError::Io { .. } => None,
        }
    }

    /// The 1-based line and column of the error in its file, if known.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            ModelError::Parse { position, .. } | ModelError::Invalid { position, .. } => *position,
            ModelError::Io { .. } => None,
        }
    }
}
