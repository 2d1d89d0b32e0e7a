//! `lblab report`: regenerate the evidence documents (results/README.md, the per-scenario pages,
//! the sweeps page and the gRFC draft) and their headline charts from the committed result files.

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
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
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
        println!("{} documents up to date", docs.len());
        return Ok(ExitCode::SUCCESS);
    }
    let charts = lblab_evidence::write_charts(&evidence, &results)?;
    lblab_evidence::write_documents(&docs, &results)?;
    println!(
        "wrote {} documents and {} charts under {} ({} scenarios)",
        docs.len(),
        charts.len(),
        results.display(),
        evidence.scenarios.len()
    );
    Ok(ExitCode::SUCCESS)
}
