//! Validation of a parsed scenario file ([`Scenario::check`]), one function per concern: the
//! name, the workload, the fleet, the faults and the backends they make, the policies. Each error
//! names the field it is about; [`Scenario::parse`] adds the field's line afterwards.
//!
//! The order of the checks is part of the behaviour: a file with several mistakes reports the
//! first in this order, and tests pin those messages.

use std::collections::{HashMap, HashSet};

use lblab_policy::config;
use lblab_policy::Nanos;

use super::{
    derive_seed, streams, Arrival, BackendSpec, PolicyEntry, PolicySpec, Scenario, ScenarioFile,
    Workload, WorkloadSpec, REAL_ONLY_POLICIES, SIM_ONLY_POLICIES,
};
use crate::backend::BackendParams;
use crate::fault::{self, FaultSpec, Timeline};
use crate::group::GroupSpec;
use crate::limits;
use crate::locate::Locator;
use crate::method::Methods;
use crate::FileError;
use lblab_record::file_stem;

/// An `Invalid` error about `field` (positions are added by the caller, which has the text).
fn bad<T>(field: &str, msg: String) -> Result<T, FileError> {
    Err(FileError::invalid(field, msg))
}

impl Scenario {
    /// Checks every part of `file` and builds the validated scenario. `locator` (when there is
    /// text) points a policy's JSON error at its line inside the TOML.
    pub(super) fn check(
        file: ScenarioFile,
        locator: Option<&Locator<'_>>,
    ) -> Result<Scenario, FileError> {
        if !is_file_name(&file.name) {
            return bad("name", format!("{:?} must be 1 to {} letters, digits, '-' or '_' (it names the results folder)", file.name, limits::NAME));
        }
        let workload = check_workload(&file.workload)?;
        check_fleet(&file.fleet, workload.clients)?;
        let backends = build_backends(&file, &workload)?;
        let policies = check_policies(&file.policies, locator)?;
        Ok(Scenario {
            file,
            workload,
            backends,
            policies,
        })
    }
}

/// Checks `[[fleet]]`: unique valid names, counts, workers, zones and service times, and the
/// fleet's size (alone and times `clients`) against [`limits`].
fn check_fleet(fleet: &[GroupSpec], clients: u32) -> Result<(), FileError> {
    if fleet.is_empty() {
        return bad("fleet", "needs at least one [[fleet]] group, e.g. [[fleet]] name = \"main\" count = 4 service_time = { dist = \"constant\", value = \"2ms\" }".into());
    }
    let mut names = HashSet::new();
    let mut total = 0u64;
    for (i, g) in fleet.iter().enumerate() {
        let f = |k: &str| format!("fleet[{i}].{k}");
        if !is_group_name(&g.name) {
            return bad(&f("name"), format!("{:?} must be 1 to {} letters, digits, '-', '_' or '.' (backends are named group/index)", g.name, limits::NAME));
        }
        if !names.insert(g.name.as_str()) {
            return bad(
                &f("name"),
                format!(
                    "{:?} is already the name of another group; group names must be unique",
                    g.name
                ),
            );
        }
        if g.count == 0 {
            return bad(&f("count"), "must be at least 1 backend".into());
        }
        total += u64::from(g.count);
        // Checked while summing: the total must never overflow before it is compared.
        if total > limits::BACKENDS {
            return bad(
                &f("count"),
                format!(
                    "the fleet would have {total} backends; at most {} are allowed",
                    limits::BACKENDS
                ),
            );
        }
        if g.workers == 0 || g.workers > limits::WORKERS {
            return bad(
                &f("workers"),
                format!(
                    "{} must be from 1 to {} (requests served in parallel)",
                    g.workers,
                    limits::WORKERS
                ),
            );
        }
        if g.zone.is_empty()
            || g.zone
                .chars()
                .any(|c| c.is_control() || c == ',' || c == '"')
        {
            return bad(
                &f("zone"),
                format!(
                    "{:?} must be non-empty, without commas, quotes or control characters",
                    g.zone
                ),
            );
        }
        g.service_time.build(&f("service_time"))?;
    }
    let connections = u64::from(clients) * total;
    if connections > limits::CONNECTIONS {
        return bad("workload.clients", format!("{clients} clients x {total} backends = {connections} connections; at most {} are allowed", limits::CONNECTIONS));
    }
    Ok(())
}

/// Checks `[[faults]]` and resolves their targets: for each backend (fleet order), the faults
/// that target it. `starts` are the indexes of each group's first backend.
fn faults_per_backend<'a>(
    file: &'a ScenarioFile,
    workload: &Workload,
    starts: &[usize],
    total: usize,
) -> Result<Vec<Vec<&'a FaultSpec>>, FileError> {
    let mut per_backend: Vec<Vec<&FaultSpec>> = vec![Vec::new(); total];
    for (i, spec) in file.faults.iter().enumerate() {
        let field = format!("faults[{i}]");
        for b in fault::check::check(spec, &field, &file.fleet, starts, workload.end())? {
            per_backend[b].push(spec);
        }
        // Method names are the workload's, which the fault check does not see: checked here.
        if let FaultSpec::Slowdown { methods, .. } = spec {
            if let Some(m) = methods.iter().find(|m| workload.methods.index(m).is_none()) {
                return bad(
                    &format!("{field}.methods"),
                    format!(
                        "{m:?} is not a method of [[workload.methods]] ({})",
                        if workload.methods.is_empty() {
                            "the workload names none".to_string()
                        } else {
                            workload.methods.names().join(", ")
                        }
                    ),
                );
            }
        }
    }
    Ok(per_backend)
}

/// Every backend of the fleet, groups in order, with its parameters, its fault timeline and its
/// own seed (derived from its index, so adding a group at the end changes no other backend).
fn build_backends(file: &ScenarioFile, workload: &Workload) -> Result<Vec<BackendSpec>, FileError> {
    let run_end = workload.end();
    let mut starts = Vec::new();
    let mut next = 0usize;
    for g in &file.fleet {
        starts.push(next);
        next += g.count as usize;
    }
    let total = next;
    let per_backend = faults_per_backend(file, workload, &starts, total)?;
    let mut backends = Vec::with_capacity(total);
    for (gi, g) in file.fleet.iter().enumerate() {
        // Already checked with its field name in `check_fleet`; this cannot fail.
        let service_time = g.service_time.build("")?;
        for k in 0..g.count as usize {
            let id = starts[gi] + k;
            backends.push(BackendSpec {
                name: format!("{}/{k}", g.name),
                group: gi,
                zone: g.zone.clone(),
                network_rtt: g.network_rtt.0,
                params: BackendParams {
                    workers: g.workers,
                    queue_limit: g.queue_limit,
                    service_time,
                    stream_duration: workload.stream_duration,
                    method_factors: (0..workload.methods.names().len() as u32)
                        .map(|m| workload.methods.factor(m))
                        .collect(),
                },
                timeline: Timeline::new(
                    &per_backend[id],
                    derive_seed(file.seed, streams::FAULT, id as u64),
                    run_end,
                    &workload.methods,
                ),
                median_service: g.service_time.median_ns() as Nanos,
                seed: derive_seed(file.seed, streams::BACKEND, id as u64),
            });
        }
    }
    Ok(backends)
}

/// Checks `[[policies]]`: labels (unique also as file names) and service configs, which may
/// select the policies only one mode runs.
fn check_policies(
    specs: &[PolicySpec],
    locator: Option<&Locator<'_>>,
) -> Result<Vec<PolicyEntry>, FileError> {
    if specs.is_empty() {
        return bad("policies", "needs at least one [[policies]] entry, e.g. [[policies]] name = \"rr\" config = '{\"loadBalancingConfig\":[{\"round_robin\":{}}]}'".into());
    }
    let mut extra: Vec<&str> = SIM_ONLY_POLICIES.to_vec();
    extra.extend_from_slice(REAL_ONLY_POLICIES);
    // Keyed by file stem, not by label: two labels that differ only in characters a file name
    // cannot hold would write the same `.hlog`.
    let mut stems: HashMap<String, usize> = HashMap::new();
    let mut policies = Vec::new();
    for (i, p) in specs.iter().enumerate() {
        let field = format!("policies[{i}].name");
        if p.name.is_empty()
            || p.name.chars().count() > limits::NAME
            || p.name
                .chars()
                .any(|c| c.is_control() || c == ',' || c == '"')
        {
            return bad(&field, format!("{:?} must be 1 to {} characters without commas, quotes or control characters (it labels tables, charts and CSV rows)", p.name, limits::NAME));
        }
        if let Some(j) = stems.insert(file_stem(&p.name), i) {
            let other = &specs[j].name;
            let why = if *other == p.name {
                "policy names must be unique".to_string()
            } else {
                format!("both would write {}.hlog", file_stem(&p.name))
            };
            return bad(
                &field,
                format!("{:?} clashes with policies[{j}] {other:?}: {why}", p.name),
            );
        }
        let selected = config::parse_service_config_with(&p.config, &extra)
            .map_err(|e| config_error(i, e, locator))?;
        policies.push(PolicyEntry {
            name: p.name.clone(),
            config_json: p.config.clone(),
            selected,
        });
    }
    Ok(policies)
}

/// The error of `policies[i].config`, placed (with `locator`) at the JSON error's line and column
/// within the TOML file.
fn config_error(i: usize, e: config::ConfigError, locator: Option<&Locator<'_>>) -> FileError {
    let field = format!("policies[{i}].config");
    let position = match (locator, e.position) {
        (Some(l), Some((line, col))) => l.literal_string_start(&field).map(|start| {
            let (l0, c0) = l.line_col(start);
            // serde_json says column 0 for an error at a line break: the line's start.
            let col = col.max(1);
            if line == 1 {
                (l0, c0 + col - 1)
            } else {
                (l0 + line - 1, col)
            }
        }),
        _ => None,
    };
    FileError::Invalid {
        file: String::new(),
        field,
        position,
        message: match e.position {
            // The JSON's own line and column stay in the message, relative to the JSON.
            Some(_) => format!("invalid service config: {}", e.message),
            None => format!("invalid service config: {e}"),
        },
    }
}

/// Checks `[[workload]]` and builds the validated [`Workload`].
fn check_workload(w: &WorkloadSpec) -> Result<Workload, FileError> {
    if w.clients == 0 || w.clients > limits::CLIENTS {
        return bad(
            "workload.clients",
            format!("{} must be from 1 to {}", w.clients, limits::CLIENTS),
        );
    }
    let concurrency = match w.arrival {
        Arrival::Closed => {
            if w.rate != 0.0 {
                return bad("workload.rate", "applies to open-loop arrivals only; a closed loop's rate follows from `concurrency`: remove it, or use arrival = \"poisson\"".into());
            }
            match w.concurrency {
                Some(c) if c > 0 && u64::from(c) * u64::from(w.clients) <= limits::IN_FLIGHT => c,
                _ => return bad("workload.concurrency", format!("a closed-loop workload needs concurrency from 1 to {} requests in flight per client ({} in all)", limits::IN_FLIGHT / u64::from(w.clients), limits::IN_FLIGHT)),
            }
        }
        _ => {
            if !(w.rate.is_finite() && w.rate > 0.0 && w.rate <= limits::RATE) {
                return bad(
                    "workload.rate",
                    format!(
                        "{} must be a positive number of requests per second, at most {:e}",
                        w.rate,
                        limits::RATE
                    ),
                );
            }
            if w.rate / f64::from(w.clients) < 1e-3 {
                return bad("workload.rate", format!("{} requests per second over {} clients is under one request per 1000 s per client", w.rate, w.clients));
            }
            if w.concurrency.is_some() {
                return bad(
                    "workload.concurrency",
                    "only applies to arrival = \"closed\"".into(),
                );
            }
            0
        }
    };
    if w.duration.0 == 0 {
        return bad(
            "workload.duration",
            "must be greater than 0s, e.g. \"30s\"".into(),
        );
    }
    if w.deadline.0 == 0 {
        return bad(
            "workload.deadline",
            "must be greater than 0s, e.g. \"1s\"".into(),
        );
    }
    if !(0.0..=1.0).contains(&w.streaming_share) {
        return bad(
            "workload.streaming_share",
            format!("{} must be within [0, 1]", w.streaming_share),
        );
    }
    let methods = Methods::check(&w.methods)?;
    Ok(Workload {
        clients: w.clients,
        rate: w.rate,
        arrival: w.arrival,
        concurrency,
        warmup: w.warmup.0,
        duration: w.duration.0,
        deadline: w.deadline.0,
        streaming_share: w.streaming_share,
        stream_duration: w.stream_duration.build("workload.stream_duration")?,
        measured_method: measured_method(w, &methods)?,
        methods,
    })
}

/// `workload.measured_method`, checked: a method of `[[workload.methods]]`.
fn measured_method(w: &WorkloadSpec, methods: &Methods) -> Result<Option<u32>, FileError> {
    let Some(name) = &w.measured_method else {
        return Ok(None);
    };
    match methods.index(name) {
        Some(i) => Ok(Some(i as u32)),
        None if methods.is_empty() => Err(FileError::invalid(
            "workload.measured_method",
            format!("{name:?} names a method, but the workload has no [[workload.methods]]"),
        )),
        None => Err(FileError::invalid(
            "workload.measured_method",
            format!(
                "{name:?} is not a method of [[workload.methods]] ({})",
                methods.names().join(", ")
            ),
        )),
    }
}

/// A scenario name: it names a folder, so letters, digits, `-` and `_` only.
fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= limits::NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A group name: it is a prefix of backend names, fault targets and CSV headers.
fn is_group_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= limits::NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}
