//! The Kubernetes objects of a deployment ([`k8s`]), one function per object: the ConfigMap
//! ([`config_map`]), the fleet's headless Service ([`fleet_service`]) and Indexed Job
//! ([`fleet_job`]), the results volume ([`results_claim`]), the load generators' Indexed Job
//! ([`loadgen_job`]), the collector's Job ([`collect_job`]) and the kustomization
//! ([`kustomization`]), each from the checked [`Deployment`] they share; the pods' scripts are
//! [`crate::scripts`]. With a start barrier ([`crate::barrier`]), the starter's Service and Job
//! ([`starter_service`], [`starter_job`]) too, and every other pod checks in with it
//! ([`Deployment::joins`]). What every deployment shares, a design search's too
//! ([`crate::sweep`]), is in [`crate::base`].

use lblab_model::Scenario;
use serde_json::{json, Value};

use crate::barrier::{BARRIER_PORT, BARRIER_WAIT_S, START_MARGIN_S};
use crate::base::{
    collector_job, config_map, container_security, kustomization, mebibytes, millicores,
    pod_security, results_claim, scenario_mount, within_size_limits, Base,
};
use crate::scripts;
use crate::{
    default_shards, shards, AccessMode, DeployError, Manifest, Options, ShardLoad,
    CLIENT_CPU_PER_CALL_US, COLLECT_GRACE_S, DISPATCHER_CPU_PER_CALL_US, FLEET_LEAD_S, JOB_TTL_S,
    NOTES, RESULTS_PATH, SCENARIO_PATH, SLOT_MARGIN_S,
};

/// What every object of one run's deployment is made from, checked before any is: its [`Base`]
/// (which it dereferences to), the shards of the clients, the policies (one slot each) and the
/// fleet's and load generators' names.
struct Deployment<'a> {
    base: Base<'a>,
    scenario: &'a Scenario,
    /// The load generators' shards, by completion index.
    loads: Vec<ShardLoad>,
    /// A closed loop (no rate).
    closed: bool,
    /// The policies that run for real, one slot each in this order.
    policies: Vec<&'a str>,
    /// Seconds per policy's slot.
    slot: u64,
    /// The highest rate of a shard, calls/s.
    max_rate: f64,
    /// The memory estimate of the largest shard's run, bytes.
    memory: u64,
    /// The fleet's Service and Job.
    fleet: String,
    /// The load generators' Job.
    job: String,
    /// The start barrier's Service and Job.
    starter: String,
}

/// Where a pod that checks in with the start barrier keeps the start it was given: on an
/// `emptyDir` volume, which outlives a restarted container.
const START_DIR: &str = "/run/lblab";
/// The file in [`START_DIR`].
const START_FILE: &str = "/run/lblab/start_at";

impl<'a> std::ops::Deref for Deployment<'a> {
    type Target = Base<'a>;

    fn deref(&self) -> &Base<'a> {
        &self.base
    }
}

impl<'a> Deployment<'a> {
    /// Checks `opts` against `scenario` (the name, the image, the port, the shards, a policy that
    /// runs for real, the largest shard as a scenario) and plans the slots.
    fn new(scenario: &'a Scenario, opts: &'a Options) -> Result<Deployment<'a>, DeployError> {
        let n = opts.shards.unwrap_or_else(|| default_shards(scenario));
        let base = Base::new(opts, n)?;
        let name = &opts.name;
        if opts.port == 0 {
            return Err(DeployError::Port);
        }
        let loads = shards(scenario, n)?;
        if opts.one_loadgen_per_node && base.access_mode == AccessMode::ReadWriteOnce && n > 1 {
            return Err(DeployError::OnePerNodeOnOneNode { shards: n });
        }
        let w = &scenario.file.workload;
        let closed = w.concurrency.is_some() || w.rate == 0.0;
        // One slot per policy, each with a fresh fleet whose fault timeline starts with it, as
        // `lblab real` runs them (a load generator's start is also the time 0 of its arrivals).
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
        let max_rate = loads.iter().map(|l| l.rate).fold(0.0, f64::max);
        let max_clients = loads.iter().map(|l| l.clients).max().unwrap_or(1);
        let memory = {
            let mut file = scenario.file.clone();
            file.workload.clients = max_clients;
            file.workload.rate = max_rate;
            let shard = Scenario::validate(file)
                .map_err(|e| DeployError::Invalid(format!("a shard of the scenario: {e}")))?;
            lblab_model::budget::estimate(
                &shard,
                policies.len().max(1),
                lblab_model::budget::Mode::Real,
            )
            .bytes
        };
        Ok(Deployment {
            base,
            scenario,
            loads,
            closed,
            policies,
            slot,
            max_rate,
            memory,
            fleet: format!("{name}-fleet"),
            job: format!("{name}-loadgen"),
            starter: format!("{name}-start"),
        })
    }

    /// Where the load generators go: as [`Deployment::volume_affinity`] says, and each on a
    /// node of its own if asked.
    fn loadgen_affinity(&self) -> Option<Value> {
        let mut affinity = self.volume_affinity();
        if self.opts.one_loadgen_per_node {
            let apart = json!({
                "labelSelector": {"matchExpressions": [
                    {"key": "app.kubernetes.io/instance", "operator": "In", "values": [self.opts.name]},
                    {"key": "app.kubernetes.io/component", "operator": "In", "values": ["loadgen"]},
                ]},
                "topologyKey": "kubernetes.io/hostname",
            });
            let a = affinity.get_or_insert_with(|| json!({}));
            a["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!([apart]);
        }
        affinity
    }

    /// The check-in with the start barrier of a pod of the Job whose name ends in `job_suffix`,
    /// as `id` (for `sh`); nothing without a barrier.
    fn join_script(&self, job_suffix: &str, id: &str) -> String {
        if !self.opts.barrier {
            return String::new();
        }
        scripts::join(&scripts::Join {
            job_suffix,
            id,
            port: BARRIER_PORT,
            wait: BARRIER_WAIT_S,
            start_file: START_FILE,
        })
    }

    /// With a start barrier, what the pod `spec` of a Job whose pods check in needs: the Job's
    /// name (`JOB_NAME`, from the label Kubernetes gives its pods, unless the container has it)
    /// and the `emptyDir` that keeps the start.
    fn joins(&self, spec: &mut Value) {
        if !self.opts.barrier {
            return;
        }
        let container = &mut spec["containers"][0];
        let mut env = container["env"]
            .as_array_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        if !env.iter().any(|e| e["name"] == "JOB_NAME") {
            env.push(job_name_env());
        }
        container["env"] = Value::Array(env);
        if let Some(mounts) = container["volumeMounts"].as_array_mut() {
            mounts.push(json!({"name": "start", "mountPath": START_DIR}));
        }
        if let Some(volumes) = spec["volumes"].as_array_mut() {
            volumes.push(json!({"name": "start", "emptyDir": {"sizeLimit": "1Mi"}}));
        }
    }

    /// Where the load generators and the collector go: off the backends' nodes where they can,
    /// and with a ReadWriteOnce volume on one node ([`Base::volume_affinity`]).
    fn volume_affinity(&self) -> Option<Value> {
        self.base.volume_affinity(true, &["loadgen", "collect"])
    }

    /// The common start, from the ConfigMap.
    fn start_env(&self) -> Value {
        json!({
            "name": "START_AT",
            "valueFrom": {"configMapKeyRef": {"name": self.config, "key": "start_at"}},
        })
    }
}

/// The name of the pod's Job, from the label Kubernetes gives its pods.
fn job_name_env() -> Value {
    json!({"name": "JOB_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['job-name']"}}})
}

/// The fleet's headless Service: its name resolves to every ready backend pod.
fn fleet_service(d: &Deployment<'_>) -> Value {
    let port = d.opts.port;
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": d.fleet, "labels": d.labels("fleet")},
        "spec": {
            // Headless: the name resolves to every ready pod, which dns:/// re-resolves.
            "clusterIP": "None",
            "selector": d.labels("fleet"),
            "ports": [{"name": "grpc", "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    })
}

/// The fleet's Indexed Job: pod ordinal k serves backend k, a fresh fleet in each policy's
/// slot. An Indexed Job rather than a StatefulSet: its pods end with the last slot (so the Job
/// completes), and with `subdomain` set to the headless Service each pod is still reachable as
/// `<job>-<index>.<service>`, as a StatefulSet's pod would be.
fn fleet_job(d: &Deployment<'_>) -> Value {
    let backends = d.scenario.backends.len();
    let port = d.opts.port;
    let w = &d.scenario.file.workload;
    let per_backend_rate = if d.closed {
        0.0
    } else {
        w.rate / backends.max(1) as f64
    };
    // Its connections and, at most, every call in flight (measured: far less).
    let memory = lblab_model::budget::backend_process(d.scenario).bytes;
    let script = scripts::fleet(&scripts::Fleet {
        backends,
        policies: d.policies.len(),
        slot: d.slot,
        lead: FLEET_LEAD_S,
        scenario: SCENARIO_PATH,
        port,
        join: &d.join_script("-fleet", "fleet-$ordinal"),
    });
    // The backends spread over the nodes.
    let spread = json!([{
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": d.labels("fleet")},
    }]);
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": d.fleet, "labels": d.labels("fleet")},
        "spec": {
            "completionMode": "Indexed",
            "ttlSecondsAfterFinished": JOB_TTL_S,
            "completions": backends,
            "parallelism": backends,
            // A backend process that fails is restarted in its pod, up to once per backend in all.
            "backoffLimit": backends,
            "template": {
                "metadata": {"labels": d.labels("fleet")},
                "spec": {
                    "subdomain": d.fleet,
                    "restartPolicy": "OnFailure",
                    "topologySpreadConstraints": spread,
                    "securityContext": pod_security(),
                    "containers": [{
                        "name": "backend",
                        "image": d.opts.image,
                        "securityContext": container_security(),
                        "command": ["/bin/sh", "-c", script],
                        "env": [d.start_env()],
                        "ports": [{"name": "grpc", "containerPort": port, "protocol": "TCP"}],
                        "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 2},
                        "resources": {
                            "requests": {
                                // The server's cost per call is not measured apart; the
                                // client's is used as its estimate, plus the timer thread.
                                "cpu": millicores(0.1 + per_backend_rate * CLIENT_CPU_PER_CALL_US * 1.5e-6),
                                "memory": mebibytes(memory + (64 << 20)),
                            },
                            "limits": {"memory": mebibytes(2 * memory + (128 << 20))},
                        },
                        "volumeMounts": [scenario_mount()],
                    }],
                    "volumes": [d.scenario_volume()],
                },
            },
        },
    });
    d.joins(&mut job["spec"]["template"]["spec"]);
    job
}

/// The load generators' Indexed Job: completion index i runs shard i of the clients, each
/// policy in its slot. The fleet's Service is named from the Job's own name (the `job-name`
/// label Kubernetes gives its pods), so a kustomize namePrefix or nameSuffix that renames both
/// keeps them paired: `<prefix><name>-loadgen<suffix>` finds `<prefix><name>-fleet<suffix>`.
fn loadgen_job(d: &Deployment<'_>) -> Value {
    let script = scripts::loadgen(&scripts::Loadgen {
        loads: &d.loads,
        closed: d.closed,
        policies: &d.policies,
        dns: d.opts.dns,
        backends: d.scenario.backends.len(),
        port: d.opts.port,
        slot: d.slot,
        scenario: SCENARIO_PATH,
        results: RESULTS_PATH,
        join: &d.join_script("-loadgen", "loadgen-$i"),
    });
    let memory = d.memory;
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": d.job, "labels": d.labels("loadgen")},
        "spec": {
            "completionMode": "Indexed",
            "ttlSecondsAfterFinished": JOB_TTL_S,
            "completions": d.loads.len(),
            "parallelism": d.loads.len(),
            // One shard that fails ends only its own index; the others run on (a retry would
            // find its slots passed, so none is made).
            "backoffLimitPerIndex": 0,
            "template": {
                "metadata": {"labels": d.labels("loadgen")},
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": d.loadgen_affinity(),
                    "securityContext": pod_security(),
                    "containers": [{
                        "name": "loadgen",
                        "image": d.opts.image,
                        "securityContext": container_security(),
                        "command": ["/bin/sh", "-c", script],
                        "env": [d.start_env(), job_name_env()],
                        "resources": {
                            "requests": {
                                "cpu": millicores(
                                    1.25 * d.max_rate * (CLIENT_CPU_PER_CALL_US + DISPATCHER_CPU_PER_CALL_US) * 1e-6,
                                ),
                                "memory": mebibytes(memory + (64 << 20)),
                            },
                            "limits": {"memory": mebibytes(2 * memory + (128 << 20))},
                        },
                        "volumeMounts": [
                            scenario_mount(),
                            {"name": "results", "mountPath": RESULTS_PATH},
                        ],
                    }],
                    "volumes": [d.scenario_volume(), d.results_volume()],
                },
            },
        },
    });
    d.joins(&mut job["spec"]["template"]["spec"]);
    job
}

/// The collector's Job: waits for every shard of every policy (or for the last slot's end plus
/// a margin), merges each policy's shards into one run folder, and stays up an hour so that
/// `kubectl cp` can fetch them.
fn collect_job(d: &Deployment<'_>) -> Value {
    let script = scripts::collect(&scripts::Collect {
        policies: d.policies.len(),
        slot: d.slot,
        grace: COLLECT_GRACE_S,
        shards: d.loads.len(),
        results: RESULTS_PATH,
        join: &d.join_script("-collect", "collect-0"),
    });
    // Each policy's merge, one at a time: its seconds' rows and histograms, and every shard's
    // time series read first.
    let w = &d.scenario.workload;
    let seconds = (w.end() + w.drain()).div_ceil(1_000_000_000);
    let merge = lblab_model::budget::merged(
        1,
        seconds,
        d.scenario.backends.len(),
        d.loads.len().saturating_mul(seconds as usize),
    );
    let mut job = collector_job(
        &d.base,
        script,
        vec![d.start_env()],
        merge.bytes,
        d.volume_affinity(),
    );
    d.joins(&mut job["spec"]["template"]["spec"]);
    job
}

/// The start barrier's Service: the name the pods check in at.
fn starter_service(d: &Deployment<'_>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": d.starter, "labels": d.labels("start")},
        "spec": {
            "selector": d.labels("start"),
            "ports": [{"name": "barrier", "port": BARRIER_PORT, "targetPort": BARRIER_PORT, "protocol": "TCP"}],
        },
    })
}

/// The start barrier's Job: one pod running `lblab barrier serve`, which waits for every backend
/// pod, load-generator shard and the collector to check in, releases them with one start and
/// stays until the last slot's end (telling a pod that checks in later that it is late).
fn starter_job(d: &Deployment<'_>) -> Value {
    let pods = d.scenario.backends.len() + d.loads.len() + 1;
    let linger = d.policies.len() as u64 * d.slot;
    let command = [
        "lblab".to_string(),
        "barrier".into(),
        "serve".into(),
        "--listen".into(),
        format!("0.0.0.0:{BARRIER_PORT}"),
        "--expect".into(),
        format!("fleet={}", d.scenario.backends.len()),
        "--expect".into(),
        format!("loadgen={}", d.loads.len()),
        "--expect".into(),
        "collect=1".into(),
        // Kubernetes puts the container's variable in: the ConfigMap's start.
        "--start-at".into(),
        "$(START_AT)".into(),
        "--margin".into(),
        format!("{START_MARGIN_S}s"),
        "--wait".into(),
        format!("{BARRIER_WAIT_S}s"),
        "--linger".into(),
        format!("{linger}s"),
    ];
    // A thread and its socket per pod waiting, beside the process itself.
    let memory = (8u64 << 20) + pods as u64 * (256 << 10);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": d.starter, "labels": d.labels("start")},
        "spec": {
            "ttlSecondsAfterFinished": JOB_TTL_S,
            // A starter that failed has told the pods why; another would only wait again.
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": d.labels("start")},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": pod_security(),
                    "containers": [{
                        "name": "start",
                        "image": d.opts.image,
                        "securityContext": container_security(),
                        "command": command,
                        "env": [d.start_env()],
                        "ports": [{"name": "barrier", "containerPort": BARRIER_PORT, "protocol": "TCP"}],
                        "readinessProbe": {"tcpSocket": {"port": BARRIER_PORT}, "periodSeconds": 2},
                        "resources": {
                            "requests": {"cpu": millicores(0.0), "memory": mebibytes(memory + (64 << 20))},
                            "limits": {"memory": mebibytes(2 * memory + (128 << 20))},
                        },
                    }],
                },
            },
        },
    })
}

/// The manifests of `scenario` (whose file's text is `scenario_text`), with `opts`: the ConfigMap
/// with the scenario and the start, the fleet (headless Service, Indexed Job), the results volume
/// and the load generators' Indexed Job, the collector's Job, and a kustomization listing them.
pub fn k8s(
    scenario: &Scenario,
    scenario_text: &str,
    opts: &Options,
) -> Result<Vec<Manifest>, DeployError> {
    let d = Deployment::new(scenario, opts)?;
    let claim = results_claim(&d, d.loads.len().div_ceil(8))?;
    let w = &scenario.file.workload;
    let head = format!(
        "lblab deploy k8s: scenario {} ({} backends, {} clients, {}), {} load-generator shards.\n\
         Written by `lblab deploy k8s`; see docs/distributed.md.\n\n{}",
        scenario.file.name,
        scenario.backends.len(),
        w.clients,
        if d.closed {
            "closed loop".to_string()
        } else {
            format!("{} calls/s", w.rate)
        },
        d.loads.len(),
        NOTES,
    );
    let (fleet, results, slot, p) = (&d.fleet, &d.results, d.slot, d.policies.len());
    let mut files = vec![
        Manifest {
            file: "scenario.yaml".into(),
            comment: if opts.barrier {
                format!(
                    "{head}\n\nThe scenario file and the earliest common start (Unix seconds): \
                     the start barrier (start.yaml) releases the pods with start_at as their \
                     start, time 0 of every backend's fault timeline and when the load \
                     generators start, or with a later one if a pod checks in less than \
                     {START_MARGIN_S} s before it. Set start_at a little after the pods will be \
                     running, e.g. `date -d '+2 min' +%s`."
                )
            } else {
                format!(
                    "{head}\n\nThe scenario file and the common start (Unix seconds): time 0 of \
                     every backend's fault timeline and when the load generators start. Set \
                     start_at a little after the pods will be running, e.g. `date -d '+2 min' \
                     +%s`."
                )
            },
            docs: vec![config_map(&d, scenario_text, Some(opts.start_at))],
        },
        Manifest {
            file: "fleet.yaml".into(),
            comment: format!(
                "{head}\n\nThe fleet: pod ordinal k serves backend k of the scenario on port {}, \
                 behind the headless Service {fleet}; a fresh fleet for each policy's slot of \
                 {slot} s from start_at ({p} policies: {}).",
                opts.port,
                d.policies.join(", ")
            ),
            docs: vec![fleet_service(&d), fleet_job(&d)],
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
            docs: vec![claim, loadgen_job(&d)],
        },
        Manifest {
            file: "collect.yaml".into(),
            comment: format!(
                "{head}\n\nThe collector: waits until every shard of every policy has written its \
                 summary (or until {COLLECT_GRACE_S} s after the last slot), merges each policy's \
                 shards into {RESULTS_PATH}/merged/policy-k with `lblab report --merge`, prints the \
                 `kubectl cp` line that fetches them and stays up an hour for it."
            ),
            docs: vec![collect_job(&d)],
        },
    ];
    if opts.barrier {
        files.insert(
            1,
            Manifest {
                file: "start.yaml".into(),
                comment: format!(
                    "{head}\n\nThe start barrier: every backend pod, load-generator shard and the \
                     collector checks in with {starter}:{BARRIER_PORT} once running, and all are \
                     released at once with one start, start_at or {START_MARGIN_S} s after the \
                     last check-in if that is later, so that a pod that pulled its image slowly \
                     does not start its slots late. If some pod has not checked in \
                     {BARRIER_WAIT_S} s after start_at, the starter tells every waiting pod which \
                     are missing and fails; a pod that checks in after the release is told it is \
                     late. No Kubernetes API is asked (no RBAC).",
                    starter = d.starter,
                ),
                docs: vec![starter_service(&d), starter_job(&d)],
            },
        );
    }
    let listed: Vec<&str> = files.iter().map(|m| m.file.as_str()).collect();
    let kustomize = Manifest {
        file: "kustomization.yaml".into(),
        comment: "A kustomize base of the manifests above (`kubectl apply -k .`).".into(),
        docs: vec![kustomization(&listed)],
    };
    files.push(kustomize);
    for m in &files {
        for doc in &m.docs {
            within_size_limits(&m.file, doc)?;
        }
    }
    Ok(files)
}
