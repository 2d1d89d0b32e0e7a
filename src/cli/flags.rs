//! The flags of `lblab loadgen` and `lblab regress --targets`, in groups (clap's derive, flattened
//! into each command's arguments), and what each group becomes in the libraries' typed options
//! (targets, transport, call, load, plan): the libraries take those and know no flag, and the
//! errors here name the flag they are about.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lblab_loadgen::method::{self, Call};
use lblab_loadgen::schedule::{RateSchedule, Shape};
use lblab_loadgen::target::{Target, TargetSpec};
use lblab_loadgen::transport::{TlsError, TlsOptions, Transport};
use lblab_model::budget::parse_bytes;
use lblab_model::overrides::{policy_specs, LoadOverrides};
use lblab_model::units::Dur;
use lblab_model::Scenario;
use lblab_record::file_stem;

use lblab_lab::{Context, LabError, Result};

/// Which servers, and how calls reach them.
#[derive(Debug, clap::Args)]
pub struct Targets {
    /// The servers: host:port,host:port,... (one endpoint each, in the order of the scenario's
    /// backends), or dns:///name:port (every address of the name, re-resolved while the run goes).
    #[arg(long, value_delimiter = ',')]
    pub targets: Vec<String>,
    /// How often a dns:/// target is re-resolved (gRPC's DNS resolver waits at least 30 s).
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub resolve_every: Dur,
    /// The :authority of every call instead of each target's host:port (with TLS, also the name
    /// the server's certificate must have).
    #[arg(long)]
    pub authority: Option<String>,
    /// Timeout of one connection attempt [default: 20s, gRPC's].
    #[arg(long, value_name = "DURATION")]
    pub connect_timeout: Option<Dur>,
    /// HTTP/2 keepalive: a PING this often on every connection, also while idle.
    #[arg(long, value_name = "DURATION")]
    pub keepalive: Option<Dur>,
    /// With --keepalive: close a connection whose PING is not answered within this.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "20s",
        requires = "keepalive"
    )]
    pub keepalive_timeout: Dur,
    /// Largest reply message accepted (e.g. 16MiB) [default: 4MiB, gRPC's].
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    pub max_recv_message_size: Option<u64>,
    /// Largest request message sent (e.g. 16MiB) [default: no limit].
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    pub max_send_message_size: Option<u64>,
}

impl Targets {
    /// The parsed target list.
    pub fn spec(&self) -> Result<TargetSpec> {
        if self.resolve_every.0 < 1_000_000_000 {
            return Err(LabError::Message(format!(
                "--resolve-every {} is too short: at least 1s (gRPC's own resolver waits 30 s)",
                self.resolve_every
            )));
        }
        TargetSpec::parse(&self.targets, Duration::from_nanos(self.resolve_every.0))
            .context("--targets")
    }

    /// `--authority`, parsed.
    pub fn authority(&self) -> Result<Option<http::uri::Authority>> {
        self.authority
            .as_deref()
            .map(|a| {
                a.parse::<http::uri::Authority>()
                    .with_context(|| format!("--authority {a:?} is not host[:port]"))
            })
            .transpose()
    }

    /// Connection timeout, keepalive and message-size limits.
    pub fn apply(&self, calls: &mut lblab_loadgen::run::CallOptions) {
        let d = |v: Dur| Duration::from_nanos(v.0);
        calls.connect_timeout = self.connect_timeout.map(d);
        calls.keepalive = self.keepalive.map(|k| (d(k), d(self.keepalive_timeout)));
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        calls.max_recv_message = self.max_recv_message_size.map(size);
        calls.max_send_message = self.max_send_message_size.map(size);
    }
}

/// What each call sends.
#[derive(Debug, clap::Args)]
pub struct Calls {
    /// The method to call, package.Service/Method, unary or server-streaming [default: lblab's
    /// Echo/Unary, which carries the scenario's backend behaviour].
    #[arg(long, value_name = "METHOD")]
    pub call: Option<String>,
    /// The request message as JSON (protobuf's JSON mapping), checked against the schema; a
    /// JSON array is a list of messages sent in turn; @ reads it from stdin.
    #[arg(short = 'd', long, value_name = "JSON", conflicts_with = "data_file")]
    pub data: Option<String>,
    /// A file holding the request message (or array of messages) as JSON.
    #[arg(short = 'D', long, value_name = "FILE")]
    pub data_file: Option<PathBuf>,
    /// .proto file with the method's service (repeatable) [default: ask the server by
    /// reflection, grpc.reflection.v1 or v1alpha].
    #[arg(long = "proto", value_name = "FILE", conflicts_with = "protoset")]
    pub protos: Vec<PathBuf>,
    /// A compiled FileDescriptorSet with the method's service and its imports (protoc
    /// --include_imports --descriptor_set_out).
    #[arg(long, value_name = "FILE")]
    pub protoset: Option<PathBuf>,
    /// Where imports of --proto files are found besides each file's own folder (repeatable, or
    /// comma-separated).
    #[arg(
        short = 'i',
        long = "import-path",
        visible_alias = "import-paths",
        value_name = "DIR",
        value_delimiter = ','
    )]
    pub import_paths: Vec<PathBuf>,
    /// Metadata sent with every call: key:value, or a JSON object of keys and values as ghz's
    /// -m (repeatable; a key ending in -bin takes base64).
    #[arg(
        short = 'H',
        visible_short_alias = 'm',
        long = "metadata",
        value_name = "KEY:VALUE"
    )]
    pub metadata: Vec<String>,
    /// A file holding metadata as a JSON object of keys and values.
    #[arg(short = 'M', long, value_name = "FILE")]
    pub metadata_file: Option<PathBuf>,
}

impl Calls {
    /// The request's JSON: `--data` (`@`: stdin), or the contents of `--data-file`.
    pub fn request_json(&self) -> Result<Option<String>> {
        match (&self.data, &self.data_file) {
            (Some(d), _) if d.trim() == "@" => {
                let mut text = String::new();
                std::io::stdin()
                    .take(lblab_record::MAX_RESULT_FILE)
                    .read_to_string(&mut text)
                    .context("--data @: reading the request from stdin")?;
                Ok(Some(text))
            }
            (Some(d), _) => Ok(Some(d.clone())),
            (None, Some(path)) => {
                let text = lblab_record::read_result_file(path)
                    .with_context(|| format!("--data-file {}", path.display()))?;
                Ok(Some(text))
            }
            (None, None) => Ok(None),
        }
    }

    /// The metadata of `--metadata` and `--metadata-file`.
    pub fn metadata(&self) -> Result<tonic::metadata::MetadataMap> {
        let mut entries = self.metadata.clone();
        if let Some(path) = &self.metadata_file {
            let text = lblab_record::read_result_file(path)
                .with_context(|| format!("--metadata-file {}", path.display()))?;
            entries.push(text);
        }
        lblab_loadgen::metadata::parse(&entries).context("--metadata")
    }

    /// Refuses request flags without `--call`.
    pub fn check(&self, data: Option<&str>) -> Result<()> {
        if self.call.is_some() {
            return Ok(());
        }
        let misplaced = [
            ("--data", data.is_some()),
            ("--proto", !self.protos.is_empty()),
            ("--protoset", self.protoset.is_some()),
            ("--import-path", !self.import_paths.is_empty()),
        ];
        if let Some((flag, _)) = misplaced.iter().find(|(_, given)| *given) {
            return Err(LabError::Message(format!(
                "{flag} describes the request of --call, which is not given"
            )));
        }
        Ok(())
    }

    /// The method and its requests from `--proto` or `--protoset`, when given; `None` when the
    /// schema is to be asked by reflection.
    pub fn schema_files_call(&self, name: &str, data: Option<&str>) -> Result<Option<Call>> {
        let pool = if let Some(set) = &self.protoset {
            method::pool_from_protoset(set).context("--protoset")?
        } else if !self.protos.is_empty() {
            method::pool_from_protos(&self.protos, &self.import_paths).context("--proto")?
        } else {
            return Ok(None);
        };
        resolve(&pool, name, data).map(Some)
    }
}

/// The first of ghz's call templates (`{{.RequestNumber}}`, `{{newUUID}}`, ...) in `text`, if any.
fn ghz_template(text: &str) -> Option<&str> {
    let start = text.find("{{")?;
    let len = text[start..].find("}}")? + 2;
    let inner = text[start + 2..start + len - 2].trim();
    let ghz = inner.starts_with('.')
        || ["newUUID", "randomString", "randomInt"]
            .iter()
            .any(|f| inner.starts_with(f));
    ghz.then(|| &text[start..start + len])
}

/// `method::resolve` with the flag of each error.
pub fn resolve(pool: &method::DescriptorPool, name: &str, data: Option<&str>) -> Result<Call> {
    use method::MethodError as E;
    method::resolve(pool, name, data).map_err(|e| {
        let flag = match &e {
            E::Json { .. } | E::NoRequests | E::Mismatch { .. } => "--data",
            _ => "--call",
        };
        LabError::Context {
            context: flag.into(),
            source: Box::new(e),
        }
    })
}

/// TLS.
#[derive(Debug, clap::Args)]
pub struct Tls {
    /// Connect with TLS (rustls; ALPN h2).
    #[arg(long)]
    pub tls: bool,
    /// PEM file of the certificates that may sign the server's, or of the server's own
    /// self-signed certificate [default: the Mozilla roots].
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// PEM file of the client certificate chain, for mutual TLS (with --key).
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM file of the client's private key, for mutual TLS (with --cert).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// TLS without verifying the server's certificate (implies --tls; ghz's --skipTLS). Anyone
    /// on the path can then read and change the calls.
    #[arg(long, alias = "skipTLS")]
    pub skip_tls_verify: bool,
    /// Plaintext, as ghz's --insecure (plaintext is already the default). Refused with a TLS
    /// flag: for TLS without verification, use --skip-tls-verify.
    #[arg(long)]
    pub insecure: bool,
}

impl Tls {
    /// Plaintext, or TLS with these flags; `server_name` is the name to verify instead of each
    /// target's host.
    pub fn transport(&self, server_name: Option<String>) -> Result<Transport> {
        let tls_flags = [
            ("--tls", self.tls),
            ("--skip-tls-verify", self.skip_tls_verify),
            ("--cacert", self.cacert.is_some()),
            ("--cert", self.cert.is_some()),
        ];
        if let Some((flag, _)) = tls_flags.iter().find(|(_, given)| *given && self.insecure) {
            return Err(LabError::Message(format!(
                "--insecure means plaintext (as in ghz), but {flag} asks for TLS: for TLS without \
                 verifying the server's certificate, use --tls --skip-tls-verify (ghz's --skipTLS); \
                 for plaintext, leave out {flag}"
            )));
        }
        if !(self.tls || self.skip_tls_verify) {
            if let Some((flag, _)) = tls_flags[2..].iter().find(|(_, given)| *given) {
                return Err(LabError::Message(format!(
                    "{flag} is a TLS setting: add --tls"
                )));
            }
            return Ok(Transport::plaintext());
        }
        if self.skip_tls_verify {
            lblab_lab::errln!(
                "warning: --skip-tls-verify: the servers' certificates are NOT verified; anyone on \
                 the path can impersonate them and read or change the calls"
            );
        }
        let options = TlsOptions {
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure: self.skip_tls_verify,
        };
        Transport::tls(&options, server_name).map_err(|e| {
            let flag = match &e {
                TlsError::Pem { setting, .. } => format!("--{setting}"),
                TlsError::CertWithoutKey => "--cert/--key".into(),
                _ => "--tls".into(),
            };
            LabError::Context {
                context: flag,
                source: Box::new(e),
            }
        })
    }
}

/// The load's shape.
#[derive(Debug, clap::Args)]
pub struct Load {
    /// Offered calls per second over all clients, open loop [default without a scenario: 100].
    #[arg(
        short = 'r',
        long,
        visible_alias = "rps",
        conflicts_with = "concurrency"
    )]
    pub rate: Option<f64>,
    /// Closed loop instead: calls each client keeps in flight.
    #[arg(short = 'c', long)]
    pub concurrency: Option<u32>,
    /// Clients, each with its own policy instance and connections [default without a scenario:
    /// 1].
    #[arg(long)]
    pub clients: Option<u32>,
    /// Evenly spaced arrivals instead of Poisson ones (open loop).
    #[arg(long)]
    pub constant: bool,
    /// Send this many calls per policy, without warm-up unless --warmup is given: open loop,
    /// evenly spaced over total / rate; closed loop (-c), as fast as the calls in flight allow
    /// (--duration then only bounds the run).
    #[arg(short = 'n', long, conflicts_with_all = ["load_schedule"])]
    pub total: Option<u64>,
    /// Per-call deadline [default without a scenario: 20s, as ghz's --timeout].
    #[arg(short = 't', long, visible_alias = "timeout", value_name = "DURATION")]
    pub deadline: Option<Dur>,
    /// Measured duration per policy, replacing the scenario's (e.g. 20s).
    #[arg(short = 'z', long)]
    pub duration: Option<Dur>,
    /// Warm-up before measurement, replacing the scenario's.
    #[arg(long)]
    pub warmup: Option<Dur>,
    /// Change the offered rate during the run (open loop): step (--load-start, then
    /// --load-step more every --load-step-duration, up to --load-end) or line (--load-start,
    /// --load-step more per second, up to --load-end).
    #[arg(long, value_name = "SHAPE", value_parser = ["const", "step", "line"], requires = "load_start", conflicts_with = "rate")]
    pub load_schedule: Option<String>,
    /// Calls per second when the schedule starts.
    #[arg(long, value_name = "RATE")]
    pub load_start: Option<f64>,
    /// Rate change per step (step) or per second (line).
    #[arg(
        long,
        value_name = "RATE",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub load_step: f64,
    /// How long each step lasts.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub load_step_duration: Dur,
    /// Where the rate stops changing.
    #[arg(long, value_name = "RATE")]
    pub load_end: Option<f64>,
    /// Change a closed loop's calls in flight per client during the run: step
    /// (--concurrency-start, then --concurrency-step more every --concurrency-step-duration, up
    /// or down to --concurrency-end) or line (--concurrency-step more per second); a negative
    /// step lowers them.
    #[arg(long, value_name = "SHAPE", value_parser = ["const", "step", "line"], requires = "concurrency_start", conflicts_with_all = ["concurrency", "rate", "load_schedule", "total"])]
    pub concurrency_schedule: Option<String>,
    /// Calls in flight per client when the schedule starts.
    #[arg(long, value_name = "N")]
    pub concurrency_start: Option<f64>,
    /// More calls in flight per step (step) or per second (line); negative: fewer.
    #[arg(
        long,
        value_name = "N",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub concurrency_step: f64,
    /// How long each step lasts.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub concurrency_step_duration: Dur,
    /// Where the calls in flight stop rising (or falling).
    #[arg(long, value_name = "N")]
    pub concurrency_end: Option<f64>,
}

impl Load {
    /// The concurrency schedule, if one is asked for.
    pub fn concurrency_schedule(&self) -> Option<RateSchedule> {
        let kind = self.concurrency_schedule.as_deref()?;
        Some(RateSchedule {
            shape: match kind {
                "step" => Shape::Step {
                    every: Duration::from_nanos(self.concurrency_step_duration.0),
                },
                _ => Shape::Line,
            },
            start: self.concurrency_start?,
            step: if kind == "const" {
                0.0
            } else {
                self.concurrency_step
            },
            end: self.concurrency_end,
        })
    }

    /// The rate schedule, if one is asked for.
    pub fn rate_schedule(&self) -> Option<RateSchedule> {
        let shape = match self.load_schedule.as_deref()? {
            "step" => Shape::Step {
                every: Duration::from_nanos(self.load_step_duration.0),
            },
            "line" => Shape::Line,
            _ => Shape::Line,
        };
        let start = self.load_start?;
        let constant = self.load_schedule.as_deref() == Some("const");
        Some(RateSchedule {
            shape,
            start,
            step: if constant { 0.0 } else { self.load_step },
            end: self.load_end,
        })
    }

    /// The scenario changes of these flags, with `policies`; the rate of a `--total` run is
    /// `rate` (the scenario's, when the flags give none).
    pub fn overrides(
        &self,
        policies: Option<Vec<lblab_model::scenario::PolicySpec>>,
        seed: Option<u64>,
        scenario_rate: f64,
    ) -> Result<LoadOverrides> {
        let mut o = LoadOverrides {
            rate: self.rate,
            concurrency: self.concurrency,
            clients: self.clients,
            constant: self.constant,
            deadline: self.deadline,
            seed,
            duration: self.duration,
            warmup: self.warmup,
            policies,
        };
        if let Some(n) = self.total {
            if n == 0 {
                return Err(LabError::Message("--total must be at least 1".into()));
            }
            o.warmup = Some(self.warmup.unwrap_or(Dur(0)));
            if self.concurrency.is_some() {
                // A closed loop ends when its calls are sent; this only bounds it.
                o.duration = Some(self.duration.unwrap_or(Dur(3_600 * 1_000_000_000)));
            } else {
                let rate = self.rate.unwrap_or(scenario_rate);
                if rate <= 0.0 {
                    return Err(LabError::Message(
                        "--total needs --rate or --concurrency".into(),
                    ));
                }
                let needed = Dur((n as f64 / rate * 1e9).ceil() as u64);
                o.duration = Some(match self.duration {
                    Some(z) if z.0 < needed.0 => {
                        lblab_lab::errln!(
                            "warning: -z {z} ends each run before its -n {n} calls at {rate} calls/s \
                             (which take {needed}): about {} calls are sent",
                            (rate * z.0 as f64 / 1e9).floor()
                        );
                        z
                    }
                    Some(z) if z.0 > needed.0 => {
                        lblab_lab::errln!(
                            "note: -n {n} calls at {rate} calls/s take {needed}, so each run ends \
                             then, before -z {z}"
                        );
                        needed
                    }
                    _ => needed,
                });
                o.constant = true;
            }
        }
        Ok(o)
    }
}

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
            lblab_lab::errln!("{warning}");
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
/// [`printable`](lblab_record::text::printable)), a hint when every call was lblab's own Echo
/// (`echo`) and the server said it has no such method, and where the statuses are.
pub fn none_succeeded(statuses: &[lblab_record::StatusRow], echo: bool, dir: &Path) -> String {
    use lblab_record::{text::printable, StatusRow};
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

#[cfg(test)]
mod tests {
    use super::*;
    use lblab_record::StatusRow;

    fn rows(status: &str, message: &str) -> Vec<StatusRow> {
        let row = |status: &str, message: &str, count| StatusRow {
            policy: "rr".into(),
            status: status.into(),
            message: message.into(),
            count,
        };
        vec![row(StatusRow::OK, "", 0), row(status, message, 9)]
    }

    #[test]
    fn ghz_call_templates_are_found_and_plain_braces_are_not() {
        assert_eq!(
            ghz_template(r#"{"name":"n{{.RequestNumber}}"}"#),
            Some("{{.RequestNumber}}")
        );
        assert_eq!(
            ghz_template(r#"{"id":"{{ newUUID }}"}"#),
            Some("{{ newUUID }}")
        );
        assert_eq!(
            ghz_template(r#"{"s":"{{randomString 8}}"}"#),
            Some("{{randomString 8}}")
        );
        assert_eq!(ghz_template(r#"{"a":{"b":{}}}"#), None);
        assert_eq!(ghz_template(r#"{"s":"{{literal}}"}"#), None);
    }

    #[test]
    fn the_echo_hint_comes_only_when_the_server_has_no_such_method() {
        let dir = Path::new("out");
        let said = none_succeeded(&rows("UNIMPLEMENTED", "unknown service"), true, dir);
        assert!(said.contains("--call"), "{said}");
        // A server that serves Echo and failed it otherwise: the hint would be wrong.
        let said = none_succeeded(&rows("UNAVAILABLE", "http2 error"), true, dir);
        assert!(!said.contains("--call"), "{said}");
        // With --call, never.
        let said = none_succeeded(&rows("UNIMPLEMENTED", "unknown service"), false, dir);
        assert!(!said.contains("--call"), "{said}");
        // The server's text is escaped, even read back from a statuses.csv.
        let said = none_succeeded(&rows("INTERNAL", "a\u{1b}[2J\r\nb"), true, dir);
        assert!(said.contains(r"a\u{1b}[2J\r\nb"), "{said}");
    }
}
