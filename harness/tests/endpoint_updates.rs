//! A balancer's endpoint list changes while calls go on, as a re-resolved `dns:///` target changes
//! it: a removed endpoint gets no more calls, a new one gets its share, and one that comes back
//! keeps its id. Against three real Echo servers on loopback.

use std::time::Duration;

use lblab_backend::{Fleet, FleetOptions};
use lblab_loadgen::balance::{Balancer, BalancerOptions, Picked};
use lblab_model::testing::{constant, ScenarioBuilder};
use lblab_policy::{Connectivity, EndpointId};
use lblab_wire::pb::echo::echo_client::EchoClient;
use lblab_wire::pb::echo::CallRequest;

/// Three backends of a constant 1 ms (the policy is not used).
fn three() -> lblab_model::Scenario {
    ScenarioBuilder::new("three")
        .rate(100.0)
        .duration("10s")
        .group("main", 3, &constant("1ms"), &[])
        .lb("unused", "round_robin")
        .build()
        .unwrap()
}

/// Sends `n` calls one after the other; how many each endpoint answered.
async fn calls(client: &EchoClient<lblab_loadgen::balance::PolicyService>, n: usize) -> Vec<u32> {
    let mut counts = vec![0u32; 4];
    for id in 0..n as u64 {
        let picked = Picked::new();
        let mut request = tonic::Request::new(CallRequest {
            id,
            payload: Default::default(),
        });
        request.set_timeout(Duration::from_secs(2));
        request.extensions_mut().insert(picked.clone());
        let ok = client.clone().unary(request).await.is_ok();
        assert!(ok, "call {id} failed");
        counts[picked.get().expect("sent").0 as usize] += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_that_come_and_go_are_followed() {
    let scenario = three();
    let fleet = Fleet::start(&scenario.backends, &FleetOptions::default())
        .await
        .unwrap();
    let uri = |i: usize| -> http::Uri { format!("http://{}", fleet.addrs()[i]).parse().unwrap() };
    let balancer = Balancer::from_service_config(
        r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#,
        vec![uri(0), uri(1)],
        BalancerOptions::default(),
    )
    .unwrap();
    assert_eq!(balancer.wait_connected(Duration::from_secs(5)).await, 2);
    let client = EchoClient::new(balancer.service());
    assert_eq!(calls(&client, 20).await, [10, 10, 0, 0]);

    // 0 leaves, 2 joins: ids are kept for 1, the new one is the next.
    let ids = balancer.set_endpoints(vec![uri(1), uri(2)]);
    assert_eq!(ids, [EndpointId(1), EndpointId(2)]);
    assert_eq!(balancer.wait_connected(Duration::from_secs(5)).await, 2);
    let counts = calls(&client, 20).await;
    assert_eq!(counts[0], 0, "a removed endpoint gets no calls: {counts:?}");
    assert_eq!(counts[1] + counts[2], 20);
    assert!(counts[1] >= 8 && counts[2] >= 8, "{counts:?}");
    assert_eq!(balancer.connectivity()[0], Connectivity::Idle);

    // 0 comes back under its old id.
    let ids = balancer.set_endpoints(vec![uri(0), uri(1), uri(2)]);
    assert_eq!(ids, [EndpointId(0), EndpointId(1), EndpointId(2)]);
    assert_eq!(balancer.wait_connected(Duration::from_secs(5)).await, 3);
    let counts = calls(&client, 30).await;
    assert!(counts[..3].iter().all(|&c| c >= 8), "{counts:?}");

    // An empty list: calls fail fast (round_robin has nothing to pick), and nothing hangs.
    balancer.set_endpoints(Vec::new());
    let mut request = tonic::Request::new(CallRequest::default());
    request.set_timeout(Duration::from_millis(300));
    let result = tokio::time::timeout(Duration::from_secs(2), client.clone().unary(request)).await;
    assert!(matches!(result, Ok(Err(_))), "{result:?}");
    drop(fleet);
}
