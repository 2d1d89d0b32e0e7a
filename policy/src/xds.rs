//! Envoy xDS load-balancing config mapped onto this crate's policies, as gRPC would take it from an
//! xDS `Cluster` (gRFC A52): the first entry of `load_balancing_policy.policies` whose
//! `typed_extension_config.typed_config` type gRPC (here: lblab) supports wins; an unsupported type
//! is skipped; no supported entry at all is an error.
//!
//! Accepted documents (JSON as in an Envoy config dump; field names in snake_case or proto3 JSON's
//! lowerCamelCase):
//! - a `Cluster` with `load_balancing_policy` (also inside a config dump's `{"cluster": {...}}`);
//! - a `LoadBalancingPolicy` alone: `{"policies": [...]}`;
//! - one `Policy` entry: `{"typed_extension_config": {...}}`.
//!
//! Types mapped:
//! - `envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma` (and its `v3` copy) onto
//!   `peak_ewma_experimental`: `decay_time` → `decayTime`, `choiceCount` 2 (Envoy always draws
//!   two). `default_rtt`, `aggregation_interval`, `max_samples_per_host` and `penalty_value` have
//!   no counterpart in the proposal's config (its first estimate is 0 and its stall term prices an
//!   endpoint whose first call is pending, so it has no prior to configure) and are reported in
//!   [`Mapped::dropped`]; the behaviours that differ are in [`Mapped::notes`]. The mapping is the
//!   evidence's answer to the proposal's question 2: unlike ring_hash's hash function, which A52
//!   refuses to map when gRPC cannot honour it because every client and proxy must send a key to
//!   the same host, a latency-aware pick is each client's own, so a cluster configured for Envoy
//!   gets gRPC's algorithm, and the differences are stated.
//! - A52's custom-policy form, `xds.type.v3.TypedStruct` (or `udpa.type.v1.TypedStruct`): the last
//!   `/`-segment of `type_url` names a policy of this crate and `value` is its JSON config.
//! - `round_robin.v3.RoundRobin` → `round_robin`, `least_request.v3.LeastRequest` →
//!   `least_request_experimental` (`choice_count` → `choiceCount`), `pick_first.v3.PickFirst` →
//!   `pick_first`, as A52 does; their Envoy-only fields are reported as dropped.

use serde_json::{json, Map, Value};

use crate::config::{self, ConfigError, PolicyConfig};
use crate::{duration, envoy_peak_ewma, least_request, peak_ewma, pick_first, round_robin, Nanos};

const PEAK_EWMA: &[&str] = &[
    "envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma",
    "envoy.extensions.load_balancing_policies.peak_ewma.v3.PeakEwma",
];
const TYPED_STRUCT: &[&str] = &["xds.type.v3.TypedStruct", "udpa.type.v1.TypedStruct"];
const ROUND_ROBIN: &str = "envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin";
const LEAST_REQUEST: &str =
    "envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest";
const PICK_FIRST: &str = "envoy.extensions.load_balancing_policies.pick_first.v3.PickFirst";
/// Envoy LB extensions gRPC knows (A52, A42, A58) that lblab does not map.
const NOT_MAPPED: &[&str] = &[
    "ring_hash.v3.RingHash",
    "client_side_weighted_round_robin.v3.ClientSideWeightedRoundRobin",
    "wrr_locality.v3.WrrLocality",
    "maglev.v3.Maglev",
    "random.v3.Random",
];

/// The result of mapping an xDS load-balancing config.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Mapped {
    /// The gRPC policy it maps onto.
    pub policy: PolicyConfig,
    /// JSON path of the entry that was used.
    pub path: String,
    /// The `typed_config` type that was mapped.
    pub type_name: String,
    /// Envoy fields with no counterpart in the mapped policy (with their value, given or default).
    pub dropped: Vec<Dropped>,
    /// How the mapped policy behaves differently from the Envoy one.
    pub notes: Vec<String>,
}

/// An Envoy field the mapping drops.
#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    /// The field's proto name, e.g. `aggregation_interval`.
    pub field: &'static str,
    /// Its value in the input, or Envoy's default when absent (as proto3 JSON).
    pub value: Value,
    /// What it does in Envoy, and that the mapping drops it.
    pub meaning: &'static str,
}

/// Whether `doc` has the shape of one of the xDS forms this module reads (not a gRPC service
/// config): a `load_balancing_policy` object, a `policies` list, a `typed_extension_config`, or a
/// config dump's `cluster` wrapper.
pub fn looks_like_xds(doc: &Value) -> bool {
    let Some(o) = doc.as_object() else {
        return false;
    };
    !o.contains_key("loadBalancingConfig")
        && (o.get("load_balancing_policy").is_some_and(Value::is_object)
            || o.get("loadBalancingPolicy").is_some_and(Value::is_object)
            || o.contains_key("policies")
            || o.contains_key("typed_extension_config")
            || o.contains_key("typedExtensionConfig")
            || o.get("cluster").is_some_and(Value::is_object))
}

/// Maps an xDS document (see the module docs for the forms) onto a policy of this crate.
pub fn parse(doc: &Value) -> Result<Mapped, ConfigError> {
    let obj = doc
        .as_object()
        .ok_or_else(|| ConfigError::at("", "an xDS load-balancing config must be a JSON object"))?;
    if let Some(cluster) = obj.get("cluster").filter(|c| c.is_object()) {
        if !obj.contains_key("load_balancing_policy") && !obj.contains_key("policies") {
            return parse_cluster(cluster, "cluster");
        }
    }
    if either(obj, "typed_extension_config").is_some() {
        return select(&Value::Array(vec![doc.clone()]), "", true);
    }
    if obj.contains_key("policies") {
        return parse_lb_policy(doc, "");
    }
    parse_cluster(doc, "")
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `snake_case` → `lowerCamelCase`.
fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A field under its proto name or its lowerCamelCase JSON name: (the key used, the value).
fn either<'a>(obj: &'a Map<String, Value>, snake: &str) -> Option<(String, &'a Value)> {
    if let Some(v) = obj.get(snake) {
        return Some((snake.to_string(), v));
    }
    let c = camel(snake);
    obj.get(&c).map(|v| (c, v))
}

fn parse_cluster(cluster: &Value, path: &str) -> Result<Mapped, ConfigError> {
    let obj = cluster
        .as_object()
        .ok_or_else(|| ConfigError::at(path, "a Cluster must be a JSON object"))?;
    match either(obj, "load_balancing_policy") {
        Some((key, lb)) => parse_lb_policy(lb, &join(path, &key)),
        None => {
            let hint = match either(obj, "lb_policy") {
                Some((_, v)) => format!(" (it has lb_policy {v}: the enum form, which gRPC ignores since A52; use load_balancing_policy)"),
                None => String::new(),
            };
            Err(ConfigError::at(
                path,
                format!("no `load_balancing_policy` object{hint}; expected a Cluster with load_balancing_policy, a LoadBalancingPolicy {{\"policies\":[...]}} or a {{\"typed_extension_config\":{{...}}}} entry"),
            ))
        }
    }
}

fn parse_lb_policy(lb: &Value, path: &str) -> Result<Mapped, ConfigError> {
    let obj = lb.as_object().ok_or_else(|| {
        ConfigError::at(
            path,
            "must be a LoadBalancingPolicy object {\"policies\": [...]}",
        )
    })?;
    let list = obj
        .get("policies")
        .ok_or_else(|| ConfigError::at(path, "has no `policies` list"))?;
    select(list, &join(path, "policies"), false)
}

/// The first supported entry of a `policies` list at `path` (`bare`: the list was made from one
/// entry given alone, so paths do not index it).
fn select(list: &Value, path: &str, bare: bool) -> Result<Mapped, ConfigError> {
    let entries = list.as_array().ok_or_else(|| {
        ConfigError::at(
            path,
            "must be a list of {\"typed_extension_config\": {...}} entries",
        )
    })?;
    if entries.is_empty() {
        return Err(ConfigError::at(path, "is empty"));
    }
    let mut seen = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let entry_path = if bare {
            path.to_string()
        } else {
            format!("{path}[{i}]")
        };
        let obj = entry.as_object().ok_or_else(|| {
            ConfigError::at(
                &entry_path,
                "must be an object {\"typed_extension_config\": {...}}",
            )
        })?;
        let (key, tec) = either(obj, "typed_extension_config")
            .ok_or_else(|| ConfigError::at(&entry_path, "has no `typed_extension_config`"))?;
        let tec_path = join(&entry_path, &key);
        let tec = tec
            .as_object()
            .ok_or_else(|| ConfigError::at(&tec_path, "must be a TypedExtensionConfig object {\"name\": ..., \"typed_config\": {\"@type\": ...}}"))?;
        let (key, typed) = either(tec, "typed_config")
            .ok_or_else(|| ConfigError::at(&tec_path, "has no `typed_config`"))?;
        let typed_path = join(&tec_path, &key);
        let typed = typed.as_object().ok_or_else(|| {
            ConfigError::at(&typed_path, "must be an Any object with an \"@type\"")
        })?;
        let type_url = typed
            .get("@type")
            .and_then(Value::as_str)
            .ok_or_else(|| ConfigError::at(&join(&typed_path, "@type"), "is required: a type URL such as \"type.googleapis.com/envoy.extensions.load_balancing_policies.peak_ewma.v3alpha.PeakEwma\""))?;
        let type_name = type_url.rsplit('/').next().unwrap_or(type_url);
        let mapped = if PEAK_EWMA.contains(&type_name) {
            Some(map_peak_ewma(typed, &typed_path)?)
        } else if TYPED_STRUCT.contains(&type_name) {
            map_typed_struct(typed, &typed_path)?
        } else if type_name == ROUND_ROBIN {
            Some(map_simple(typed, &typed_path, round_robin::NAME)?)
        } else if type_name == LEAST_REQUEST {
            Some(map_simple(typed, &typed_path, least_request::NAME)?)
        } else if type_name == PICK_FIRST {
            Some(map_simple(typed, &typed_path, pick_first::NAME)?)
        } else {
            None
        };
        match mapped {
            Some((policy, dropped, notes)) => {
                return Ok(Mapped {
                    policy,
                    path: entry_path,
                    type_name: type_name.to_string(),
                    dropped,
                    notes,
                })
            }
            None => seen.push(type_url.to_string()),
        }
    }
    Err(ConfigError::at(
        path,
        format!(
            "no supported policy in {seen:?}; lblab maps {}, {ROUND_ROBIN}, {LEAST_REQUEST}, {PICK_FIRST}, and A52's {} whose type_url names one of: {}; not mapped (known to gRPC): {}",
            PEAK_EWMA.join(", "),
            TYPED_STRUCT.join(" / "),
            config::SUPPORTED.join(", "),
            NOT_MAPPED
                .iter()
                .map(|t| format!("envoy.extensions.load_balancing_policies.{t}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

type Parts = (PolicyConfig, Vec<Dropped>, Vec<String>);

/// Checks that `typed` has only `@type` and `fields` (proto names or camelCase).
fn known_fields(
    typed: &Map<String, Value>,
    path: &str,
    fields: &[&str],
) -> Result<(), ConfigError> {
    for key in typed.keys() {
        if key == "@type" {
            continue;
        }
        if !fields.iter().any(|f| *f == key || camel(f) == *key) {
            return Err(ConfigError::at(
                &join(path, key),
                format!("unknown field; known fields here: {}", fields.join(", ")),
            ));
        }
    }
    Ok(())
}

/// A `google.protobuf.Duration` in proto3 JSON, > 0 (Envoy's `v3` validation rule).
fn positive_duration(
    typed: &Map<String, Value>,
    path: &str,
    field: &str,
) -> Result<Option<Nanos>, ConfigError> {
    let Some((key, v)) = either(typed, field) else {
        return Ok(None);
    };
    let p = join(path, &key);
    let text = v.as_str().ok_or_else(|| {
        ConfigError::at(
            &p,
            format!("{v} is not a duration string; write e.g. \"10s\" or \"0.100s\""),
        )
    })?;
    let d = duration::parse(text).map_err(|m| ConfigError::at(&p, m.to_string()))?;
    if d == 0 {
        return Err(ConfigError::at(&p, "must be greater than 0s"));
    }
    Ok(Some(d))
}

fn map_peak_ewma(typed: &Map<String, Value>, path: &str) -> Result<Parts, ConfigError> {
    known_fields(
        typed,
        path,
        &[
            "decay_time",
            "aggregation_interval",
            "max_samples_per_host",
            "default_rtt",
            "penalty_value",
        ],
    )?;
    let envoy = envoy_peak_ewma::Config::default();
    let decay_time = positive_duration(typed, path, "decay_time")?.unwrap_or(envoy.decay_time);
    let default_rtt = positive_duration(typed, path, "default_rtt")?.unwrap_or(envoy.default_rtt);
    let aggregation_interval = positive_duration(typed, path, "aggregation_interval")?
        .unwrap_or(envoy.aggregation_interval);
    let max_samples = match either(typed, "max_samples_per_host") {
        None => envoy.max_samples_per_host,
        Some((key, v)) => {
            // proto3 JSON writes a UInt32Value as a number (a string of digits is accepted too).
            let n = v
                .as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .and_then(|n| u32::try_from(n).ok());
            match n {
                Some(n) if n >= 1 => n,
                _ => {
                    return Err(ConfigError::at(
                        &join(path, &key),
                        format!("{v} is not a whole number from 1 to 4294967295"),
                    ))
                }
            }
        }
    };
    let penalty = match either(typed, "penalty_value") {
        None => envoy.penalty_value,
        Some((key, v)) => match v.as_f64() {
            Some(x) if x.is_finite() && x > 0.0 => x,
            _ => {
                return Err(ConfigError::at(
                    &join(path, &key),
                    format!("{v} is not a number greater than 0"),
                ))
            }
        },
    };
    let policy = PolicyConfig::PeakEwma(peak_ewma::Config {
        choice_count: 2,
        decay_time,
        ..peak_ewma::Config::default()
    });
    let dropped = vec![
        Dropped {
            field: "default_rtt",
            value: json!(duration::format(default_rtt)),
            meaning: "Envoy's cost for a host with no estimate yet and nothing in flight; peak_ewma_experimental's first estimate is 0 and, while the endpoint's first call is pending, the call's age (its stall term), so it has no prior to configure. Dropped.",
        },
        Dropped {
            field: "aggregation_interval",
            value: json!(duration::format(aggregation_interval)),
            meaning: "Envoy folds the samples recorded since the last fold into the EWMA only once this interval has passed (checked on each pick), so the estimate lags by up to one interval; peak_ewma_experimental updates the estimate on every completion. Dropped.",
        },
        Dropped {
            field: "max_samples_per_host",
            value: json!(max_samples),
            meaning: "Envoy keeps at most this many samples per host between folds and overwrites the oldest; peak_ewma_experimental keeps no samples. Dropped.",
        },
        Dropped {
            field: "penalty_value",
            value: json!(penalty),
            meaning: "Envoy's cost for a host with no estimate yet and calls in flight (penalty_value + active); peak_ewma_experimental costs such an endpoint the age of its first call (its stall term), with nothing to configure. Dropped.",
        },
    ];
    let mut notes = vec![
        "Envoy's EWMA has no peak: a slow sample blends in like any other (α = 1 − exp(−Δt/τ), Δt since the previous sample); peak_ewma_experimental jumps to a slower sample at once.".to_string(),
        "Envoy's estimate is frozen while a host gets no samples (no idle decay): a host that was slow stays expensive until it is picked and answers fast; peak_ewma_experimental decays toward 0 while an endpoint gives no samples (on the pick clock, and at least as fast as the wall clock with 6 × decayTime), so an unpicked endpoint becomes cheap again and is probed.".to_string(),
        "Envoy samples whole milliseconds (time to first upstream byte, truncated) and skips 0 ms samples, so a backend answering in under 1 ms never gets an estimate (its cost stays default_rtt, or penalty_value + active while it has calls in flight); peak_ewma_experimental measures in nanoseconds.".to_string(),
        "Envoy's filter records the time of every response, an error's too (its documentation leaves errors to outlier detection), so a host that fails fast looks fast; peak_ewma_experimental divides the estimate by the share of calls that succeeded, and a failure never lowers it.".to_string(),
        "Envoy draws the two hosts from one random number (i = r mod n, j = (r >> 16) mod n, j + 1 on collision) and breaks cost ties with a random bit; peak_ewma_experimental draws choiceCount distinct endpoints uniformly and the earlier draw wins ties.".to_string(),
        "Envoy counts every request in flight (the host's rq_active) and learns only through the envoy.filters.http.peak_ewma HTTP filter; peak_ewma_experimental counts and measures unary calls itself.".to_string(),
    ];
    if decay_time % 1_000_000 != 0 {
        notes.push(
            "Envoy truncates decay_time to whole milliseconds; the mapping keeps it exact."
                .to_string(),
        );
    }
    let ms = |d: Nanos| d / 1_000_000 * 1_000_000;
    let reference = json!({ (envoy_peak_ewma::NAME): {
        "decayTime": duration::format(ms(decay_time).max(1_000_000)),
        "aggregationInterval": duration::format(ms(aggregation_interval).max(1_000_000)),
        "maxSamplesPerHost": max_samples,
        "defaultRtt": duration::format(ms(default_rtt).max(1_000_000)),
        "penaltyValue": penalty,
    }});
    notes.push(format!(
        "To run Envoy's algorithm itself in lblab, use {{\"loadBalancingConfig\":[{reference}]}}."
    ));
    Ok((policy, dropped, notes))
}

/// A52's custom-policy form: `Ok(None)` when `type_url` names a policy this crate does not have
/// (gRPC then tries the next entry).
fn map_typed_struct(typed: &Map<String, Value>, path: &str) -> Result<Option<Parts>, ConfigError> {
    known_fields(typed, path, &["type_url", "value"])?;
    let (key, url) = either(typed, "type_url").ok_or_else(|| {
        ConfigError::at(
            &join(path, "type_url"),
            "is required: A52 names the gRPC policy by the last segment of type_url, e.g. \"type.googleapis.com/peak_ewma_experimental\"",
        )
    })?;
    let url_path = join(path, &key);
    let url = url
        .as_str()
        .ok_or_else(|| ConfigError::at(&url_path, format!("{url} is not a string")))?;
    let name = url.rsplit('/').next().unwrap_or(url);
    if name.is_empty() {
        return Err(ConfigError::at(
            &url_path,
            format!("`{url}` has no policy name after its last `/`"),
        ));
    }
    if !config::SUPPORTED.contains(&name) {
        return Ok(None);
    }
    let empty = json!({});
    let value = typed.get("value").unwrap_or(&empty);
    let policy = config::parse_policy(name, value, &join(path, "value"))?;
    Ok(Some((policy, Vec::new(), Vec::new())))
}

/// Envoy's round_robin, least_request and pick_first protos, as A52 maps them.
fn map_simple(typed: &Map<String, Value>, path: &str, name: &str) -> Result<Parts, ConfigError> {
    let (known, dropped): (&[&str], &[(&'static str, &'static str)]) = match name {
        round_robin::NAME => (
            &["slow_start_config", "locality_lb_config"],
            &[
                ("slow_start_config", "Envoy ramps a new host's weight up over a window; gRPC's round_robin has no slow start. Dropped."),
                ("locality_lb_config", "Envoy's zone-aware or locality-weighted routing; gRPC handles localities in its xDS cluster policies, not here. Dropped."),
            ],
        ),
        least_request::NAME => (
            &["choice_count", "active_request_bias", "slow_start_config", "locality_lb_config", "enable_full_scan", "selection_method"],
            &[
                ("active_request_bias", "Envoy's exponent for weighted hosts (weight / (active + 1)^bias); gRPC's least_request ignores weights. Dropped."),
                ("slow_start_config", "Envoy ramps a new host's weight up over a window; not in gRPC. Dropped."),
                ("locality_lb_config", "Envoy's zone-aware or locality-weighted routing; not in this policy in gRPC. Dropped."),
                ("enable_full_scan", "Envoy scans every host instead of sampling; not in gRPC (A48 samples). Dropped."),
                ("selection_method", "Envoy's N_CHOICES or FULL_SCAN; gRPC samples (A48). Dropped."),
            ],
        ),
        _ => (
            &["shuffle_address_list"],
            &[("shuffle_address_list", "gRPC A62 shuffles the address list; lblab's pick_first keeps list order. Dropped.")],
        ),
    };
    known_fields(typed, path, known)?;
    let dropped = dropped
        .iter()
        .filter_map(|&(field, meaning)| {
            either(typed, field).map(|(_, v)| Dropped {
                field,
                value: v.clone(),
                meaning,
            })
        })
        .collect();
    let policy = match name {
        least_request::NAME => {
            let mut cfg = Map::new();
            if let Some((key, v)) = either(typed, "choice_count") {
                // A UInt32Value; gRPC applies A48's rules (below 2 rejected, above 10 clamped).
                let n = v.as_u64().ok_or_else(|| {
                    ConfigError::at(&join(path, &key), format!("{v} is not a whole number"))
                })?;
                cfg.insert("choiceCount".into(), json!(n));
            }
            let c = config::parse_policy(name, &Value::Object(cfg), path).map_err(|mut e| {
                e.path = e.path.replace(".choiceCount", ".choice_count");
                e
            })?;
            debug_assert!(matches!(
                c,
                PolicyConfig::LeastRequest(least_request::Config { .. })
            ));
            c
        }
        other => config::parse_policy(other, &json!({}), path)?,
    };
    Ok((policy, dropped, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NANOS_PER_SEC;

    fn peak(fields: &str) -> Value {
        let text = format!(
            r#"{{"name":"c","load_balancing_policy":{{"policies":[{{"typed_extension_config":{{"name":"envoy.load_balancing_policies.peak_ewma","typed_config":{{"@type":"type.googleapis.com/{}"{fields}}}}}}}]}}}}"#,
            PEAK_EWMA[0]
        );
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn camel_case_of_proto_names() {
        assert_eq!(camel("max_samples_per_host"), "maxSamplesPerHost");
        assert_eq!(camel("decay_time"), "decayTime");
    }

    #[test]
    fn cluster_with_peak_ewma_maps_decay_time_and_drops_default_rtt() {
        let m = parse(&peak(r#","decay_time":"5s","default_rtt":"0.020s""#)).unwrap();
        assert_eq!(m.path, "load_balancing_policy.policies[0]");
        let PolicyConfig::PeakEwma(c) = m.policy else {
            panic!("{m:?}")
        };
        // Envoy's default_rtt has no counterpart: the config keeps the policy's own default.
        let default = crate::peak_ewma::Config::default();
        assert_eq!(
            (c.choice_count, c.decay_time, c.default_rtt),
            (2, 5 * NANOS_PER_SEC, default.default_rtt)
        );
        assert_ne!(default.default_rtt, 20_000_000);
        let fields: Vec<_> = m.dropped.iter().map(|d| d.field).collect();
        assert_eq!(
            fields,
            [
                "default_rtt",
                "aggregation_interval",
                "max_samples_per_host",
                "penalty_value"
            ]
        );
        assert_eq!(m.dropped[0].value, json!("0.02s"));
    }
}
