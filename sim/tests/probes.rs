//! Out-of-band probes in the simulator (peak_ewma's lab-only `probeInterval`): a client that
//! probes sees a backend stop answering before it sends it a call; one that does not learns it
//! from its first call there, which waits out its deadline.

use lblab_model::testing::{constant, ScenarioBuilder};
use lblab_sim::{run_policy, SimOptions};

/// Calls that ran out their deadline: 20 clients at 10 calls/s each on four 2 ms backends, one
/// of which swallows every call from 2 s to 4 s, with `ablation`.
fn swallowed(ablation: &str) -> u64 {
    let scenario = ScenarioBuilder::new("probes")
        .seed(3)
        .clients(20)
        .rate(200.0)
        .warmup("1s")
        .duration("5s")
        .deadline("0.5s")
        .group("main", 4, &constant("2ms"), &["workers = 4"])
        .fault("black_hole", &["main/3"], &["start = \"2s\"", "end = \"4s\""])
        .policy(
            "pe",
            &format!(
                r#"{{"loadBalancingConfig":[{{"peak_ewma_experimental":{{"lblabAblation":{{{ablation}}}}}}}]}}"#
            ),
        )
        .build()
        .expect("valid scenario");
    let r = run_policy(&scenario, &scenario.policies[0], &SimOptions::default()).expect("runs");
    r.result.summary.deadline_exceeded
}

#[test]
fn probes_let_clients_avoid_a_black_hole_they_sent_nothing_to() {
    let without = swallowed("");
    let with = swallowed(r#""probeInterval":"0.05s""#);
    // Without probes each client loses about one call to the hole (its first there).
    assert!(without >= 10, "{without}");
    assert!(with * 2 < without, "with probes {with}, without {without}");
}
