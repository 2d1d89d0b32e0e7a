//! A simulated design search on a cluster ([`k8s_sweep`]): `lblab sweep … --shard i/N` as an
//! Indexed Job of `N` completions over the scenario's ConfigMap and the results volume, and a
//! collector that merges the shards with `lblab sweep --merge` into one sweep folder. The objects
//! it shares with a run's deployment are [`crate::k8s`]'s.

use lblab_model::Scenario;
use serde_json::{json, Value};

use crate::base::{
    collector_job, config_map, container_security, kustomization, mebibytes, millicores,
    pod_security, results_claim, scenario_mount, within_size_limits, without_nulls, Base,
};
use crate::scripts;
use crate::{DeployError, Manifest, Options, JOB_TTL_S, RESULTS_PATH, SCENARIO_PATH};

/// Retries of a sweep shard that failed (evicted, its node lost): a shard's result does not
/// depend on when or where it runs, so a retry gives the same.
pub const SWEEP_BACKOFF_PER_INDEX: u32 = 2;

/// A design search to run on the cluster: `lblab sweep` over the scenario, split into shards.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// `lblab sweep`'s arguments after the scenario (what it varies, seeds, policies, threads),
    /// checked by the caller as `lblab sweep` checks them; each pod adds its shard and results
    /// folder.
    pub args: Vec<String>,
    /// Shards: completions of the Indexed Job, at least 1 and at most the points.
    pub shards: usize,
    /// Points of the whole sweep.
    pub points: usize,
    /// Simulations of the whole sweep.
    pub simulations: usize,
    /// Threads of each shard's sweep: its CPU request, in cores.
    pub jobs: usize,
    /// The memory a shard needs, bytes (its request, with 64 MiB; twice that and 128 MiB its
    /// limit).
    pub memory: u64,
    /// Names the sweep's folder on the results volume (`sweep-<id>`), so that a new deployment
    /// does not meet an earlier one's shards there: e.g. the Unix time it was written.
    pub id: u64,
}

/// Memory per simulation the collector's merge holds, bytes (a generous figure: each run's
/// summary as its shard file holds it, parsed, and in the merged points).
const MERGE_BYTES_PER_SIMULATION: u64 = 2 << 10;

/// The manifests of a design search over `scenario` (whose file's text is `scenario_text`): the
/// ConfigMap with the scenario, the results volume and the shards' Indexed Job, the collector's
/// Job and a kustomization. Of `opts`, the image, name, storage class and access mode are used.
pub fn k8s_sweep(
    scenario: &Scenario,
    scenario_text: &str,
    opts: &Options,
    sweep: &Sweep,
) -> Result<Vec<Manifest>, DeployError> {
    let base = Base::new(opts, sweep.shards)?;
    if sweep.shards == 0 || sweep.shards > sweep.points {
        return Err(DeployError::Invalid(format!(
            "{} sweep shards for {} points: each shard runs at least one point, so use 1 to {} \
             shards",
            sweep.shards,
            sweep.points,
            sweep.points.max(1)
        )));
    }
    if sweep.jobs == 0 {
        return Err(DeployError::Invalid(
            "a sweep shard of 0 threads: give each at least one".into(),
        ));
    }
    let claim = results_claim(&base, 1)?;
    let folder = format!("sweep-{}", sweep.id);
    let job = format!("{}-shards", opts.name);
    let n = sweep.shards;
    let head = format!(
        "lblab deploy k8s: a design search over scenario {}: {} points, {} simulations, in {n} \
         shards of {} thread(s) each.\nWritten by `lblab deploy k8s`; see docs/distributed.md.",
        scenario.file.name, sweep.points, sweep.simulations, sweep.jobs,
    );
    let collect = collector_job(
        &base,
        scripts::sweep_collect(&scripts::SweepCollect {
            shards: n,
            attempts: SWEEP_BACKOFF_PER_INDEX + 1,
            job: &job,
            results: RESULTS_PATH,
            folder: &folder,
        }),
        Vec::new(),
        MERGE_BYTES_PER_SIMULATION.saturating_mul(sweep.simulations as u64),
        base.volume_affinity(false, &["sweep", "collect"]),
    );
    let files = vec![
        Manifest {
            file: "scenario.yaml".into(),
            comment: format!("{head}\n\nThe scenario file every shard sweeps."),
            docs: vec![config_map(&base, scenario_text, None)],
        },
        Manifest {
            file: "sweep.yaml".into(),
            comment: format!(
                "{head}\n\nThe shards: completion index i runs `lblab sweep … --shard i/{n}` and \
                 writes {RESULTS_PATH}/{folder}/shard-i on the volume {}.",
                base.results
            ),
            docs: vec![claim, sweep_job(&base, &job, &folder, sweep)],
        },
        Manifest {
            file: "collect.yaml".into(),
            comment: format!(
                "{head}\n\nThe collector: waits until every shard is done (or one has failed for \
                 good), merges them into {RESULTS_PATH}/{folder}/merged with `lblab sweep \
                 --merge`, prints the `kubectl cp` line that fetches it and stays up an hour \
                 for it."
            ),
            docs: vec![collect],
        },
        Manifest {
            file: "kustomization.yaml".into(),
            comment: "A kustomize base of the manifests above (`kubectl apply -k .`).".into(),
            docs: vec![kustomization(&[
                "scenario.yaml",
                "sweep.yaml",
                "collect.yaml",
            ])],
        },
    ];
    for m in &files {
        for doc in &m.docs {
            within_size_limits(&m.file, doc)?;
        }
    }
    Ok(files)
}

/// The shards' Indexed Job `job`: completion index i runs shard i of the sweep into `folder`.
fn sweep_job(b: &Base<'_>, job: &str, folder: &str, sweep: &Sweep) -> Value {
    let script = scripts::sweep(&scripts::Sweep {
        args: &sweep.args,
        shards: sweep.shards,
        scenario: SCENARIO_PATH,
        results: RESULTS_PATH,
        folder,
    });
    let memory = sweep.memory;
    let mut pod = json!({
        "restartPolicy": "Never",
        "affinity": b.volume_affinity(false, &["sweep", "collect"]),
        "securityContext": pod_security(),
        "containers": [{
            "name": "sweep",
            "image": b.opts.image,
            "securityContext": container_security(),
            "command": ["/bin/sh", "-c", script],
            "resources": {
                "requests": {
                    "cpu": millicores(sweep.jobs as f64),
                    "memory": mebibytes(memory + (64 << 20)),
                },
                "limits": {"memory": mebibytes(2 * memory + (128 << 20))},
            },
            "volumeMounts": [
                scenario_mount(),
                {"name": "results", "mountPath": RESULTS_PATH},
            ],
        }],
        "volumes": [b.scenario_volume(), b.results_volume()],
    });
    without_nulls(&mut pod);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job, "labels": b.labels("sweep")},
        "spec": {
            "completionMode": "Indexed",
            "ttlSecondsAfterFinished": JOB_TTL_S,
            "completions": sweep.shards,
            "parallelism": sweep.shards,
            // A shard that fails is retried on its own; one whose sweep refused its input
            // (exit 1 or 2) would refuse it again, so its index fails at once.
            "backoffLimitPerIndex": SWEEP_BACKOFF_PER_INDEX,
            "podFailurePolicy": {"rules": [{
                "action": "FailIndex",
                "onExitCodes": {"containerName": "sweep", "operator": "In", "values": [1, 2]},
            }]},
            "template": {
                "metadata": {"labels": b.labels("sweep")},
                "spec": pod,
            },
        },
    })
}

#[cfg(test)]
mod tests;
