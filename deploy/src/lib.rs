//! Running a scenario beyond one machine: plain Kubernetes manifests for its fleet and its load
//! generators (`lblab deploy k8s`), made of the same `lblab backend` and `lblab loadgen`
//! processes that run on one machine.
//!
//! - The **fleet** is an Indexed Job with one pod per backend of the scenario: completion index `k`
//!   serves backend `k` (its group, faults and service times: `lblab backend --index k`), on
//!   the same port in every pod, behind a headless Service whose name resolves to every ready
//!   pod, so load generators find the fleet with `dns:///<service>:<port>` and re-resolve it.
//! - The **load generators** are an Indexed Job: completion index `i` runs shard `i` of the
//!   scenario's clients ([`shards`]: the clients split as evenly as they go, each shard's rate in
//!   proportion to its clients, so every client offers the scenario's per-client load, and its
//!   own seed), waits until the common start (`--start-at`, from the ConfigMap) and writes its
//!   results folder to a shared volume.
//! - The **collector** is a Job that waits for every shard's summary on that volume, merges each
//!   policy's shards with `lblab report --merge` and says how to fetch the merged folders.
//! - **Resources** are sized from the scenario and the harness's measured cost per call
//!   ([`CLIENT_CPU_PER_CALL_US`]); CPU *limits* are left out on purpose (see [`NOTES`]).

mod yaml;

use lblab_model::Scenario;
use serde_json::{json, Value};

pub use yaml::stream as yaml_stream;

/// Client CPU per call, µs: the load generator's runtime threads (RPC stack and policy) at
/// 2,000 calls/s over 20 backends, as the harness measured it in
/// `results/real-harness/targets-run{1,2,3}/harness.json` (`client_cpu_per_call_us`: 128.8 to
/// 143.6 µs across runs and policies; this is about their largest).
pub const CLIENT_CPU_PER_CALL_US: f64 = 140.0;
/// The dispatcher thread's CPU per call, µs (pacing, spin-waits included), from the same files
/// (`dispatcher_cpu_per_call_us`, about 81 µs).
pub const DISPATCHER_CPU_PER_CALL_US: f64 = 81.0;
/// The highest rate one load-generator process is given by default: the rate at which the
/// harness's precision was measured on one core (`results/real-harness/README.md`: dispatch
/// lateness p99 0.2–0.3 ms at 2,000 calls/s); the default shard count is the scenario's rate
/// over this, rounded up.
pub const RATE_PER_SHARD: f64 = 2000.0;
/// The port every backend pod listens on.
pub const DEFAULT_PORT: u16 = 50051;
/// Where the scenario file is mounted in every pod.
pub const SCENARIO_PATH: &str = "/etc/lblab/scenario.toml";
/// Seconds each policy's slot adds to the run's own length (warm-up, measurement and drain):
/// the fleet listens [`FLEET_LEAD_S`] before the slot's start and stops 25 s before the next
/// slot's, and the load generators connect in the 5 s before it.
pub const SLOT_MARGIN_S: u64 = 60;
/// How long before a slot's start the fleet of that slot listens (its pods become ready and the
/// headless Service's name resolves to them).
pub const FLEET_LEAD_S: u64 = 20;
/// Seconds ahead of the first slot a start should be, so that the pods are scheduled, have pulled
/// the image and the fleet listens ([`FLEET_LEAD_S`] before the slot) in time.
pub const START_LEAD_S: u64 = 120;

/// What is wrong with a start `start_at` (Unix seconds) at `now`, if it leaves the pods less
/// than [`START_LEAD_S`]: a pod not running by its slot's start skips that slot.
pub fn start_warning(start_at: u64, now: u64) -> Option<String> {
    (start_at < now + START_LEAD_S).then(|| {
        format!(
            "the first slot starts {}; pods not yet scheduled, pulled and listening by then skip \
             their slot (a load generator says so and its Job fails)",
            if start_at > now {
                format!("in {} s", start_at - now)
            } else {
                format!("{} s ago", now - start_at)
            }
        )
    })
}

/// Seconds after the last policy's slot until which the collector waits for unfinished shards.
pub const COLLECT_GRACE_S: u64 = 300;
/// Where the shared results volume is mounted in the load generators' pods.
pub const RESULTS_PATH: &str = "/results";

/// The note on pinning and CPU limits written into the manifests.
pub const NOTES: &str = "\
CPU: the pods request CPU sized from the scenario's rate and the harness's measured cost per \
call, and set no CPU limit: a CFS quota throttles a process for the rest of its period once it \
is used up, which adds up to a period (100 ms by default) to whatever call is in flight, a \
latency the lab would then measure as the policy's. For pinned cores, give the pods a \
Guaranteed QoS class (limits equal to requests, whole CPUs) on nodes whose kubelet runs the \
static CPU manager policy. The pods meet the restricted Pod Security profile and drop every \
capability, so the load generator runs at normal priority and says so; its real-time scheduling \
(SCHED_FIFO) needs SYS_NICE, which only a privileged namespace allows (add it in an overlay). \
Either way the \
harness measures its own floor: run `lblab real` on one node of the same kind to see what the \
stack itself adds.";

/// What is wrong with a deployment request.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// An option that cannot make a valid deployment of this scenario.
    #[error("{0}")]
    Invalid(String),
}

/// How to deploy.
#[derive(Debug, Clone)]
pub struct Options {
    /// The container image holding `lblab` (built from the `Containerfile`).
    pub image: String,
    /// The name every object's name starts with (a DNS label).
    pub name: String,
    /// The port of every backend pod.
    pub port: u16,
    /// Load-generator shards [default: the rate over [`RATE_PER_SHARD`], rounded up, at most
    /// the scenario's clients].
    pub shards: Option<usize>,
    /// The common start, Unix seconds: time 0 of the fault timeline in every backend and load
    /// generator, and when the load generators start.
    pub start_at: u64,
    /// Whether load generators find the fleet with `dns:///` (re-resolved), or with each pod's
    /// own name in scenario order (so each address is its scenario backend, for the traffic
    /// share to faulty backends).
    pub dns: bool,
    /// The storage class of the results volume [default: the cluster's default class].
    pub storage_class: Option<String>,
    /// The results volume's access mode.
    pub access_mode: AccessMode,
}

/// How the results volume may be mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessMode {
    /// By pods on any node: needs a class that offers it (NFS, CephFS, a cloud file store).
    ReadWriteMany,
    /// By the pods of one node only: what the large managed clusters' default classes give;
    /// every pod that mounts it (load generators and collector) must then share a node.
    ReadWriteOnce,
}

impl AccessMode {
    /// Kubernetes' name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            AccessMode::ReadWriteMany => "ReadWriteMany",
            AccessMode::ReadWriteOnce => "ReadWriteOnce",
        }
    }
}

/// The user the image runs as (the Containerfile's `USER`), and the group that owns the results
/// volume's files.
pub const IMAGE_UID: u64 = 10001;

/// A pod's security context for Kubernetes' restricted Pod Security profile: not root, the
/// runtime's default seccomp profile, and the results volume's files owned by the image's user.
fn pod_security() -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": IMAGE_UID,
        "fsGroup": IMAGE_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    })
}

/// A container's security context for the restricted profile: no privilege escalation, no
/// capabilities (so no real-time scheduling: lblab then runs at normal priority and says so).
fn container_security() -> Value {
    json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
}

/// How long a finished Job (and its pods' logs) stays before Kubernetes deletes it.
pub const JOB_TTL_S: u64 = 86_400;

/// One load-generator shard: its clients, rate and seed.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardLoad {
    /// Clients of this shard.
    pub clients: u32,
    /// Its open-loop rate, calls/s (0 for a closed loop).
    pub rate: f64,
    /// Its seed: the scenario's plus the shard index.
    pub seed: u64,
}

/// The scenario's clients split into `n` shards: `clients / n` each, the first `clients % n`
/// one more; each shard's rate in proportion to its clients; seed `seed + i`.
pub fn shards(scenario: &Scenario, n: usize) -> Result<Vec<ShardLoad>, DeployError> {
    let w = &scenario.file.workload;
    let clients = w.clients.max(1) as usize;
    if n == 0 || n > clients {
        return Err(DeployError::Invalid(format!(
            "{n} load-generator shards for {} clients: each shard runs at least one of the \
             scenario's clients (workload.clients), so use 1 to {clients} shards, or raise \
             workload.clients",
            clients
        )));
    }
    Ok((0..n)
        .map(|i| {
            let c = clients / n + usize::from(i < clients % n);
            ShardLoad {
                clients: c as u32,
                rate: w.rate * c as f64 / clients as f64,
                seed: scenario.file.seed.wrapping_add(i as u64),
            }
        })
        .collect())
}

/// The default shard count: the rate over [`RATE_PER_SHARD`], rounded up, at least 1 and at
/// most the clients.
pub fn default_shards(scenario: &Scenario) -> usize {
    let w = &scenario.file.workload;
    let n = (w.rate / RATE_PER_SHARD).ceil().max(1.0) as usize;
    n.min(w.clients.max(1) as usize)
}

/// A Kubernetes name made of `text`: lower case, `-` for anything else, at most `max` characters.
pub fn dns_label(text: &str, max: usize) -> String {
    let mut s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s: String = s.trim_matches('-').chars().take(max).collect();
    s.trim_end_matches('-').to_string()
}

/// One manifest file: its name and its documents.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// File name, e.g. `fleet.yaml`.
    pub file: String,
    /// A comment for its head.
    pub comment: String,
    /// The Kubernetes objects.
    pub docs: Vec<Value>,
}

impl Manifest {
    /// The file's text: the comment, then the documents.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for paragraph in self.comment.lines() {
            if paragraph.is_empty() {
                out.push_str("#\n");
            }
            for line in textwrap(paragraph, 96).lines() {
                out.push_str("# ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out + &yaml::stream(&self.docs)
    }
}

/// CPU in millicores, for a resource request: at least 100m.
fn millicores(cores: f64) -> String {
    format!("{}m", ((cores * 1000.0).ceil() as u64).max(100))
}

/// Memory in MiB, for a resource request: at least 64 MiB.
fn mebibytes(bytes: u64) -> String {
    format!("{}Mi", (bytes.div_ceil(1 << 20)).max(64))
}

/// Single-quotes `s` for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The manifests of `scenario` (whose file's text is `scenario_text`), with `opts`: the ConfigMap
/// with the scenario and the start, the fleet (headless Service, Indexed Job), the results volume
/// and the load generators' Indexed Job, the collector's Job, and a kustomization listing them.
pub fn k8s(
    scenario: &Scenario,
    scenario_text: &str,
    opts: &Options,
) -> Result<Vec<Manifest>, DeployError> {
    let name = &opts.name;
    let starts_with_letter = name.starts_with(|c: char| c.is_ascii_lowercase());
    let ends_alphanumeric = name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if name.len() > 40 || dns_label(name, 40) != *name || !starts_with_letter || !ends_alphanumeric
    {
        return Err(DeployError::Invalid(format!(
            "--name {name:?}: must be 1 to 40 lower-case letters, digits and '-', starting with a \
             letter and ending with a letter or digit (a Service's name is an RFC 1035 label; 40 \
             leaves room for the objects' suffixes)"
        )));
    }
    if opts.image.trim().is_empty() || opts.image.chars().any(char::is_whitespace) {
        return Err(DeployError::Invalid(format!(
            "--image {:?}: give an image reference, e.g. registry.example/lblab:0.1",
            opts.image
        )));
    }
    if opts.port == 0 {
        return Err(DeployError::Invalid(
            "--port 0: the backend pods need a fixed port".into(),
        ));
    }
    let n = opts.shards.unwrap_or_else(|| default_shards(scenario));
    let loads = shards(scenario, n)?;
    let backends = &scenario.backends;
    let w = &scenario.file.workload;
    let closed = w.concurrency.is_some() || w.rate == 0.0;
    let (fleet, config, job, results) = (
        format!("{name}-fleet"),
        format!("{name}-scenario"),
        format!("{name}-loadgen"),
        format!("{name}-results"),
    );
    let labels = |part: &str| {
        json!({
            "app.kubernetes.io/name": "lblab",
            "app.kubernetes.io/instance": name,
            "app.kubernetes.io/component": part,
        })
    };
    // Scheduling. The load generators keep off the backends' nodes where they can (a shared
    // kernel would make each other's latency), and the backends spread over the nodes; with a
    // ReadWriteOnce volume every pod that mounts it must share one node.
    let term = |components: &[&str]| {
        json!({
            "labelSelector": {"matchExpressions": [
                {"key": "app.kubernetes.io/instance", "operator": "In", "values": [name]},
                {"key": "app.kubernetes.io/component", "operator": "In", "values": components},
            ]},
            "topologyKey": "kubernetes.io/hostname",
        })
    };
    let apart_from_fleet = json!({"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term(&["fleet"])},
    ]});
    let volume_affinity = match opts.access_mode {
        AccessMode::ReadWriteOnce => json!({
            "podAntiAffinity": apart_from_fleet,
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                term(&["loadgen", "collect"]),
            ]},
        }),
        AccessMode::ReadWriteMany => json!({"podAntiAffinity": apart_from_fleet}),
    };
    let fleet_spread = json!([{
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": labels("fleet")},
    }]);
    let start_env = json!({
        "name": "START_AT",
        "valueFrom": {"configMapKeyRef": {"name": config, "key": "start_at"}},
    });
    let scenario_volume = json!({"name": "scenario", "configMap": {"name": config}});
    let scenario_mount = json!({"name": "scenario", "mountPath": "/etc/lblab", "readOnly": true});

    let configmap = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": config, "labels": labels("scenario")},
        "data": {
            "scenario.toml": scenario_text,
            "start_at": opts.start_at.to_string(),
        },
    });

    // The fleet: pod ordinal k serves backend k.
    let per_backend_rate = if closed {
        0.0
    } else {
        w.rate / backends.len().max(1) as f64
    };
    // One slot per policy, each with a fresh fleet whose fault timeline starts with it, as `lblab
    // real` runs them (a load generator's --start-at is also the time 0 of its arrivals).
    let policies: Vec<&str> = scenario
        .policies
        .iter()
        .filter(|p| p.runs_in_real())
        .map(|p| p.name.as_str())
        .collect();
    if policies.is_empty() {
        return Err(DeployError::Invalid(format!(
            "no policy of {} runs for real (only the simulator's)",
            scenario.file.name
        )));
    }
    let slot = (scenario.workload.end() + scenario.workload.drain()).div_ceil(1_000_000_000)
        + SLOT_MARGIN_S;
    let p = policies.len();
    let fleet_script = format!(
        "set -eu\n\
         # The Indexed Job's completion index is the scenario backend's index.\n\
         ordinal=\"${{JOB_COMPLETION_INDEX:-}}\"\n\
         case \"$ordinal\" in\n\
         \x20 ''|*[!0-9]*) echo \"pod ${{HOSTNAME:-?}}: no completion index (JOB_COMPLETION_INDEX)\" >&2; exit 2 ;;\n\
         esac\n\
         if [ \"$ordinal\" -ge {count} ]; then echo \"pod ${{HOSTNAME:-?}}: the scenario has {count} backends, none with index $ordinal\" >&2; exit 2; fi\n\
         # A fresh fleet for each of the {p} policies' slots of {slot} s from START_AT: listening {FLEET_LEAD_S} s\n\
         # before the slot, its fault timeline's time 0 at the slot's start, gone 25 s before the next.\n\
         k=0\n\
         while [ \"$k\" -lt {p} ]; do\n\
         \x20 t=$((START_AT + k * {slot}))\n\
         \x20 now=\"$(date +%s)\"\n\
         \x20 if [ \"$((t + {slot} - 25))\" -gt \"$now\" ]; then\n\
         \x20   if [ \"$((t - {FLEET_LEAD_S}))\" -gt \"$now\" ]; then sleep \"$((t - {FLEET_LEAD_S} - now))\"; now=\"$(date +%s)\"; fi\n\
         \x20   lblab backend {SCENARIO_PATH} --index \"$ordinal\" --listen 0.0.0.0:{port} --start-at \"$t\" --for \"$((t + {slot} - 25 - now))s\"\n\
         \x20 fi\n\
         \x20 k=$((k + 1))\n\
         done\n\
         echo \"every policy's slot is over\"\n",
        count = backends.len(),
        port = opts.port,
    );
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": fleet, "labels": labels("fleet")},
        "spec": {
            // Headless: the name resolves to every ready pod, which dns:/// re-resolves.
            "clusterIP": "None",
            "selector": labels("fleet"),
            "ports": [{"name": "grpc", "port": opts.port, "targetPort": opts.port, "protocol": "TCP"}],
        },
    });
    // An Indexed Job rather than a StatefulSet: its pods end with the last slot (so the Job
    // completes), and with `subdomain` set to the headless Service each pod is still reachable
    // as `<job>-<index>.<service>`, as a StatefulSet's pod would be.
    let fleet_job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": fleet, "labels": labels("fleet")},
        "spec": {
            "completionMode": "Indexed",
            "ttlSecondsAfterFinished": JOB_TTL_S,
            "completions": backends.len(),
            "parallelism": backends.len(),
            // A backend process that fails is restarted in its pod, up to once per backend in all.
            "backoffLimit": backends.len(),
            "template": {
                "metadata": {"labels": labels("fleet")},
                "spec": {
                    "subdomain": fleet,
                    "restartPolicy": "OnFailure",
                    "topologySpreadConstraints": fleet_spread,
                    "securityContext": pod_security(),
                    "containers": [{
                        "name": "backend",
                        "image": opts.image,
                        "securityContext": container_security(),
                        "command": ["/bin/sh", "-c", fleet_script],
                        "env": [start_env.clone()],
                        "ports": [{"name": "grpc", "containerPort": opts.port, "protocol": "TCP"}],
                        "readinessProbe": {"tcpSocket": {"port": opts.port}, "periodSeconds": 2},
                        "resources": {
                            "requests": {
                                // The server's cost per call is not measured apart; the
                                // client's is used as its estimate, plus the timer thread.
                                "cpu": millicores(0.1 + per_backend_rate * CLIENT_CPU_PER_CALL_US * 1.5e-6),
                                "memory": mebibytes(64 << 20),
                            },
                            "limits": {"memory": mebibytes(256 << 20)},
                        },
                        "volumeMounts": [scenario_mount.clone()],
                    }],
                    "volumes": [scenario_volume.clone()],
                },
            },
        },
    });

    // The load generators.
    let mut cases = String::new();
    for (i, l) in loads.iter().enumerate() {
        let load = if closed {
            String::new()
        } else {
            format!(" rate={}", l.rate)
        };
        cases.push_str(&format!(
            "  {i}) clients={}{load} seed={} ;;\n",
            l.clients, l.seed
        ));
    }
    // The fleet's Service is named from the Job's own name (the `job-name` label Kubernetes
    // gives its pods), so a kustomize namePrefix or nameSuffix that renames both keeps them
    // paired: `<prefix><name>-loadgen<suffix>` finds `<prefix><name>-fleet<suffix>`.
    let port = opts.port;
    let targets_script = if opts.dns {
        format!("targets=\"dns:///$fleet:{port}\"\n")
    } else {
        format!(
            "targets=\"\"\n\
             b=0\n\
             while [ \"$b\" -lt {count} ]; do targets=\"$targets${{targets:+,}}$fleet-$b.$fleet:{port}\"; b=$((b + 1)); done\n",
            count = backends.len()
        )
    };
    let rate_flag = if closed { "" } else { " --rate \"$rate\"" };
    let mut policy_cases = String::new();
    for (k, label) in policies.iter().enumerate() {
        policy_cases.push_str(&format!("    {k}) policy={} ;;\n", sh_quote(label)));
    }
    let loadgen_script = format!(
        "set -eu\n\
         i=\"$JOB_COMPLETION_INDEX\"\n\
         case \"$i\" in\n{cases}  *) echo \"no load-generator shard $i of {n}\" >&2; exit 2 ;;\n\
         esac\n\
         fleet=\"${{JOB_NAME%-loadgen*}}-fleet${{JOB_NAME##*-loadgen}}\"\n\
         {targets_script}\
         # Each policy in its slot of {slot} s from START_AT, against that slot's fresh fleet; every\n\
         # shard starts at the slot's start (its --start-at: the fault timeline's time 0 too).\n\
         rc=0\n\
         k=0\n\
         while [ \"$k\" -lt {p} ]; do\n\
         \x20 case \"$k\" in\n{policy_cases}  esac\n\
         \x20 t=$((START_AT + k * {slot}))\n\
         \x20 now=\"$(date +%s)\"\n\
         \x20 if [ \"$now\" -gt \"$((t + 5))\" ]; then\n\
         \x20   echo \"$policy: its start ($t) has passed; skipped\" >&2; rc=1\n\
         \x20 else\n\
         \x20   if [ \"$((t - 5))\" -gt \"$now\" ]; then sleep \"$((t - 5 - now))\"; fi\n\
         \x20   lblab loadgen {SCENARIO_PATH} --targets \"$targets\" --clients \"$clients\"{rate_flag} \
         --seed \"$seed\" --policy=\"$policy\" --start-at \"$t\" --out \"{RESULTS_PATH}/policy-$k/shard-$i\" || rc=1\n\
         \x20 fi\n\
         \x20 k=$((k + 1))\n\
         done\n\
         exit \"$rc\"\n"
    );
    let max_rate = loads.iter().map(|l| l.rate).fold(0.0, f64::max);
    let max_clients = loads.iter().map(|l| l.clients).max().unwrap_or(1);
    let memory = {
        let mut file = scenario.file.clone();
        file.workload.clients = max_clients;
        file.workload.rate = max_rate;
        let shard = Scenario::validate(file)
            .map_err(|e| DeployError::Invalid(format!("a shard of the scenario: {e}")))?;
        let policies = scenario
            .policies
            .iter()
            .filter(|p| p.runs_in_real())
            .count();
        lblab_model::budget::estimate(&shard, policies.max(1), lblab_model::budget::Mode::Real)
            .bytes
    };
    let mut pvc = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": results, "labels": labels("results")},
        "spec": {
            // Every shard writes its own folder; ReadWriteMany lets them run on any node.
            "accessModes": [opts.access_mode.as_str()],
            "resources": {"requests": {"storage": format!("{}Gi", loads.len().div_ceil(8))}},
        },
    });
    if let Some(class) = &opts.storage_class {
        // A DNS subdomain: lower-case letters, digits, '-' and '.', alphanumeric at both ends.
        let subdomain = class.len() <= 253
            && class
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
            && class.starts_with(|c: char| c.is_ascii_alphanumeric())
            && class.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !subdomain {
            return Err(DeployError::Invalid(format!(
                "--storage-class {class:?}: give a StorageClass's name (`kubectl get storageclass`)"
            )));
        }
        pvc["spec"]["storageClassName"] = json!(class);
    }
    let start_env_collect = start_env.clone();
    let job_spec = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job, "labels": labels("loadgen")},
        "spec": {
            "completionMode": "Indexed",
            "ttlSecondsAfterFinished": JOB_TTL_S,
            "completions": loads.len(),
            "parallelism": loads.len(),
            // One shard that fails ends only its own index; the others run on (a retry would
            // find its slots passed, so none is made).
            "backoffLimitPerIndex": 0,
            "template": {
                "metadata": {"labels": labels("loadgen")},
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": volume_affinity.clone(),
                    "securityContext": pod_security(),
                    "containers": [{
                        "name": "loadgen",
                        "image": opts.image,
                        "securityContext": container_security(),
                        "command": ["/bin/sh", "-c", loadgen_script],
                        "env": [
                            start_env,
                            {"name": "JOB_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['job-name']"}}},
                        ],
                        "resources": {
                            "requests": {
                                "cpu": millicores(
                                    1.25 * max_rate * (CLIENT_CPU_PER_CALL_US + DISPATCHER_CPU_PER_CALL_US) * 1e-6,
                                ),
                                "memory": mebibytes(memory + (64 << 20)),
                            },
                            "limits": {"memory": mebibytes(2 * memory + (128 << 20))},
                        },
                        "volumeMounts": [
                            scenario_mount,
                            {"name": "results", "mountPath": RESULTS_PATH},
                        ],
                    }],
                    "volumes": [
                        scenario_volume,
                        {"name": "results", "persistentVolumeClaim": {"claimName": results}},
                    ],
                },
            },
        },
    });

    // The collector: waits for every shard of every policy (or for the last slot's end plus
    // a margin), merges each policy's shards into one run folder, and stays up an hour so that
    // `kubectl cp` can fetch them.
    let shards_n = loads.len();
    let collect_script = format!(
        "set -eu\n\
         results=\"${{LBLAB_RESULTS:-{RESULTS_PATH}}}\"\n\
         deadline=$((START_AT + {p} * {slot} + {COLLECT_GRACE_S}))\n\
         rc=0\n\
         k=0\n\
         while [ \"$k\" -lt {p} ]; do\n\
         \x20 # A shard is done when its run folder has its summary.\n\
         \x20 while [ \"$(ls \"$results/policy-$k\"/shard-*/summary.json 2>/dev/null | wc -l)\" -lt {shards_n} ] && [ \"$(date +%s)\" -lt \"$deadline\" ]; do sleep 10; done\n\
         \x20 done_n=\"$(ls \"$results/policy-$k\"/shard-*/summary.json 2>/dev/null | wc -l)\"\n\
         \x20 if [ \"$done_n\" -lt {shards_n} ]; then echo \"policy-$k: $done_n of {shards_n} shards finished by the deadline\" >&2; rc=1; fi\n\
         \x20 if [ \"$done_n\" -gt 0 ]; then\n\
         \x20   lblab report --merge \"$results/policy-$k\"/shard-* --out \"$results/merged/policy-$k\" || rc=1\n\
         \x20 fi\n\
         \x20 k=$((k + 1))\n\
         done\n\
         echo \"merged: $results/merged; fetch it within the hour with\"\n\
         echo \"  kubectl cp -n ${{POD_NAMESPACE:-default}} ${{HOSTNAME:-POD}}:$results/merged ./lblab-merged\"\n\
         sleep 3600\n\
         exit \"$rc\"\n"
    );
    let collector = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": format!("{name}-collect"), "labels": labels("collect")},
        "spec": {
            "backoffLimit": 2,
            "ttlSecondsAfterFinished": JOB_TTL_S,
            "template": {
                "metadata": {"labels": labels("collect")},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "affinity": volume_affinity,
                    "securityContext": pod_security(),
                    "containers": [{
                        "name": "collect",
                        "image": opts.image,
                        "securityContext": container_security(),
                        "command": ["/bin/sh", "-c", collect_script],
                        "env": [
                            start_env_collect,
                            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        ],
                        "resources": {
                            "requests": {"cpu": "100m", "memory": mebibytes(memory + (64 << 20))},
                            "limits": {"memory": mebibytes(2 * memory + (128 << 20))},
                        },
                        "volumeMounts": [{"name": "results", "mountPath": RESULTS_PATH}],
                    }],
                    "volumes": [
                        {"name": "results", "persistentVolumeClaim": {"claimName": results}},
                    ],
                },
            },
        },
    });

    let head = format!(
        "lblab deploy k8s: scenario {} ({} backends, {} clients, {}), {} load-generator shards.\n\
         Written by `lblab deploy k8s`; see docs/distributed.md.\n\n{}",
        scenario.file.name,
        backends.len(),
        w.clients,
        if closed {
            "closed loop".to_string()
        } else {
            format!("{} calls/s", w.rate)
        },
        loads.len(),
        NOTES,
    );
    let files = vec![
        Manifest {
            file: "scenario.yaml".into(),
            comment: format!(
                "{head}\n\nThe scenario file and the common start (Unix seconds): time 0 of every \
                 backend's fault timeline and when the load generators start. Set start_at a \
                 little after the pods will be running, e.g. `date -d '+2 min' +%s`."
            ),
            docs: vec![configmap],
        },
        Manifest {
            file: "fleet.yaml".into(),
            comment: format!(
                "{head}\n\nThe fleet: pod ordinal k serves backend k of the scenario on port {}, \
                 behind the headless Service {fleet}; a fresh fleet for each policy's slot of \
                 {slot} s from start_at ({p} policies: {}).",
                opts.port,
                policies.join(", ")
            ),
            docs: vec![service, fleet_job],
        },
        Manifest {
            file: "loadgen.yaml".into(),
            comment: format!(
                "{head}\n\nThe load generators: completion index i runs shard i of the clients, \
                 policy k in slot k ({slot} s each from start_at, against a fresh fleet), and \
                 writes {RESULTS_PATH}/policy-k/shard-i on the volume {results}. Merge each \
                 policy's shards with `lblab report --merge {RESULTS_PATH}/policy-k/shard-* \
                 --out {RESULTS_PATH}/merged/policy-k`."
            ),
            docs: vec![pvc, job_spec],
        },
        Manifest {
            file: "collect.yaml".into(),
            comment: format!(
                "{head}\n\nThe collector: waits until every shard of every policy has written its \
                 summary (or until {COLLECT_GRACE_S} s after the last slot), merges each policy's \
                 shards into {RESULTS_PATH}/merged/policy-k with `lblab report --merge`, prints the \
                 `kubectl cp` line that fetches them and stays up an hour for it."
            ),
            docs: vec![collector],
        },
        Manifest {
            file: "kustomization.yaml".into(),
            comment: "A kustomize base of the manifests above (`kubectl apply -k .`).".into(),
            docs: vec![json!({
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["scenario.yaml", "fleet.yaml", "loadgen.yaml", "collect.yaml"],
            })],
        },
    ];
    for m in &files {
        for doc in &m.docs {
            within_size_limits(&m.file, doc)?;
        }
    }
    Ok(files)
}

/// The most a ConfigMap may hold (Kubernetes refuses a larger one).
pub const CONFIGMAP_MAX_BYTES: usize = 1 << 20;
/// The most any object may weigh as the API server stores it (etcd's default request limit,
/// 1.5 MiB).
pub const OBJECT_MAX_BYTES: usize = 3 << 19;

/// Refuses an object that the API server would refuse for its size, naming it, its size and
/// the limit.
fn within_size_limits(file: &str, doc: &Value) -> Result<(), DeployError> {
    let kind = doc["kind"].as_str().unwrap_or("object");
    let name = doc["metadata"]["name"].as_str().unwrap_or("");
    let (size, limit, what) = if kind == "ConfigMap" {
        let data = doc["data"].as_object().map_or(0, |d| {
            d.iter()
                .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                .sum()
        });
        (
            data,
            CONFIGMAP_MAX_BYTES,
            "a ConfigMap's data; the scenario file is most of it: describe the fleet with groups \
             (`count = N`) rather than one [[fleet]] entry per backend",
        )
    } else {
        let size = serde_json::to_vec(doc).map_or(0, |v| v.len());
        (
            size,
            OBJECT_MAX_BYTES,
            "an object as the API server stores it",
        )
    };
    if size > limit {
        return Err(DeployError::Invalid(format!(
            "{file}: {kind} {name} would be {size} bytes, over Kubernetes' limit of {limit} for \
             {what}"
        )));
    }
    Ok(())
}

/// `text` broken into lines of at most `width` characters.
fn textwrap(text: &str, width: usize) -> String {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(clients: u32, rate: f64) -> Scenario {
        Scenario::parse(&format!(
            r#"
            name = "One_slow"
            [workload]
            clients = {clients}
            rate = {rate}
            duration = "10s"
            [[fleet]]
            name = "main"
            count = 3
            service_time = {{ dist = "exponential", mean = "2ms" }}
            [[policies]]
            name = "round_robin"
            config = '{{"loadBalancingConfig":[{{"round_robin":{{}}}}]}}'
            "#
        ))
        .unwrap()
    }

    #[test]
    fn clients_and_rate_split_evenly() {
        let s = scenario(5, 5000.0);
        assert_eq!(default_shards(&s), 3);
        let l = shards(&s, 3).unwrap();
        assert_eq!(
            l.iter().map(|l| l.clients).collect::<Vec<_>>(),
            vec![2, 2, 1]
        );
        assert_eq!(l.iter().map(|l| l.rate).sum::<f64>(), 5000.0);
        assert_eq!(l[2].rate, 1000.0);
        assert_eq!(l[1].seed, 2);
        assert!(shards(&s, 6).is_err());
        assert!(shards(&s, 0).is_err());
        assert_eq!(default_shards(&scenario(1, 5000.0)), 1);
    }

    #[test]
    fn manifests_name_every_backend_and_shard() {
        let s = scenario(4, 4000.0);
        let opts = Options {
            image: "lblab:test".into(),
            name: dns_label("lblab-One_slow", 40),
            port: DEFAULT_PORT,
            shards: None,
            start_at: 1_800_000_000,
            dns: true,
            storage_class: None,
            access_mode: AccessMode::ReadWriteMany,
        };
        assert_eq!(opts.name, "lblab-one-slow");
        let m = k8s(&s, "name = \"One_slow\"\n", &opts).unwrap();
        let fleet = m.iter().find(|m| m.file == "fleet.yaml").unwrap().text();
        for b in ["--index", "completions: 3", "subdomain", "clusterIP"] {
            assert!(fleet.contains(b), "{b} in {fleet}");
        }
        let job = m.iter().find(|m| m.file == "loadgen.yaml").unwrap().text();
        for s in [
            "completionMode: \"Indexed\"",
            "1) clients=2 rate=2000 seed=2",
            "metadata.labels['job-name']",
        ] {
            assert!(job.contains(s), "{s} in {job}");
        }
        for bad in ["Bad Name", "1abc", "abc-", "", "-abc"] {
            let bad = Options {
                name: bad.into(),
                ..opts.clone()
            };
            let e = k8s(&s, "", &bad).unwrap_err().to_string();
            assert!(e.contains("--name"), "{e}");
        }
    }

    /// A pod's script run under `/bin/sh` with `lblab` and `sleep` replaced by stand-ins that
    /// record their arguments: what the pod would run.
    fn run_pod_script(script: &str, env: &[(&str, String)]) -> Vec<String> {
        let (ok, calls) = try_pod_script(script, env);
        assert!(ok, "{script}");
        calls
    }

    /// [`run_pod_script`] that may fail: whether it succeeded, and the calls.
    fn try_pod_script(script: &str, env: &[(&str, String)]) -> (bool, Vec<String>) {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "lblab-deploy-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("calls");
        let _ = std::fs::remove_file(&log);
        for tool in ["lblab", "sleep"] {
            let path = dir.join(tool);
            std::fs::write(
                &path,
                format!("#!/bin/sh\necho {tool} \"$@\" >> '{}'\n", log.display()),
            )
            .unwrap();
            let mut perms = std::fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
            std::fs::set_permissions(&path, perms).unwrap();
        }
        let path = format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let status = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .env("PATH", path)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .status()
            .unwrap();
        let calls = std::fs::read_to_string(&log).unwrap_or_default();
        std::fs::remove_dir_all(&dir).unwrap();
        (
            status.success(),
            calls.lines().map(str::to_string).collect(),
        )
    }

    #[test]
    fn the_collector_merges_each_policys_shards_and_says_what_is_missing() {
        let s = scenario(2, 1000.0);
        let opts = Options {
            image: "lblab:test".into(),
            name: "lab".into(),
            port: DEFAULT_PORT,
            shards: Some(2),
            start_at: 0,
            dns: true,
            storage_class: None,
            access_mode: AccessMode::ReadWriteMany,
        };
        let m = k8s(&s, "", &opts).unwrap();
        let collect = script(&m, "collect.yaml", "Job");
        let results = std::env::temp_dir().join(format!("lblab-collect-{}", std::process::id()));
        for shard in ["shard-0", "shard-1"] {
            let dir = results.join("policy-0").join(shard);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("summary.json"), "{}").unwrap();
        }
        let env = [
            ("LBLAB_RESULTS", results.display().to_string()),
            ("START_AT", "1000".to_string()),
        ];
        let calls = run_pod_script(&collect, &env);
        let r = results.display();
        assert_eq!(
            calls,
            [
                format!(
                    "lblab report --merge {r}/policy-0/shard-0 {r}/policy-0/shard-1 --out \
                     {r}/merged/policy-0"
                ),
                "sleep 3600".to_string()
            ]
        );
        // A shard that never finished: the others are merged, and the Job fails.
        std::fs::remove_file(results.join("policy-0/shard-1/summary.json")).unwrap();
        let (ok, calls) = try_pod_script(&collect, &env);
        assert!(!ok);
        assert!(calls[0].starts_with("lblab report --merge"), "{calls:?}");
        std::fs::remove_dir_all(&results).unwrap();
    }

    fn script(m: &[Manifest], file: &str, kind: &str) -> String {
        let doc = m
            .iter()
            .find(|m| m.file == file)
            .unwrap()
            .docs
            .iter()
            .find(|d| d["kind"] == kind)
            .unwrap();
        doc["spec"]["template"]["spec"]["containers"][0]["command"][2]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_renamed_deployment_and_a_label_like_a_flag_still_run() {
        let mut s = scenario(2, 1000.0);
        s.policies[0].name = "-rr".into();
        let opts = Options {
            image: "lblab:test".into(),
            name: "lab".into(),
            port: 7000,
            shards: Some(1),
            start_at: 0,
            dns: false,
            storage_class: None,
            access_mode: AccessMode::ReadWriteMany,
        };
        let m = k8s(&s, "", &opts).unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        // A kustomize namePrefix and nameSuffix rename the Job and the Service alike.
        let calls = run_pod_script(
            &script(&m, "loadgen.yaml", "Job"),
            &[
                ("JOB_NAME", "team-a-lab-loadgen-v2".into()),
                ("JOB_COMPLETION_INDEX", "0".into()),
                ("START_AT", (now + 5).to_string()),
            ],
        );
        let call = calls
            .iter()
            .find(|c| c.starts_with("lblab loadgen"))
            .unwrap();
        assert!(
            call.contains(
                "--targets team-a-lab-fleet-v2-0.team-a-lab-fleet-v2:7000,\
                 team-a-lab-fleet-v2-1.team-a-lab-fleet-v2:7000,\
                 team-a-lab-fleet-v2-2.team-a-lab-fleet-v2:7000 "
            ),
            "{call}"
        );
        assert!(call.contains("--policy=-rr "), "{call}");
        // The fleet pod serves the backend of its completion index, then ends.
        let calls = run_pod_script(
            &script(&m, "fleet.yaml", "Job"),
            &[
                ("JOB_COMPLETION_INDEX", "2".into()),
                ("START_AT", (now + 20).to_string()),
            ],
        );
        let call = calls
            .iter()
            .find(|c| c.starts_with("lblab backend"))
            .unwrap();
        assert!(call.contains("--index 2 "), "{call}");
        // An ordinal the scenario has no backend for stops the pod with a message.
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script(&m, "fleet.yaml", "Job"))
            .env("JOB_COMPLETION_INDEX", "3")
            .env("START_AT", "0")
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("none with index 3"));
    }

    #[test]
    fn pods_meet_the_restricted_profile_and_the_volume_takes_its_class_and_mode() {
        let s = scenario(2, 1000.0);
        let opts = Options {
            image: "lblab:test".into(),
            name: "lab".into(),
            port: DEFAULT_PORT,
            shards: None,
            start_at: 0,
            dns: true,
            storage_class: Some("standard-rwo".into()),
            access_mode: AccessMode::ReadWriteOnce,
        };
        let m = k8s(&s, "", &opts).unwrap();
        let docs: Vec<&Value> = m.iter().flat_map(|m| m.docs.iter()).collect();
        let jobs: Vec<&&Value> = docs.iter().filter(|d| d["kind"] == "Job").collect();
        assert_eq!(jobs.len(), 3);
        for job in jobs {
            let pod = &job["spec"]["template"]["spec"];
            assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
            assert_eq!(pod["securityContext"]["fsGroup"], IMAGE_UID);
            assert_eq!(
                pod["securityContext"]["seccompProfile"]["type"],
                "RuntimeDefault"
            );
            let c = &pod["containers"][0]["securityContext"];
            assert_eq!(c["allowPrivilegeEscalation"], false);
            assert_eq!(c["capabilities"]["drop"][0], "ALL");
            assert_eq!(job["spec"]["ttlSecondsAfterFinished"], JOB_TTL_S);
        }
        let pvc = docs
            .iter()
            .find(|d| d["kind"] == "PersistentVolumeClaim")
            .unwrap();
        assert_eq!(pvc["spec"]["storageClassName"], "standard-rwo");
        assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteOnce");
        for bad in ["", "Fast SSD", "-x", "x."] {
            let o = Options {
                storage_class: Some(bad.into()),
                ..opts.clone()
            };
            let e = k8s(&s, "", &o).unwrap_err().to_string();
            assert!(e.contains("--storage-class"), "{e}");
        }
    }

    #[test]
    fn a_start_too_close_is_warned_of() {
        assert!(start_warning(1_000 + START_LEAD_S, 1_000).is_none());
        let w = start_warning(1_030, 1_000).unwrap();
        assert!(w.contains("in 30 s"), "{w}");
        assert!(start_warning(900, 1_000).unwrap().contains("100 s ago"));
    }

    #[test]
    fn load_generators_keep_off_the_fleet_and_share_a_once_volume() {
        let s = scenario(2, 1000.0);
        let mut opts = Options {
            image: "lblab:test".into(),
            name: "lab".into(),
            port: DEFAULT_PORT,
            shards: None,
            start_at: 0,
            dns: true,
            storage_class: None,
            access_mode: AccessMode::ReadWriteMany,
        };
        let pod = |m: &[Manifest], file: &str| {
            let doc = m.iter().find(|m| m.file == file).unwrap().docs.iter();
            doc.clone().find(|d| d["kind"] == "Job").unwrap()["spec"]["template"]["spec"].clone()
        };
        let m = k8s(&s, "", &opts).unwrap();
        let lg = pod(&m, "loadgen.yaml");
        let job = m
            .iter()
            .find(|m| m.file == "loadgen.yaml")
            .unwrap()
            .docs
            .iter();
        let job = job.clone().find(|d| d["kind"] == "Job").unwrap();
        assert_eq!(job["spec"]["backoffLimitPerIndex"], 0);
        assert!(job["spec"]["backoffLimit"].is_null());
        let anti = &lg["affinity"]["podAntiAffinity"]
            ["preferredDuringSchedulingIgnoredDuringExecution"][0];
        assert_eq!(
            anti["podAffinityTerm"]["labelSelector"]["matchExpressions"][1]["values"][0],
            "fleet"
        );
        assert!(lg["affinity"]["podAffinity"].is_null());
        assert_eq!(
            pod(&m, "fleet.yaml")["topologySpreadConstraints"][0]["maxSkew"],
            1
        );
        opts.access_mode = AccessMode::ReadWriteOnce;
        let m = k8s(&s, "", &opts).unwrap();
        for file in ["loadgen.yaml", "collect.yaml"] {
            let together = &pod(&m, file)["affinity"]["podAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"][0];
            assert_eq!(together["topologyKey"], "kubernetes.io/hostname");
            assert_eq!(
                together["labelSelector"]["matchExpressions"][1]["values"],
                json!(["loadgen", "collect"])
            );
        }
    }

    #[test]
    fn objects_over_kubernetes_size_limits_are_refused() {
        let s = scenario(1, 100.0);
        let opts = Options {
            image: "lblab:test".into(),
            name: "lab".into(),
            port: DEFAULT_PORT,
            shards: None,
            start_at: 0,
            dns: true,
            storage_class: None,
            access_mode: AccessMode::ReadWriteMany,
        };
        let big = "#".repeat(CONFIGMAP_MAX_BYTES);
        let e = k8s(&s, &big, &opts).unwrap_err().to_string();
        assert!(e.contains("scenario.yaml: ConfigMap lab-scenario"), "{e}");
        assert!(e.contains("1048576"), "{e}");
        assert!(k8s(&s, "# a small scenario", &opts).is_ok());
    }
}
