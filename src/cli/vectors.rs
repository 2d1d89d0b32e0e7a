//! `lblab vectors`: write the language-neutral conformance vectors (`lblab_policy::vectors`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use lblab_policy::vectors;

/// Arguments of `lblab vectors`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
One JSON file per policy: config cases (accepted with their normalized form, rejected with the
field the error names) and event sequences with every random draw given and the expected state
after each step. The format is documented in conformance/README.md; the committed copy is
conformance/vectors/, and `lblab vectors --out conformance/vectors` regenerates it.")]
pub struct Args {
    /// The folder to write the files into (created if missing; files of the same name are
    /// replaced).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    for file in vectors::files() {
        let path = args.out.join(&file.name);
        std::fs::write(&path, &file.text)
            .with_context(|| format!("cannot write {}", path.display()))?;
        outln!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
