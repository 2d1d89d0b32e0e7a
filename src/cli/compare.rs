//! `lblab compare`: one scenario in the simulator and over real TCP, and how well they agree.

use std::path::PathBuf;
use std::process::ExitCode;

use lblab_model::units::Dur;
use lblab_record::Layout;

/// The scenario `lblab compare` runs when given none (found as a bare name is: in `scenarios/`
/// or built into lblab).
pub const DEFAULT_SCENARIO: &str = "one-slow";

/// Arguments of `lblab compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    budgets: super::args::Budgets,
    /// Scenario file (TOML), or the bare name of one in scenarios/ or built into lblab
    /// [default: one-slow].
    scenario: Option<PathBuf>,
    #[command(flatten)]
    run: super::args::Run,
    #[command(flatten)]
    length: super::args::Length,
    /// Measure each policy for the scenario's full duration, as the committed evidence does
    /// (one-slow: 10 min 31 s scheduled); without it or --duration, each policy is measured for
    /// 10s after its warm-up in both modes, or the scenario's duration if it is shorter
    /// (one-slow: 3 min 51 s scheduled, 6 min 14 s in all on a busy 2-core machine).
    #[arg(long, conflicts_with = "duration")]
    full: bool,
    #[command(flatten)]
    repeat: super::args::Repeat,
    /// How the real harness runs.
    #[command(flatten)]
    harness: super::real::HarnessArgs,
}

/// Measured time per policy of a `compare` without `--duration` or `--full`.
const DEFAULT_DURATION: Dur = Dur(10_000_000_000);

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let given = args
        .scenario
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SCENARIO));
    let path = super::args::scenario_path(&given)?;
    // 10 s by default, but never longer than the scenario's own duration.
    let shortened = || -> anyhow::Result<Option<Dur>> {
        let own = lblab_model::Scenario::load(&path)?.workload.duration;
        Ok((own > DEFAULT_DURATION.0).then_some(DEFAULT_DURATION))
    };
    let length = lblab_lab::scenario::Length {
        duration: match (args.full, args.length.duration) {
            (true, _) => None,
            (false, Some(d)) => Some(d),
            (false, None) => shortened()?,
        },
        warmup: args.length.warmup,
    };
    let scenario = lblab_lab::scenario::load_with_length(
        &path,
        args.run.seed,
        length,
        &args.run.policies,
        super::names::flag,
    )?;
    let base = args
        .run
        .out
        .clone()
        .unwrap_or_else(|| Layout::scratch(&path).compare().root().to_path_buf());
    let lab = super::run_lab(&args.budgets);
    let exit = lblab_lab::compare::run(
        &lab,
        &scenario,
        &args.run.policies,
        || args.harness.options(&args.run.policies),
        &base,
        args.repeat.repeat,
        &mut super::say,
    )?;
    Ok(super::exit(exit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lblab_lab::compare::{minutes, real_schedule};
    use lblab_lab::scenario::Length;

    /// The run time the README and `--help` give for the main job, as `minutes` prints it.
    fn one_slow_schedule(length: Length) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{DEFAULT_SCENARIO}.toml"));
        let scenario = lblab_lab::scenario::load_with_length(
            &path,
            None,
            length,
            &[],
            crate::cli::names::flag,
        )
        .unwrap();
        minutes(real_schedule(
            &scenario,
            &lblab_harness::HarnessOptions::default(),
        ))
    }

    #[test]
    fn the_readme_and_help_give_the_main_jobs_scheduled_length() {
        let default = one_slow_schedule(Length {
            duration: Some(DEFAULT_DURATION),
            warmup: None,
        });
        let full = one_slow_schedule(Length {
            duration: None,
            warmup: None,
        });
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"),
        )
        .unwrap();
        let readme = readme.replace('\n', " ");
        let help = <Args as clap::Args>::augment_args(clap::Command::new("compare"))
            .get_arguments()
            .find(|a| a.get_id() == "full")
            .and_then(|a| a.get_help().map(|h| h.to_string().replace('\n', " ")))
            .unwrap();
        for text in [&readme, &help] {
            assert!(
                text.contains(&format!("{default} scheduled")),
                "{default}: {text}"
            );
            assert!(
                text.contains(&format!("{full} scheduled")),
                "{full}: {text}"
            );
        }
    }
}
