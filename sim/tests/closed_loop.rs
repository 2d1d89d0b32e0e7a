//! A closed loop with far more slots than the fleet has room for: refused calls back off instead
//! of being re-sent once per round trip, so the run ends and its calls are counted.

use lblab_model::arrival::CLOSED_LOOP_MAX_RETRY;
use lblab_model::testing::ScenarioBuilder;
use lblab_sim::{run_policy, SimOptions};

#[test]
fn a_closed_loop_past_the_fleets_room_backs_off_and_ends() {
    // 100,000 slots against 2 backends with room for 2 × (4 + 16) calls, 1 ms away: re-sent at
    // each refusal, every slot would send a call per millisecond (10^8 calls per simulated
    // second), and the run would not end in any reasonable time.
    let (clients, concurrency) = (2u64, 50_000u64);
    let scenario = ScenarioBuilder::new("closed-overload")
        .seed(3)
        .clients(clients as u32)
        .closed(concurrency as u32)
        .duration("2s")
        .group(
            "main",
            2,
            r#"{ dist = "constant", value = "2ms" }"#,
            &["workers = 4", "queue_limit = 16", "network_rtt = \"1ms\""],
        )
        .lb("round_robin", "round_robin")
        .build()
        .expect("valid scenario");
    let policy = &scenario.policies[0];
    let r = run_policy(&scenario, policy, &SimOptions::default()).expect("runs");
    let s = r.result.summary;
    assert_eq!(s.requests, s.ok + s.errors + s.dropped, "{s:?}");
    // Each slot fails its way up to the longest wait: 1 + 2 + ... + 512 ms is about 1 s in 10
    // calls, then one call a second, so about 12 calls per slot in 2 s.
    let slots = clients * concurrency;
    let per_slot_bound = 10 + 2 * 1_000_000_000 / CLOSED_LOOP_MAX_RETRY + 2;
    assert!(
        s.requests <= slots * per_slot_bound,
        "{} calls from {slots} slots: re-sent faster than the back-off",
        s.requests
    );
    // The fleet still serves what it can hold: 8 workers of 2 ms for 2 s.
    assert!(s.ok > 4_000, "{s:?}");
}
