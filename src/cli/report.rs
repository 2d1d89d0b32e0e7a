//! `lblab report`: regenerate the evidence documents (results/README.md, the per-scenario pages,
//! the sweeps page and the gRFC draft) and their headline charts from the committed result files;
//! or, with `--merge`, combine real runs from several load generators into one run folder.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
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
    budgets: super::args::Budgets,
}

/// The results folder as the flags give it, for messages.
fn results_dir_display(args: &Args) -> String {
    args.root.join(&args.results).display().to_string()
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.merge.is_empty() {
        let lab = super::run_lab(&args.budgets);
        lblab_lab::merge::run(&lab, &args.merge, args.out.as_deref(), &mut super::say)?;
        return Ok(super::exit(lblab_lab::Exit::Success));
    }
    // A first Ctrl-C stops between two steps (reading, each scenario's charts), before any
    // document is written: the documents stay as they were, consistent with each other. A check
    // writes nothing and ends at once.
    let stop = if args.check {
        super::stop::exit_on_stop()
    } else {
        super::stop::stop_flag_saying("stopping before the documents are written")
    };
    let stopped = |step: &str| -> Option<ExitCode> {
        stop.load(std::sync::atomic::Ordering::Relaxed).then(|| {
            lblab_lab::errln!("interrupted {step}; the documents were not written");
            super::exit(lblab_lab::Exit::Interrupted)
        })
    };
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
    let found = evidence
        .scenarios
        .iter()
        .filter(|s| s.sim.is_some() || s.compare.is_some())
        .count();
    anyhow::ensure!(
        found > 0 || !evidence.sweeps.is_empty(),
        "--results {}: no results of any scenario of {} there (looked for <name>/sim/summary.json \
         and <name>/compare/ under {}), so the documents would be empty; run `lblab sim` or \
         `lblab compare` into it first, or give the folder of the committed evidence (results)",
        args.results,
        args.root.join(&args.scenarios).display(),
        results_dir_display(&args)
    );
    if let Some(code) = stopped("while reading the results") {
        return Ok(code);
    }
    let docs = lblab_evidence::documents(&evidence);
    let results = args.root.join(&args.results);
    if args.check {
        for d in &docs {
            let path = results.join(&d.path);
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            if committed != d.text {
                lblab_lab::errln!(
                    "{} differs from what `lblab report` generates from the result files",
                    path.display()
                );
                return Ok(ExitCode::FAILURE);
            }
        }
        outln!("{} documents up to date", docs.len());
        return Ok(ExitCode::SUCCESS);
    }
    let charts = match lblab_evidence::write_charts(&evidence, &results, stop) {
        Err(e @ lblab_evidence::EvidenceError::Interrupted { .. }) => {
            lblab_lab::errln!("{e}");
            return Ok(super::exit(lblab_lab::Exit::Interrupted));
        }
        other => other?,
    };
    if let Some(code) = stopped(&format!("after {} charts", charts.len())) {
        return Ok(code);
    }
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
