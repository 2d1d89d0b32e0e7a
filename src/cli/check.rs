//! `lblab check`: validate a service config, or map an Envoy xDS load-balancing config onto one.

use std::process::ExitCode;

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
    let (source, text) = lblab_lab::check::read(&args.config)?;
    let checked = lblab_lab::check::check(&source, &text)?;
    if let Some(normalized) = &checked.normalized {
        outln!("{normalized}");
    }
    for m in &checked.messages {
        lblab_lab::errln!("{m}");
    }
    Ok(match checked.normalized {
        Some(_) => ExitCode::SUCCESS,
        None => ExitCode::from(1),
    })
}
