//! A tonic client that balances its calls with an lblab policy.
//!
//! It starts three Echo servers on loopback (one of them ten times slower), then sends 300 calls
//! through an `EchoClient` whose transport is a `Balancer` running `peak_ewma_experimental`, and
//! prints where the calls went. Any tonic client works the same way: build a `Balancer` from your
//! endpoints and a service config, and pass `balancer.service()` to the generated client's `new`.
//!
//! ```sh
//! cargo run -p lblab-harness --example balanced_client
//! ```

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

use std::time::Duration;

use lblab_backend::{Fleet, FleetOptions};
use lblab_loadgen::balance::{Balancer, BalancerOptions, Picked};
use lblab_wire::pb::echo::echo_client::EchoClient;
use lblab_wire::pb::echo::CallRequest;

const FLEET: &str = r#"
name = "example"
[workload]
rate = 100
duration = "10s"
[[fleet]]
name = "fast"
count = 2
service_time = { dist = "lognormal", median = "1ms", p99 = "3ms" }
[[fleet]]
name = "slow"
count = 1
service_time = { dist = "lognormal", median = "1ms", p99 = "3ms" }
[[faults]]
kind = "slowdown"
targets = ["slow"]
factor = 10
[[policies]]
name = "unused"
config = '{"loadBalancingConfig":[{"round_robin":{}}]}'
"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Servers: any gRPC servers would do; these emulate a fleet with one slow instance.
    let scenario = lblab_model::Scenario::parse(FLEET)?;
    let fleet = Fleet::start(&scenario.backends, &FleetOptions::default()).await?;

    // The client side: one endpoint per server, and the policy from a gRPC service config.
    let endpoints: Vec<http::Uri> = fleet
        .addrs()
        .iter()
        .map(|a| format!("http://{a}").parse())
        .collect::<Result<_, _>>()?;
    let balancer = Balancer::from_service_config(
        r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{"decayTime":"1s","defaultRtt":"0.002s"}}]}"#,
        endpoints,
        BalancerOptions::default(),
    )?;
    let ready = balancer.wait_connected(Duration::from_secs(5)).await;
    println!("{ready} of {} endpoints READY", fleet.addrs().len());

    let client = EchoClient::new(balancer.service());
    let mut counts = vec![0u32; fleet.addrs().len()];
    let mut calls = tokio::task::JoinSet::new();
    for id in 0..300u64 {
        let mut client = client.clone();
        calls.spawn(async move {
            let picked = Picked::new();
            let mut request = tonic::Request::new(CallRequest {
                id,
                payload: Default::default(),
            });
            request.set_timeout(Duration::from_secs(1));
            request.extensions_mut().insert(picked.clone());
            let result = client.unary(request).await;
            (picked.get(), result.is_ok())
        });
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    while let Some(done) = calls.join_next().await {
        if let (Some(endpoint), true) = done? {
            counts[endpoint.0 as usize] += 1;
        }
    }
    for (spec, n) in scenario.backends.iter().zip(&counts) {
        println!("{:<8} {n:>4} calls", spec.name);
    }
    balancer.inspect(|policy, now| {
        for i in 0..counts.len() as u32 {
            if let Some(view) = policy.endpoint_view(now, lblab_policy::EndpointId(i)) {
                println!(
                    "endpoint {i}: cost {:?}",
                    view.cost.map(|c| format!("{:.2} ms", c / 1e6))
                );
            }
        }
    });
    fleet.shutdown().await;
    Ok(())
}
