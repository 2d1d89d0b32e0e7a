//! Finding a scenario: the scenario files of a folder, the known name closest to a misspelt one
//! (for "did you mean"), and the warm-up a scenario's policies need.

use std::path::Path;

use crate::scenario::Scenario;
use crate::units::Dur;
use lblab_message::setting::{Named, Names, Setting};

/// The names of the scenario files (`<name>.toml`) in `dir` (none when it is not there), sorted.
pub fn scenario_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
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
pub fn closest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// Levenshtein distance between `a` and `b`, in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
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

/// A policy that needs a longer warm-up than a run gives it: part of what is measured for it is
/// its start-up, not its steady state. A warning, rendered with the caller's spelling of the
/// warm-up setting ([`Named`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShortWarmup {
    /// The run's warm-up.
    pub warmup: Dur,
    /// The policy's label.
    pub label: String,
    /// The warm-up it needs.
    pub need: Dur,
    /// Why it needs that long (its parameters' arithmetic).
    pub why: String,
}

impl Named for ShortWarmup {
    fn named(&self, names: Names) -> String {
        format!(
            "warning: {} {} is shorter than {} needs ({} = {}): part of what is measured for it \
             is its start-up, not its steady state",
            names(Setting::Warmup),
            self.warmup,
            self.label,
            self.why,
            self.need
        )
    }
}

impl std::fmt::Display for ShortWarmup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.named(Setting::word))
    }
}

/// A [`ShortWarmup`] for each policy of `scenario` that needs a longer warm-up than `warmup`, of
/// the policies in `only` when it names any (a policy that does not run needs no warning).
pub fn warmup_warnings(scenario: &Scenario, warmup: Dur, only: &[String]) -> Vec<ShortWarmup> {
    scenario
        .warmup_needs()
        .into_iter()
        .filter(|(label, _, _)| only.is_empty() || only.iter().any(|o| o == label))
        .filter(|&(_, need, _)| warmup.0 < need)
        .map(|(label, need, why)| ShortWarmup {
            warmup,
            label: label.to_string(),
            need: Dur(need),
            why: why.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
