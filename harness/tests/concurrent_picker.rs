//! peak_ewma's concurrent form in a real client: calls from many tasks on several threads pick
//! without the balancer's lock, avoid a slow backend, and leave nothing outstanding. Against
//! three real Echo servers on loopback, one of them ten times slower.

use std::time::Duration;

use lblab_backend::{Fleet, FleetOptions};
use lblab_loadgen::balance::{Balancer, BalancerOptions, Picked};
use lblab_model::testing::{constant, ScenarioBuilder};
use lblab_policy::EndpointId;
use lblab_wire::pb::echo::echo_client::EchoClient;
use lblab_wire::pb::echo::CallRequest;

/// Two backends of a constant 2 ms and one of 20 ms (the policy is not used).
fn one_slow_of_three() -> lblab_model::Scenario {
    ScenarioBuilder::new("one-slow-of-three")
        .rate(100.0)
        .duration("10s")
        .group("fast", 2, &constant("2ms"), &[])
        .group("slow", 1, &constant("20ms"), &[])
        .lb("unused", "round_robin")
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_pick_without_the_lock_and_avoid_the_slow_backend() {
    let scenario = one_slow_of_three();
    let fleet = Fleet::start(&scenario.backends, &FleetOptions::default())
        .await
        .unwrap();
    let uris = fleet
        .addrs()
        .iter()
        .map(|a| format!("http://{a}").parse().unwrap())
        .collect();
    let balancer = Balancer::from_service_config(
        r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{"decayTime":"1s"}}]}"#,
        uris,
        BalancerOptions::default(),
    )
    .unwrap();
    assert!(
        balancer.is_concurrent(),
        "the default has a concurrent form"
    );
    assert_eq!(balancer.wait_connected(Duration::from_secs(5)).await, 3);
    let client = EchoClient::new(balancer.service());
    let tasks: Vec<_> = (0..8u64)
        .map(|task| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut counts = [0u32; 3];
                for k in 0..60 {
                    let picked = Picked::new();
                    let mut request = tonic::Request::new(CallRequest {
                        id: task * 1000 + k,
                        payload: Default::default(),
                    });
                    request.set_timeout(Duration::from_secs(2));
                    request.extensions_mut().insert(picked.clone());
                    client.clone().unary(request).await.expect("call");
                    counts[picked.get().expect("sent").0 as usize] += 1;
                }
                counts
            })
        })
        .collect();
    let mut counts = [0u32; 3];
    for task in tasks {
        for (total, n) in counts.iter_mut().zip(task.await.unwrap()) {
            *total += n;
        }
    }
    assert_eq!(counts.iter().sum::<u32>(), 480);
    // Round robin would send a third (160) to the slow one.
    assert!(counts[2] < 48, "the slow backend got {counts:?}");
    balancer.inspect(|policy, now| {
        let views: Vec<_> = (0..3)
            .map(|i| policy.endpoint_view(now, EndpointId(i)).expect("listed"))
            .collect();
        assert!(views.iter().all(|v| v.outstanding == 0), "{views:?}");
        let cost = |i: usize| views[i].cost.expect("peak_ewma has costs");
        assert!(cost(2) > cost(0) && cost(2) > cost(1), "{views:?}");
    });
}
