//! The Kubernetes objects of a deployment ([`k8s`]): the ConfigMap, the fleet's headless Service
//! and Indexed Job, the results volume, the load generators' Indexed Job, the collector's Job
//! and the kustomization, with the pods' security, scheduling and resources.

use lblab_model::Scenario;
use serde_json::{json, Value};

use crate::{
    default_shards, dns_label, shards, AccessMode, DeployError, Manifest, Options,
    CLIENT_CPU_PER_CALL_US, COLLECT_GRACE_S, DISPATCHER_CPU_PER_CALL_US, FLEET_LEAD_S, IMAGE_UID,
    JOB_TTL_S, NOTES, RESULTS_PATH, SCENARIO_PATH, SLOT_MARGIN_S,
};

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
        return Err(DeployError::Name(name.clone()));
    }
    if opts.image.trim().is_empty() || opts.image.chars().any(char::is_whitespace) {
        return Err(DeployError::Image(opts.image.clone()));
    }
    if opts.port == 0 {
        return Err(DeployError::Port);
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
            return Err(DeployError::StorageClass(class.clone()));
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
