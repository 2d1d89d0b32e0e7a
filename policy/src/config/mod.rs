//! gRPC service config: parsing a `loadBalancingConfig` list into a validated [`PolicyConfig`] tree,
//! normalizing it back to JSON with every default filled in, and building the policy.
//!
//! The rules are gRPC's: the first entry of `loadBalancingConfig` whose policy is supported wins
//! (an entry is an object with exactly one key, the policy name); durations are proto3 JSON strings
//! (`"10s"`, `"0.030s"`); field names are camelCase as in the gRFCs; defaults, rejections and
//! clamps follow gRFCs A48, A50 and A58 and the gRFC draft for `peak_ewma_experimental`. Unknown
//! fields are ignored, as gRPC's parsers ignore them; since in a lab a typo that silently falls
//! back to a default would invalidate an experiment, [`ignored_fields`] names them, and every
//! command that reads a config (`lblab check`, scenario files, `--policy`) warns of each. The lab's
//! own `lblabAblation` object, which no gRPC implementation reads, still rejects a field it does
//! not know.
//!
//! Each policy's own fields are read, checked and written back in its module, by its `Config`'s
//! `Spec` implementation (`spec.rs`), with the `Fields` reader and [`ConfigError`] of `fields.rs`;
//! this file holds the document and list rules. The policy table itself is in `lib.rs`
//! (`policies!`, see `registry.rs`), which generates [`PolicyConfig`] and [`SUPPORTED`].

pub(crate) mod fields;
pub(crate) mod spec;

use serde_json::{json, Value};

pub use self::fields::ConfigError;
use crate::table::KINDS;
pub use crate::table::{PolicyConfig, SUPPORTED};
use crate::Nanos;
use crate::Policy;
use fields::Fields;

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

/// The unknown fields that [`parse_service_config_with`] ignores in `text` (as gRPC does), each
/// as an error naming the field; empty when there are none or the config is invalid.
pub fn ignored_fields(text: &str, extra: &[&str]) -> Vec<ConfigError> {
    match fields::collect_ignored(|| parse_service_config_with(text, extra)) {
        (Ok(_), ignored) => ignored,
        (Err(_), _) => Vec::new(),
    }
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

    /// Builds the policy as a [`ConcurrentPolicy`](crate::shared::ConcurrentPolicy), whose picks
    /// and completions take no lock over the policy, if it has that form for this config: today
    /// `peak_ewma_experimental` with an estimate [`SharedPeakEwma`](crate::peak_ewma::shared::SharedPeakEwma)
    /// implements (the default among them), not inside a parent policy. It picks what
    /// [`build`](Self::build)'s policy picks.
    pub fn build_concurrent(&self) -> Option<std::sync::Arc<dyn crate::shared::ConcurrentPolicy>> {
        self.spec().build_concurrent()
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
