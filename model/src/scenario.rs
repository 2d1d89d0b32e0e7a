//! The scenario format: one TOML file that both the simulator and the real harness run. Every
//! field, default and limit is documented in `docs/scenarios.md` at the project root.
//!
//! ```toml
//! name = "one-slow"
//! seed = 1
//!
//! [workload]
//! clients = 4                  # each with its own policy instance
//! rate = 2000                  # total requests per second
//! arrival = "poisson"          # or "constant", or "closed" (with `concurrency`)
//! duration = "30s"
//! warmup = "5s"               # any length, also longer than `duration`
//! deadline = "1s"
//! streaming_share = 0.0
//!
//! [[fleet]]
//! name = "main"
//! count = 19
//! workers = 4
//! service_time = { dist = "lognormal", median = "2ms", p99 = "6ms" }
//!
//! [[faults]]
//! kind = "slowdown"
//! targets = ["slow"]           # a group, or one backend as "group/index"
//! factor = 10
//!
//! [[policies]]
//! name = "peak_ewma"
//! config = '{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}'
//! ```

use std::path::Path;

use lblab_message::setting::{Named, Names, Setting};
use lblab_policy::config::Selected;
use lblab_policy::Nanos;
use serde::{Deserialize, Serialize};

use crate::backend::BackendParams;
use crate::dist::{Dist, DistSpec};
use crate::fault::{FaultSpec, Timeline};
use crate::locate::Locator;
use crate::method::{MethodSpec, Methods};
use crate::units::Dur;
use crate::FileError;

mod check;
#[cfg(test)]
mod tests;

// Re-exported where they were first defined, so `lblab_model::scenario::{GroupSpec, limits}`
// keep working; they live a floor down because the fault checks use them too.
pub use crate::group::GroupSpec;
pub use crate::limits;

/// The simulator-only policy that routes each call to the backend that will answer it first
/// (it knows the future), spelled once in `lblab_record` so the reports share it.
pub use lblab_record::ORACLE;
/// Policy names only the simulator runs.
pub const SIM_ONLY_POLICIES: &[&str] = &[ORACLE];
/// Policy names only the real load generator runs.
pub const REAL_ONLY_POLICIES: &[&str] = &["tower_p2c_peak_ewma"];

/// A scenario file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Name; also the results folder name (letters, digits, `-` and `_` only).
    pub name: String,
    /// What the scenario models and why.
    #[serde(default)]
    pub description: String,
    /// Seed of every random draw in the run.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The traffic.
    pub workload: WorkloadSpec,
    /// Backend groups.
    pub fleet: Vec<GroupSpec>,
    /// Faults on the timeline.
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// Policies to compare.
    pub policies: Vec<PolicySpec>,
}

fn default_seed() -> u64 {
    1
}

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Open loop, exponential inter-arrival times.
    #[default]
    Poisson,
    /// Open loop, evenly spaced.
    Constant,
    /// Closed loop: each client keeps `concurrency` requests in flight.
    Closed,
}

/// `[workload]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Clients, each with its own policy instance (default 1).
    #[serde(default = "one")]
    pub clients: u32,
    /// Total offered requests per second across clients (open loop).
    #[serde(default)]
    pub rate: f64,
    /// Arrival process.
    #[serde(default)]
    pub arrival: Arrival,
    /// Requests each client keeps in flight (closed loop only).
    pub concurrency: Option<u32>,
    /// Measured run length, after the warm-up.
    pub duration: Dur,
    /// Time before measurement starts. Any length, including longer than `duration`: it is set
    /// by what the policies need before they are measured (weighted_round_robin's blackout plus
    /// one weight update, the estimators settling), not by how long the measurement is.
    #[serde(default)]
    pub warmup: Dur,
    /// Per-call deadline (default 1s).
    #[serde(default = "default_deadline")]
    pub deadline: Dur,
    /// Share of calls that are streaming, in [0, 1].
    #[serde(default)]
    pub streaming_share: f64,
    /// Length of a streaming call (default constant 1s).
    #[serde(default = "default_stream")]
    pub stream_duration: DistSpec,
    /// The unary calls' methods (`[[workload.methods]]`); none: one method, as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<MethodSpec>,
    /// Measures only the unary calls of this method (a name from `[[workload.methods]]`): every
    /// percentile, share and count of the results is of those calls, while the other calls still
    /// load the fleet and the policies. How a light method fares beside a heavy one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_method: Option<String>,
}

fn one() -> u32 {
    1
}

fn default_deadline() -> Dur {
    Dur(1_000_000_000)
}

fn default_stream() -> DistSpec {
    DistSpec::Constant {
        value: Dur(1_000_000_000),
    }
}

/// `[[policies]]`: one policy to compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Label in tables and charts.
    pub name: String,
    /// gRPC service config JSON with a `loadBalancingConfig` list.
    pub config: String,
}

/// The validated workload.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Clients.
    pub clients: u32,
    /// Total requests per second (open loop).
    pub rate: f64,
    /// Arrival process.
    pub arrival: Arrival,
    /// In-flight requests per client (closed loop).
    pub concurrency: u32,
    /// Warm-up, ns.
    pub warmup: Nanos,
    /// Measured length, ns.
    pub duration: Nanos,
    /// Deadline, ns.
    pub deadline: Nanos,
    /// Share of streaming calls.
    pub streaming_share: f64,
    /// Stream length distribution.
    pub stream_duration: Dist,
    /// The unary calls' methods (empty: one implicit method).
    pub methods: Methods,
    /// With `workload.measured_method`: the one method whose unary calls are measured.
    pub measured_method: Option<u32>,
}

/// The longest a run waits after its end for calls in flight, ns (plus [`DRAIN_SLACK`]).
pub const MAX_DRAIN: Nanos = 10_000_000_000;
/// Added to the drain: a call sent at the very end with the full deadline still ends in it.
pub const DRAIN_SLACK: Nanos = 1_000_000_000;

impl Workload {
    /// End of the run (warm-up + duration), ns.
    pub fn end(&self) -> Nanos {
        self.warmup + self.duration
    }

    /// How long after [`end`](Self::end) calls in flight may still end: their deadline, at most
    /// [`MAX_DRAIN`], plus [`DRAIN_SLACK`]. The one accounting rule of both modes: a call (unary
    /// or stream) that has not ended by `end() + drain()` is cut off and counted as dropped, so a
    /// run always ends, even against a black hole with a deadline of an hour.
    pub fn drain(&self) -> Nanos {
        self.deadline.min(MAX_DRAIN) + DRAIN_SLACK
    }
}

/// One backend of the validated fleet.
#[derive(Debug, Clone)]
pub struct BackendSpec {
    /// `group/index`.
    pub name: String,
    /// Index of its group in the scenario's `[[fleet]]` ([`ScenarioFile::fleet`]).
    pub group: usize,
    /// Zone label.
    pub zone: String,
    /// Network round trip, ns.
    pub network_rtt: Nanos,
    /// Queueing parameters and distributions.
    pub params: BackendParams,
    /// Faults over time.
    pub timeline: Timeline,
    /// Median of the nominal service time, ns.
    pub median_service: Nanos,
    /// Seed of this backend's own random stream.
    pub seed: u64,
}

/// One validated policy entry.
#[derive(Debug, Clone)]
pub struct PolicyEntry {
    /// Label.
    pub name: String,
    /// The service config as written.
    pub config_json: String,
    /// The selected policy.
    pub selected: Selected,
}

impl PolicyEntry {
    /// Whether the simulator can run it.
    pub fn runs_in_sim(&self) -> bool {
        !matches!(&self.selected, Selected::Extra { name, .. } if REAL_ONLY_POLICIES.contains(&name.as_str()))
    }

    /// Whether the real harness can run it.
    pub fn runs_in_real(&self) -> bool {
        !matches!(&self.selected, Selected::Extra { name, .. } if SIM_ONLY_POLICIES.contains(&name.as_str()))
    }
}

/// A validated scenario: everything checked, every backend's timeline built.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// As written.
    pub file: ScenarioFile,
    /// The workload.
    pub workload: Workload,
    /// Every backend, groups in order.
    pub backends: Vec<BackendSpec>,
    /// The policies.
    pub policies: Vec<PolicyEntry>,
}

/// Derives a component's seed from the run seed and its id, so adding one component does not
/// change what the others draw (SplitMix64 finalizer).
pub fn derive_seed(seed: u64, stream: u64, id: u64) -> u64 {
    let mut z =
        seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ id.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seed streams.
pub mod streams {
    /// Backend service-time draws.
    pub const BACKEND: u64 = 1;
    /// Fault timelines.
    pub const FAULT: u64 = 2;
    /// Client arrivals.
    pub const ARRIVALS: u64 = 3;
    /// Client policy randomness.
    pub const POLICY: u64 = 4;
}

/// The TOML parser's own words for an integer past TOML's range (Rust's "number too large to fit
/// in target type") said in the scenario's terms: which limit, and for `seed`, where a larger one
/// can go.
fn toml_limit(message: &str, field: Option<&str>) -> String {
    let limit = match message {
        "number too large to fit in target type" => "at most 9223372036854775807",
        "number too small to fit in target type" => "at least -9223372036854775808",
        _ => return message.to_string(),
    };
    let mut said = format!("past TOML's integers: a value here is {limit}");
    if field == Some("seed") {
        said.push_str("; a seed given on the command line may be any 64-bit number");
    }
    said
}

/// The dotted key written on 1-based `line` (`seed`, `workload.rate`), from the line's `key =`
/// and the nearest table header above it, if the line has one.
fn key_on_line(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.checked_sub(1)?)?;
    let key = here.split_once('=')?.0.trim();
    if key.is_empty() || key.starts_with('#') || key.starts_with('[') {
        return None;
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    Some(match table {
        Some(t) => format!("{t}.{key}"),
        None => key.to_string(),
    })
}

/// A label of the policies selected (`--policy`) that names no policy of the scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.named(Setting::word))]
pub struct UnknownLabel {
    /// The label asked for.
    pub label: String,
    /// The scenario's policy labels, in its order.
    pub known: Vec<String>,
}

impl Named for UnknownLabel {
    fn named(&self, names: Names) -> String {
        format!(
            "{} {:?}: no such policy in the scenario; it has {:?}",
            names(Setting::Policy),
            self.label,
            self.known
        )
    }
}

impl Scenario {
    /// Reads and validates a scenario file. Errors name the file, the field and its line.
    pub fn load(path: &Path) -> Result<Scenario, FileError> {
        use std::io::Read as _;
        let io = |source| FileError::Io {
            file: path.display().to_string(),
            source,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(limits::FILE_BYTES + 1).read_to_end(&mut bytes))
            .map_err(io)?;
        if bytes.len() as u64 > limits::FILE_BYTES {
            return Err(io(std::io::Error::other(format!(
                "larger than {} MiB; a scenario file is a few kilobytes of TOML",
                limits::FILE_BYTES >> 20
            ))));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
            let last_line = valid.rsplit(|b| *b == b'\n').next().unwrap_or(valid);
            let column = String::from_utf8_lossy(last_line).chars().count() + 1;
            FileError::Parse {
                file: path.display().to_string(),
                field: None,
                position: Some((line, column)),
                message: "not valid UTF-8 (a scenario file is UTF-8 TOML text)".into(),
            }
        })?;
        Scenario::parse(&text).map_err(|e| e.in_file(&path.display().to_string()))
    }

    /// Parses and validates scenario TOML text. Errors carry the field's line and column.
    pub fn parse(text: &str) -> Result<Scenario, FileError> {
        let file: ScenarioFile = toml::from_str(text).map_err(|e| {
            let locator = Locator::new(text);
            let offset = e.span().map(|r| r.start);
            let mut field = offset.and_then(|o| locator.path_at(o));
            let mut position = offset.map(|o| locator.line_col(o));
            // Inside a tagged table (faults, distributions) the parser reports the whole table;
            // an unknown key it names can still be found.
            let unknown = e
                .message()
                .strip_prefix("unknown field `")
                .and_then(|r| r.split_once('`'))
                .map(|(k, _)| k);
            if let (Some(table), Some(key)) = (&field, unknown) {
                let path = format!("{table}.{key}");
                if let Some(span) = locator.exact_span_of(&path) {
                    position = Some(locator.line_col(span.start));
                    field = Some(path);
                }
            }
            // Likewise a value the message quotes, as in "`3x` is not a duration".
            let quoted = e
                .message()
                .strip_prefix('`')
                .and_then(|r| r.split_once('`'))
                .map(|(v, _)| v);
            if let (Some(table), Some(value), None) = (&field, quoted, unknown) {
                if let Some((path, span)) = locator.string_field(table, value) {
                    position = Some(locator.line_col(span.start));
                    field = Some(path);
                }
            }
            // A value the TOML parser itself rejects (a number too large) leaves no parsed document
            // to locate it in: name the key written on its line.
            if field.is_none() {
                field = position.and_then(|(line, _)| key_on_line(text, line));
            }
            let message = toml_limit(e.message().trim_end(), field.as_deref());
            FileError::Parse {
                file: String::new(),
                field,
                position,
                message,
            }
        })?;
        let locator = Locator::new(text);
        Scenario::check(file, Some(&locator)).map_err(|e| match e {
            FileError::Invalid {
                file,
                field,
                position: None,
                message,
            } => {
                let position = locator.position_of(&field);
                FileError::Invalid {
                    file,
                    field,
                    position,
                    message,
                }
            }
            other => other,
        })
    }

    /// Validates a parsed file (without positions: there is no text to point into).
    pub fn validate(file: ScenarioFile) -> Result<Scenario, FileError> {
        Scenario::check(file, None)
    }

    /// Checks that every label of `only` (`--policy`) names a policy of the scenario; the error
    /// names the label and lists the policies there are.
    pub fn check_labels(&self, only: &[String]) -> Result<(), UnknownLabel> {
        match only
            .iter()
            .find(|name| !self.policies.iter().any(|p| &p.name == *name))
        {
            None => Ok(()),
            Some(name) => Err(UnknownLabel {
                label: name.clone(),
                known: self.policies.iter().map(|p| p.name.clone()).collect(),
            }),
        }
    }

    /// The scenario under another seed, validated again.
    pub fn with_seed(self, seed: u64) -> Result<Scenario, FileError> {
        let mut file = self.file;
        file.seed = seed;
        Scenario::validate(file)
    }

    /// The scenario measured for `duration` after a warm-up of `warmup` instead of its own
    /// (either may be left as it is), validated again. A shorter measurement never shortens the
    /// warm-up: what the warm-up is for (a policy's blackout, estimators settling) does not shrink
    /// with the measurement.
    pub fn with_run_length(
        self,
        duration: Option<Dur>,
        warmup: Option<Dur>,
    ) -> Result<Scenario, FileError> {
        if duration.is_none() && warmup.is_none() {
            return Ok(self);
        }
        let mut file = self.file;
        if let Some(duration) = duration {
            file.workload.duration = duration;
        }
        if let Some(warmup) = warmup {
            file.workload.warmup = warmup;
        }
        Scenario::validate(file)
    }

    /// The scenario run for `warmup` + `duration` in all, with every time on its fault timeline
    /// (`start`, `end`, `at`, `restart_after`, `warmup`) scaled by the same proportion as the whole
    /// run, so a shortened run keeps each fault at the same place in it; validated again. What
    /// regression runs use to run canonical scenarios in a fraction of their length.
    pub fn rescaled(&self, warmup: Dur, duration: Dur) -> Result<Scenario, FileError> {
        let mut file = self.file.clone();
        let full = (file.workload.warmup.0 + file.workload.duration.0).max(1) as u128;
        let short = (warmup.0 + duration.0) as u128;
        file.workload.warmup = warmup;
        file.workload.duration = duration;
        let invalid = |e: String| FileError::invalid("faults", e);
        let mut value = toml::Value::try_from(&file).map_err(|e| invalid(e.to_string()))?;
        if let Some(faults) = value.get_mut("faults").and_then(|f| f.as_array_mut()) {
            for fault in faults.iter_mut().filter_map(|f| f.as_table_mut()) {
                for key in ["start", "end", "at", "restart_after", "warmup"] {
                    if let Some(toml::Value::String(text)) = fault.get(key) {
                        let d: Dur = text
                            .parse()
                            .map_err(|e: crate::units::DurError| invalid(e.to_string()))?;
                        let scaled = Dur((d.0 as u128 * short / full) as u64);
                        fault.insert(key.into(), toml::Value::String(scaled.to_string()));
                    }
                }
            }
        }
        let file: ScenarioFile = value
            .try_into()
            .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
        Scenario::validate(file)
    }

    /// The policies that need time before they route as configured, with how long and why
    /// ([`lblab_policy::config::PolicyConfig::warmup_need`]), in scenario order.
    pub fn warmup_needs(&self) -> Vec<(&str, Nanos, String)> {
        self.policies
            .iter()
            .filter_map(|p| match &p.selected {
                Selected::Policy(c) => c
                    .warmup_need()
                    .map(|(need, why)| (p.name.as_str(), need, why)),
                Selected::Extra { .. } => None,
            })
            .collect()
    }

    /// What the policies' configs hold that is valid but almost certainly not meant
    /// ([`lblab_policy::config::PolicyConfig::warnings`], and the unknown fields the parser
    /// ignores as gRPC does, [`lblab_policy::config::ignored_fields`]), each prefixed with the
    /// policy's label, in scenario order.
    pub fn config_warnings(&self) -> Vec<String> {
        let mut extra: Vec<&str> = SIM_ONLY_POLICIES.to_vec();
        extra.extend_from_slice(REAL_ONLY_POLICIES);
        self.policies
            .iter()
            .flat_map(|p| {
                let mut said: Vec<String> = match &p.selected {
                    Selected::Policy(c) => c.warnings(),
                    Selected::Extra { .. } => Vec::new(),
                };
                said.extend(
                    lblab_policy::config::ignored_fields(&p.config_json, &extra)
                        .iter()
                        .map(ToString::to_string),
                );
                said.into_iter()
                    .map(|w| format!("policy {:?}: {w}", p.name))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Fault windows per backend, `[start, end)` ns, bounded by the run end.
    pub fn fault_windows(&self) -> Vec<(usize, Nanos, Nanos)> {
        let mut v = Vec::new();
        for (i, b) in self.backends.iter().enumerate() {
            for &(s, e) in b.timeline.windows() {
                v.push((i, s, e.min(self.workload.end())));
            }
        }
        v
    }
}
