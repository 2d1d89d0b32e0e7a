//! `lblab check`: validate a service config, or map an Envoy xDS load-balancing config onto one.

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use lblab_model::scenario::{REAL_ONLY_POLICIES, SIM_ONLY_POLICIES};
use lblab_policy::config::{self, Selected};
use lblab_policy::xds;

/// Arguments of `lblab check`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The form is detected by shape:
  gRPC service config      {\"loadBalancingConfig\":[{\"peak_ewma_experimental\":{}}]}
  Envoy Cluster (xDS)      {\"name\":\"c\",\"load_balancing_policy\":{\"policies\":[...]}}
  LoadBalancingPolicy      {\"policies\":[{\"typed_extension_config\":{...}}]}
  one Policy entry         {\"typed_extension_config\":{\"name\":\"x\",\"typed_config\":{\"@type\":...}}}
In the xDS forms the first supported typed_config wins (gRFC A52): Envoy's PeakEwma (v3alpha or
v3) maps onto peak_ewma_experimental, RoundRobin, LeastRequest and PickFirst onto their gRPC
policies, and an xds.type.v3.TypedStruct (or udpa.type.v1.TypedStruct) names a policy by the last
segment of its type_url with its JSON config in value. The normalized gRPC config goes to stdout;
the Envoy fields the mapping drops and how the behaviour differs go to stderr.")]
pub struct Args {
    /// A service config or an Envoy xDS load-balancing config: a path to a JSON file, or the JSON
    /// text itself (starting with `{`).
    config: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (source, text) = if args.config.trim_start().starts_with('{') {
        ("<argument>".to_string(), args.config.clone())
    } else {
        let path = Path::new(&args.config);
        let mut text = String::new();
        // A service config is a few hundred bytes: read at most 1 MiB (a device or a huge file
        // given by mistake must not hang or exhaust memory).
        std::fs::File::open(path)
            .and_then(|f| std::io::Read::take(f, (1 << 20) + 1).read_to_string(&mut text))
            .with_context(|| format!("cannot read service config file {}", path.display()))?;
        anyhow::ensure!(
            text.len() <= 1 << 20,
            "service config file {} is larger than 1 MiB",
            path.display()
        );
        (path.display().to_string(), text)
    };
    let doc: Option<serde_json::Value> = lblab_policy::json::parse(&text).ok();
    if let Some(doc) = doc.filter(xds::looks_like_xds) {
        return match xds::parse(&doc) {
            Ok(mapped) => {
                let normalized =
                    serde_json::json!({ "loadBalancingConfig": [mapped.policy.to_json()] });
                outln!("{}", serde_json::to_string_pretty(&normalized)?);
                eprintln!(
                    "note: mapped {} at `{}` onto {}",
                    mapped.type_name,
                    mapped.path,
                    mapped.policy.name()
                );
                for d in &mapped.dropped {
                    eprintln!("dropped: {} = {}: {}", d.field, d.value, d.meaning);
                }
                for n in &mapped.notes {
                    eprintln!("note: {n}");
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => {
                eprintln!("error: invalid xDS load-balancing config in {source}: {err}");
                Ok(ExitCode::from(1))
            }
        };
    }
    let mut extra: Vec<&str> = SIM_ONLY_POLICIES.to_vec();
    extra.extend_from_slice(REAL_ONLY_POLICIES);
    match config::parse_service_config_with(&text, &extra) {
        Ok(Selected::Policy(policy)) => {
            let normalized = serde_json::json!({ "loadBalancingConfig": [policy.to_json()] });
            outln!("{}", serde_json::to_string_pretty(&normalized)?);
            for w in policy.warnings() {
                eprintln!("warning: {w}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(Selected::Extra { name, .. }) => {
            let normalized = serde_json::json!({ "loadBalancingConfig": [{ name.as_str(): {} }] });
            outln!("{}", serde_json::to_string_pretty(&normalized)?);
            eprintln!("note: {}", extra_note(&name));
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("error: invalid service config in {source}: {err}");
            Ok(ExitCode::from(1))
        }
    }
}

/// What `check` says about one of lblab's own policy names, which are not gRPC policies.
fn extra_note(name: &str) -> String {
    if SIM_ONLY_POLICIES.contains(&name) {
        format!(
            "`{name}` is lblab's own, not a gRPC policy, and runs only in the simulator (`lblab sim`, \
             the simulated half of `lblab compare`; the real harness skips it). It reads every \
             backend's true queue and speed and picks the least expected completion time. It is \
             not a lower bound: it cannot foresee a pause that starts after its pick. It takes no fields."
        )
    } else {
        format!(
            "`{name}` is lblab's own, not a gRPC policy, and runs only over real gRPC (`lblab real`, \
             `lblab loadgen`, the real half of `lblab compare`): tower's own p2c + PeakEwma \
             balancer, as a reference. It takes no fields."
        )
    }
}
