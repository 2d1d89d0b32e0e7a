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
//! - A **design search** ([`k8s_sweep`]) is an Indexed Job whose index `i` runs `lblab sweep …
//!   --shard i/N`, and a collector that merges the shards with `lblab sweep --merge`.
//! - **Resources** are sized from the scenario and the harness's measured cost per call
//!   ([`CLIENT_CPU_PER_CALL_US`]); CPU *limits* are left out on purpose (see [`NOTES`]).

pub mod barrier;
mod base;
mod k8s;
mod scripts;
mod sweep;
mod yaml;

use lblab_model::setting::{Named, Names, Setting};
use lblab_model::Scenario;
use serde_json::Value;

pub use base::{CONFIGMAP_MAX_BYTES, OBJECT_MAX_BYTES};
pub use k8s::k8s;
pub use sweep::{k8s_sweep, Sweep, SWEEP_BACKOFF_PER_INDEX};
pub use yaml::stream as yaml_stream;

/// Client CPU per call, µs: the load generator's runtime threads (RPC stack and policy) at
/// 2,000 calls/s over 20 backends, as the harness measured it in
/// `results/real-harness/targets-run{1,2,3}/harness.json` (`client_cpu_per_call_us`: 128.8 to
/// 143.6 µs across runs and policies; this is about their largest).
pub const CLIENT_CPU_PER_CALL_US: f64 = 140.0;
/// The dispatcher thread's CPU per call, µs (pacing, spin-waits included), from the same files
/// (`dispatcher_cpu_per_call_us`, about 81 µs): `lblab real`'s, which spins up to 120 µs before a
/// send. The pods run `lblab loadgen`, which does not spin by default: its dispatcher spends
/// 19–23 µs per call and its runtime threads 163–185 µs against a fleet that answers at once
/// (`scripts/loadgen-vs-minimal.sh`, two runs at 2,000 calls/s), 183–209 µs in all, so the two
/// constants' sum (221 µs) stays an upper estimate of a pod's whole cost per call.
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
/// than [`START_LEAD_S`]: without a start barrier (`barrier` false), a pod not running by its
/// slot's start skips that slot; with one, the slots start later than `start_at`, and the
/// barrier gives up [`barrier::BARRIER_WAIT_S`] after it.
pub fn start_warning(start_at: u64, now: u64, barrier: bool) -> Option<String> {
    if start_at >= now + START_LEAD_S {
        return None;
    }
    let when = if start_at > now {
        format!("in {} s", start_at - now)
    } else {
        format!("{} s ago", now - start_at)
    };
    if !barrier {
        return Some(format!(
            "the first slot starts {when}; pods not yet scheduled, pulled and listening by then \
             skip their slot (a load generator says so and its Job fails)"
        ));
    }
    let wait = barrier::BARRIER_WAIT_S;
    let gives_up = start_at + wait;
    Some(if gives_up <= now {
        format!(
            "the first slot was to start {when}, and the start barrier gives up {wait} s after \
             it, which has passed: every pod would fail at once"
        )
    } else {
        format!(
            "the first slot starts {when} at the earliest; pods not yet scheduled, pulled and \
             running {} s before it make it start later (the start barrier releases every pod {} \
             s after the last checks in), and pods not running {} s from now are named missing \
             and every pod fails",
            barrier::START_MARGIN_S,
            barrier::START_MARGIN_S,
            gives_up - now
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

/// What is wrong with a deployment request. The options it names are [`Setting`]s, spelt by
/// whoever renders it ([`Named`]).
#[derive(Debug, thiserror::Error)]
#[error("{}", self.named(Setting::word))]
pub enum DeployError {
    /// An option that cannot make a valid deployment of this scenario.
    Invalid(String),
    /// The name is not a DNS label of 1 to 40 characters.
    Name(String),
    /// The image is not an image reference.
    Image(String),
    /// The backend port is 0.
    Port,
    /// The storage class is not a StorageClass's name.
    StorageClass(String),
    /// One load generator per node was asked for, on a volume only the pods of one node mount,
    /// with more than one shard.
    OnePerNodeOnOneNode {
        /// The load-generator shards.
        shards: usize,
    },
}

impl Named for DeployError {
    fn named(&self, names: Names) -> String {
        match self {
            DeployError::Invalid(message) => message.clone(),
            DeployError::Name(name) => format!(
                "{} {name:?}: must be 1 to 40 lower-case letters, digits and '-', starting with a \
                 letter and ending with a letter or digit (a Service's name is an RFC 1035 \
                 label; 40 leaves room for the objects' suffixes)",
                names(Setting::Name)
            ),
            DeployError::Image(image) => format!(
                "{} {image:?}: give an image reference, e.g. registry.example/lblab:0.1",
                names(Setting::Image)
            ),
            DeployError::Port => format!(
                "{} 0: the backend pods need a fixed port",
                names(Setting::Port)
            ),
            DeployError::StorageClass(class) => format!(
                "{} {class:?}: give a StorageClass's name (`kubectl get storageclass`)",
                names(Setting::StorageClass)
            ),
            DeployError::OnePerNodeOnOneNode { shards } => format!(
                "{} with a ReadWriteOnce results volume ({} once) and {shards} load-generator \
                 shards: such a volume is mounted by the pods of one node only, so the shards \
                 cannot each have a node of their own; use one shard, or a ReadWriteMany class",
                names(Setting::OneLoadgenPerNode),
                names(Setting::AccessMode)
            ),
        }
    }
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
    /// The results volume's access mode [default: ReadWriteOnce when one shard mounts it, which
    /// every class offers, ReadWriteMany when several do, so that they may run on any node].
    pub access_mode: Option<AccessMode>,
    /// Whether the pods start at a common start that a start barrier gives them once every pod
    /// has checked in ([`barrier`]; never before `start_at`), rather than at `start_at` alone.
    pub barrier: bool,
    /// Whether no two load generators may share a node (a required anti-affinity; pods that
    /// find no node of their own stay pending).
    pub one_loadgen_per_node: bool,
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
    /// The mode `given`, or the default for a volume that `shards` shards write: ReadWriteOnce
    /// for one (its pod and the collector then share a node, which the volume's affinity asks
    /// for), ReadWriteMany for more.
    pub fn for_shards(given: Option<AccessMode>, shards: usize) -> AccessMode {
        given.unwrap_or(if shards <= 1 {
            AccessMode::ReadWriteOnce
        } else {
            AccessMode::ReadWriteMany
        })
    }

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
mod tests;
