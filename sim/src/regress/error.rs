//! [`RegressError`]: why a regression run or comparison could not be made.

use crate::SimError;

/// Why a regression run or comparison could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegressError {
    /// A simulation failed.
    #[error("{scenario}: {source}")]
    Sim {
        /// The scenario.
        scenario: String,
        /// What failed.
        source: SimError,
    },
    /// The run was interrupted before every simulation ended.
    #[error("interrupted: {done} of {total} simulations ran; nothing was compared or written")]
    Interrupted {
        /// Simulations that ended.
        done: usize,
        /// Simulations planned.
        total: usize,
    },
    /// The baseline file could not be read or written.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The baseline file could not be written.
    #[error("{file}: {message}")]
    Write {
        /// The file.
        file: String,
        /// What failed.
        message: String,
    },
    /// A baseline row does not parse.
    #[error("{file}:{line}: {message}")]
    Baseline {
        /// The file.
        file: String,
        /// 1-based line.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The baseline and this run cannot be compared.
    #[error("{0}")]
    Mismatch(String),
}
