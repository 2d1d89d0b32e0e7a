//! The heatmaps of a peak-EWMA parameter grid (`lblab sweep` without `--vary`).

use std::path::{Path, PathBuf};

use crate::chart::heatmap::write_heatmap;
use crate::name::ChartName;
use crate::ReportError;

/// One point of a peak-EWMA parameter grid (`lblab sweep` without `--vary`), as its
/// `sweep.csv` holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct GridCell {
    /// `decayTime`, as written (`10s`).
    pub decay_time: String,
    /// `choiceCount`.
    pub choice_count: u32,
    /// `defaultRtt`, as written (`0.03s`).
    pub default_rtt: String,
    /// The ablation variant, `decay+sampling` (`time_weighted+distinct`).
    pub ablation: String,
    /// p99 latency, ms.
    pub p99_ms: f64,
}

/// Distinct values in order of first appearance.
fn distinct<T: PartialEq + Clone>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Writes one heatmap of p99 per `defaultRtt` of a parameter grid into `dir`,
/// `heatmap_p99_rtt<defaultRtt with _ for .>.{png,svg}`: x = `decayTime`, y = `choiceCount` ×
/// variant, the axes in order of first appearance in `cells` (the grid's order). Returns the
/// paths.
pub fn write_grid_heatmaps(
    dir: &Path,
    scenario: &str,
    cells: &[GridCell],
) -> Result<Vec<PathBuf>, ReportError> {
    let decay_times = distinct(cells.iter().map(|c| c.decay_time.clone()));
    let choices = distinct(cells.iter().map(|c| c.choice_count));
    let ablations = distinct(cells.iter().map(|c| c.ablation.clone()));
    let rtts = distinct(cells.iter().map(|c| c.default_rtt.clone()));
    let mut y_keys = Vec::new();
    for a in &ablations {
        for n in &choices {
            y_keys.push((*n, a.clone()));
        }
    }
    let y_labels: Vec<String> = y_keys
        .iter()
        .map(|(n, a)| format!("choices={n} {a}"))
        .collect();
    let mut written = Vec::new();
    for rtt in &rtts {
        let values: Vec<Vec<f64>> = y_keys
            .iter()
            .map(|(n, a)| {
                decay_times
                    .iter()
                    .map(|d| {
                        cells
                            .iter()
                            .find(|c| {
                                &c.decay_time == d
                                    && c.choice_count == *n
                                    && &c.ablation == a
                                    && &c.default_rtt == rtt
                            })
                            .map_or(f64::NAN, |c| c.p99_ms)
                    })
                    .collect()
            })
            .collect();
        let name = ChartName::GridHeatmap {
            default_rtt: rtt.clone(),
        };
        let title = format!("{scenario}: peak_ewma p99 (ms), defaultRtt {rtt}");
        written.extend(write_heatmap(
            &dir.join(name.stem()),
            &title,
            "decayTime",
            &decay_times,
            "variant",
            &y_labels,
            &values,
            "p99 ms",
        )?);
    }
    Ok(written)
}
