//! Variations of a scenario: any field set by a dotted path, for sweeps over the scenario space
//! (`lblab sweep --vary PATH=V1,V2,…`).
//!
//! A path names a field of the scenario file as written: `workload.rate`, `workload.clients`,
//! `fleet.<group>.count` (a group by name or by index), `fleet.slow.service_time.median`,
//! `faults.<i>.factor`, `seed`. One more path is derived rather than written:
//! `workload.utilization` sets the open-loop rate to that fraction of the fleet's capacity at full
//! speed ([`capacity`]), after every other override of the same point is applied, so it stays a
//! utilization when the fleet size is varied too.
//!
//! A value takes the type of the field it replaces: an integer field takes an integer, a number
//! field a number, a duration field a duration such as `"5ms"`. The varied scenario is validated
//! like a scenario file, so a value the field rejects is an error that names the path, the value
//! and what is wrong, before any work starts.
//!
//! ```
//! use lblab_model::vary::{Axis, Override};
//! let s = lblab_model::Scenario::parse(r#"
//!     name = "doc"
//!     [workload]
//!     rate = 100
//!     duration = "2s"
//!     [[fleet]]
//!     name = "main"
//!     count = 4
//!     service_time = { dist = "constant", value = "1ms" }
//!     [[policies]]
//!     name = "rr"
//!     config = '{"loadBalancingConfig":[{"round_robin":{}}]}'
//! "#)?;
//! let axis: Axis = "fleet.main.count=2,8".parse()?;
//! let varied = lblab_model::vary::apply(&s, &axis.points[1])?;
//! assert_eq!(varied.backends.len(), 8);
//! let half = lblab_model::vary::apply(&s, &[Override::new("workload.utilization", "0.5")])?;
//! assert_eq!(half.workload.rate, 8000.0); // 4 backends × 4 workers / 1 ms × 0.5
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::scenario::ScenarioFile;
use crate::{FileError, Scenario};

/// The derived path that sets the rate as a fraction of the fleet's capacity.
pub const UTILIZATION: &str = "workload.utilization";

/// One field set to one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// Dotted path, e.g. `fleet.main.count`.
    pub path: String,
    /// The value as written on the command line, e.g. `19` or `5ms`.
    pub value: String,
}

impl Override {
    /// `path = value`.
    pub fn new(path: impl Into<String>, value: impl Into<String>) -> Self {
        Override {
            path: path.into(),
            value: value.into(),
        }
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.path, self.value)
    }
}

/// One `--vary` axis: one or more paths varied together, and the values they take at each point.
///
/// Written `PATH=V1,V2,…` for one path, or `PATH1,PATH2=A1:B1,A2:B2,…` for paths that move
/// together (say a fleet size and a total rate that keeps the per-backend rate fixed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// The paths of this axis.
    pub paths: Vec<String>,
    /// Per point, one override per path.
    pub points: Vec<Vec<Override>>,
}

/// Most values on one axis.
pub const MAX_POINTS: usize = 1000;

/// Why an axis or a variation is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VaryError {
    /// The `--vary` text is malformed.
    #[error("`{text}`: {message}")]
    Syntax {
        /// The text given.
        text: String,
        /// What is wrong, and what would be right.
        message: String,
    },
    /// The path names no field of the scenario.
    #[error("`{path}`: {message}")]
    Path {
        /// The path given.
        path: String,
        /// What is wrong, with the names that would be valid there.
        message: String,
    },
    /// The value does not fit the field, or the varied scenario is invalid.
    #[error("{path}={value}: {message}")]
    Value {
        /// The path.
        path: String,
        /// The value.
        value: String,
        /// What the field or the scenario's validation says.
        message: String,
    },
}

impl FromStr for Axis {
    type Err = VaryError;

    fn from_str(text: &str) -> Result<Axis, VaryError> {
        let syntax = |message: &str| VaryError::Syntax {
            text: text.to_string(),
            message: message.to_string(),
        };
        let Some((paths, values)) = text.split_once('=') else {
            return Err(syntax(
                "expected PATH=V1,V2,… (e.g. workload.rate=500,1000,2000)",
            ));
        };
        let paths: Vec<String> = paths.split(',').map(|p| p.trim().to_string()).collect();
        if paths.iter().any(|p| p.is_empty()) {
            return Err(syntax("an empty path before `=`"));
        }
        for (i, p) in paths.iter().enumerate() {
            if paths[..i].contains(p) {
                return Err(syntax(&format!("path `{p}` is listed twice")));
            }
        }
        let mut points = Vec::new();
        for point in values.split(',') {
            let parts: Vec<&str> = if paths.len() == 1 {
                vec![point.trim()]
            } else {
                point.split(':').map(str::trim).collect()
            };
            if parts.len() != paths.len() || parts.iter().any(|v| v.is_empty()) {
                return Err(syntax(&format!(
                    "value `{point}` needs {} non-empty part(s){}",
                    paths.len(),
                    if paths.len() > 1 {
                        ", separated by `:`, one per path"
                    } else {
                        ""
                    }
                )));
            }
            let overrides: Vec<Override> = paths
                .iter()
                .zip(parts)
                .map(|(p, v)| Override::new(p.clone(), v))
                .collect();
            if points.contains(&overrides) {
                return Err(syntax(&format!("value `{point}` is listed twice")));
            }
            points.push(overrides);
        }
        if points.len() > MAX_POINTS {
            return Err(syntax(&format!(
                "{} values; at most {MAX_POINTS} per axis",
                points.len()
            )));
        }
        Ok(Axis { paths, points })
    }
}

/// Most points a sweep may have: the product of its axes' values. Each point holds a scenario per
/// seed and runs every policy over every seed, so a product of two long axes (1,000 × 1,000)
/// would take gigabytes before the first simulation.
pub const MAX_SWEEP_POINTS: usize = 10_000;

/// Most scenarios a sweep may plan: points × seeds.
pub const MAX_SWEEP_SCENARIOS: u64 = 100_000;

/// The number of points `axes` cross into (saturating; no axes: one).
pub fn point_count(axes: &[Axis]) -> u128 {
    axes.iter()
        .fold(1u128, |n, a| n.saturating_mul(a.points.len() as u128))
}

/// Checks, before any point is built, that `axes` cross into at most [`MAX_SWEEP_POINTS`] points
/// and, with `seeds` seeds each, at most [`MAX_SWEEP_SCENARIOS`] scenarios; returns the points.
/// The error says the product and the cap.
pub fn check_size(axes: &[Axis], seeds: u64) -> Result<usize, VaryError> {
    let points = point_count(axes);
    let text = || {
        axes.iter()
            .map(|a| a.paths.join(","))
            .collect::<Vec<_>>()
            .join(" × ")
    };
    let product = || {
        axes.iter()
            .map(|a| a.points.len().to_string())
            .collect::<Vec<_>>()
            .join(" × ")
    };
    if points > MAX_SWEEP_POINTS as u128 {
        return Err(VaryError::Syntax {
            text: text(),
            message: format!(
                "{} = {points} points; a sweep may have at most {MAX_SWEEP_POINTS} (each point \
                 runs every policy over every seed): vary fewer values, or split the sweep",
                product()
            ),
        });
    }
    let scenarios = points.saturating_mul(u128::from(seeds.max(1)));
    if scenarios > u128::from(MAX_SWEEP_SCENARIOS) {
        return Err(VaryError::Syntax {
            text: text(),
            message: format!(
                "{points} points × {seeds} seeds = {scenarios} runs of each policy; a sweep may \
                 plan at most {MAX_SWEEP_SCENARIOS}: use fewer points or seeds"
            ),
        });
    }
    Ok(points as usize)
}

/// Every combination of the axes' points (the first axis varies slowest). No axes: one empty
/// point.
pub fn cross(axes: &[Axis]) -> Vec<Vec<Override>> {
    let mut out = vec![Vec::new()];
    for axis in axes {
        let mut next = Vec::with_capacity(out.len() * axis.points.len());
        for prefix in &out {
            for point in &axis.points {
                let mut p: Vec<Override> = prefix.clone();
                p.extend(point.iter().cloned());
                next.push(p);
            }
        }
        out = next;
    }
    out
}

/// The fleet's capacity at full speed, requests per second: each backend serves `workers`
/// requests at a time, each taking the service-time distribution's mean (network RTT holds no
/// worker). Faults are not counted: this is what utilization is a fraction of.
pub fn capacity(scenario: &Scenario) -> f64 {
    scenario
        .file
        .fleet
        .iter()
        .map(|g| {
            let mean = g.service_time.mean_ns().max(1.0);
            f64::from(g.count) * f64::from(g.workers) * 1e9 / mean
        })
        .sum()
}

/// `scenario` with `overrides` applied, validated. Every error names the override it comes from.
pub fn apply(scenario: &Scenario, overrides: &[Override]) -> Result<Scenario, VaryError> {
    let mut tree = toml::Value::try_from(&scenario.file).map_err(|e| VaryError::Syntax {
        text: scenario.file.name.clone(),
        message: format!("the scenario cannot be re-encoded: {e}"),
    })?;
    let mut utilization = None;
    for o in overrides {
        if o.path == UTILIZATION {
            let u: f64 = o.value.parse().ok().filter(|u: &f64| *u > 0.0 && u.is_finite()).ok_or_else(|| {
                VaryError::Value {
                    path: o.path.clone(),
                    value: o.value.clone(),
                    message: "a utilization is a number above 0, a fraction of the fleet's capacity (0.5 = half)".into(),
                }
            })?;
            utilization = Some((o, u));
            continue;
        }
        set(&mut tree, o)?;
    }
    let invalid = |o: &Override, message: String| VaryError::Value {
        path: o.path.clone(),
        value: o.value.clone(),
        message,
    };
    let last = overrides.last();
    let validate = |tree: toml::Value, blame: Option<&Override>| {
        let blame = |message: String| match blame {
            Some(o) => invalid(o, message),
            None => VaryError::Syntax {
                text: scenario.file.name.clone(),
                message,
            },
        };
        let file: ScenarioFile = tree
            .try_into()
            .map_err(|e: toml::de::Error| blame(e.message().trim_end().to_string()))?;
        Scenario::validate(file).map_err(|e| blame(model_message(&e)))
    };
    let varied = validate(tree.clone(), last)?;
    let Some((o, u)) = utilization else {
        return Ok(varied);
    };
    if varied.file.workload.arrival == crate::scenario::Arrival::Closed {
        return Err(invalid(
            o,
            "a closed-loop workload has no rate to set; vary workload.concurrency instead".into(),
        ));
    }
    let rate = u * capacity(&varied);
    let rate = (rate * 1000.0).round() / 1000.0;
    set(
        &mut tree,
        &Override::new("workload.rate", format!("{rate}")),
    )?;
    validate(tree, Some(o))
}

/// The field and message of a validation error, without a position (the varied scenario has no
/// text to point into).
fn model_message(e: &FileError) -> String {
    match e {
        FileError::Invalid { field, message, .. } => format!("`{field}`: {message}"),
        FileError::Parse {
            field: Some(field),
            message,
            ..
        } => format!("`{field}`: {message}"),
        other => other.to_string(),
    }
}

/// Sets one field of the encoded scenario.
fn set(tree: &mut toml::Value, o: &Override) -> Result<(), VaryError> {
    let path_err = |message: String| VaryError::Path {
        path: o.path.clone(),
        message,
    };
    let segments: Vec<&str> = o.path.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(path_err("has an empty segment".into()));
    }
    let mut node = tree;
    let mut walked = String::new();
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        if node.is_array() {
            let arr = node.as_array_mut().expect("checked");
            let idx = match seg.parse::<usize>() {
                Ok(k) if k < arr.len() => k,
                Ok(k) => {
                    return Err(path_err(format!(
                        "`{walked}` has {} entries; index {k} is out of range",
                        arr.len()
                    )))
                }
                Err(_) => {
                    let names: Vec<String> = arr
                        .iter()
                        .filter_map(|v| v.get("name").and_then(|n| n.as_str()).map(String::from))
                        .collect();
                    match names.iter().position(|n| n == seg) {
                        Some(k) => k,
                        None if names.is_empty() => {
                            return Err(path_err(format!(
                                "`{walked}` is a list: name an entry by index 0 to {}",
                                arr.len().saturating_sub(1)
                            )))
                        }
                        None => {
                            return Err(path_err(format!(
                                "`{walked}` has no entry named `{seg}`; it has {} (or an index 0 to {})",
                                names.join(", "),
                                arr.len().saturating_sub(1)
                            )))
                        }
                    }
                }
            };
            if last {
                return Err(path_err(format!(
                    "`{walked}.{seg}` is a whole entry; name one of its fields"
                )));
            }
            walked = format!("{walked}.{seg}");
            node = &mut arr[idx];
            continue;
        }
        let Some(table) = node.as_table_mut() else {
            return Err(path_err(format!("`{walked}` is a value, not a table")));
        };
        if last {
            let key = seg.to_string();
            let new = typed_value(table.get(&key), &o.value).map_err(|e| VaryError::Value {
                path: o.path.clone(),
                value: o.value.clone(),
                message: e.to_string(),
            })?;
            if !table.contains_key(&key) && !optional_key(&walked, seg) {
                let mut keys: Vec<&String> = table.keys().collect();
                keys.sort();
                return Err(path_err(format!(
                    "no field `{seg}` in `{}`; it has {}",
                    display_walked(&walked),
                    keys.iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            table.insert(key, new);
            return Ok(());
        }
        if !table.contains_key(*seg) {
            let mut keys: Vec<String> = table.keys().cloned().collect();
            keys.sort();
            if walked == "workload" || walked.is_empty() {
                keys.push(UTILIZATION.to_string());
            }
            return Err(path_err(format!(
                "no `{seg}` in `{}`; it has {}",
                display_walked(&walked),
                keys.join(", ")
            )));
        }
        let child = table.get_mut(*seg).expect("checked");
        walked = if walked.is_empty() {
            seg.to_string()
        } else {
            format!("{walked}.{seg}")
        };
        node = child;
    }
    Err(path_err("names no field".into()))
}

fn display_walked(walked: &str) -> &str {
    if walked.is_empty() {
        "the scenario"
    } else {
        walked
    }
}

/// Optional fields the encoder leaves out when unset, which an override may still set.
fn optional_key(table: &str, key: &str) -> bool {
    table == "workload" && key == "concurrency"
}

/// Why a varied value does not fit its field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Mismatch {
    /// The field is an integer.
    #[error("the field is an integer; `{0}` is not one")]
    Integer(String),
    /// The field is a number.
    #[error("the field is a number; `{0}` is not one")]
    Number(String),
    /// The field is a boolean.
    #[error("the field is true or false; `{0}` is neither")]
    Boolean(String),
    /// The path names a table or a list.
    #[error("the path names a table or a list, not a value")]
    NotAValue,
    /// The field is a date.
    #[error("dates are not varied")]
    Date,
}

/// `text` as a TOML value of the type of `old` (absent: a number if it reads as one).
fn typed_value(old: Option<&toml::Value>, text: &str) -> Result<toml::Value, Mismatch> {
    use toml::Value as V;
    let text_of = || text.to_string();
    Ok(match old {
        Some(V::Integer(_)) => V::Integer(
            text.parse::<i64>()
                .map_err(|_| Mismatch::Integer(text_of()))?,
        ),
        Some(V::Float(_)) => V::Float(
            text.parse::<f64>()
                .map_err(|_| Mismatch::Number(text_of()))?,
        ),
        Some(V::Boolean(_)) => V::Boolean(
            text.parse::<bool>()
                .map_err(|_| Mismatch::Boolean(text_of()))?,
        ),
        Some(V::String(_)) => V::String(text.to_string()),
        Some(V::Table(_)) | Some(V::Array(_)) => return Err(Mismatch::NotAValue),
        Some(V::Datetime(_)) => return Err(Mismatch::Date),
        None => match text.parse::<i64>() {
            Ok(i) => V::Integer(i),
            Err(_) => match text.parse::<f64>() {
                Ok(f) => V::Float(f),
                Err(_) => V::String(text.to_string()),
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ScenarioBuilder;

    /// Nine lognormal backends and one constant slow one (slowed down ten times), round robin,
    /// 2 s at 1000 calls a second.
    fn scenario() -> Scenario {
        ScenarioBuilder::new("t")
            .rate(1000.0)
            .group(
                "main",
                9,
                r#"{ dist = "lognormal", median = "2ms", p99 = "8ms" }"#,
                &[],
            )
            .group("slow", 1, r#"{ dist = "constant", value = "2ms" }"#, &[])
            .fault("slowdown", &["slow"], &["factor = 10"])
            .lb("rr", "round_robin")
            .build()
            .unwrap()
    }

    fn one(path: &str, value: &str) -> Result<Scenario, VaryError> {
        apply(&scenario(), &[Override::new(path, value)])
    }

    #[test]
    fn sets_fields_by_name_index_and_nested_path() {
        assert_eq!(one("workload.rate", "250").unwrap().workload.rate, 250.0);
        assert_eq!(one("workload.clients", "7").unwrap().workload.clients, 7);
        assert_eq!(one("fleet.main.count", "19").unwrap().backends.len(), 20);
        assert_eq!(
            one("fleet.1.workers", "8").unwrap().file.fleet[1].workers,
            8
        );
        let s = one("fleet.main.service_time.median", "3ms").unwrap();
        assert_eq!(s.file.fleet[0].service_time.median_ns(), 3e6);
        let s = one("faults.0.factor", "1.5").unwrap();
        assert_eq!(
            toml::Value::try_from(&s.file.faults[0]).unwrap()["factor"].as_float(),
            Some(1.5)
        );
        assert_eq!(one("seed", "9").unwrap().file.seed, 9);
    }

    /// The message of the error that setting `path` to `value` gives, asserting that it holds
    /// every one of `words`.
    #[track_caller]
    fn rejects(path: &str, value: &str, words: &[&str]) -> String {
        let e = one(path, value).unwrap_err().to_string();
        for w in words {
            assert!(e.contains(w), "{e}");
        }
        e
    }

    #[test]
    fn unknown_paths_name_what_exists() {
        rejects(
            "workload.rat",
            "1",
            &["no field `rat` in `workload`", "rate"],
        );
        rejects(
            "fleet.fast.count",
            "1",
            &["no entry named `fast`", "main, slow"],
        );
        rejects("faults.3.factor", "1", &["index 3 is out of range"]);
        rejects("fleet.main", "1", &["whole entry"]);
        rejects("nope.x", "1", &["no `nope` in `the scenario`"]);
    }

    #[test]
    fn values_the_field_rejects_are_named() {
        for (path, value, start) in [
            (
                "fleet.main.count",
                "0",
                "fleet.main.count=0: `fleet[0].count`",
            ),
            ("workload.rate", "-5", "workload.rate=-5: `workload.rate`"),
            ("workload.duration", "3x", "workload.duration=3x:"),
        ] {
            let e = rejects(path, value, &[]);
            assert!(e.starts_with(start), "{e}");
        }
        rejects("fleet.main.count", "many", &["integer"]);
        rejects("faults.0.factor", "0.5", &["faults[0].factor"]);
        rejects(UTILIZATION, "0", &["above 0"]);
    }

    #[test]
    fn utilization_follows_the_varied_fleet() {
        let s = scenario();
        let base = capacity(&s);
        let half = apply(&s, &[Override::new(UTILIZATION, "0.5")]).unwrap();
        assert!((half.workload.rate - base / 2.0).abs() < 0.01);
        let bigger = apply(
            &s,
            &[
                Override::new(UTILIZATION, "0.5"),
                Override::new("fleet.main.count", "19"),
            ],
        )
        .unwrap();
        assert!(bigger.workload.rate > half.workload.rate * 1.8);
        assert!((capacity(&bigger) * 0.5 - bigger.workload.rate).abs() < 0.01);
    }

    #[test]
    fn axes_parse_and_cross() {
        let a: Axis = "workload.rate=1,2,3".parse().unwrap();
        assert_eq!(a.points.len(), 3);
        let b: Axis = "fleet.main.count,workload.rate=2:300,4:500"
            .parse()
            .unwrap();
        assert_eq!(
            b.points[1],
            vec![
                Override::new("fleet.main.count", "4"),
                Override::new("workload.rate", "500")
            ]
        );
        let all = cross(&[a.clone(), b]);
        assert_eq!(all.len(), 6);
        assert_eq!(all[0].len(), 3);
        assert!(cross(&[]).len() == 1);
        for bad in ["workload.rate", "=1", "a,b=1", "x=1,,2", "x=1,1", "a,a=1:2"] {
            assert!(bad.parse::<Axis>().is_err(), "{bad}");
        }
    }
}
