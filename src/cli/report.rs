//! `lblab report`: regenerate the evidence documents (results/README.md, the per-scenario pages,
//! the sweeps page and the gRFC draft) and their headline charts from the committed result files;
//! or, with `--merge`, combine real runs from several load generators into one run folder.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use lblab_record::layout;

/// Arguments of `lblab report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Project root: the scenario and results folders below are relative to it.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Folder with the scenario files, relative to the root.
    #[arg(long, default_value = "scenarios")]
    scenarios: String,
    /// Folder with the results (`<scenario>/sim`, `<scenario>/compare`, `sweeps/`, `bench/`),
    /// relative to the root; the documents are written into it.
    #[arg(long, default_value = "results")]
    results: String,
    /// Check that the committed documents are what the files give, without writing anything;
    /// exit 1 and name the first document that differs.
    #[arg(long, conflicts_with = "merge")]
    check: bool,
    /// Merge these run folders into one instead: real runs of one scenario (`lblab loadgen
    /// --out DIR`, e.g. one per load-generator host) with the same policies and lengths. The
    /// histograms are added (never percentiles averaged), the counts summed, and the runs aligned
    /// by the start each one's hlogs record.
    #[arg(long, num_args = 1.., value_name = "DIR")]
    merge: Vec<PathBuf>,
    /// With --merge: the merged run folder [default: lblab-out/merged].
    #[arg(long, requires = "merge", value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    budget: super::args::Budget,
    #[command(flatten)]
    charts: super::args::Charts,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.merge.is_empty() {
        args.charts.apply();
        return merge(&args.merge, args.out.as_deref(), args.budget.memory_budget);
    }
    for (flag, folder) in [
        ("--scenarios", &args.scenarios),
        ("--results", &args.results),
    ] {
        let path = args.root.join(folder);
        anyhow::ensure!(
            path.is_dir(),
            "{flag} {folder}: no such folder ({} under --root {})",
            path.display(),
            args.root.display()
        );
    }
    let evidence = lblab_evidence::Evidence::load(&args.root, &args.scenarios, &args.results)
        .context("reading the results")?;
    let docs = lblab_evidence::documents(&evidence);
    let results = args.root.join(&args.results);
    if args.check {
        for d in &docs {
            let path = results.join(&d.path);
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            if committed != d.text {
                eprintln!(
                    "{} differs from what `lblab report` generates from the result files",
                    path.display()
                );
                return Ok(ExitCode::FAILURE);
            }
        }
        outln!("{} documents up to date", docs.len());
        return Ok(ExitCode::SUCCESS);
    }
    let charts = lblab_evidence::write_charts(&evidence, &results)?;
    lblab_evidence::write_documents(&docs, &results)?;
    outln!(
        "wrote {} documents and {} charts under {} ({} scenarios)",
        docs.len(),
        charts.len(),
        results.display(),
        evidence.scenarios.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// `lblab report --merge DIR... [--out OUT]`: writes the merged run folder (the data files and
/// the charts, as every run command does) and prints its table and each run's start offset.
fn merge(dirs: &[PathBuf], out: Option<&Path>, budget: u64) -> anyhow::Result<ExitCode> {
    let out = out.map_or_else(
        || Path::new(layout::SCRATCH).join("merged"),
        Path::to_path_buf,
    );
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if let Some(d) = dirs.iter().find(|d| same(d, &out)) {
        anyhow::bail!(
            "--out {}: is one of the folders to merge ({}); give another folder",
            out.display(),
            d.display()
        );
    }
    let merged = lblab_record::merge_runs(dirs, budget).context("merging runs")?;
    for w in &merged.warnings {
        eprintln!("warning: {w}");
    }
    let _out_dir = lblab_lab::out_dir::prepare_dir(&out)?;
    lblab_lab::run_folder::write(&super::budgets(), &out, &merged.summary, &merged.results)
        .context("writing the merged run")?;
    merge_csv(dirs, &out)?;
    super::print_table(&merged.summary);
    for (key, value) in &merged.summary.notes {
        if key.contains(": start offset of ") {
            outln!("{key}: {value}");
        }
    }
    outln!("merged {} runs into {}", dirs.len(), out.display());
    Ok(ExitCode::SUCCESS)
}

/// `targets.csv` and `statuses.csv` of the merged runs, when every run has one (load-generator
/// runs have both, `lblab real` runs a `statuses.csv`): calls added, shares computed again.
fn merge_csv(dirs: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    use lblab_record::{StatusRow, TargetRow};
    let all = |file: &str| dirs.iter().all(|d| d.join(file).is_file());
    if all(layout::TARGETS_CSV) {
        let runs = dirs
            .iter()
            .map(|d| TargetRow::read_csv(&d.join(layout::TARGETS_CSV)))
            .collect::<Result<Vec<_>, _>>()?;
        let csv = TargetRow::to_csv(&TargetRow::merge(&runs)).context("encoding targets.csv")?;
        lblab_record::write_atomic(&out.join(layout::TARGETS_CSV), &csv)?;
    }
    if all(layout::STATUSES_CSV) {
        let runs = dirs
            .iter()
            .map(|d| StatusRow::read_csv(&d.join(layout::STATUSES_CSV)))
            .collect::<Result<Vec<_>, _>>()?;
        let csv = StatusRow::to_csv(&StatusRow::merge(&runs)).context("encoding statuses.csv")?;
        lblab_record::write_atomic(&out.join(layout::STATUSES_CSV), &csv)?;
    }
    Ok(())
}
