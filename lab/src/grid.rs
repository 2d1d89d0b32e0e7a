//! `lblab sweep`'s peak-EWMA grid: peak-EWMA's parameters and ablation switches on one scenario,
//! point by point in parallel; `sweep.csv`, `summary.json` and one p99 heatmap per defaultRtt.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use lblab_model::Scenario;
use lblab_policy::duration;
use lblab_record::{layout, write_atomic, Mode, RunSummary};
use lblab_sim::sweep::{ablation_name, Grid, GridRow};

use crate::out_dir;

use crate::error::{ensure, Context, Result};
use crate::{Exit, Lab};

/// Values one grid axis may have: a grid is their product, simulated point by point.
pub const MAX_AXIS: usize = 64;

/// Rejects an axis (`axis` names it in the error, as the caller spells it) with duplicates or
/// too many values.
pub fn check_axis<T: PartialEq + std::fmt::Debug>(axis: &str, values: &[T]) -> Result<()> {
    ensure!(
        values.len() <= MAX_AXIS,
        "{axis}: {} values; at most {MAX_AXIS} per axis",
        values.len()
    );
    for (i, v) in values.iter().enumerate() {
        ensure!(!values[..i].contains(v), "{axis}: {v:?} is listed twice");
    }
    Ok(())
}

/// Runs `grid` on `scenario` on `jobs` threads and writes its files into `dir`, printing the
/// best configuration (each line to `out`).
pub fn run(
    lab: &Lab,
    scenario: &Scenario,
    grid: &Grid,
    dir: &Path,
    jobs: usize,
    out: &mut dyn FnMut(&str),
) -> Result<Exit> {
    let _out_dir = out_dir::prepare_dir(dir)?;
    let points = grid.points();
    crate::errln!(
        "sweeping {} configurations of peak_ewma on {} with {jobs} threads",
        points.len(),
        scenario.file.name
    );
    let stop = lab.stop;
    let started = Instant::now();
    let bar = crate::progress::Progress::new(points.len() as u64, "configurations");
    let progress = |n: usize| bar.set(n as u64);
    let cells = lblab_sim::sweep::run(scenario, &points, jobs, Some(stop), &progress)?;
    drop(bar);
    let partial = stop.load(Ordering::Relaxed)
        || cells.len() < points.len()
        || cells.iter().any(|c| c.partial);

    let rows: Vec<GridRow> = cells.iter().map(GridRow::of).collect();
    let csv = GridRow::to_csv(&rows).context("writing sweep.csv")?;
    write_atomic(&dir.join(layout::SWEEP_CSV), &csv)?;
    // The results schema every mode writes: one row per grid point, labelled with its parameters.
    let mut summary = RunSummary::of(
        scenario.run_head(),
        Mode::Sweep,
        &[],
        partial,
        vec![("grid_points".into(), points.len().to_string())],
    );
    summary.rows = cells
        .iter()
        .map(|c| lblab_record::SummaryRow {
            policy: c.point.label(),
            ..c.summary.clone()
        })
        .collect();
    let json = serde_json::to_string_pretty(&summary)?;
    write_atomic(&dir.join(layout::SUMMARY_JSON), (json + "\n").as_bytes())?;

    // One heatmap of p99 per defaultRtt (the report crate draws them, from the values as
    // sweep.csv holds them, so that they can be redrawn from it).
    let grid_cells: Vec<lblab_report::GridCell> = cells
        .iter()
        .map(|c| lblab_report::GridCell {
            decay_time: duration::format(c.point.0.decay_time),
            choice_count: c.point.0.choice_count,
            default_rtt: duration::format(c.point.0.default_rtt),
            ablation: ablation_name(c.point.0.ablation),
            p99_ms: format!("{:.3}", c.summary.p99_ms)
                .parse()
                .unwrap_or(f64::NAN),
        })
        .collect();
    lblab_report::write_grid_heatmaps(dir, &scenario.file.name, &grid_cells)
        .with_context(|| format!("drawing the heatmaps in {}", dir.display()))?;
    let best = cells
        .iter()
        .min_by(|a, b| a.summary.p99_ms.total_cmp(&b.summary.p99_ms));
    out(&format!(
        "{} configurations in {:.1}s",
        cells.len(),
        started.elapsed().as_secs_f64()
    ));
    if let Some(best) = best {
        out(&format!(
            "lowest p99: {:.2} ms with {}",
            best.summary.p99_ms,
            best.point.label()
        ));
    }
    out(&format!("wrote {}", dir.display()));
    Ok(Exit::of(partial))
}
