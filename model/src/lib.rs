//! What lblab's simulator and real harness share: the scenario format, the backend behaviour
//! model and the results schema.
//!
//! - [`scenario`]: the TOML scenario file ([`Scenario::load`]) and its validation.
//! - [`fault`]: faults on a timeline, turned into a piecewise-constant speed per backend.
//! - [`backend`]: a sans-IO backend (workers, queue, service times, faults) that the simulator
//!   runs in virtual time and `lblab backend` runs in wall-clock time.
//! - [`results`]: HdrHistogram recording and the files every run writes.
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

pub mod backend;
pub mod dist;
pub mod fault;
pub mod results;
pub mod scenario;
pub mod units;

pub use scenario::Scenario;

/// An error in a scenario file or while writing results.
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
    /// The file is not valid TOML or does not match the schema (the message has line and column).
    #[error("{file}: {message}")]
    Parse {
        /// The file.
        file: String,
        /// What the parser said, with the position.
        message: String,
    },
    /// A value parses but makes no sense.
    #[error("{file}: `{field}`: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// Dotted path of the field, e.g. `fleet[1].workers`.
        field: String,
        /// What is wrong and what would be valid.
        message: String,
    },
}

impl ModelError {
    pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Self {
        ModelError::Invalid { file: String::new(), field: field.to_string(), message: message.into() }
    }

    /// Names the file the error is in.
    pub fn in_file(self, name: &str) -> Self {
        match self {
            ModelError::Parse { message, .. } => ModelError::Parse { file: name.into(), message },
            ModelError::Invalid { field, message, .. } => {
                ModelError::Invalid { file: name.into(), field, message }
            }
            other => other,
        }
    }
}
