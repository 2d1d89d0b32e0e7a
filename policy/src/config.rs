//! gRPC service config: parsing a `loadBalancingConfig` list into a validated [`PolicyConfig`] tree,
//! normalizing it back to JSON with every default filled in, and building the policy.
//!
//! The rules are gRPC's: the first entry of `loadBalancingConfig` whose policy is supported wins
//! (an entry is an object with exactly one key, the policy name); durations are proto3 JSON strings
//! (`"10s"`, `"0.030s"`); field names are camelCase as in the gRFCs; defaults, rejections and
//! clamps follow gRFCs A48, A50 and A58 and DESIGN.md for `peak_ewma_experimental`. Unlike gRPC,
//! unknown fields are rejected: in a lab a typo that silently falls back to a default would
//! invalidate an experiment.
//!
//! Each policy's own fields are read, checked and written back in its module, by its `Config`'s
//! `Spec` implementation; this file holds what they share: the document and list rules, the
//! `Fields` reader, [`ConfigError`], and the one table of policies (`policies!`).

use std::fmt;

use serde_json::{json, Map, Value};

use crate::p2c::MAX_CHOICES;
use crate::{
    duration, envoy_peak_ewma, finagle_peak_ewma, least_request, outlier_detection, peak_ewma,
    pick_first, round_robin, weighted_round_robin, Nanos, Policy,
};

/// The policy table: one line per policy, `Variant(module)`, in the order [`SUPPORTED`] lists
/// them. `module` has a `NAME` (its gRPC name) and a `Config` implementing [`Spec`]; from this one
/// list come the [`PolicyConfig`] enum, [`SUPPORTED`], and the table [`parse_policy`] selects from.
macro_rules! policies {
    ($($(#[$doc:meta])* $variant:ident($module:ident),)*) => {
        /// A validated policy tree.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum PolicyConfig {
            $($(#[$doc])* $variant($module::Config),)*
        }

        /// The policy names this crate implements, in gRPC's spelling.
        pub const SUPPORTED: &[&str] = &[$($module::NAME,)*];

        /// [`SUPPORTED`] with what each name parses into.
        const KINDS: &[Kind] = &[$(Kind {
            name: $module::NAME,
            parse: |f| <$module::Config as Spec>::parse(f).map(PolicyConfig::$variant),
            #[cfg(test)]
            default: || PolicyConfig::$variant(Default::default()),
        },)*];

        impl PolicyConfig {
            /// The policy's gRPC name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(PolicyConfig::$variant(_) => $module::NAME,)*
                }
            }

            /// The variant's config, for what every policy's config does.
            fn spec(&self) -> &dyn Spec {
                match self {
                    $(PolicyConfig::$variant(c) => c,)*
                }
            }
        }
    };
}

policies! {
    /// `pick_first`.
    PickFirst(pick_first),
    /// `round_robin`.
    RoundRobin(round_robin),
    /// `least_request_experimental`.
    LeastRequest(least_request),
    /// `weighted_round_robin`.
    WeightedRoundRobin(weighted_round_robin),
    /// `outlier_detection_experimental`, with its child.
    OutlierDetection(outlier_detection),
    /// `peak_ewma_experimental`.
    PeakEwma(peak_ewma),
    /// `envoy_peak_ewma`: Envoy's shipped balancer, as a reference.
    EnvoyPeakEwma(envoy_peak_ewma),
    /// `finagle_peak_ewma`: Finagle's balancer, as a reference.
    FinaglePeakEwma(finagle_peak_ewma),
}

/// What a policy's module implements for its `Config`, beside the algorithm: reading the config
/// object, writing it back, building the policy.
pub(crate) trait Spec: fmt::Debug {
    /// Reads, validates and clamps the fields of the policy's config object. Fields it does not
    /// read are rejected afterwards as unknown.
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError>
    where
        Self: Sized;

    /// The normalized config object, every default filled in (without the policy name).
    fn to_json(&self) -> Value;

    /// Builds the policy. `now` starts any interval timers.
    fn build(&self, now: Nanos) -> Box<dyn Policy>;

    /// See [`PolicyConfig::warmup_need`]; most policies need no time.
    fn warmup_need(&self) -> Option<(Nanos, String)> {
        None
    }

    /// A label other than the name without `_experimental`, if the policy has one.
    fn label(&self) -> Option<String> {
        None
    }

    /// See [`PolicyConfig::warnings`]; most configs have nothing to warn about.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// One line of the policy table: a name and how to parse its config.
struct Kind {
    name: &'static str,
    parse: fn(&mut Fields<'_>) -> Result<PolicyConfig, ConfigError>,
    #[cfg(test)]
    default: fn() -> PolicyConfig,
}

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
pub(crate) fn select(list: &Value, path: &str, extra: &[&str]) -> Result<Selected, ConfigError> {
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
    let Some(kind) = KINDS.iter().find(|k| k.name == name) else {
        return Err(ConfigError::at(
            path,
            format!(
                "`{name}` is not a supported policy; supported: {}",
                SUPPORTED.join(", ")
            ),
        ));
    };
    let parsed = (kind.parse)(&mut f)?;
    f.finish()?;
    Ok(parsed)
}

impl PolicyConfig {
    /// How long the policy needs after it starts before it routes as configured, with what sets
    /// it, if it needs any time at all: weighted_round_robin uses no weights until an endpoint has
    /// reported load for `blackoutPeriod` and the next weight update (`weightUpdatePeriod`) has
    /// run, so until then it is round_robin. A measurement that starts earlier measures that.
    pub fn warmup_need(&self) -> Option<(Nanos, String)> {
        self.spec().warmup_need()
    }

    /// What is valid but almost certainly not meant, e.g. an `outlier_detection_experimental`
    /// with no ejection algorithm, which ejects nothing. Every command that validates a config
    /// (`lblab check`, scenario files, `--policy`) prints these; the tree's child policies
    /// included.
    pub fn warnings(&self) -> Vec<String> {
        self.spec().warnings()
    }

    /// Builds the policy. `now` starts any interval timers.
    pub fn build(&self, now: Nanos) -> Box<dyn Policy> {
        self.spec().build(now)
    }

    /// The normalized config as a `loadBalancingConfig` entry, every default filled in.
    pub fn to_json(&self) -> Value {
        json!({ self.name(): self.spec().to_json() })
    }

    /// A short label for tables and charts, e.g. `outlier_detection(peak_ewma)`.
    pub fn label(&self) -> String {
        self.spec()
            .label()
            .unwrap_or_else(|| self.name().trim_end_matches("_experimental").to_string())
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

    /// The JSON path of field `key` of this object.
    pub(crate) fn path_of(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    pub(crate) fn err(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(&self.path_of(key), message)
    }

    /// Whether field `key` is present (and not null), without marking it read.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
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

    /// The nested object `key`, if present, read by `read`; its unknown fields are rejected.
    pub(crate) fn object<T>(
        &mut self,
        key: &'static str,
        read: impl FnOnce(&mut Fields<'a>) -> Result<T, ConfigError>,
    ) -> Result<Option<T>, ConfigError> {
        let path = self.path_of(key);
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let mut o = Fields::new(v, &path)?;
        let parsed = read(&mut o)?;
        o.finish()?;
        Ok(Some(parsed))
    }

    /// A string field naming one of `choices` (`(name, value)` pairs).
    pub(crate) fn choice<T: Copy>(
        &mut self,
        key: &'static str,
        choices: &[(&'static str, T)],
        default: T,
    ) -> Result<T, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_str()
            .and_then(|s| choices.iter().find(|(name, _)| *name == s))
            .map(|&(_, value)| value)
            .ok_or_else(|| {
                let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
                self.err(key, format!("{v} is not one of {}", names.join(", ")))
            })
    }
}

/// The name of `value` among `choices`, as [`Fields::choice`] reads it.
pub(crate) fn choice_name<T: PartialEq>(choices: &[(&'static str, T)], value: T) -> &'static str {
    choices
        .iter()
        .find(|(_, v)| *v == value)
        .map(|(name, _)| *name)
        .expect("every value has a name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_unique_and_match_the_variants() {
        for (i, kind) in KINDS.iter().enumerate() {
            assert_eq!(SUPPORTED[i], kind.name);
            assert!(!SUPPORTED[..i].contains(&kind.name), "{} twice", kind.name);
            assert_eq!((kind.default)().name(), kind.name);
        }
        assert_eq!(KINDS.len(), SUPPORTED.len());
    }

    #[test]
    fn every_default_round_trips_through_its_normalized_json() {
        for kind in KINDS {
            let default = (kind.default)();
            let entry = default.to_json();
            let parsed = parse_policy(kind.name, &entry[kind.name], kind.name)
                .unwrap_or_else(|e| panic!("{}: {e}", kind.name));
            assert_eq!(parsed, default, "{entry}");
            assert_eq!(parsed.build(0).name(), kind.name);
        }
    }

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
