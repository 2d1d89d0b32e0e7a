//! Every link the documents print, built in one place: a scenario folder's files from the results
//! layout ([`Layout`] and its file names), charts from [`ChartName`], the evidence tree's own
//! folders and files from the names below; and the sim-vs-real agreement rule worded from the
//! constants that decide it. A document spells no path and no tolerance by hand.

use std::path::{Path, PathBuf};

use lblab_record::{layout, Layout, AGREEMENT_ABSOLUTE_MS, AGREEMENT_RELATIVE};
use lblab_report::{ChartName, Format};

use crate::fmt::{param, param_pct};

/// Every document's file name: `README.md` (the evidence document, a scenario's page, the sweeps
/// page).
pub const README: &str = "README.md";
/// The folder of the committed sweeps over the scenario space, `sweeps/`.
pub const SWEEPS: &str = "sweeps";
/// The repeated real runs' ranges, `range.csv` in a scenario's `real-repeat/` (written by
/// `scripts/real-repeat.sh`).
pub const RANGE_CSV: &str = "range.csv";
/// The pick benchmark's figures, `bench/policy-pick.csv`.
pub const PICK_BENCH_CSV: &str = "bench/policy-pick.csv";
/// The folder of the real gRPC clients' interop runs, `interop/`.
pub const INTEROP: &str = "interop";
/// The folder of anomalies kept apart from the canonical scenarios, `anomalies/`.
pub const ANOMALIES: &str = "anomalies";
/// The design search's candidates, one folder per design set (`design/candidates/`, written by
/// `scripts/design-candidates.sh`).
pub const DESIGN_CANDIDATES: &str = "design/candidates";

/// A relative path as a link target: its parts joined with `/` on every platform.
fn target(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// A scenario folder seen from its own page (every path relative to it).
fn here() -> Layout {
    Layout::new("")
}

/// `` [`path`](path) ``: a file or folder, named by its path.
pub fn code(path: &str) -> String {
    format!("[`{path}`]({path})")
}

/// A scenario's page from the evidence document: `<name>/README.md`.
pub fn page(name: &str) -> String {
    format!("{name}/{README}")
}

/// `[name](name/README.md)`: a scenario's page, named by the scenario.
pub fn scenario(name: &str) -> String {
    format!("[{name}]({})", page(name))
}

/// `` [`name`](name/README.md) ``: a scenario's page, named as code.
pub fn scenario_code(name: &str) -> String {
    format!("[`{name}`]({})", page(name))
}

/// A file of the simulated run, from the scenario's page: `sim/<file>`.
pub fn sim(file: &str) -> String {
    target(&here().sim().join(file))
}

/// A file of the grid sweep, from the scenario's page: `sweep/<file>`.
pub fn sweep(file: &str) -> String {
    target(&here().sweep().join(file))
}

/// A file of the compared real run, from the scenario's page: `compare/real/<file>`.
pub fn compare_real(file: &str) -> String {
    target(&here().compare().real().join(file))
}

/// A file of the compared simulated run, from the scenario's page: `compare/sim/<file>`.
pub fn compare_sim(file: &str) -> String {
    target(&here().compare().sim().join(file))
}

/// The comparison's `compare/compare.csv`, from the scenario's page.
pub fn compare_csv() -> String {
    target(&here().compare().compare_csv())
}

/// The repeated real runs' ranges, from the scenario's page: `real-repeat/range.csv`.
pub fn repeat_range() -> String {
    target(&here().real_repeat().join(RANGE_CSV))
}

/// The repeated real runs' ranges of scenario `name`, from the evidence document.
pub fn repeat_range_of(name: &str) -> String {
    target(&Layout::new(name).real_repeat().join(RANGE_CSV))
}

/// A chart (PNG) in `dir`, relative to the page: e.g. `compare/real/p99_over_time.png`.
pub fn chart(dir: &Path, name: ChartName) -> String {
    target(&name.path(dir, Format::Png))
}

/// A chart of the simulated run, from the scenario's page: `sim/<chart>.png`.
pub fn sim_chart(name: ChartName) -> String {
    chart(&here().sim(), name)
}

/// A chart of the compared real run, from the scenario's page: `compare/real/<chart>.png`.
pub fn compare_real_chart(name: ChartName) -> String {
    chart(&here().compare().real(), name)
}

/// The comparison chart, from the scenario's page: `compare/compare.png`.
pub fn compare_chart() -> String {
    chart(here().compare().root(), ChartName::Compare)
}

/// A sweep's folder, from the evidence document: `sweeps/<name>/`.
pub fn sweep_dir(name: &str) -> String {
    format!("{}/", target(&Path::new(SWEEPS).join(name)))
}

/// `` [`name/`](sweeps/name/) ``: a sweep's folder, from the evidence document.
pub fn sweep_link(name: &str) -> String {
    format!("[`{name}/`]({})", sweep_dir(name))
}

/// A chart of a sweep, from the evidence document: `sweeps/<name>/<chart>.png`.
pub fn sweep_chart(name: &str, chart_name: ChartName) -> String {
    chart(&PathBuf::from(SWEEPS).join(name), chart_name)
}

/// The sweeps page, from the evidence document: `sweeps/README.md`.
pub fn sweeps_page() -> String {
    format!("{SWEEPS}/{README}")
}

/// A file of an anomaly's run, from a scenario's page: `../anomalies/<name>/<file>`.
pub fn anomaly(name: &str, file: &str) -> String {
    target(&Path::new("..").join(ANOMALIES).join(name).join(file))
}

/// An anomaly's folder, from a scenario's page: `../anomalies/<name>/`.
pub fn anomaly_dir(name: &str) -> String {
    format!("{}/", target(&Path::new("..").join(ANOMALIES).join(name)))
}

/// A chart of the evidence document itself (a stem of `headline::CHARTS`): `<stem>.png`.
pub fn png(stem: &str) -> String {
    format!("{stem}.{}", Format::Png.extension())
}

/// The report of a real gRPC client's interop run, from the evidence document:
/// `interop/<client>.md`.
pub fn interop_page(client: &str) -> String {
    format!("{INTEROP}/{client}.md")
}

/// A folder of the repository outside `results/`, from the evidence document, as
/// `` [`dir/`](../dir/README.md) ``.
pub fn repo_dir(dir: &str) -> String {
    format!("[`{dir}/`](../{dir}/{README})")
}

/// The agreement rule's relative tolerance in words: `20 %`.
pub fn agreement_relative() -> String {
    param_pct(AGREEMENT_RELATIVE)
}

/// The agreement rule's absolute tolerance, in ms, in words: `1`.
pub fn agreement_absolute_ms() -> String {
    param(AGREEMENT_ABSOLUTE_MS)
}

/// The sim-vs-real agreement rule in words, from the constants that decide it:
/// `±20 % or 1 ms`.
pub fn agreement_rule() -> String {
    format!(
        "±{} or {} ms",
        agreement_relative(),
        agreement_absolute_ms()
    )
}

/// The files the layout names, for the documents' prose.
pub use layout::{
    FAILURES_CSV, HARNESS_JSON, INTERVALS_CSV, SUMMARY_JSON, SWEEP_CSV, TIMESERIES_CSV,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_the_paths_the_documents_always_printed() {
        assert_eq!(compare_real(FAILURES_CSV), "compare/real/failures.csv");
        assert_eq!(compare_sim(SUMMARY_JSON), "compare/sim/summary.json");
        assert_eq!(compare_csv(), "compare/compare.csv");
        assert_eq!(sim(INTERVALS_CSV), "sim/intervals.csv");
        assert_eq!(sweep(SWEEP_CSV), "sweep/sweep.csv");
        assert_eq!(repeat_range(), "real-repeat/range.csv");
        assert_eq!(
            repeat_range_of("one-slow"),
            "one-slow/real-repeat/range.csv"
        );
        assert_eq!(sim_chart(ChartName::Spectrum), "sim/spectrum.png");
        assert_eq!(
            compare_real_chart(ChartName::P99OverTime),
            "compare/real/p99_over_time.png"
        );
        assert_eq!(compare_chart(), "compare/compare.png");
        assert_eq!(sweep_dir("slow-share"), "sweeps/slow-share/");
        assert_eq!(
            sweep_chart("utilization", ChartName::SweepP99),
            "sweeps/utilization/p99.png"
        );
        assert_eq!(anomaly("x", FAILURES_CSV), "../anomalies/x/failures.csv");
        assert_eq!(agreement_rule(), "±20 % or 1 ms");
        assert_eq!(interop_page("node"), "interop/node.md");
        assert_eq!(png("summary-p99-vs-oracle"), "summary-p99-vs-oracle.png");
        assert_eq!(
            repo_dir("conformance"),
            "[`conformance/`](../conformance/README.md)"
        );
    }
}
