//! `lblab deploy k8s SCENARIO --image IMAGE`: plain Kubernetes manifests for a scenario's fleet
//! and sharded load generators (`lblab-deploy`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use lblab_deploy::{Options, DEFAULT_PORT};
use lblab_record::write_atomic;

/// Arguments of `lblab deploy`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    target: Target,
}

/// Where to deploy.
#[derive(Debug, clap::Subcommand)]
enum Target {
    /// Write Kubernetes manifests: the scenario as a ConfigMap, the fleet as an Indexed Job
    /// (completion index k serves backend k, ending after the last slot) behind a headless
    /// Service, the load generators as an Indexed Job (completion index i runs shard i of the
    /// clients), a collector Job that merges each policy's shards, a start barrier (a starter
    /// pod that releases every other pod with one start once all have checked in), and a
    /// kustomization. The policies run one after the other in slots from that start (never
    /// before --start-at), each against a fresh fleet.
    /// With --sweep, a design search instead: an Indexed Job whose index i runs `lblab sweep …
    /// --shard i/N` (N: --shards), and a collector that merges the shards. See
    /// docs/distributed.md.
    K8s(K8sArgs),
}

/// Arguments of `lblab deploy k8s`.
#[derive(Debug, clap::Args)]
struct K8sArgs {
    /// Scenario file (TOML).
    scenario: PathBuf,
    /// The container image with `lblab` (build it from the Containerfile), e.g.
    /// registry.example/lblab:0.1.
    #[arg(long)]
    image: String,
    /// Folder for the manifests [default: lblab-out/<scenario>/k8s].
    #[arg(long)]
    out: Option<PathBuf>,
    /// The prefix of every object's name [default: lblab-<scenario name>].
    #[arg(long)]
    name: Option<String>,
    /// Load-generator shards [default: the rate over 2,000 calls/s, rounded up, at most the
    /// scenario's clients].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    shards: Option<u32>,
    /// The common start as Unix time in seconds: the first policy's slot starts then (the fault
    /// timeline's time 0 in every backend, and when every load generator starts), the next ones
    /// each a slot later [default: 10 minutes from now]. It is in the ConfigMap, which can be
    /// changed before the pods start.
    #[arg(long)]
    start_at: Option<u64>,
    /// The backends' port.
    #[arg(long, default_value_t = DEFAULT_PORT, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Give the load generators each backend pod's own name, in scenario order, instead of
    /// `dns:///<service>:<port>`: then each address is known to be its scenario backend (the
    /// share of traffic to faulty backends counts right), but pods that come and go are not
    /// re-resolved.
    #[arg(long)]
    pod_targets: bool,
    /// The results volume's StorageClass [default: the cluster's default class].
    #[arg(long, value_name = "CLASS")]
    storage_class: Option<String>,
    /// The results volume's access mode: `many` (ReadWriteMany: pods on any node; needs a class
    /// that offers it, such as NFS or a cloud file store), `once` (ReadWriteOnce: what the large
    /// managed clusters' default disks give; every load generator and the collector must then
    /// run on one node, e.g. with one shard or a nodeSelector in an overlay), or `auto`: `once`
    /// with one shard, `many` with more.
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = ["auto", "many", "once"])]
    access_mode: String,
    /// Start at --start-at alone, without the start barrier: a pod not running by its slot's
    /// start skips that slot. By default a starter pod releases every pod at once when all have
    /// checked in, at --start-at or 30 s after the last check-in if that is later.
    #[arg(long)]
    no_barrier: bool,
    /// Give each load generator a node of its own (a required anti-affinity: shards that find
    /// none stay pending), not only nodes without backends where there are some.
    #[arg(long)]
    one_loadgen_per_node: bool,
    /// A design search instead of a run: every argument after --sweep is `lblab sweep`'s after
    /// the scenario (--vary …, --seeds, --policy, --x, --jobs: threads and CPU per shard,
    /// default 1), so --sweep comes last; --shards N splits it into N pods. Checked here as
    /// `lblab sweep` checks it.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "SWEEP_ARGS",
          requires = "shards",
          conflicts_with_all = ["start_at", "pod_targets", "no_barrier", "one_loadgen_per_node"])]
    sweep: Option<Vec<String>>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Target::K8s(args) = args.target;
    let file = super::args::scenario_path(&args.scenario)?;
    let scenario = super::args::load(&file, None)?;
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    if let Some(sweep) = &args.sweep {
        return deploy_sweep(&args, &scenario, &file, &text, sweep, now);
    }
    if let Some(at) = args.start_at {
        // `lblab backend` accepts a start within a day of now; so does this.
        anyhow::ensure!(
            at.abs_diff(now) <= 86_400,
            "--start-at {at}: must be a Unix time in seconds within a day of now ({now})"
        );
    }
    let opts = Options {
        image: args.image.clone(),
        name: args.name.unwrap_or_else(|| {
            lblab_deploy::dns_label(&format!("lblab-{}", scenario.file.name), 40)
        }),
        port: args.port,
        shards: args.shards.map(|n| n as usize),
        start_at: args.start_at.unwrap_or(now + 600),
        dns: !args.pod_targets,
        storage_class: args.storage_class.clone(),
        access_mode: access_mode(&args.access_mode),
        barrier: !args.no_barrier,
        one_loadgen_per_node: args.one_loadgen_per_node,
    };
    if let Some(w) = lblab_deploy::start_warning(opts.start_at, now, opts.barrier) {
        lblab_lab::errln!(
            "warning: {w}; give --start-at at least {} s ahead, or change start_at in \
             scenario.yaml before applying",
            lblab_deploy::START_LEAD_S
        );
    }
    let manifests = lblab_deploy::k8s(&scenario, &text, &opts)
        .with_context(|| format!("deploying {}", file.display()))?;
    let dir = args
        .out
        .unwrap_or_else(|| lblab_lab::out_dir::results_dir(&file, "k8s", None));
    let _out_dir = lblab_lab::out_dir::prepare_dir(&dir)?;
    for m in &manifests {
        write_atomic(&dir.join(&m.file), m.text().as_bytes())?;
    }
    let n = opts
        .shards
        .unwrap_or_else(|| lblab_deploy::default_shards(&scenario));
    outln!(
        "{}: {} backend pods, {n} load-generator shards, starting at Unix time {}{}",
        scenario.file.name,
        scenario.backends.len(),
        opts.start_at,
        if opts.barrier {
            " at the earliest (the start barrier releases the pods once all have checked in)"
        } else {
            ""
        }
    );
    outln!(
        "wrote {} (kubectl apply -k {})",
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `lblab deploy k8s SCENARIO … --shards N --sweep ARGS`: the design search's manifests.
fn deploy_sweep(
    args: &K8sArgs,
    scenario: &lblab_model::Scenario,
    file: &std::path::Path,
    text: &str,
    sweep: &[String],
    now: u64,
) -> anyhow::Result<ExitCode> {
    let shards = args.shards.map_or(1, |n| n as usize);
    let checked = super::sweep::deployable(scenario, file, sweep, shards)?;
    let opts = Options {
        image: args.image.clone(),
        name: args.name.clone().unwrap_or_else(|| {
            lblab_deploy::dns_label(&format!("lblab-{}-sweep", scenario.file.name), 40)
        }),
        port: args.port,
        shards: None,
        start_at: now,
        dns: true,
        storage_class: args.storage_class.clone(),
        access_mode: access_mode(&args.access_mode),
        barrier: false,
        one_loadgen_per_node: false,
    };
    let plan = lblab_deploy::Sweep {
        args: checked.args,
        shards,
        points: checked.checked.points,
        simulations: checked.checked.simulations,
        jobs: checked.jobs,
        memory: checked.checked.memory,
        id: now,
    };
    let manifests = lblab_deploy::k8s_sweep(scenario, text, &opts, &plan)
        .with_context(|| format!("deploying a sweep of {}", file.display()))?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| lblab_lab::out_dir::results_dir(file, "k8s-sweep", None));
    let _out_dir = lblab_lab::out_dir::prepare_dir(&dir)?;
    for m in &manifests {
        write_atomic(&dir.join(&m.file), m.text().as_bytes())?;
    }
    outln!(
        "{}: a sweep of {} points, {} simulations, in {shards} shards of {} thread(s)",
        scenario.file.name,
        plan.points,
        plan.simulations,
        plan.jobs
    );
    outln!(
        "wrote {} (kubectl apply -k {})",
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `--access-mode`'s value as the deployment takes it (`None`: by the shard count).
fn access_mode(given: &str) -> Option<lblab_deploy::AccessMode> {
    match given {
        "once" => Some(lblab_deploy::AccessMode::ReadWriteOnce),
        "many" => Some(lblab_deploy::AccessMode::ReadWriteMany),
        _ => None,
    }
}
