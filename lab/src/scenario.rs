//! Finding and loading a scenario file as the commands do: a bare name found in `scenarios/`
//! (or the closest name suggested), config warnings on stderr, and the seed, duration and warm-up
//! overrides.

use std::path::{Path, PathBuf};

use lblab_model::units::Dur;
use lblab_model::Scenario;

use crate::error::{ensure, Context, LabError, Result};

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

/// The scenario file `given` names: the path itself if it exists, else, for a bare name
/// (`one-slow`, `one-slow.toml`), `scenarios/<name>.toml` if that exists (said on stderr). A path
/// that names nothing is an error that says where it looked and suggests the closest scenario.
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
    if bare && !stem.is_empty() && candidate.is_file() {
        eprintln!(
            "note: scenario {}: using {}",
            given.display(),
            candidate.display()
        );
        return Ok(candidate);
    }
    let mut message = format!("scenario file {}: {missing}", given.display());
    if bare && !stem.is_empty() {
        let _ =
            std::fmt::Write::write_fmt(&mut message, format_args!(", nor {}", candidate.display()));
    }
    let known = canonical_scenarios();
    if let Some(closest) = closest(&stem, &known) {
        let _ = std::fmt::Write::write_fmt(
            &mut message,
            format_args!("; did you mean {closest} ({SCENARIOS}/{closest}.toml)?"),
        );
    } else if !known.is_empty() {
        let _ = std::fmt::Write::write_fmt(
            &mut message,
            format_args!("; the scenarios in {SCENARIOS}/ are {}", known.join(", ")),
        );
    }
    Err(LabError::Message(message))
}

/// The names of the scenario files in `scenarios/` (none when it is not there), sorted.
fn canonical_scenarios() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(SCENARIOS)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".toml").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The name in `known` closest to `name` by edit distance, if it is close (at most a third of
/// its length, and at least one edit allowed).
fn closest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(previous + 1).min(row[j] + 1);
        }
    }
    row[b.len()]
}

/// Loads a scenario with a seed override.
pub fn load(path: &Path, seed: Option<u64>) -> Result<Scenario> {
    let scenario = Scenario::load(path)?;
    for w in scenario.config_warnings() {
        eprintln!("warning: {}: {w}", path.display());
    }
    Ok(match seed {
        Some(seed) => scenario.with_seed(seed)?,
        None => scenario,
    })
}

/// Loads a scenario with the seed, duration and warm-up overrides ([`Scenario::with_run_length`]),
/// warning where the warm-up is shorter than a policy needs (of those in `only`, when it names
/// any: the `--policy` selection).
pub fn load_with_length(
    path: &Path,
    seed: Option<u64>,
    length: Length,
    only: &[String],
) -> Result<Scenario> {
    let scenario = load(path, seed)?;
    let Length { duration, warmup } = length;
    if duration.is_none() && warmup.is_none() {
        return Ok(scenario);
    }
    ensure!(
        duration.is_none_or(|d| d.0 > 0),
        "--duration must be greater than 0s (e.g. --duration 20s)"
    );
    let flags = [("--duration", duration), ("--warmup", warmup)]
        .iter()
        .filter_map(|(flag, v)| v.map(|v| format!("{flag} {v}")))
        .collect::<Vec<_>>()
        .join(" ");
    let scenario = scenario
        .with_run_length(duration, warmup)
        .with_context(|| format!("{} with {flags}", path.display()))?;
    if let Some(w) = warmup {
        for warning in warmup_warnings(&scenario, w, only) {
            eprintln!("{warning}");
        }
    }
    Ok(scenario)
}

/// A warning for each policy of `scenario` that needs a longer warm-up than `warmup`, of the
/// policies in `only` when it names any (a policy that does not run needs no warning).
pub fn warmup_warnings(scenario: &Scenario, warmup: Dur, only: &[String]) -> Vec<String> {
    scenario
        .warmup_needs()
        .into_iter()
        .filter(|(label, _, _)| only.is_empty() || only.iter().any(|o| o == label))
        .filter(|&(_, need, _)| warmup.0 < need)
        .map(|(label, need, why)| {
            format!(
                "warning: --warmup {warmup} is shorter than {label} needs ({why} = {}): part of \
                 what is measured for it is its start-up, not its steady state",
                Dur(need)
            )
        })
        .collect()
}

/// Checks that every `--policy` label names a policy of the scenario.
pub fn check_policies(scenario: &Scenario, only: &[String]) -> Result<()> {
    scenario.check_labels(only).map_err(LabError::Message)
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
    fn a_misspelt_scenario_name_is_matched_to_the_closest_known_one() {
        let known: Vec<String> = ["healthy", "one-slow", "one-slow-busy", "gc-pauses"]
            .map(String::from)
            .to_vec();
        assert_eq!(closest("one-slo", &known), Some("one-slow"));
        assert_eq!(closest("gc-pause", &known), Some("gc-pauses"));
        assert_eq!(closest("zzzzzzzz", &known), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn a_shorter_duration_keeps_the_warmup() {
        // one-slow warms up 12 s so weighted_round_robin's blackout ends before measurement;
        // a 5 s run must not move the blackout into what it measures.
        let path = scenario("one-slow.toml");
        let s = load_with_length(&path, None, length(Some(5), None), &[]).unwrap();
        assert_eq!(s.workload.warmup, 12 * NS);
        assert_eq!(s.workload.duration, 5 * NS);
        let s = load_with_length(&path, None, length(Some(20), None), &[]).unwrap();
        assert_eq!(s.workload.warmup, 12 * NS);
    }

    #[test]
    fn warmup_overrides_and_warns_below_a_policys_need() {
        let path = scenario("one-slow.toml");
        let s = load_with_length(&path, None, length(Some(5), Some(2)), &[]).unwrap();
        assert_eq!(s.workload.warmup, 2 * NS);
        let w = warmup_warnings(&s, Dur(2 * NS), &[]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("weighted_round_robin"), "{}", w[0]);
        assert!(
            w[0].contains("blackoutPeriod 10s + weightUpdatePeriod 1s = 11s"),
            "{}",
            w[0]
        );
        assert!(warmup_warnings(&s, Dur(11 * NS), &[]).is_empty());
        // Only the selected policies are warned about.
        let only = |label: &str| vec![label.to_string()];
        assert!(warmup_warnings(&s, Dur(2 * NS), &only("peak_ewma")).is_empty());
        assert_eq!(
            warmup_warnings(&s, Dur(2 * NS), &only("weighted_round_robin")).len(),
            1
        );
        let s = load_with_length(&path, None, length(None, Some(30)), &[]).unwrap();
        assert_eq!(s.workload.warmup, 30 * NS);
        let e = load_with_length(&path, None, length(Some(0), None), &[]).unwrap_err();
        assert!(
            e.to_string().contains("--duration must be greater than 0s"),
            "{e}"
        );
    }
}
