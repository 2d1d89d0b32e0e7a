//! Out-of-band probes over real gRPC: a balancer whose policy asks for them (peak_ewma's lab-only
//! `probeInterval`) sends health Checks on each endpoint's connection, and a backend that stops
//! answering is seen by a client that sent it no call.

use std::time::Duration;

use lblab_backend::{Fleet, FleetOptions};
use lblab_loadgen::balance::{Balancer, BalancerOptions};
use lblab_model::Scenario;
use lblab_policy::EndpointId;

/// Two backends of 1 ms; main/1 swallows everything (calls and health Checks) from the start.
fn black_hole() -> Scenario {
    Scenario::parse(
        r#"
        name = "t"
        [workload]
        rate = 100
        duration = "10s"
        [[fleet]]
        name = "main"
        count = 2
        service_time = { dist = "constant", value = "1ms" }
        [[faults]]
        kind = "black_hole"
        targets = ["main/1"]
        [[policies]]
        name = "rr"
        config = '{"loadBalancingConfig":[{"round_robin":{}}]}'
        "#,
    )
    .expect("valid scenario")
}

/// Endpoints 0 and 1's costs after 300 ms without a call, with `ablation`.
async fn idle_costs(fleet: &Fleet, ablation: &str) -> (f64, f64) {
    let uris = fleet
        .addrs()
        .iter()
        .map(|a| format!("http://{a}").parse().expect("uri"))
        .collect();
    let config = format!(
        r#"{{"loadBalancingConfig":[{{"peak_ewma_experimental":{{"lblabAblation":{{{ablation}}}}}}}]}}"#
    );
    let balancer =
        Balancer::from_service_config(&config, uris, BalancerOptions::default()).expect("config");
    assert_eq!(balancer.wait_connected(Duration::from_secs(5)).await, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    balancer.inspect(|p, now| {
        let cost = |e| {
            p.endpoint_view(now, EndpointId(e))
                .and_then(|v| v.cost)
                .expect("cost")
        };
        (cost(0), cost(1))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_probe_shows_a_black_hole_to_a_client_that_sent_it_no_call() {
    let fleet = Fleet::start(&black_hole().backends, &FleetOptions::default())
        .await
        .expect("fleet");
    // Probes every 50 ms: endpoint 0 answers each within a millisecond or two, endpoint 1's
    // first one is still pending, so its cost is at least that probe's age.
    let (healthy, swallowing) = idle_costs(&fleet, r#""probeInterval":"0.05s""#).await;
    assert!(swallowing >= 150e6, "{swallowing}");
    assert!(healthy < 20e6, "{healthy}");
    // Without probes neither has been called: both cost 0.
    let (healthy, swallowing) = idle_costs(&fleet, "").await;
    assert_eq!((healthy, swallowing), (0.0, 0.0));
    fleet.shutdown().await;
}
