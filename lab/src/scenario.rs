//! Finding and loading a scenario file as the commands do: a bare name found in `scenarios/`
//! or built into lblab (or the closest name suggested), config warnings on stderr, and the
//! seed, duration and warm-up overrides.

use std::path::{Path, PathBuf};

use lblab_model::find;
use lblab_model::units::Dur;
use lblab_model::Scenario;

use crate::error::{ensure, Context, LabError, Result};
use crate::{Named, Names, Setting};

/// How long each policy is measured, and after what warm-up, replacing the scenario's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Length {
    /// Measured duration per policy; the warm-up is kept whatever this is.
    pub duration: Option<Dur>,
    /// Warm-up before measurement.
    pub warmup: Option<Dur>,
}

/// Where the canonical scenarios are, relative to the working directory.
const SCENARIOS: &str = "scenarios";

/// The scenario file `given` names: the path itself if it exists; else, for a bare name
/// (`one-slow`, `one-slow.toml`), `scenarios/<name>.toml` in the working directory if that exists,
/// else the scenario of that name built into lblab ([`crate::builtin`], written to its cache
/// folder), each said on stderr with the folder it came from. A path that names nothing is an
/// error that says where it looked and suggests the closest scenario.
pub fn scenario_path(given: &Path) -> Result<PathBuf> {
    let missing = match std::fs::metadata(given) {
        Ok(_) => return Ok(given.to_path_buf()),
        Err(e) => e,
    };
    let bare = given.parent().is_none_or(|p| p.as_os_str().is_empty());
    let name = given
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".toml").unwrap_or(&name).to_string();
    let candidate = Path::new(SCENARIOS).join(format!("{stem}.toml"));
    let here = std::env::current_dir()
        .map(|d| d.join(SCENARIOS))
        .unwrap_or_else(|_| PathBuf::from(SCENARIOS));
    if bare && !stem.is_empty() && candidate.is_file() {
        crate::errln!(
            "note: scenario {}: using {} (from {})",
            given.display(),
            candidate.display(),
            here.display()
        );
        return Ok(candidate);
    }
    if bare && !stem.is_empty() {
        match crate::builtin::materialize(&stem) {
            Some(Ok(path)) => {
                crate::errln!(
                    "note: scenario {}: no {} here; using the one built into lblab {} (a copy in {})",
                    given.display(),
                    candidate.display(),
                    env!("CARGO_PKG_VERSION"),
                    path.parent().unwrap_or(&path).display()
                );
                return Ok(path);
            }
            Some(Err(e)) => {
                return Err(LabError::Message(format!(
                    "scenario {}: no {} here, and the built-in copy cannot be written into {}: {e}",
                    given.display(),
                    candidate.display(),
                    crate::builtin::cache_dir().display()
                )))
            }
            None => {}
        }
    }
    let mut message = format!("scenario file {}: {missing}", given.display());
    let mut known = find::scenario_names(Path::new(SCENARIOS));
    if bare && !stem.is_empty() {
        let _ = std::fmt::Write::write_fmt(
            &mut message,
            format_args!(
                ", nor {} (looked in {}), nor a scenario built into lblab",
                candidate.display(),
                here.display()
            ),
        );
        known.extend(crate::builtin::names());
        known.sort();
        known.dedup();
    }
    if let Some(closest) = find::closest(&stem, &known) {
        let _ = std::fmt::Write::write_fmt(&mut message, format_args!("; did you mean {closest}?"));
    } else if !known.is_empty() {
        let _ = std::fmt::Write::write_fmt(
            &mut message,
            format_args!("; the scenarios are {}", known.join(", ")),
        );
    }
    Err(LabError::Message(message))
}

/// Loads a scenario with a seed override.
pub fn load(path: &Path, seed: Option<u64>) -> Result<Scenario> {
    let scenario = Scenario::load(path)?;
    for w in scenario.config_warnings() {
        crate::errln!("warning: {}: {w}", path.display());
    }
    Ok(match seed {
        Some(seed) => scenario.with_seed(seed)?,
        None => scenario,
    })
}

/// Loads a scenario with the seed, duration and warm-up overrides ([`Scenario::with_run_length`]),
/// warning where the warm-up is shorter than a policy needs (of those in `only`, when it names
/// any: the `--policy` selection). Its errors and warnings spell settings with `names`.
pub fn load_with_length(
    path: &Path,
    seed: Option<u64>,
    length: Length,
    only: &[String],
    names: Names,
) -> Result<Scenario> {
    let scenario = load(path, seed)?;
    let Length { duration, warmup } = length;
    if duration.is_none() && warmup.is_none() {
        return Ok(scenario);
    }
    let [duration_setting, warmup_setting] = [Setting::Duration, Setting::Warmup].map(names);
    ensure!(
        duration.is_none_or(|d| d.0 > 0),
        "{duration_setting} must be greater than 0s (e.g. {duration_setting} 20s)"
    );
    let flags = [(duration_setting, duration), (warmup_setting, warmup)]
        .iter()
        .filter_map(|(flag, v)| v.map(|v| format!("{flag} {v}")))
        .collect::<Vec<_>>()
        .join(" ");
    let scenario = scenario
        .with_run_length(duration, warmup)
        .with_context(|| format!("{} with {flags}", path.display()))?;
    if let Some(w) = warmup {
        for warning in find::warmup_warnings(&scenario, w, only) {
            crate::errln!("{}", warning.named(names));
        }
    }
    Ok(scenario)
}

/// Checks that every `--policy` label names a policy of the scenario.
pub fn check_policies(scenario: &Scenario, only: &[String]) -> Result<()> {
    Ok(scenario.check_labels(only)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: u64 = 1_000_000_000;

    fn scenario(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join(name)
    }

    fn length(duration: Option<u64>, warmup: Option<u64>) -> Length {
        Length {
            duration: duration.map(|s| Dur(s * NS)),
            warmup: warmup.map(|s| Dur(s * NS)),
        }
    }

    #[test]
    fn a_shorter_duration_keeps_the_warmup() {
        // one-slow warms up 12 s so weighted_round_robin's blackout ends before measurement;
        // a 5 s run must not move the blackout into what it measures.
        let path = scenario("one-slow.toml");
        let s = load_with_length(&path, None, length(Some(5), None), &[], Setting::word).unwrap();
        assert_eq!(s.workload.warmup, 12 * NS);
        assert_eq!(s.workload.duration, 5 * NS);
        let s = load_with_length(&path, None, length(Some(20), None), &[], Setting::word).unwrap();
        assert_eq!(s.workload.warmup, 12 * NS);
    }

    #[test]
    fn warmup_overrides_and_warns_below_a_policys_need() {
        let path = scenario("one-slow.toml");
        let s =
            load_with_length(&path, None, length(Some(5), Some(2)), &[], Setting::word).unwrap();
        assert_eq!(s.workload.warmup, 2 * NS);
        let w: Vec<String> = find::warmup_warnings(&s, Dur(2 * NS), &[])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("warning: warmup 2s is shorter"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("weighted_round_robin"), "{}", w[0]);
        assert!(
            w[0].contains("blackoutPeriod 10s + weightUpdatePeriod 1s = 11s"),
            "{}",
            w[0]
        );
        assert!(find::warmup_warnings(&s, Dur(11 * NS), &[]).is_empty());
        // Only the selected policies are warned about.
        let only = |label: &str| vec![label.to_string()];
        assert!(find::warmup_warnings(&s, Dur(2 * NS), &only("peak_ewma")).is_empty());
        assert_eq!(
            find::warmup_warnings(&s, Dur(2 * NS), &only("weighted_round_robin")).len(),
            1
        );
        let s = load_with_length(&path, None, length(None, Some(30)), &[], Setting::word).unwrap();
        assert_eq!(s.workload.warmup, 30 * NS);
        let e =
            load_with_length(&path, None, length(Some(0), None), &[], Setting::word).unwrap_err();
        assert!(
            e.to_string().contains("duration must be greater than 0s"),
            "{e}"
        );
    }
}
