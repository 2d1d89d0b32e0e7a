//! `lblab report --merge`'s job: real runs from several load generators combined into one run
//! folder ([`lblab_record::merge_runs`]), with their `targets.csv` and `statuses.csv`.

use std::path::{Path, PathBuf};

use lblab_record::layout;

use crate::out_dir;

use crate::error::{bail, Context, Result};
use crate::{run_folder, Lab, Setting};

/// `lblab report --merge DIR... [--out OUT]`: writes the merged run folder (the data files and
/// the charts, as every run command does) and prints its table and each run's start offset.
pub fn run(
    lab: &Lab,
    dirs: &[PathBuf],
    out: Option<&Path>,
    lines: &mut dyn FnMut(&str),
) -> Result<()> {
    let out = out.map_or_else(
        || Path::new(layout::SCRATCH).join("merged"),
        Path::to_path_buf,
    );
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if let Some(d) = dirs.iter().find(|d| same(d, &out)) {
        bail!(
            "{} {}: is one of the folders to merge ({}); give another folder",
            (lab.names)(Setting::Out),
            out.display(),
            d.display()
        );
    }
    let merged =
        lblab_record::merge_runs(dirs, lab.memory_budget, lab.names).context("merging runs")?;
    for w in &merged.warnings {
        crate::errln!("warning: {w}");
    }
    let _out_dir = out_dir::prepare_dir(&out)?;
    run_folder::write(lab, &out, &merged.summary, &merged.results)
        .context("writing the merged run")?;
    merge_csv(dirs, &out)?;
    for line in crate::table::summary_lines(&merged.summary) {
        lines(&line);
    }
    for (key, value) in &merged.summary.notes {
        if key.contains(": start offset of ") {
            lines(&format!("{key}: {value}"));
        }
    }
    lines(&format!(
        "merged {} runs into {}",
        dirs.len(),
        out.display()
    ));
    Ok(())
}

/// `targets.csv` and `statuses.csv` of the merged runs, when every run has one (load-generator
/// runs have both, `lblab real` runs a `statuses.csv`): calls added, shares computed again.
fn merge_csv(dirs: &[PathBuf], out: &Path) -> Result<()> {
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
