//! What the flag groups become together: the run's plan (the scenario file or one made of the
//! flags), the targets and call prepared before it, `--dry-run`'s text, and what to say when no
//! call succeeded.

use std::path::Path;

use lblab_loadgen::method::{self, Call};
use lblab_loadgen::target::{Target, TargetSpec};
use lblab_loadgen::transport::Transport;
use lblab_model::overrides::policy_specs;
use lblab_model::Scenario;
use lblab_record::file_stem;

use lblab_lab::{Context, LabError, Result};

use super::calls::{ghz_template, resolve};
use super::{Calls, Load, Targets, Tls};

/// The flags [`scenario`] reads.
pub struct Given<'a> {
    /// The scenario file, if any.
    pub file: Option<&'a Path>,
    /// The load flags.
    pub load: &'a Load,
    /// `--policy` values.
    pub policies: &'a [String],
    /// `--seed`.
    pub seed: Option<u64>,
}

/// The run's plan (`lblab_harness::plan`): the scenario file or one made of the flags, with the
/// load flags, policies and schedules; its notes printed.
pub fn scenario(
    args: &Given<'_>,
    targets: &[Target],
    call: Option<&Call>,
) -> Result<lblab_harness::Plan> {
    let from_file = args
        .file
        .map(Scenario::load)
        .transpose()
        .map_err(|e| LabError::Library(Box::new(e)))?;
    let policies = (!args.policies.is_empty())
        .then(|| policy_specs(args.policies, from_file.as_ref()))
        .transpose()
        .map_err(|e| LabError::Context {
            context: format!("--policy {:?}", e.value()),
            source: Box::new(e),
        })?;
    let rate = from_file.as_ref().map_or(100.0, |s| s.file.workload.rate);
    let name = call.map_or_else(|| "echo".into(), |c| file_stem(&c.name));
    let input = lblab_harness::PlanInput {
        file: from_file.as_ref(),
        name: &name,
        targets,
        overrides: args.load.overrides(policies, args.seed, rate)?,
        rate_schedule: args.load.rate_schedule(),
        concurrency_schedule: args.load.concurrency_schedule(),
        custom_call: call.is_some(),
    };
    let plan = lblab_harness::plan(input).map_err(|e| {
        use lblab_harness::PlanError as E;
        let what = match (&e, args.file) {
            (E::RateSchedule(_) | E::RateScheduleClosedLoop, _) => "--load-schedule".into(),
            (E::ConcurrencySchedule(_), _) => "--concurrency-schedule".into(),
            (_, Some(p)) => format!("{} with the command-line flags", p.display()),
            (_, None) => "the load flags".into(),
        };
        LabError::Context {
            context: what,
            source: Box::new(e),
        }
    })?;
    for note in &plan.notes {
        lblab_lab::errln!("{note}");
    }
    if let Some(w) = args.load.warmup {
        for warning in lblab_model::find::warmup_warnings(&plan.scenario, w, &[]) {
            lblab_lab::errln!(
                "{}",
                lblab_lab::Named::named(&warning, crate::cli::names::flag)
            );
        }
    }
    Ok(plan)
}

/// What the target, call and TLS flags resolve to before a run is planned.
#[derive(Debug)]
pub struct Prepared {
    /// The target list as given (re-resolved during the run for `dns:///` names).
    pub spec: TargetSpec,
    /// The targets, names resolved.
    pub targets: Vec<Target>,
    /// Plaintext or TLS.
    pub transport: Transport,
    /// `--authority`, parsed.
    pub authority: Option<http::uri::Authority>,
    /// The metadata of every call.
    pub metadata: tonic::metadata::MetadataMap,
    /// `--call`'s method and requests; `None` for lblab's Echo/Unary, or on a dry run whose
    /// schema would come from reflection.
    pub call: Option<Call>,
}

impl Prepared {
    /// The options of every call: the transport, the `:authority` (the target list's own when
    /// `--authority` is not given), the method and the metadata, with the connection flags of
    /// `flags`.
    pub fn call_options(&self, flags: &Targets) -> lblab_loadgen::run::CallOptions {
        let mut calls = lblab_loadgen::run::CallOptions {
            transport: self.transport.clone(),
            authority: self
                .authority
                .clone()
                .or_else(|| self.spec.default_authority().and_then(|a| a.parse().ok())),
            call: self.call.clone().map(std::sync::Arc::new),
            metadata: self.metadata.clone(),
            ..lblab_loadgen::run::CallOptions::default()
        };
        flags.apply(&mut calls);
        calls
    }
}

/// Checks the target, call and TLS flags, resolves the targets (warning on stderr about any that
/// is not on this host) and reads `--call`'s schema from its files or, unless `dry_run`, by
/// reflection from the targets.
pub fn prepare(targets: &Targets, calls: &Calls, tls: &Tls, dry_run: bool) -> Result<Prepared> {
    let spec = targets.spec()?;
    let data = calls.request_json()?;
    calls.check(data.as_deref())?;
    let metadata_text = calls.metadata.join(" ");
    for (flag, text) in [
        ("--data", data.as_deref().unwrap_or("")),
        ("--metadata", &metadata_text),
    ] {
        if let Some(template) = ghz_template(text) {
            lblab_lab::errln!(
                "warning: {flag} holds {template}, which ghz expands as a call template; lblab sends \
                 it as written, the same in every call"
            );
        }
    }
    let metadata = calls.metadata()?;
    let authority = targets.authority()?;
    let server_name = authority
        .as_ref()
        .map(|a| a.host().to_string())
        .or_else(|| {
            spec.default_authority()
                .map(|a| a.rsplit_once(':').map_or(a.clone(), |(h, _)| h.to_string()))
        });
    let transport = tls.transport(server_name)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a runtime to resolve the targets")?;
    let resolved = rt.block_on(spec.resolve()).context("--targets")?;
    for t in resolved.iter().filter(|t| !t.is_on_this_host()) {
        lblab_lab::errln!(
            "warning: --targets {} is not a loopback address: this run sends its load over a \
             real network to that host",
            t.label()
        );
    }
    let call = match &calls.call {
        Some(name) => match calls.schema_files_call(name, data.as_deref())? {
            Some(c) => Some(c),
            None if dry_run => None,
            None => {
                let (service, _) = method::split_call(name).context("--call")?;
                let schema = lblab_loadgen::reflection::schema_from_any(
                    &resolved,
                    &transport,
                    authority.as_ref(),
                    &metadata,
                    service,
                );
                let pool = rt.block_on(schema).context("--call")?;
                Some(resolve(&pool, name, data.as_deref())?)
            }
        },
        None => None,
    };
    Ok(Prepared {
        spec,
        targets: resolved,
        transport,
        authority,
        metadata,
        call,
    })
}

/// `--dry-run`'s plan as text: the load, the policies, the targets and the call.
pub fn dry_run_lines(
    scenario: &Scenario,
    targets: &[Target],
    name: Option<&str>,
    call: Option<&Call>,
) -> Vec<String> {
    let w = &scenario.file.workload;
    let load = match w.concurrency {
        Some(c) => format!("closed loop, {c} calls in flight per client"),
        None => format!(
            "{} calls/s open loop ({})",
            w.rate,
            format!("{:?}", w.arrival).to_lowercase()
        ),
    };
    let mut lines = vec![format!(
        "dry run: nothing was sent. Would run {} clients at {load}, warm-up {} then {} measured, per policy:",
        w.clients, w.warmup, w.duration
    )];
    for p in scenario.policies.iter().filter(|p| p.runs_in_real()) {
        lines.push(format!("  policy {}", p.name));
    }
    for t in targets {
        lines.push(format!("  target {}", t.label()));
    }
    lines.push(match (name, call) {
        (Some(name), None) => format!(
            "  calling {name}: its schema is read by reflection when the run starts (not checked)"
        ),
        (Some(_), Some(c)) => format!("  calling {}", c.describe()),
        (None, _) => "  calling lblab's Echo/Unary (the scenario's backend behaviour)".into(),
    });
    lines
}

/// What to say when no call succeeded: the first error (the server's text made
/// [`printable`](lblab_message::text::printable)), a hint when every call was lblab's own Echo
/// (`echo`) and the server said it has no such method, and where the statuses are.
pub fn none_succeeded(statuses: &[lblab_record::StatusRow], echo: bool, dir: &Path) -> String {
    use lblab_message::text::printable;
    use lblab_record::StatusRow;
    let failed = statuses
        .iter()
        .find(|r| r.status != StatusRow::OK && r.count > 0);
    let first = failed
        .map(|r| format!(": {} {}", printable(&r.status), printable(&r.message)))
        .unwrap_or_default();
    // A server that serves lblab's Echo and failed it for another reason needs no hint about
    // --call.
    let unimplemented = failed.is_some_and(|r| r.status == "UNIMPLEMENTED");
    let hint = if echo && unimplemented {
        " (without --call every call is lblab's own lblab.v1.Echo/Unary, which only `lblab \
         backend` serves: give --call package.Service/Method for your service)"
    } else {
        ""
    };
    format!(
        "no call succeeded{first}{hint}; the statuses are in {}",
        dir.join(lblab_record::layout::STATUSES_CSV).display()
    )
}
