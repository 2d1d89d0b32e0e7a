//! What every deployment's objects are made from, a run's ([`crate::k8s`]) and a design
//! search's ([`crate::sweep`]) alike: the checked [`Base`] (name, image, the ConfigMap's and the
//! results claim's names, the volume's access mode and affinity), the pods' security contexts and
//! resource units, the ConfigMap, the results claim, a collector's Job, the kustomization, and
//! the size limits the API server holds every object to.

use serde_json::{json, Value};

use crate::{dns_label, AccessMode, DeployError, Options, IMAGE_UID, JOB_TTL_S, RESULTS_PATH};

/// A pod's security context for Kubernetes' restricted Pod Security profile: not root, the
/// runtime's default seccomp profile, and the results volume's files owned by the image's user.
pub(crate) fn pod_security() -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": IMAGE_UID,
        "fsGroup": IMAGE_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    })
}

/// A container's security context for the restricted profile: no privilege escalation, no
/// capabilities (so no real-time scheduling: lblab then runs at normal priority and says so).
pub(crate) fn container_security() -> Value {
    json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
}

/// CPU in millicores, for a resource request: at least 100m.
pub(crate) fn millicores(cores: f64) -> String {
    format!("{}m", ((cores * 1000.0).ceil() as u64).max(100))
}

/// Memory in MiB, for a resource request: at least 64 MiB.
pub(crate) fn mebibytes(bytes: u64) -> String {
    format!("{}Mi", (bytes.div_ceil(1 << 20)).max(64))
}

/// What every deployment's objects are made from, checked before any is: the options (the name
/// and the image checked), and the names of the ConfigMap and of the results volume's claim.
pub(crate) struct Base<'a> {
    /// The options.
    pub(crate) opts: &'a Options,
    /// The results volume's access mode, given or the default for the shard count.
    pub(crate) access_mode: AccessMode,
    /// The ConfigMap.
    pub(crate) config: String,
    /// The results volume's claim.
    pub(crate) results: String,
}

impl<'a> Base<'a> {
    /// Checks the name and the image of `opts`, for a deployment of `shards` shards that write
    /// the results volume.
    pub(crate) fn new(opts: &'a Options, shards: usize) -> Result<Base<'a>, DeployError> {
        let name = &opts.name;
        let starts_with_letter = name.starts_with(|c: char| c.is_ascii_lowercase());
        let ends_alphanumeric = name.ends_with(|c: char| c.is_ascii_alphanumeric());
        if name.len() > 40
            || dns_label(name, 40) != *name
            || !starts_with_letter
            || !ends_alphanumeric
        {
            return Err(DeployError::Name(name.clone()));
        }
        if opts.image.trim().is_empty() || opts.image.chars().any(char::is_whitespace) {
            return Err(DeployError::Image(opts.image.clone()));
        }
        Ok(Base {
            opts,
            access_mode: AccessMode::for_shards(opts.access_mode, shards),
            config: format!("{name}-scenario"),
            results: format!("{name}-results"),
        })
    }

    /// The labels of the objects of component `part`.
    pub(crate) fn labels(&self, part: &str) -> Value {
        json!({
            "app.kubernetes.io/name": "lblab",
            "app.kubernetes.io/instance": self.opts.name,
            "app.kubernetes.io/component": part,
        })
    }

    /// Where the pods that mount the results volume go: off the backends' nodes where they can
    /// (`apart_from_fleet`: a shared kernel would make each other's latency), and with a
    /// ReadWriteOnce volume on the one node of the pods of the components `mounts`, every pod
    /// that mounts it; `None` when neither applies.
    pub(crate) fn volume_affinity(&self, apart_from_fleet: bool, mounts: &[&str]) -> Option<Value> {
        let term = |components: &[&str]| {
            json!({
                "labelSelector": {"matchExpressions": [
                    {"key": "app.kubernetes.io/instance", "operator": "In", "values": [self.opts.name]},
                    {"key": "app.kubernetes.io/component", "operator": "In", "values": components},
                ]},
                "topologyKey": "kubernetes.io/hostname",
            })
        };
        let mut affinity = serde_json::Map::new();
        if apart_from_fleet {
            affinity.insert(
                "podAntiAffinity".into(),
                json!({"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": term(&["fleet"])},
                ]}),
            );
        }
        if self.access_mode == AccessMode::ReadWriteOnce {
            affinity.insert(
                "podAffinity".into(),
                json!({"requiredDuringSchedulingIgnoredDuringExecution": [term(mounts)]}),
            );
        }
        (!affinity.is_empty()).then_some(Value::Object(affinity))
    }

    /// The ConfigMap as a volume.
    pub(crate) fn scenario_volume(&self) -> Value {
        json!({"name": "scenario", "configMap": {"name": self.config}})
    }

    /// The results volume's claim as a volume.
    pub(crate) fn results_volume(&self) -> Value {
        json!({"name": "results", "persistentVolumeClaim": {"claimName": self.results}})
    }
}

/// Where the scenario file is mounted.
pub(crate) fn scenario_mount() -> Value {
    json!({"name": "scenario", "mountPath": "/etc/lblab", "readOnly": true})
}

/// The ConfigMap: the scenario file (its text `scenario_text`) and the common start, if the pods
/// take one (`start_at`).
pub(crate) fn config_map(b: &Base<'_>, scenario_text: &str, start_at: Option<u64>) -> Value {
    let mut map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": b.config, "labels": b.labels("scenario")},
        "data": {"scenario.toml": scenario_text},
    });
    if let Some(at) = start_at {
        map["data"]["start_at"] = json!(at.to_string());
    }
    map
}

/// The results volume's claim, of `gib` GiB: every shard writes its own folder on it; a storage
/// class that is not a StorageClass's name is refused.
pub(crate) fn results_claim(b: &Base<'_>, gib: usize) -> Result<Value, DeployError> {
    let mut pvc = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": b.results, "labels": b.labels("results")},
        "spec": {
            // Every shard writes its own folder; ReadWriteMany lets them run on any node.
            "accessModes": [b.access_mode.as_str()],
            "resources": {"requests": {"storage": format!("{gib}Gi")}},
        },
    });
    if let Some(class) = &b.opts.storage_class {
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
    Ok(pvc)
}

/// A collector's Job named `<name>-collect`: one pod (retried twice) that runs `script` on the
/// results volume, with `env` and its namespace (`POD_NAMESPACE`, for the `kubectl cp` line it
/// prints), `memory` bytes and 64 MiB requested (twice that and 128 MiB its limit), and the
/// `affinity` of the volume's pods.
pub(crate) fn collector_job(
    b: &Base<'_>,
    script: String,
    mut env: Vec<Value>,
    memory: u64,
    affinity: Option<Value>,
) -> Value {
    env.push(json!({"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}));
    let mut pod = json!({
        "restartPolicy": "OnFailure",
        "affinity": affinity,
        "securityContext": pod_security(),
        "containers": [{
            "name": "collect",
            "image": b.opts.image,
            "securityContext": container_security(),
            "command": ["/bin/sh", "-c", script],
            "env": env,
            "resources": {
                "requests": {"cpu": "100m", "memory": mebibytes(memory + (64 << 20))},
                "limits": {"memory": mebibytes(2 * memory + (128 << 20))},
            },
            "volumeMounts": [{"name": "results", "mountPath": RESULTS_PATH}],
        }],
        "volumes": [b.results_volume()],
    });
    without_nulls(&mut pod);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": format!("{}-collect", b.opts.name), "labels": b.labels("collect")},
        "spec": {
            "backoffLimit": 2,
            "ttlSecondsAfterFinished": JOB_TTL_S,
            "template": {
                "metadata": {"labels": b.labels("collect")},
                "spec": pod,
            },
        },
    })
}

/// `value` without the fields of its objects that are `null` (an option that does not apply),
/// at any depth, so that no manifest spells one.
pub(crate) fn without_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(without_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(without_nulls),
        _ => {}
    }
}

/// The kustomization listing the manifests `files`.
pub(crate) fn kustomization(files: &[&str]) -> Value {
    json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": files,
    })
}

/// The most a ConfigMap may hold (Kubernetes refuses a larger one).
pub const CONFIGMAP_MAX_BYTES: usize = 1 << 20;
/// The most any object may weigh as the API server stores it (etcd's default request limit,
/// 1.5 MiB).
pub const OBJECT_MAX_BYTES: usize = 3 << 19;

/// Refuses an object that the API server would refuse for its size, naming it, its size and
/// the limit.
pub(crate) fn within_size_limits(file: &str, doc: &Value) -> Result<(), DeployError> {
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
