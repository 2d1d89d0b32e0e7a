//! `lblab check`'s job: a gRPC service config, or an Envoy xDS load-balancing config mapped onto
//! one, validated, and its normalized policy tree with every default filled in.

use std::io::Read as _;
use std::path::Path;

use lblab_model::scenario::{REAL_ONLY_POLICIES, SIM_ONLY_POLICIES};
use lblab_policy::config::{self, Selected};
use lblab_policy::xds;

use crate::error::{ensure, Context, LabError, Result};

/// What checking a config found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The normalized config (pretty JSON) for stdout, if it is valid.
    pub normalized: Option<String>,
    /// Notes, warnings and the error, one line each, for stderr.
    pub messages: Vec<String>,
}

/// The config `given` names: its source (`<argument>` or the file's path) and text. `given` is
/// the JSON text itself when it starts with `{`, else a path to a file of at most 1 MiB.
pub fn read(given: &str) -> Result<(String, String)> {
    if given.trim_start().starts_with('{') {
        return Ok(("<argument>".to_string(), given.to_string()));
    }
    let path = Path::new(given);
    let mut bytes = Vec::new();
    // A service config is a few hundred bytes: read at most 1 MiB (a device or a huge file
    // given by mistake must not hang or exhaust memory).
    std::fs::File::open(path)
        .and_then(|f| std::io::Read::take(f, (1 << 20) + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read service config file {}", path.display()))?;
    ensure!(
        bytes.len() <= 1 << 20,
        "service config file {} is larger than 1 MiB",
        path.display()
    );
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..at];
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        // Columns count characters, as JSON parsers' do: the bytes before `at` are valid UTF-8.
        let column = 1 + String::from_utf8_lossy(&before[start..]).chars().count();
        LabError::Message(format!(
            "service config file {} is not UTF-8: line {line}, column {column} (byte {at}); \
             save it as UTF-8",
            path.display()
        ))
    })?;
    Ok((path.display().to_string(), text))
}

/// Checks the config `text` read from `source`: an xDS form (detected by shape) is mapped onto
/// a gRPC policy, a service config parsed with lblab's own policy names besides gRPC's.
pub fn check(source: &str, text: &str) -> Result<Checked> {
    let mut messages = Vec::new();
    let doc: Option<serde_json::Value> = lblab_policy::json::parse(text).ok();
    if let Some(doc) = doc.filter(xds::looks_like_xds) {
        return Ok(match xds::parse(&doc) {
            Ok(mapped) => {
                let normalized =
                    serde_json::json!({ "loadBalancingConfig": [mapped.policy.to_json()] });
                messages.push(format!(
                    "note: mapped {} at `{}` onto {}",
                    mapped.type_name,
                    mapped.path,
                    mapped.policy.name()
                ));
                for d in &mapped.dropped {
                    messages.push(format!("dropped: {} = {}: {}", d.field, d.value, d.meaning));
                }
                for n in &mapped.notes {
                    messages.push(format!("note: {n}"));
                }
                Checked {
                    normalized: Some(serde_json::to_string_pretty(&normalized)?),
                    messages,
                }
            }
            Err(err) => {
                messages.push(format!(
                    "error: invalid xDS load-balancing config in {source}: {err}"
                ));
                Checked {
                    normalized: None,
                    messages,
                }
            }
        });
    }
    let mut extra: Vec<&str> = SIM_ONLY_POLICIES.to_vec();
    extra.extend_from_slice(REAL_ONLY_POLICIES);
    let normalized = match config::parse_service_config_with(text, &extra) {
        Ok(Selected::Policy(policy)) => {
            for w in policy.warnings() {
                messages.push(format!("warning: {w}"));
            }
            // Ignored as gRPC ignores them, but in a lab most likely a typo.
            for e in config::ignored_fields(text, &extra) {
                messages.push(format!("warning: {e}"));
            }
            Some(serde_json::json!({ "loadBalancingConfig": [policy.to_json()] }))
        }
        Ok(Selected::Extra { name, .. }) => {
            messages.push(format!("note: {}", extra_note(&name)));
            Some(serde_json::json!({ "loadBalancingConfig": [{ name.as_str(): {} }] }))
        }
        Err(err) => {
            messages.push(format!("error: invalid service config in {source}: {err}"));
            None
        }
    };
    Ok(Checked {
        normalized: normalized
            .map(|n| serde_json::to_string_pretty(&n))
            .transpose()?,
        messages,
    })
}

/// What `check` says about one of lblab's own policy names, which are not gRPC policies.
fn extra_note(name: &str) -> String {
    if SIM_ONLY_POLICIES.contains(&name) {
        format!(
            "`{name}` is lblab's own, not a gRPC policy, and runs only in the simulator (`lblab sim`, \
             the simulated half of `lblab compare`; the real harness skips it). It reads every \
             backend's true queue and speed and picks the least expected completion time. It is \
             not a lower bound: it cannot foresee a pause that starts after its pick. It takes no fields."
        )
    } else {
        format!(
            "`{name}` is lblab's own, not a gRPC policy, and runs only over real gRPC (`lblab real`, \
             `lblab loadgen`, the real half of `lblab compare`): tower's own p2c + PeakEwma \
             balancer, as a reference. It takes no fields."
        )
    }
}
