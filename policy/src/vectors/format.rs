//! The vector file format shared by every policy's vectors: the document's frame, the config
//! cases, the names of states, statuses and kinds, and the rendering of the text.

use serde_json::{json, Value};

use crate::config;
use crate::{Connectivity, RpcKind, Status};

/// Relative tolerance for float fields (`estimate_ns`, `cost_ns`).
pub const RELATIVE_TOLERANCE: f64 = 1e-9;
/// Absolute tolerance for float fields, in nanoseconds.
pub const ABSOLUTE_TOLERANCE_NS: f64 = 1e-6;

pub(super) const FORMAT: &str = "lblab-conformance-vectors";
pub(super) const VERSION: u32 = 1;

/// The file's text: objects and arrays indented down to each sequence, and every config case, step
/// and value below them on one line (so a diff shows whole steps, and the files stay small).
pub(super) fn render(doc: &Value) -> String {
    fn write(v: &Value, indent: usize, out: &mut String) {
        let pad = |n: usize| "  ".repeat(n);
        let compact = |v: &Value| serde_json::to_string(v).expect("JSON values serialize");
        match v {
            Value::Object(m) if indent < 2 || m.contains_key("steps") => {
                out.push_str("{\n");
                for (i, (k, v)) in m.iter().enumerate() {
                    out.push_str(&format!("{}{}: ", pad(indent + 1), compact(&json!(k))));
                    write(v, indent + 1, out);
                    out.push_str(if i + 1 < m.len() { ",\n" } else { "\n" });
                }
                out.push_str(&format!("{}}}", pad(indent)));
            }
            Value::Array(a) if !a.is_empty() && a.iter().all(Value::is_object) => {
                out.push_str("[\n");
                for (i, v) in a.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    write(v, indent + 1, out);
                    out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
                }
                out.push_str(&format!("{}]", pad(indent)));
            }
            other => out.push_str(&compact(other)),
        }
    }
    let mut out = String::new();
    write(doc, 0, &mut out);
    out.push('\n');
    out
}

pub(super) fn state_name(s: Connectivity) -> &'static str {
    match s {
        Connectivity::Idle => "IDLE",
        Connectivity::Connecting => "CONNECTING",
        Connectivity::Ready => "READY",
        Connectivity::TransientFailure => "TRANSIENT_FAILURE",
    }
}

pub(super) fn parse_state(s: &str) -> Result<Connectivity, String> {
    Ok(match s {
        "IDLE" => Connectivity::Idle,
        "CONNECTING" => Connectivity::Connecting,
        "READY" => Connectivity::Ready,
        "TRANSIENT_FAILURE" => Connectivity::TransientFailure,
        other => return Err(format!("unknown state {other:?}")),
    })
}

pub(super) fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "OK",
        Status::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Status::Cancelled => "CANCELLED",
        Status::Error => "UNAVAILABLE",
    }
}

/// Any gRPC status code name; every non-OK code other than the two named ones is an error alike.
pub(super) fn parse_status(s: &str) -> Status {
    match s {
        "OK" => Status::Ok,
        "DEADLINE_EXCEEDED" => Status::DeadlineExceeded,
        "CANCELLED" => Status::Cancelled,
        _ => Status::Error,
    }
}

pub(super) fn kind_name(k: RpcKind) -> &'static str {
    match k {
        RpcKind::Unary => "unary",
        RpcKind::Streaming => "streaming",
    }
}

pub(super) fn parse_kind(s: &str) -> Result<RpcKind, String> {
    match s {
        "unary" => Ok(RpcKind::Unary),
        "streaming" => Ok(RpcKind::Streaming),
        other => Err(format!("unknown RPC kind {other:?}")),
    }
}

pub(super) fn config_cases(policy: &str, accepted: &[Value], rejected: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for input in accepted {
        let (parsed, ignored) =
            config::fields::collect_ignored(|| config::parse_policy(policy, input, ""));
        let parsed = parsed.unwrap_or_else(|e| panic!("{policy} {input}: {e}"));
        let normalized = parsed.to_json()[policy].clone();
        let mut case = json!({"input": input, "accepted": true, "normalized": normalized});
        if !ignored.is_empty() {
            // The unknown fields an implementation ignores, as gRPC's parsers do.
            let names: Vec<String> = ignored
                .iter()
                .map(|e| e.path.trim_start_matches('.').to_string())
                .collect();
            case["ignored"] = json!(names);
        }
        out.push(case);
    }
    for input in rejected {
        let Err(e) = config::parse_policy(policy, input, "") else {
            panic!("{policy} {input} should be rejected");
        };
        let field = e.path.trim_start_matches('.').to_string();
        out.push(json!({
            "input": input,
            "accepted": false,
            "error": {"field": field, "message": e.message},
        }));
    }
    out
}

pub(super) fn document(
    policy: &str,
    description: &str,
    config_cases: Vec<Value>,
    sequences: Vec<Value>,
) -> Value {
    json!({
        "format": FORMAT,
        "version": VERSION,
        "policy": policy,
        "description": description,
        "documentation": "conformance/README.md",
        "tolerance": {"relative": RELATIVE_TOLERANCE, "absolute_ns": ABSOLUTE_TOLERANCE_NS},
        "config_cases": config_cases,
        "sequences": sequences,
    })
}
