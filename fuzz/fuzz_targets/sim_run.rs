//! Accepted scenarios, made small, simulated under each of their policies: the engine never panics
//! (no event scheduled into the past, no overflow) and every request sent after the warm-up is in
//! the summary as ok, error or dropped.
#![no_main]

use lblab_model::scenario::Arrival;
use lblab_model::Scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(s) = Scenario::parse(text) else { return };
    let w = &s.workload;
    // Keep one execution to a few thousand requests: skip the scenarios that would be larger.
    let secs = w.end() as f64 / 1e9;
    let small = match w.arrival {
        Arrival::Closed => w.concurrency as u64 * w.clients as u64 <= 8 && secs <= 2.0,
        _ => w.rate * secs <= 3000.0,
    };
    if !small || s.backends.len() > 64 || w.clients > 16 {
        return;
    }
    for p in s.policies.iter().filter(|p| p.runs_in_sim()) {
        let run = lblab_sim::run_policy(&s, p, &Default::default()).expect("simulates");
        let r = &run.result.summary;
        assert_eq!(r.requests, r.ok + r.errors + r.dropped, "{}", p.name);
        assert_eq!(
            run.stats.measured, r.requests,
            "{}: sent after warm-up vs accounted",
            p.name
        );
    }
});
