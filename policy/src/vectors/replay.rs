//! The replayer: runs a vector file's config cases and sequences against this crate again and
//! reports the first difference.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::draws::Draws;
use super::format::{parse_kind, parse_state, parse_status, FORMAT, VERSION};
use super::subject::{pick_json, Shows, Subject};
use crate::config;
use crate::{EndpointId, Outcome, Pick, Ticket};

/// The first difference between a vector file and this crate's behaviour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Where: the config case or sequence and step.
    pub at: String,
    /// What differed.
    pub what: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}

impl std::error::Error for Mismatch {}

/// What a replay checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Replayed {
    /// Config cases checked.
    pub config_cases: usize,
    /// Steps checked, over all sequences.
    pub steps: usize,
}

/// Replays one vector file against this crate (see [`super::replay`]); `shows` says what a
/// policy's expectations show.
pub(super) fn replay(
    text: &str,
    shows: fn(&str) -> Result<Shows, String>,
) -> Result<Replayed, Mismatch> {
    let fail = |at: &str, what: String| Mismatch {
        at: at.to_string(),
        what,
    };
    let doc: Value = serde_json::from_str(text).map_err(|e| fail("file", e.to_string()))?;
    if doc["format"] != FORMAT || doc["version"] != VERSION {
        return Err(fail("file", "not a version 1 vector file".into()));
    }
    let policy = doc["policy"].as_str().unwrap_or_default();
    let shows = shows(policy).map_err(|e| fail("file", e))?;
    let tol = Tolerance {
        rel: doc["tolerance"]["relative"].as_f64().unwrap_or(0.0),
        abs: doc["tolerance"]["absolute_ns"].as_f64().unwrap_or(0.0),
    };
    let mut done = Replayed::default();
    for (i, case) in array(&doc["config_cases"]).iter().enumerate() {
        let at = format!("config_cases[{i}]");
        let got = match config::parse_policy(policy, &case["input"], "") {
            Ok(c) => json!({"accepted": true, "normalized": c.to_json()[policy].clone()}),
            Err(e) => json!({"accepted": false, "field": e.path.trim_start_matches('.')}),
        };
        let want = if case["accepted"] == true {
            json!({"accepted": true, "normalized": case["normalized"].clone()})
        } else {
            json!({"accepted": false, "field": case["error"]["field"].clone()})
        };
        if got != want {
            return Err(fail(&at, format!("expected {want}, got {got}")));
        }
        done.config_cases += 1;
    }
    for seq in array(&doc["sequences"]) {
        let name = seq["name"].as_str().unwrap_or("?");
        done.steps += replay_sequence(policy, shows, seq, tol)
            .map_err(|(step, what)| fail(&format!("sequence {name:?} step {step}"), what))?;
    }
    Ok(done)
}

#[derive(Debug, Clone, Copy)]
struct Tolerance {
    rel: f64,
    abs: f64,
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn replay_sequence(
    policy: &str,
    shows: Shows,
    seq: &Value,
    tol: Tolerance,
) -> Result<usize, (usize, String)> {
    let mut subject = Subject::build(policy, &seq["config"]).map_err(|e| (0, e))?;
    let mut list: Vec<EndpointId> = Vec::new();
    let mut calls: BTreeMap<u64, Ticket> = BTreeMap::new();
    let steps = array(&seq["steps"]);
    for (i, step) in steps.iter().enumerate() {
        let err = |what: String| (i, what);
        let at = step["at_ns"]
            .as_u64()
            .ok_or_else(|| err("no at_ns".into()))?;
        let u32_of = |key: &str| -> Result<u32, (usize, String)> {
            step[key]
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| err(format!("no {key}")))
        };
        let indices = |key: &str| -> Vec<usize> {
            array(&step[key])
                .iter()
                .filter_map(Value::as_u64)
                .map(|v| v as usize)
                .collect()
        };
        let mut extra = None;
        match step["op"].as_str().unwrap_or_default() {
            "set_endpoints" => {
                let ids: Vec<EndpointId> = array(&step["endpoints"])
                    .iter()
                    .filter_map(Value::as_u64)
                    .map(|v| EndpointId(v as u32))
                    .collect();
                subject.policy().set_endpoints(at, &ids);
                list.clear();
                for id in ids {
                    if !list.contains(&id) {
                        list.push(id);
                    }
                }
            }
            "connectivity" => {
                let state = parse_state(step["state"].as_str().unwrap_or_default()).map_err(err)?;
                subject
                    .policy()
                    .on_connectivity(at, EndpointId(u32_of("endpoint")?), state);
            }
            "pick" => {
                let kind = parse_kind(step["kind"].as_str().unwrap_or_default()).map_err(err)?;
                let ready = subject.ready(at, &list);
                let draws = indices("draws");
                if draws.iter().any(|&d| d >= ready.len()) {
                    return Err(err(format!("draws {draws:?} but {} READY", ready.len())));
                }
                let mut rng = Draws::indices(ready.len().max(1), &draws);
                let pick = subject.policy().pick(at, kind, &mut rng);
                if !rng.used_exactly() {
                    return Err(err(format!("the pick did not draw exactly {draws:?}")));
                }
                extra = Some(pick_json(&pick));
                if let Pick::Endpoint(t) = pick {
                    let call = step["call"]
                        .as_u64()
                        .ok_or_else(|| err("picked an endpoint but the step has no call".into()))?;
                    calls.insert(call, t);
                }
            }
            "done" => {
                let call = step["call"].as_u64().ok_or_else(|| err("no call".into()))?;
                let ticket = calls
                    .remove(&call)
                    .ok_or_else(|| err(format!("call {call} is not in flight")))?;
                let kind = parse_kind(step["kind"].as_str().unwrap_or_default()).map_err(err)?;
                if kind != ticket.kind() {
                    return Err(err(format!(
                        "call {call} was picked as {:?}",
                        ticket.kind()
                    )));
                }
                let status = parse_status(step["status"].as_str().unwrap_or_default());
                let elapsed = step["elapsed_ns"]
                    .as_u64()
                    .ok_or_else(|| err("no elapsed_ns".into()))?;
                subject
                    .policy()
                    .on_done(at, ticket, Outcome::new(status, elapsed));
            }
            "timer" => {
                let draws = indices("enforcement_draws");
                if draws.iter().any(|&d| d >= 100) {
                    return Err(err(format!("enforcement draws {draws:?} not in 0..100")));
                }
                let mut rng = Draws::indices(100, &draws);
                subject.policy().on_timer(at, &mut rng);
                if !rng.used_exactly() {
                    return Err(err(format!("the sweep did not draw exactly {draws:?}")));
                }
            }
            "check" => {}
            other => return Err(err(format!("unknown op {other:?}"))),
        }
        let mut got = subject.expect(shows, at, &list);
        if let Some(p) = extra {
            got.insert("pick".into(), p);
        }
        compare(&Value::Object(got), &step["expect"], tol, "expect").map_err(err)?;
    }
    Ok(steps.len())
}

/// Compares `got` with `want` field by field: numbers that are not both integers within the
/// tolerance, everything else exactly. Every field of `want` must be in `got` and vice versa.
fn compare(got: &Value, want: &Value, tol: Tolerance, path: &str) -> Result<(), String> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for k in g.keys().chain(w.keys()) {
                let (gv, wv) = (g.get(k), w.get(k));
                match (gv, wv) {
                    (Some(gv), Some(wv)) => compare(gv, wv, tol, &format!("{path}.{k}"))?,
                    _ => return Err(format!("{path}.{k}: expected {wv:?}, got {gv:?}")),
                }
            }
            Ok(())
        }
        (Value::Array(g), Value::Array(w)) => {
            if g.len() != w.len() {
                return Err(format!("{path}: expected {want}, got {got}"));
            }
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                compare(gv, wv, tol, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Number(g), Value::Number(w)) if !(g.is_u64() && w.is_u64()) => {
            let (g, w) = (
                g.as_f64().unwrap_or(f64::NAN),
                w.as_f64().unwrap_or(f64::NAN),
            );
            if (g - w).abs() <= tol.abs.max(tol.rel * w.abs()) {
                Ok(())
            } else {
                Err(format!("{path}: expected {w}, got {g}"))
            }
        }
        _ if got == want => Ok(()),
        _ => Err(format!("{path}: expected {want}, got {got}")),
    }
}
