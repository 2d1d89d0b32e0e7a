//! Draws every chart from a small synthetic run into a folder, to look at them:
//!
//! ```text
//! cargo run -p lblab-report --example demo -- /tmp/lblab-demo
//! ```

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

#[path = "../tests/support/mod.rs"]
#[allow(dead_code)] // the tests' helpers
mod support;

use lblab_report::{write_compare_chart, write_run_charts, ChartName, ComparePoint};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "lblab-demo".to_string()),
    );
    let (summary, results) = support::run();
    let mut written = write_run_charts(&dir, &summary, &results)?;
    written.extend(support::write_sweep_heatmap(&dir)?);
    let points: Vec<ComparePoint> = summary
        .rows
        .iter()
        .map(|r| ComparePoint {
            policy: r.policy.clone(),
            sim_p50_ms: r.p50_ms,
            sim_p99_ms: r.p99_ms,
            // Stand-in "real" numbers: the simulated ones plus a harness overhead.
            real_p50_ms: r.p50_ms * 1.12 + 0.2,
            real_p99_ms: r.p99_ms * 1.2 + 0.5,
            sim_p99_interval: None,
            real_p99_range: None,
        })
        .collect();
    written.extend(write_compare_chart(
        &dir.join(ChartName::Compare.stem()),
        "slow-backend — real vs simulated latency",
        &points,
    )?);
    for path in written {
        println!("{}", path.display());
    }
    Ok(())
}
