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
    /// A scenario does not validate with one of its seeds.
    #[error("{scenario}: {source}")]
    Seed {
        /// The scenario.
        scenario: String,
        /// Why.
        source: Box<lblab_model::FileError>,
    },
    /// The baseline and this run cannot be compared.
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
}

/// Why the baseline and this run cannot be compared. The settings a hint names are spelt as the
/// caller's `names` spelt them when the comparison was made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// The two ran different seed indices.
    #[error(
        "{scenario}/{policy}: the baseline has seed indices {baseline:?}, this run {now:?}; run as \
         many seeds as the baseline"
    )]
    SeedIndices {
        /// The scenario.
        scenario: String,
        /// The policy.
        policy: String,
        /// The baseline's seed indices.
        baseline: Vec<u64>,
        /// This run's.
        now: Vec<u64>,
    },
    /// A figure measured on one side only, or not at all.
    #[error(
        "{scenario}/{policy} seed {seed}: {metric} is {baseline} in the baseline and {now} now: {}",
        if *metric == "time_to_fair_s" {
            "a fault ends within one run and not the other; is it the same scenario?"
        } else {
            "the run measured no calls"
        }
    )]
    Unmeasured {
        /// The scenario.
        scenario: String,
        /// The policy.
        policy: String,
        /// The seed.
        seed: u64,
        /// The figure's column name.
        metric: &'static str,
        /// Its value in the baseline.
        baseline: f64,
        /// Its value now.
        now: f64,
    },
    /// Too few paired seeds for the confidence asked for.
    #[error(
        "{scenario}/{policy}: {seeds} paired seeds give an interval of at most {:.1} % \
         confidence, below the {:.1} % asked for; run more seeds (at least {needed})",
        100.0 * coverage,
        100.0 * confidence
    )]
    FewSeeds {
        /// The scenario.
        scenario: String,
        /// The policy.
        policy: String,
        /// The paired seeds.
        seeds: usize,
        /// The coverage they give.
        coverage: f64,
        /// The confidence asked for.
        confidence: f64,
        /// The seeds needed.
        needed: u64,
    },
    /// A policy of the baseline that this run did not run.
    #[error(
        "{scenario}/{policy} is in the baseline but was not run; run it, or write a new baseline \
         on purpose"
    )]
    NotRun {
        /// The scenario.
        scenario: String,
        /// The policy.
        policy: String,
    },
    /// No scenario and policy on both sides.
    #[error(
        "nothing to compare: the baseline holds the scenarios {} and this run {} (with its \
         policies); a renamed scenario or policy needs a new baseline, written on purpose",
        baseline.join(", "),
        ran.join(", ")
    )]
    NothingToCompare {
        /// The baseline's scenarios.
        baseline: Vec<String>,
        /// This run's.
        ran: Vec<String>,
    },
    /// A pair of runs made with different seeds.
    #[error(
        "{scenario}/{policy} seed index {seed_index}: the baseline ran seed {baseline}, this run \
         seed {now}: the scenario's `seed` changed since the baseline was written; write a new \
         baseline on purpose (or compare other draws with {seed_offset})"
    )]
    SeedChanged {
        /// The scenario.
        scenario: String,
        /// The policy.
        policy: String,
        /// The seed index.
        seed_index: u64,
        /// The baseline's seed.
        baseline: u64,
        /// This run's.
        now: u64,
        /// The setting that shifts the seeds, as spelt by the caller.
        seed_offset: &'static str,
    },
    /// A pair of runs of different lengths.
    #[error(
        "{scenario}/{policy} seed index {seed_index}: the baseline measured {} s after a warm-up \
         of {} s, this run {} s after {} s; give the {warmup} and {duration} the baseline was \
         written with, or write a new baseline on purpose",
        baseline.1, baseline.0, now.1, now.0
    )]
    Length {
        /// The scenario.
        scenario: String,
        /// The policy.
        policy: String,
        /// The seed index.
        seed_index: u64,
        /// The baseline's warm-up and measured duration, s.
        baseline: (f64, f64),
        /// This run's.
        now: (f64, f64),
        /// The warm-up setting, as spelt by the caller.
        warmup: &'static str,
        /// The duration setting, as spelt by the caller.
        duration: &'static str,
    },
}
