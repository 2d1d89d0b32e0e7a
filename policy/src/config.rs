//! gRPC service config: parsing a `loadBalancingConfig` list into a validated [`PolicyConfig`] tree,
//! normalizing it back to JSON with every default filled in, and building the policy.
//!
//! The rules are gRPC's: the first entry of `loadBalancingConfig` whose policy is supported wins
//! (an entry is an object with exactly one key, the policy name); durations are proto3 JSON strings
//! (`"10s"`, `"0.030s"`); field names are camelCase as in the gRFCs; defaults, rejections and
//! clamps follow gRFCs A48, A50 and A58 and DESIGN.md for `peak_ewma_experimental`. Unlike gRPC,
//! unknown fields are rejected: in a lab a typo that silently falls back to a default would
//! invalidate an experiment.

use std::fmt;

use serde_json::{json, Map, Value};

use crate::estimator::DecayMode;
use crate::outlier_detection::{FailurePercentageEjection, SuccessRateEjection};
use crate::p2c::{Sampling, MAX_CHOICES};
use crate::{
    duration, envoy_peak_ewma, least_request, outlier_detection, peak_ewma, pick_first,
    round_robin, weighted_round_robin, Nanos, Policy,
};

/// The policy names this crate implements, in gRPC's spelling.
pub const SUPPORTED: &[&str] = &[
    "pick_first",
    "round_robin",
    "least_request_experimental",
    "weighted_round_robin",
    "outlier_detection_experimental",
    "peak_ewma_experimental",
    "envoy_peak_ewma",
];

/// An invalid service config: where (a JSON path such as
/// `loadBalancingConfig[0].peak_ewma_experimental.choiceCount`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct ConfigError {
    /// JSON path of the offending field (empty for the document itself).
    pub path: String,
    /// What is wrong and what would be valid.
    pub message: String,
    /// 1-based line and column, for JSON syntax errors.
    pub position: Option<(usize, usize)>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.position, self.path.is_empty()) {
            (Some((line, col)), _) => write!(f, "line {line}, column {col}: {}", self.message),
            (None, true) => write!(f, "{}", self.message),
            (None, false) => write!(f, "`{}`: {}", self.path, self.message),
        }
    }
}

impl ConfigError {
    pub(crate) fn at(path: &str, message: impl Into<String>) -> Self {
        ConfigError {
            path: path.to_string(),
            message: message.into(),
            position: None,
        }
    }
}

/// A validated policy tree.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PolicyConfig {
    /// `pick_first`.
    PickFirst(pick_first::Config),
    /// `round_robin`.
    RoundRobin(round_robin::Config),
    /// `least_request_experimental`.
    LeastRequest(least_request::Config),
    /// `weighted_round_robin`.
    WeightedRoundRobin(weighted_round_robin::Config),
    /// `outlier_detection_experimental`, with its child.
    OutlierDetection(outlier_detection::Config),
    /// `peak_ewma_experimental`.
    PeakEwma(peak_ewma::Config),
    /// `envoy_peak_ewma`: Envoy's shipped balancer, as a reference.
    EnvoyPeakEwma(envoy_peak_ewma::Config),
}

/// The selected entry of a `loadBalancingConfig` list when the caller supports extra policy names
/// (the simulator's `oracle`, the load generator's `tower_p2c_peak_ewma`).
#[derive(Debug, Clone, PartialEq)]
pub enum Selected {
    /// A policy of this crate.
    Policy(PolicyConfig),
    /// One of the caller's extra names, with its raw config object.
    Extra {
        /// The policy name.
        name: String,
        /// Its config object.
        config: Value,
    },
}

/// Parses a service config JSON document (`{"loadBalancingConfig": [...]}`, or the legacy
/// `{"loadBalancingPolicy": "round_robin"}`) and returns the first supported policy.
pub fn parse_service_config(text: &str) -> Result<PolicyConfig, ConfigError> {
    match parse_service_config_with(text, &[])? {
        Selected::Policy(p) => Ok(p),
        Selected::Extra { .. } => unreachable!("no extra names were given"),
    }
}

/// Like [`parse_service_config`], also accepting the policy names in `extra` (handled by the
/// caller; their config objects are returned as they are).
pub fn parse_service_config_with(text: &str, extra: &[&str]) -> Result<Selected, ConfigError> {
    let doc: Value = crate::json::parse(text).map_err(|e| ConfigError {
        path: String::new(),
        message: format!("not valid JSON: {e}"),
        position: Some((e.line(), e.column())),
    })?;
    parse_service_config_value(&doc, extra)
}

/// [`parse_service_config_with`] for an already parsed document.
pub fn parse_service_config_value(doc: &Value, extra: &[&str]) -> Result<Selected, ConfigError> {
    let obj = doc.as_object().ok_or_else(|| {
        ConfigError::at(
            "",
            "a service config must be a JSON object with a `loadBalancingConfig` list",
        )
    })?;
    if let Some(list) = obj.get("loadBalancingConfig") {
        return select(list, "loadBalancingConfig", extra);
    }
    if let Some(name) = obj.get("loadBalancingPolicy") {
        let Some(name) = name.as_str() else {
            return Err(ConfigError::at(
                "loadBalancingPolicy",
                "must be a string such as \"round_robin\"",
            ));
        };
        let list = json!([{ name: {} }]);
        return select(&list, "loadBalancingPolicy", extra);
    }
    Err(ConfigError::at(
        "",
        "no `loadBalancingConfig` list; e.g. {\"loadBalancingConfig\":[{\"round_robin\":{}}]}",
    ))
}

/// Picks the first supported entry of a `loadBalancingConfig` list at `path`.
fn select(list: &Value, path: &str, extra: &[&str]) -> Result<Selected, ConfigError> {
    let entries = list.as_array().ok_or_else(|| {
        ConfigError::at(
            path,
            "must be a list of {\"policy_name\": {config}} objects",
        )
    })?;
    let mut seen = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let entry_path = format!("{path}[{i}]");
        let obj = entry.as_object().filter(|o| o.len() == 1).ok_or_else(|| {
            ConfigError::at(
                &entry_path,
                "each entry must be an object with exactly one key, the policy name",
            )
        })?;
        let (name, config) = obj.iter().next().expect("one key");
        let field_path = format!("{entry_path}.{name}");
        if extra.contains(&name.as_str()) {
            let Some(fields) = config.as_object() else {
                return Err(ConfigError::at(
                    &field_path,
                    "a policy's config must be a JSON object",
                ));
            };
            if let Some(field) = fields.keys().next() {
                return Err(ConfigError::at(
                    &format!("{field_path}.{field}"),
                    format!("`{name}` takes no config fields; write {{\"{name}\":{{}}}}"),
                ));
            }
            return Ok(Selected::Extra {
                name: name.clone(),
                config: config.clone(),
            });
        }
        if SUPPORTED.contains(&name.as_str()) {
            return parse_policy(name, config, &field_path).map(Selected::Policy);
        }
        seen.push(name.clone());
    }
    let mut supported: Vec<&str> = SUPPORTED.to_vec();
    supported.extend_from_slice(extra);
    Err(ConfigError::at(
        path,
        format!(
            "no supported policy in {seen:?}; supported: {}",
            supported.join(", ")
        ),
    ))
}

/// Parses one policy's config object. `path` names it in errors.
pub fn parse_policy(name: &str, config: &Value, path: &str) -> Result<PolicyConfig, ConfigError> {
    let mut f = Fields::new(config, path)?;
    let parsed = match name {
        "pick_first" => PolicyConfig::PickFirst(pick_first::Config {
            shuffle_address_list: f.bool("shuffleAddressList", false)?,
        }),
        "round_robin" => PolicyConfig::RoundRobin(round_robin::Config),
        "least_request_experimental" => PolicyConfig::LeastRequest(least_request::Config {
            choice_count: f.choice_count()?,
        }),
        "peak_ewma_experimental" => {
            let d = peak_ewma::Config::default();
            let choice_count = f.choice_count()?;
            let decay_time = f.positive_duration("decayTime", d.decay_time)?;
            let default_rtt = f.positive_duration("defaultRtt", d.default_rtt)?;
            let ablation = match f.object("lblabAblation")? {
                None => peak_ewma::Ablation::default(),
                Some(mut a) => {
                    let decay = match a.string_choice(
                        "decay",
                        &["time_weighted", "on_read"],
                        "time_weighted",
                    )? {
                        "on_read" => DecayMode::OnRead,
                        _ => DecayMode::TimeWeighted,
                    };
                    let sampling = match a.string_choice(
                        "sampling",
                        &["distinct", "with_replacement"],
                        "distinct",
                    )? {
                        "with_replacement" => Sampling::WithReplacement,
                        _ => Sampling::Distinct,
                    };
                    let streams = match a.string_choice(
                        "streams",
                        &["ignore", "outstanding", "count"],
                        "ignore",
                    )? {
                        "outstanding" => peak_ewma::Streams::Outstanding,
                        "count" => peak_ewma::Streams::Count,
                        _ => peak_ewma::Streams::Ignore,
                    };
                    a.finish()?;
                    peak_ewma::Ablation {
                        decay,
                        sampling,
                        streams,
                    }
                }
            };
            PolicyConfig::PeakEwma(peak_ewma::Config {
                choice_count,
                decay_time,
                default_rtt,
                ablation,
            })
        }
        "envoy_peak_ewma" => PolicyConfig::EnvoyPeakEwma(envoy_peak_ewma::Config::parse(&mut f)?),
        "weighted_round_robin" => {
            let d = weighted_round_robin::Config::default();
            let penalty = f.f64("errorUtilizationPenalty", d.error_utilization_penalty)?;
            if penalty < 0.0 {
                return Err(f.err(
                    "errorUtilizationPenalty",
                    format!("{penalty} is negative; must be >= 0"),
                ));
            }
            PolicyConfig::WeightedRoundRobin(weighted_round_robin::Config {
                enable_oob_load_report: f.bool("enableOobLoadReport", d.enable_oob_load_report)?,
                // A period of 0 would make the report timer due for ever; clamped like
                // weightUpdatePeriod, as gRPC does for that one.
                oob_reporting_period: f
                    .duration("oobReportingPeriod", d.oob_reporting_period)?
                    .max(weighted_round_robin::MIN_WEIGHT_UPDATE_PERIOD),
                blackout_period: f.duration("blackoutPeriod", d.blackout_period)?,
                weight_expiration_period: f
                    .duration("weightExpirationPeriod", d.weight_expiration_period)?,
                weight_update_period: f
                    .duration("weightUpdatePeriod", d.weight_update_period)?
                    .max(weighted_round_robin::MIN_WEIGHT_UPDATE_PERIOD),
                error_utilization_penalty: penalty,
            })
        }
        "outlier_detection_experimental" => {
            let d = outlier_detection::Config::default();
            // An interval of 0 would make the sweep timer due for ever: a spin, not a policy. A
            // positive one below the floor is clamped to it, as gRPC clamps WRR's timers.
            let interval = f
                .positive_duration("interval", d.interval)?
                .max(outlier_detection::MIN_INTERVAL);
            let base_ejection_time = f.duration("baseEjectionTime", d.base_ejection_time)?;
            let max_ejection_time = f.duration(
                "maxEjectionTime",
                d.max_ejection_time.max(base_ejection_time),
            )?;
            let max_ejection_percent = f.percent("maxEjectionPercent", d.max_ejection_percent)?;
            let success_rate_ejection = match f.object("successRateEjection")? {
                None => None,
                Some(mut o) => {
                    let d = SuccessRateEjection::default();
                    let v = SuccessRateEjection {
                        stdev_factor: o.u32("stdevFactor", d.stdev_factor)?,
                        enforcement_percentage: o
                            .percent("enforcementPercentage", d.enforcement_percentage)?,
                        minimum_hosts: o.u32("minimumHosts", d.minimum_hosts)?,
                        request_volume: o.u32("requestVolume", d.request_volume)?,
                    };
                    o.finish()?;
                    Some(v)
                }
            };
            let failure_percentage_ejection = match f.object("failurePercentageEjection")? {
                None => None,
                Some(mut o) => {
                    let d = FailurePercentageEjection::default();
                    let v = FailurePercentageEjection {
                        threshold: o.percent("threshold", d.threshold)?,
                        enforcement_percentage: o
                            .percent("enforcementPercentage", d.enforcement_percentage)?,
                        minimum_hosts: o.u32("minimumHosts", d.minimum_hosts)?,
                        request_volume: o.u32("requestVolume", d.request_volume)?,
                    };
                    o.finish()?;
                    Some(v)
                }
            };
            let child_path = format!("{path}.childPolicy");
            let child = match f.take("childPolicy") {
                None => return Err(ConfigError::at(&child_path, "is required: a loadBalancingConfig list for the wrapped policy, e.g. [{\"round_robin\":{}}]")),
                Some(list) => match select(list, &child_path, &[])? {
                    Selected::Policy(p) => p,
                    Selected::Extra { .. } => unreachable!("no extra names"),
                },
            };
            PolicyConfig::OutlierDetection(outlier_detection::Config {
                interval,
                base_ejection_time,
                max_ejection_time,
                max_ejection_percent,
                success_rate_ejection,
                failure_percentage_ejection,
                child_policy: Box::new(child),
            })
        }
        other => {
            return Err(ConfigError::at(
                path,
                format!(
                    "`{other}` is not a supported policy; supported: {}",
                    SUPPORTED.join(", ")
                ),
            ))
        }
    };
    f.finish()?;
    Ok(parsed)
}

impl PolicyConfig {
    /// The policy's gRPC name.
    pub fn name(&self) -> &'static str {
        match self {
            PolicyConfig::PickFirst(_) => "pick_first",
            PolicyConfig::RoundRobin(_) => "round_robin",
            PolicyConfig::LeastRequest(_) => "least_request_experimental",
            PolicyConfig::WeightedRoundRobin(_) => "weighted_round_robin",
            PolicyConfig::OutlierDetection(_) => "outlier_detection_experimental",
            PolicyConfig::PeakEwma(_) => "peak_ewma_experimental",
            PolicyConfig::EnvoyPeakEwma(_) => "envoy_peak_ewma",
        }
    }

    /// How long the policy needs after it starts before it routes as configured, with what sets
    /// it, if it needs any time at all: weighted_round_robin uses no weights until an endpoint has
    /// reported load for `blackoutPeriod` and the next weight update (`weightUpdatePeriod`) has
    /// run, so until then it is round_robin. A measurement that starts earlier measures that.
    pub fn warmup_need(&self) -> Option<(Nanos, String)> {
        match self {
            PolicyConfig::WeightedRoundRobin(c) => Some((
                c.blackout_period + c.weight_update_period,
                format!(
                    "weighted_round_robin's blackoutPeriod {} + weightUpdatePeriod {}",
                    duration::format(c.blackout_period),
                    duration::format(c.weight_update_period)
                ),
            )),
            PolicyConfig::OutlierDetection(c) => c.child_policy.warmup_need(),
            _ => None,
        }
    }

    /// Builds the policy. `now` starts any interval timers.
    pub fn build(&self, now: Nanos) -> Box<dyn Policy> {
        match self {
            PolicyConfig::PickFirst(c) => Box::new(pick_first::PickFirst::new(*c)),
            PolicyConfig::RoundRobin(c) => Box::new(round_robin::RoundRobin::new(*c)),
            PolicyConfig::LeastRequest(c) => Box::new(least_request::LeastRequest::new(*c)),
            PolicyConfig::WeightedRoundRobin(c) => {
                Box::new(weighted_round_robin::WeightedRoundRobin::new(*c, now))
            }
            PolicyConfig::OutlierDetection(c) => Box::new(
                outlier_detection::OutlierDetection::new(c.clone(), c.child_policy.build(now), now),
            ),
            PolicyConfig::PeakEwma(c) => Box::new(peak_ewma::PeakEwmaPolicy::new(*c)),
            PolicyConfig::EnvoyPeakEwma(c) => {
                Box::new(envoy_peak_ewma::EnvoyPeakEwma::new(*c, now))
            }
        }
    }

    /// The normalized config as a `loadBalancingConfig` entry, every default filled in.
    pub fn to_json(&self) -> Value {
        let body = match self {
            PolicyConfig::PickFirst(c) => json!({ "shuffleAddressList": c.shuffle_address_list }),
            PolicyConfig::RoundRobin(_) => json!({}),
            PolicyConfig::LeastRequest(c) => json!({ "choiceCount": c.choice_count }),
            PolicyConfig::EnvoyPeakEwma(c) => c.to_json(),
            PolicyConfig::PeakEwma(c) => json!({
                "choiceCount": c.choice_count,
                "decayTime": duration::format(c.decay_time),
                "defaultRtt": duration::format(c.default_rtt),
                "lblabAblation": {
                    "decay": match c.ablation.decay { DecayMode::TimeWeighted => "time_weighted", DecayMode::OnRead => "on_read" },
                    "sampling": match c.ablation.sampling { Sampling::WithReplacement => "with_replacement", Sampling::Distinct => "distinct" },
                    "streams": match c.ablation.streams { peak_ewma::Streams::Ignore => "ignore", peak_ewma::Streams::Outstanding => "outstanding", peak_ewma::Streams::Count => "count" },
                },
            }),
            PolicyConfig::WeightedRoundRobin(c) => json!({
                "enableOobLoadReport": c.enable_oob_load_report,
                "oobReportingPeriod": duration::format(c.oob_reporting_period),
                "blackoutPeriod": duration::format(c.blackout_period),
                "weightExpirationPeriod": duration::format(c.weight_expiration_period),
                "weightUpdatePeriod": duration::format(c.weight_update_period),
                "errorUtilizationPenalty": c.error_utilization_penalty,
            }),
            PolicyConfig::OutlierDetection(c) => {
                let mut m = Map::new();
                m.insert("interval".into(), json!(duration::format(c.interval)));
                m.insert(
                    "baseEjectionTime".into(),
                    json!(duration::format(c.base_ejection_time)),
                );
                m.insert(
                    "maxEjectionTime".into(),
                    json!(duration::format(c.max_ejection_time)),
                );
                m.insert("maxEjectionPercent".into(), json!(c.max_ejection_percent));
                if let Some(s) = c.success_rate_ejection {
                    m.insert(
                        "successRateEjection".into(),
                        json!({
                            "stdevFactor": s.stdev_factor,
                            "enforcementPercentage": s.enforcement_percentage,
                            "minimumHosts": s.minimum_hosts,
                            "requestVolume": s.request_volume,
                        }),
                    );
                }
                if let Some(s) = c.failure_percentage_ejection {
                    m.insert(
                        "failurePercentageEjection".into(),
                        json!({
                            "threshold": s.threshold,
                            "enforcementPercentage": s.enforcement_percentage,
                            "minimumHosts": s.minimum_hosts,
                            "requestVolume": s.request_volume,
                        }),
                    );
                }
                m.insert("childPolicy".into(), json!([c.child_policy.to_json()]));
                Value::Object(m)
            }
        };
        json!({ self.name(): body })
    }

    /// A short label for tables and charts, e.g. `outlier_detection(peak_ewma)`.
    pub fn label(&self) -> String {
        let short = |n: &str| n.trim_end_matches("_experimental").to_string();
        match self {
            PolicyConfig::OutlierDetection(c) => {
                format!("outlier_detection({})", c.child_policy.label())
            }
            other => short(other.name()),
        }
    }
}

/// Reads the fields of one JSON object, remembering which were read so unknown ones are rejected.
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: String,
    read: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(value: &'a Value, path: &str) -> Result<Self, ConfigError> {
        let map = value.as_object().ok_or_else(|| {
            ConfigError::at(path, format!("must be a JSON object, found {value}"))
        })?;
        Ok(Fields {
            map,
            path: path.to_string(),
            read: Vec::new(),
        })
    }

    pub(crate) fn err(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(&format!("{}.{key}", self.path), message)
    }

    pub(crate) fn take(&mut self, key: &'static str) -> Option<&'a Value> {
        self.read.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn finish(self) -> Result<(), ConfigError> {
        for key in self.map.keys() {
            if !self.read.contains(&key.as_str()) {
                let known = if self.read.is_empty() {
                    "none".to_string()
                } else {
                    self.read.join(", ")
                };
                return Err(self.err(key, format!("unknown field; known fields here: {known}")));
            }
        }
        Ok(())
    }

    pub(crate) fn u32(&mut self, key: &'static str, default: u32) -> Result<u32, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                self.err(
                    key,
                    format!("{v} is not a whole number from 0 to 4294967295"),
                )
            })
    }

    pub(crate) fn percent(&mut self, key: &'static str, default: u32) -> Result<u32, ConfigError> {
        let v = self.u32(key, default)?;
        if v > 100 {
            return Err(self.err(
                key,
                format!("{v} is above 100; a percentage must be 0..=100"),
            ));
        }
        Ok(v)
    }

    pub(crate) fn f64(&mut self, key: &'static str, default: f64) -> Result<f64, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| self.err(key, format!("{v} is not a number")))
    }

    pub(crate) fn bool(&mut self, key: &'static str, default: bool) -> Result<bool, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_bool()
            .ok_or_else(|| self.err(key, format!("{v} is not true or false")))
    }

    pub(crate) fn duration(
        &mut self,
        key: &'static str,
        default: Nanos,
    ) -> Result<Nanos, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        let text = v.as_str().ok_or_else(|| {
            self.err(
                key,
                format!("{v} is not a duration string; write e.g. \"10s\" or \"0.030s\""),
            )
        })?;
        duration::parse(text).map_err(|m| self.err(key, m))
    }

    pub(crate) fn positive_duration(
        &mut self,
        key: &'static str,
        default: Nanos,
    ) -> Result<Nanos, ConfigError> {
        let d = self.duration(key, default)?;
        if d == 0 {
            return Err(self.err(key, "must be greater than 0s"));
        }
        Ok(d)
    }

    /// `choiceCount` as A48 defines it: default 2, below 2 rejected, above 10 clamped.
    pub(crate) fn choice_count(&mut self) -> Result<u32, ConfigError> {
        let n = self.u32("choiceCount", 2)?;
        if n < 2 {
            return Err(self.err("choiceCount", format!("{n} is below 2; choiceCount must be at least 2 (values above {MAX_CHOICES} are clamped to {MAX_CHOICES})")));
        }
        Ok(n.min(MAX_CHOICES))
    }

    pub(crate) fn object(&mut self, key: &'static str) -> Result<Option<Fields<'a>>, ConfigError> {
        let path = format!("{}.{key}", self.path);
        self.take(key).map(|v| Fields::new(v, &path)).transpose()
    }

    pub(crate) fn string_choice(
        &mut self,
        key: &'static str,
        choices: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_str()
            .and_then(|s| choices.iter().find(|c| **c == s).copied())
            .ok_or_else(|| self.err(key, format!("{v} is not one of {}", choices.join(", "))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_round_robin_needs_its_blackout_and_one_update() {
        let need = |text: &str| parse_service_config(text).unwrap().warmup_need();
        let (n, why) = need(r#"{"loadBalancingConfig":[{"weighted_round_robin":{}}]}"#).unwrap();
        assert_eq!(n, 11_000_000_000, "{why}");
        assert!(why.contains("blackoutPeriod 10s") && why.contains("weightUpdatePeriod 1s"));
        let (n, _) = need(r#"{"loadBalancingConfig":[{"outlier_detection_experimental":{"childPolicy":[{"weighted_round_robin":{"blackoutPeriod":"2s","weightUpdatePeriod":"0.5s"}}]}}]}"#).unwrap();
        assert_eq!(n, 2_500_000_000);
        assert!(need(r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}"#).is_none());
    }

    #[test]
    fn outlier_detection_interval_of_zero_is_rejected() {
        let err = parse_service_config(
            r#"{"loadBalancingConfig":[{"outlier_detection_experimental":{"interval":"0s","childPolicy":[{"round_robin":{}}]}}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            err.path,
            "loadBalancingConfig[0].outlier_detection_experimental.interval"
        );
        assert!(err.message.contains("greater than 0s"), "{err}");
    }
}
