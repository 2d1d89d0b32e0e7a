//! Derived facts shared by the documents: comparisons computed from the loaded results, each
//! returned with the numbers behind it, so that a sentence's wording follows its data.

use lblab_model::fault::FaultSpec;
use lblab_record::RunSummary;
use lblab_stats::Interval;

use crate::fmt::{iv, num, param};
use crate::load::{Evidence, ScenarioResults};

/// The policies a gRPC user can configure today, and the proposal: what the proposal is held
/// against. (`oracle` is a reference that reads true queues, not a policy; the `od(...)` wrappers are listed apart.)
pub const CONTENDERS: [&str; 4] = [
    "round_robin",
    "least_request",
    "weighted_round_robin",
    "peak_ewma",
];

/// The proposal's label in every scenario.
pub const PROPOSAL: &str = "peak_ewma";

/// What a result file measured of the proposal, from the normalized config and the algorithm
/// fingerprint it records ([`RunSummary::configs`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    /// The proposal as the scenario configures it today, run by today's rules: the same config
    /// and the same fingerprint.
    Current,
    /// The same config, recorded before result files recorded fingerprints: today's algorithm as
    /// far as its config names it (a change of the rules behind a config since would not show).
    ConfigOnly,
    /// The same config run by another version of its rules: the fingerprint recorded, and
    /// today's.
    Superseded {
        /// The fingerprint the file records.
        recorded: String,
        /// The code's fingerprint of the same config.
        current: String,
    },
    /// Another algorithm under the proposal's label: the recorded config.
    Other(serde_json::Value),
    /// Written before result files recorded their configs.
    Unrecorded,
}

/// The proposal's normalized config in `s`'s scenario today, and today's fingerprint of it, if
/// it runs it.
fn proposal_config(s: &ScenarioResults) -> Option<(serde_json::Value, Option<String>)> {
    s.scenario
        .policies
        .iter()
        .find(|p| p.name == PROPOSAL)
        .map(|p| match &p.selected {
            lblab_policy::config::Selected::Policy(c) => (c.to_json(), Some(c.fingerprint())),
            lblab_policy::config::Selected::Extra { name, config } => {
                (serde_json::json!({ name: config }), None)
            }
        })
}

/// What `run` (one of `s`'s result files) measured of the proposal; `None` when it has no row
/// of it.
pub fn algorithm(s: &ScenarioResults, run: &RunSummary) -> Option<Measured> {
    run.rows.iter().find(|r| r.policy == PROPOSAL)?;
    let recorded = run.configs.iter().find(|c| c.policy == PROPOSAL);
    Some(match (recorded, proposal_config(s)) {
        (None, _) => Measured::Unrecorded,
        (Some(r), Some((now, fingerprint))) if r.config == now => {
            match (&r.fingerprint, fingerprint) {
                (None, _) => Measured::ConfigOnly,
                (Some(a), Some(b)) if *a != b => Measured::Superseded {
                    recorded: a.clone(),
                    current: b,
                },
                _ => Measured::Current,
            }
        }
        (Some(r), _) => Measured::Other(r.config.clone()),
    })
}

/// What files written before the configs were recorded measured: the default of the first two
/// design rounds (they were all made with it).
const UNRECORDED: &str = "the default of the first two design rounds (`{\"lblabAblation\":\
     {\"initial\":\"penalty\",\"peak\":\"jump\",\"stall\":false}}` today; these files were written \
     before result files recorded their configs)";

fn describe(m: &Measured) -> String {
    match m {
        Measured::Current => "`peak_ewma_experimental` as the scenario configures it today, by \
             today's rules (the normalized config and the algorithm fingerprint their \
             `summary.json` records)"
            .to_string(),
        Measured::ConfigOnly => "`peak_ewma_experimental` as the scenario configures it today, \
             as far as its config says (their `summary.json` records the normalized config but \
             was written before result files recorded the algorithm's fingerprint, so a change \
             of the rules behind that config since would not show)"
            .to_string(),
        Measured::Superseded { recorded, current } => format!(
            "**an earlier version of the rules** behind today's `peak_ewma_experimental` config \
             (their `summary.json` records the algorithm fingerprint `{recorded}`; today's code \
             gives `{current}`): their figures are not evidence for the current algorithm"
        ),
        Measured::Other(c) => format!("another algorithm under the label `{PROPOSAL}`: `{c}`"),
        Measured::Unrecorded => UNRECORDED.to_string(),
    }
}

/// The other policies of `s` (not the proposal) whose rules changed since `run` was made: per
/// label, the fingerprint `run` records and today's for the same config. A label whose config
/// changed, or that records no fingerprint, is not listed (the proposal's sentence covers how
/// old the file is).
fn superseded_others(s: &ScenarioResults, run: &RunSummary) -> Vec<(String, String, String)> {
    run.configs
        .iter()
        .filter(|c| c.policy != PROPOSAL)
        .filter_map(|c| {
            let recorded = c.fingerprint.as_ref()?;
            let today = s.scenario.policies.iter().find(|p| p.name == c.policy)?;
            let lblab_policy::config::Selected::Policy(config) = &today.selected else {
                return None;
            };
            if config.to_json() != c.config {
                return None;
            }
            let current = config.fingerprint();
            (*recorded != current).then(|| (c.policy.clone(), recorded.clone(), current))
        })
        .collect()
}

/// One scenario page's sentences on which algorithms its runs measured.
pub fn measured_on_page(s: &ScenarioResults) -> String {
    let mut text = proposal_on_page(s);
    let runs = [
        ("simulated", s.sim.as_ref()),
        ("real", s.compare.as_ref().map(|c| &c.real)),
    ];
    for (what, run) in runs {
        let Some(run) = run else { continue };
        let others = superseded_others(s, run);
        if others.is_empty() {
            continue;
        }
        let list: Vec<String> = others
            .iter()
            .map(|(p, r, c)| format!("`{p}` (recorded `{r}`, today `{c}`)"))
            .collect();
        text.push_str(&format!(
            " The {what} runs measured **an earlier version of the rules** of {}: their rows \
             are not evidence for today's code.",
            list.join(", ")
        ));
    }
    text
}

/// The page's sentence on what its runs measured of the proposal.
fn proposal_on_page(s: &ScenarioResults) -> String {
    let sim = s.sim.as_ref().and_then(|r| algorithm(s, r));
    let real = s.compare.as_ref().and_then(|c| algorithm(s, &c.real));
    match (sim, real) {
        (Some(a), Some(b)) if a == b => format!(
            "The runs behind this page, simulated and over real gRPC, measured {}.",
            describe(&a)
        ),
        (a, b) => {
            let mut parts = Vec::new();
            if let Some(a) = a {
                parts.push(format!("the simulated runs measured {}", describe(&a)));
            }
            if let Some(b) = b {
                parts.push(format!(
                    "the real runs (`compare/`) measured {}",
                    describe(&b)
                ));
            }
            if parts.is_empty() {
                return String::new();
            }
            let mut text = format!("Of the runs behind this page, {}.", parts.join("; "));
            if let Some(first) = text.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            text
        }
    }
}

/// The evidence's sentence on which algorithm its result files measured, counted over the
/// scenarios.
pub fn measured_overall(ev: &Evidence) -> String {
    // Current, config only, superseded, another, unrecorded.
    let mut sim = [0usize; 5];
    let mut real = [0usize; 5];
    let count = |t: &mut [usize; 5], m: Option<Measured>| {
        let i = match m {
            Some(Measured::Current) => 0,
            Some(Measured::ConfigOnly) => 1,
            Some(Measured::Superseded { .. }) => 2,
            Some(Measured::Other(_)) => 3,
            Some(Measured::Unrecorded) => 4,
            None => return,
        };
        t[i] += 1;
    };
    for s in &ev.scenarios {
        count(&mut sim, s.sim.as_ref().and_then(|r| algorithm(s, r)));
        count(
            &mut real,
            s.compare.as_ref().and_then(|c| algorithm(s, &c.real)),
        );
    }
    let part = |what: &str, t: [usize; 5]| {
        let mut bits = vec![format!(
            "{} of {} {what} measured `peak_ewma_experimental` as configured today, by today's \
             rules (its algorithm fingerprint)",
            t[0],
            t.iter().sum::<usize>()
        )];
        if t[1] > 0 {
            bits.push(format!(
                "{} as configured today but written before fingerprints were recorded",
                t[1]
            ));
        }
        if t[2] > 0 {
            bits.push(format!(
                "{} **an earlier version of its rules** (another fingerprint)",
                t[2]
            ));
        }
        if t[3] > 0 {
            bits.push(format!("{} another algorithm under its label", t[3]));
        }
        if t[4] > 0 {
            bits.push(format!("{} {UNRECORDED}", t[4]));
        }
        bits.join(", ")
    };
    format!(
        "Which algorithm the files measured, as each `summary.json` records it: {}; {}. Each \
         scenario's page says which of its runs measured what.",
        part("scenarios' simulated runs", sim),
        part("real runs", real)
    )
}

/// `"97.9 % interval"`: the true confidence of the interval of a median over `seeds` seeds (at
/// least 95 % from 6 seeds on; [`lblab_stats::median_interval`]).
pub fn interval(seeds: usize) -> String {
    let coverage = lblab_stats::median_interval(&vec![0.0; seeds]).coverage;
    format!("{:.1} % interval", 100.0 * coverage)
}

/// The scenario the headline figures come from.
pub const HEADLINE: &str = "one-slow";

/// Whether `a` is lower than `b` beyond doubt: `a`'s whole interval lies below `b`'s.
pub fn surely_lower(a: Interval, b: Interval) -> bool {
    a.hi < b.lo
}

/// What the intervals say of `a` against `b` for a lower-is-better quantity.
pub fn verdict(a: Interval, b: Interval) -> &'static str {
    if surely_lower(a, b) {
        "lower"
    } else if surely_lower(b, a) {
        "higher"
    } else {
        "not distinguishable"
    }
}

/// The contender with the lowest median of `metric` in scenario `s`, with its interval.
pub fn best(s: &ScenarioResults, metric: &str) -> Option<(&'static str, Interval)> {
    let ints = s.intervals.as_ref()?;
    CONTENDERS
        .iter()
        .filter_map(|p| ints.get(p, metric).map(|i| (*p, i)))
        .min_by(|a, b| a.1.median.total_cmp(&b.1.median))
}

/// Whether the proposal's `metric` is lower than every other contender's beyond doubt.
pub fn proposal_surely_best(s: &ScenarioResults, metric: &str) -> bool {
    let Some(ints) = s.intervals.as_ref() else {
        return false;
    };
    let Some(pe) = ints.get(PROPOSAL, metric) else {
        return false;
    };
    CONTENDERS
        .iter()
        .filter(|p| **p != PROPOSAL)
        .filter_map(|p| ints.get(p, metric))
        .all(|o| surely_lower(pe, o))
}

/// Backends in the scenario.
pub fn backends(s: &ScenarioResults) -> u32 {
    s.scenario.file.fleet.iter().map(|g| g.count).sum()
}

/// Scenarios where a policy that knew every queue would beat round_robin's p99 beyond doubt
/// (the oracle's p99 is surely lower): those with something for a policy to win.
pub fn contested(ev: &Evidence) -> Vec<&ScenarioResults> {
    ev.scenarios
        .iter()
        .filter(|s| {
            s.intervals
                .as_ref()
                .and_then(|i| i.get("round_robin", "p99_vs_oracle"))
                .is_some_and(|r| r.lo > 1.0)
        })
        .filter(|s| {
            s.intervals
                .as_ref()
                .is_some_and(|i| i.get(PROPOSAL, "p99_ms").is_some())
        })
        .collect()
}

/// The contenders whose `metric` is surely lower than the proposal's in `s`, best first.
pub fn beaten_by(s: &ScenarioResults, metric: &str) -> Vec<(&'static str, Interval)> {
    let Some(ints) = s.intervals.as_ref() else {
        return Vec::new();
    };
    let Some(pe) = ints.get(PROPOSAL, metric) else {
        return Vec::new();
    };
    let mut out: Vec<(&'static str, Interval)> = CONTENDERS
        .iter()
        .filter(|p| **p != PROPOSAL)
        .filter_map(|p| ints.get(p, metric).map(|i| (*p, i)))
        .filter(|(_, i)| surely_lower(*i, pe))
        .collect();
    out.sort_by(|a, b| a.1.median.total_cmp(&b.1.median));
    out
}

/// The first slowdown factor of the scenario, if it has one.
pub fn slowdown(s: &ScenarioResults) -> Option<f64> {
    s.scenario.file.faults.iter().find_map(|f| match f {
        FaultSpec::Slowdown { factor, .. } => Some(*factor),
        _ => None,
    })
}

/// Warm-up and measured seconds of the scenario as written (the full-length simulation).
pub fn full_length(s: &ScenarioResults) -> (f64, f64) {
    let w = &s.scenario.file.workload;
    (w.warmup.0 as f64 / 1e9, w.duration.0 as f64 / 1e9)
}

/// Measured seconds of a run: its recorded length, or (for summaries written before runs recorded
/// it) the first policy's requests over the scenario's rate, to the nearest second.
pub fn measured(run: &RunSummary, s: &ScenarioResults) -> f64 {
    if run.measured_s > 0.0 {
        return run.measured_s;
    }
    let rate = s.scenario.file.workload.rate;
    match run.rows.first() {
        Some(r) if rate > 0.0 => (r.requests as f64 / rate).round(),
        _ => f64::NAN,
    }
}

/// `(min, max)` of `f` over the values, `None` if there are none.
pub fn range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| {
            Some(acc.map_or((v, v), |(lo, hi): (f64, f64)| (lo.min(v), hi.max(v))))
        })
}

/// `a` or `a–b`, with `unit` after.
pub fn span((lo, hi): (f64, f64), unit: &str) -> String {
    if num(lo) == num(hi) {
        format!("{}{unit}", num(lo))
    } else {
        format!("{}–{}{unit}", num(lo), num(hi))
    }
}

/// A range of parameters (run lengths, counts): `10 s` or `4–10 s`.
pub fn param_span((lo, hi): (f64, f64), unit: &str) -> String {
    if param(lo) == param(hi) {
        format!("{}{unit}", param(lo))
    } else {
        format!("{}–{}{unit}", param(lo), param(hi))
    }
}

/// Real runs' warm-up and measured seconds over every scenario compared: `(warm-up range,
/// measured range)`.
pub fn real_lengths(ev: &Evidence) -> Option<((f64, f64), (f64, f64))> {
    let runs: Vec<(f64, f64)> = ev
        .scenarios
        .iter()
        .filter_map(|s| {
            let c = s.compare.as_ref()?;
            Some((c.real.warmup_s, measured(&c.real, s)))
        })
        .collect();
    Some((
        range(runs.iter().map(|r| r.0))?,
        range(runs.iter().map(|r| r.1))?,
    ))
}

/// Sim-vs-real agreement over every compared scenario and policy: `(pairs, p50 agree, p99 agree,
/// calibrated p50 agree, calibrated p99 agree)`.
pub fn agreement_counts(ev: &Evidence) -> (usize, usize, usize, usize, usize) {
    let rows = ev
        .scenarios
        .iter()
        .filter_map(|s| s.compare.as_ref())
        .flat_map(|c| c.rows.iter());
    let mut out = (0, 0, 0, 0, 0);
    for r in rows {
        out.0 += 1;
        out.1 += r.p50_agrees as usize;
        out.2 += r.p99_agrees as usize;
        out.3 += (r.calibrated_p50_agrees == Some(true)) as usize;
        out.4 += (r.calibrated_p99_agrees == Some(true)) as usize;
    }
    out
}

/// `` `policy` p99 `8.11 [8.03, 8.15]` ms``-style phrase for one interval of a scenario.
pub fn ms(ev: &Evidence, scenario: &str, policy: &str, metric: &str) -> String {
    ev.interval(scenario, policy, metric)
        .map_or_else(|| "–".into(), |i| format!("{} ms", iv(i)))
}

/// A ratio interval with a `×`.
pub fn times(ev: &Evidence, scenario: &str, policy: &str, metric: &str) -> String {
    ev.interval(scenario, policy, metric)
        .map_or_else(|| "–".into(), |i| format!("{}×", iv(i)))
}

/// weighted_round_robin's and the proposal's p99 relative to round_robin in `scenario`.
pub fn wrr_and_proposal(ev: &Evidence, scenario: &str) -> Option<(Interval, Interval)> {
    let r = |p: &str| ev.interval(scenario, p, "p99_vs_round_robin");
    Some((r("weighted_round_robin")?, r(PROPOSAL)?))
}

/// `items` joined by commas, or "no scenario".
pub fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "no scenario".into()
    } else {
        items.join(", ")
    }
}

/// The median of the finite `values` (the shared order-statistics median), `None` if none are.
pub fn median(values: &[f64]) -> Option<f64> {
    let m = lblab_stats::median_interval(values).median;
    m.is_finite().then_some(m)
}

/// The longest warm-up any of the scenario's policies needs, in seconds, and why.
pub fn wrr_need(s: &ScenarioResults) -> Option<(f64, String)> {
    s.scenario
        .policies
        .iter()
        .filter_map(|p| match &p.selected {
            lblab_policy::config::Selected::Policy(c) => c.warmup_need(),
            _ => None,
        })
        .max_by_key(|(n, _)| *n)
        .map(|(n, why)| (n as f64 / 1e9, why))
}
