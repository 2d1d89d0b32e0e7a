//! A scenario changed by a load generator's flags ([`LoadOverrides`]), a scenario made of them
//! alone for a service lblab did not start ([`service_scenario`]), and policies given as service
//! configs, names or labels ([`policy_specs`]).
//!
//! Errors name the scenario field or the value, never a command-line flag: the caller adds the
//! flag as context.

use std::path::Path;

use crate::dist::DistSpec;
use crate::scenario::{Arrival, GroupSpec, PolicySpec, ScenarioFile, WorkloadSpec};
use crate::units::Dur;
use crate::{FileError, Scenario};

/// The policies run against a service when neither a scenario nor the caller names any.
pub const DEFAULT_POLICIES: &[&str] = &[
    "round_robin",
    "least_request_experimental",
    "peak_ewma_experimental",
];

/// What a load generator's flags change in a scenario; `None` keeps the scenario's value.
#[derive(Debug, Clone, Default)]
pub struct LoadOverrides {
    /// Offered calls per second, open loop (turns a closed loop open).
    pub rate: Option<f64>,
    /// Calls each client keeps in flight: a closed loop.
    pub concurrency: Option<u32>,
    /// Clients.
    pub clients: Option<u32>,
    /// Evenly spaced arrivals (open loop only).
    pub constant: bool,
    /// Per-call deadline.
    pub deadline: Option<Dur>,
    /// Seed.
    pub seed: Option<u64>,
    /// Measured length after the warm-up.
    pub duration: Option<Dur>,
    /// Warm-up.
    pub warmup: Option<Dur>,
    /// The policies to run instead of the scenario's.
    pub policies: Option<Vec<PolicySpec>>,
}

/// Why overrides do not fit a scenario.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OverrideError {
    /// Constant spacing asked for a closed loop.
    #[error("constant spacing applies to open-loop arrivals, not to a closed loop (concurrency)")]
    ConstantClosedLoop,
    /// A zero measured length.
    #[error("the measured length must be greater than 0s (e.g. 20s)")]
    ZeroDuration,
    /// The result does not validate.
    #[error(transparent)]
    Invalid(#[from] FileError),
}

impl LoadOverrides {
    /// `file` with the overrides applied, validated. A shorter measured length never shortens
    /// the warm-up (as [`Scenario::with_run_length`]).
    pub fn apply(&self, mut file: ScenarioFile) -> Result<Scenario, OverrideError> {
        let w = &mut file.workload;
        if let Some(rate) = self.rate {
            w.rate = rate;
            w.concurrency = None;
            if w.arrival == Arrival::Closed {
                w.arrival = Arrival::Poisson;
            }
        }
        if let Some(c) = self.concurrency {
            w.concurrency = Some(c);
            w.arrival = Arrival::Closed;
            w.rate = 0.0;
        }
        if self.constant {
            if w.arrival == Arrival::Closed {
                return Err(OverrideError::ConstantClosedLoop);
            }
            w.arrival = Arrival::Constant;
        }
        if let Some(c) = self.clients {
            w.clients = c;
        }
        if let Some(d) = self.deadline {
            w.deadline = d;
        }
        if let Some(p) = &self.policies {
            file.policies = p.clone();
        }
        if let Some(seed) = self.seed {
            file.seed = seed;
        }
        if self.duration.is_some_and(|d| d.0 == 0) {
            return Err(OverrideError::ZeroDuration);
        }
        let scenario = Scenario::validate(file)?;
        Ok(scenario.with_run_length(self.duration, self.warmup)?)
    }
}

/// A scenario for a service lblab did not start, made of flags: one backend per target (the
/// load generator only needs their count and names), 100 calls per second from one client for
/// 10 s after 2 s of warm-up, a 20 s deadline, and [`DEFAULT_POLICIES`]. `name` names it (the
/// method, or `echo`).
pub fn service_scenario(name: &str, targets: usize) -> ScenarioFile {
    let second = 1_000_000_000;
    ScenarioFile {
        name: name.to_string(),
        description: "A load-generator run against a service, made of command-line flags.".into(),
        seed: 1,
        workload: WorkloadSpec {
            clients: 1,
            rate: 100.0,
            arrival: Arrival::Poisson,
            concurrency: None,
            duration: Dur(10 * second),
            warmup: Dur(2 * second),
            deadline: Dur(20 * second),
            streaming_share: 0.0,
            stream_duration: DistSpec::Constant { value: Dur(second) },
            methods: Vec::new(),
            measured_method: None,
        },
        fleet: vec![GroupSpec {
            name: "target".into(),
            count: targets.max(1) as u32,
            workers: 4,
            queue_limit: 1000,
            service_time: DistSpec::Constant {
                value: Dur(1_000_000),
            },
            network_rtt: Dur(0),
            zone: "local".into(),
        }],
        faults: Vec::new(),
        policies: DEFAULT_POLICIES.iter().map(|p| named_policy(p)).collect(),
    }
}

/// Why a policy value is not one. The message does not repeat the value: [`Self::value`] gives
/// it, for the caller to name with its flag.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyValueError {
    /// `@FILE` could not be read.
    #[error("{source}")]
    File {
        /// The value, `@FILE`.
        value: String,
        /// Why.
        source: Box<FileError>,
    },
    /// Not JSON.
    #[error("not valid JSON: {detail}")]
    Json {
        /// The value (or `@FILE`).
        value: String,
        /// serde_json's message.
        detail: String,
    },
    /// JSON, but not an object.
    #[error("expected a JSON object (a service config or one policy's entry)")]
    NotAnObject {
        /// The value.
        value: String,
    },
    /// Neither a config, a label nor a policy name.
    #[error(
        "{}not a service config (JSON, or @FILE) or a policy name ({names})",
        labels.as_ref().map(|l| format!("no such policy in the scenario (its labels: {l}), and ")).unwrap_or_default()
    )]
    Unknown {
        /// The value.
        value: String,
        /// The policy names there are.
        names: String,
        /// The scenario's labels, when there is a scenario.
        labels: Option<String>,
    },
}

impl PolicyValueError {
    /// The value that is not a policy.
    pub fn value(&self) -> &str {
        match self {
            PolicyValueError::File { value, .. }
            | PolicyValueError::Json { value, .. }
            | PolicyValueError::NotAnObject { value }
            | PolicyValueError::Unknown { value, .. } => value,
        }
    }
}

/// Policies from values, in order: a service config as JSON (a whole one, a
/// `loadBalancingConfig` list or one policy's entry), `@FILE` holding one, the label of a
/// `scenario` policy, or a policy name. The same label twice gets a number (`round_robin#2`):
/// labels name the result files.
pub fn policy_specs(
    values: &[String],
    scenario: Option<&Scenario>,
) -> Result<Vec<PolicySpec>, PolicyValueError> {
    let mut out: Vec<PolicySpec> = Vec::new();
    for v in values {
        let v = v.trim();
        let spec = if let Some(path) = v.strip_prefix('@') {
            let path = Path::new(path);
            let text =
                lblab_record::read_result_file(path).map_err(|source| PolicyValueError::File {
                    value: v.to_string(),
                    source: Box::new(source),
                })?;
            let label = path
                .file_stem()
                .map_or_else(|| "policy".into(), |s| s.to_string_lossy().into_owned());
            PolicySpec {
                name: label,
                config: service_config(&text, v)?,
            }
        } else if v.starts_with('{') || v.starts_with('[') {
            let config = service_config(v, v)?;
            PolicySpec {
                name: label_of(&config),
                config,
            }
        } else if let Some(p) = scenario.and_then(|s| s.policies.iter().find(|p| p.name == v)) {
            PolicySpec {
                name: p.name.clone(),
                config: p.config_json.clone(),
            }
        } else if lblab_policy::config::SUPPORTED.contains(&v)
            || crate::scenario::REAL_ONLY_POLICIES.contains(&v)
        {
            named_policy(v)
        } else {
            return Err(PolicyValueError::Unknown {
                value: v.to_string(),
                names: lblab_policy::config::SUPPORTED.join(", "),
                labels: scenario.map(|s| {
                    s.policies
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
            });
        };
        let mut name = spec.name.clone();
        let mut n = 1;
        while out.iter().any(|p| p.name == name) {
            n += 1;
            name = format!("{}#{n}", spec.name);
        }
        out.push(PolicySpec { name, ..spec });
    }
    Ok(out)
}

/// The policy `name` with its default config.
fn named_policy(name: &str) -> PolicySpec {
    PolicySpec {
        name: name.to_string(),
        config: format!(r#"{{"loadBalancingConfig":[{{"{name}":{{}}}}]}}"#),
    }
}

/// A service config from a whole one, a `loadBalancingConfig` list, or one policy's entry.
fn service_config(text: &str, value: &str) -> Result<String, PolicyValueError> {
    let parsed: serde_json::Value =
        serde_json::from_str(text).map_err(|e| PolicyValueError::Json {
            value: value.to_string(),
            detail: e.to_string(),
        })?;
    let wrapped = match &parsed {
        serde_json::Value::Object(o) if o.contains_key("loadBalancingConfig") => parsed,
        serde_json::Value::Array(_) => serde_json::json!({ "loadBalancingConfig": parsed }),
        serde_json::Value::Object(_) => serde_json::json!({ "loadBalancingConfig": [parsed] }),
        _ => {
            return Err(PolicyValueError::NotAnObject {
                value: value.to_string(),
            })
        }
    };
    Ok(wrapped.to_string())
}

/// A label for a service config: its first policy's name, with the child's for wrappers.
fn label_of(config: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(config).unwrap_or_default();
    let first = |v: &serde_json::Value| -> Option<(String, serde_json::Value)> {
        let list = v.as_array()?;
        let (name, body) = list.first()?.as_object()?.iter().next()?;
        Some((name.clone(), body.clone()))
    };
    let Some((name, body)) = first(&value["loadBalancingConfig"]) else {
        return "policy".into();
    };
    match first(&body["childPolicy"]) {
        Some((child, _)) => format!("{name}({child})"),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_values_become_service_configs_with_labels() {
        let p = policy_specs(
            &[
                r#"{"round_robin":{}}"#.into(),
                "peak_ewma_experimental".into(),
                r#"[{"outlier_detection_experimental":{"childPolicy":[{"round_robin":{}}]}}]"#
                    .into(),
                r#"{"round_robin":{}}"#.into(),
            ],
            None,
        )
        .unwrap();
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "round_robin",
                "peak_ewma_experimental",
                "outlier_detection_experimental(round_robin)",
                "round_robin#2"
            ]
        );
        assert_eq!(
            p[0].config,
            r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#
        );
        let e = policy_specs(&["fastest".into()], None).unwrap_err();
        assert_eq!(e.value(), "fastest");
        assert!(e.to_string().contains("peak_ewma_experimental"), "{e}");
        let e = policy_specs(&["{not json".into()], None).unwrap_err();
        assert!(e.to_string().contains("not valid JSON"), "{e}");
    }

    #[test]
    fn overrides_turn_loops_and_refuse_constant_closed() {
        let file = service_scenario("svc", 2);
        let closed = LoadOverrides {
            concurrency: Some(4),
            ..LoadOverrides::default()
        };
        let s = closed.apply(file.clone()).unwrap();
        assert_eq!(s.file.workload.arrival, Arrival::Closed);
        let bad = LoadOverrides {
            constant: true,
            ..closed
        };
        assert!(matches!(
            bad.apply(file.clone()),
            Err(OverrideError::ConstantClosedLoop)
        ));
        let zero = LoadOverrides {
            duration: Some(Dur(0)),
            ..LoadOverrides::default()
        };
        assert!(matches!(zero.apply(file), Err(OverrideError::ZeroDuration)));
    }
}
