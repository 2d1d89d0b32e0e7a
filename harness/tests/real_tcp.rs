//! Real-TCP smoke test: a few seconds of a one-slow scenario against in-process tonic servers on
//! loopback, at a modest rate.

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's

use lblab_harness::{run_one, HarnessOptions, PolicyReport};
use lblab_model::testing::{lognormal, ScenarioBuilder};
use lblab_model::Scenario;

/// A run of `clients` clients at 300 calls a second (Poisson arrivals, 1 s deadline), seed 7,
/// against the `[[fleet]]` groups `groups` (name, count) of backends with four workers each and
/// a 2 ms median service time.
fn run(name: &str, clients: u32, groups: &[(&str, u32)]) -> ScenarioBuilder {
    let mut run = ScenarioBuilder::new(name)
        .seed(7)
        .clients(clients)
        .rate(300.0)
        .arrival("poisson")
        .deadline("1s");
    for &(group, count) in groups {
        run = run.group(group, count, &lognormal("2ms", "6ms"), &["workers = 4"]);
    }
    run
}

/// Runs every policy of the scenario `toml` with no floor run; returns the index of the backend
/// named `backend` and each policy's report, in the scenario's order.
fn run_each(toml: &str, backend: &str) -> (usize, Vec<PolicyReport>) {
    let scenario = Scenario::parse(toml).expect("valid scenario");
    let options = HarnessOptions {
        floor: None,
        ..HarnessOptions::default()
    };
    let index = scenario
        .backends
        .iter()
        .position(|b| b.name == backend)
        .unwrap_or_else(|| panic!("no backend {backend}"));
    let reports = scenario
        .policies
        .iter()
        .map(|policy| run_one(&scenario, policy, &options).expect("run"))
        .collect();
    (index, reports)
}

/// Four backends and a slow one, round robin and peak EWMA, 3 s at 300 calls a second.
fn one_slow() -> String {
    run("smoke-one-slow", 2, &[("main", 4), ("slow", 1)])
        .duration("3s")
        .fault("slowdown", &["slow"], &["factor = 10"])
        .lb("round_robin", "round_robin")
        .lb("peak_ewma", "peak_ewma_experimental")
        .toml()
}

#[test]
fn every_request_is_accounted_for_and_peak_ewma_avoids_the_slow_backend() {
    let (slow, reports) = run_each(&one_slow(), "slow/0");
    let mut shares = Vec::new();
    for report in &reports {
        let (run, name) = (&report.run, &report.name);
        let s = &run.result.summary;
        // No warm-up: every call dispatched is one row of the summary, and each ended one way.
        assert_eq!(s.requests, run.calls, "{name}: {s:?}");
        assert_eq!(s.requests, s.ok + s.errors + s.dropped, "{name}: {s:?}");
        assert!(s.deadline_exceeded <= s.errors);
        assert!(
            s.requests > 500,
            "{name}: only {} requests in 3s at 300/s",
            s.requests
        );
        assert!(
            s.ok * 100 >= s.requests * 95,
            "{name}: too many failures: {s:?}"
        );
        let sent: u64 = run.sends_per_backend.iter().sum();
        assert!(
            sent + s.dropped >= s.ok,
            "{name}: {sent} sends for {} ok",
            s.ok
        );
        shares.push(run.sends_per_backend[slow] as f64 / sent as f64);
        assert!(
            report.delay.count > 0 && report.delay.early == 0,
            "{:?}",
            report.delay
        );
    }
    let (rr, pe) = (shares[0], shares[1]);
    eprintln!("share of traffic to the slow backend: round_robin {rr:.3}, peak_ewma {pe:.3}");
    assert!(
        rr > 0.12,
        "round_robin sends the slow backend its fifth: {rr:.3}"
    );
    assert!(
        pe < rr * 0.6,
        "peak_ewma must send the slow backend less than round_robin: {pe:.3} vs {rr:.3}"
    );
}

/// One of four backends crashes at 1 s and stays down (connections refused).
fn crash() -> String {
    run("smoke-crash", 1, &[("main", 3), ("crashy", 1)])
        .warmup("1.2s")
        .duration("2.5s")
        .fault("crash", &["crashy"], &["at = \"1s\""])
        .lb("round_robin", "round_robin")
        .lb("tower_p2c_peak_ewma", "tower_p2c_peak_ewma")
        .toml()
}

/// tower's balancer has no connectivity state: a lazy tonic channel to a crashed backend stays
/// "ready" (tonic's reconnect stores the refused connection and fails the next call at once), so
/// the balancer keeps picking it, and each fast failure is a low RTT sample to PeakEwma, which
/// makes it the cheapest endpoint. lblab's policies see the endpoint leave READY and stop.
#[test]
fn tower_keeps_sending_to_a_crashed_backend_and_its_fast_failures_are_failures_there() {
    let (crashed, reports) = run_each(&crash(), "crashy/0");
    let mut runs = Vec::new();
    for report in &reports {
        let r = &report.run.result;
        let sent: u64 = r.backend_sends.iter().sum();
        let share = r.backend_sends[crashed] as f64 / sent.max(1) as f64;
        let failed: u64 = r.backend_failures.iter().sum();
        eprintln!(
            "{}: {:?}, share to the crashed backend after the crash {share:.3}, failures per backend {:?}",
            report.name, r.summary, r.backend_failures
        );
        // Every failure is counted against the backend it happened at.
        assert_eq!(failed, r.summary.errors, "{}", report.name);
        runs.push((share, r.clone()));
    }
    let (rr_share, rr) = &runs[0];
    let (tower_share, tower) = &runs[1];
    assert!(
        *rr_share < 0.02 && rr.summary.errors <= 2,
        "round_robin leaves a crashed backend: {rr_share:.3}, {:?}",
        rr.summary
    );
    assert!(
        *tower_share > 0.25,
        "tower's balancer keeps picking the crashed backend, above its fair 1/4: {tower_share:.3}"
    );
    assert_eq!(
        tower.backend_failures[crashed], tower.summary.errors,
        "all of tower's failures are at the crashed backend"
    );
    let fails: Vec<_> = tower
        .failures
        .iter()
        .filter(|f| f.backend == crashed && f.errors > 0)
        .collect();
    assert!(!fails.is_empty());
    // Refused connections fail in about a millisecond, not at the deadline; 50 ms leaves room
    // for a loaded CI machine (seen: 5.7 ms with other builds on both cores).
    assert!(
        fails.iter().all(|f| f.error_mean_ms < 50.0),
        "refused calls fail fast: {fails:?}"
    );
}

#[test]
fn the_live_figures_end_at_what_the_run_measured() {
    let scenario = Scenario::parse(&one_slow()).expect("valid scenario");
    let live = std::sync::Arc::new(lblab_loadgen::run::Live::new());
    let options = HarnessOptions {
        floor: None,
        live: Some(live.clone()),
        ..HarnessOptions::default()
    };
    let report = run_one(&scenario, &scenario.policies[0], &options).expect("run");
    let r = &report.run.result.summary;
    // Calls that ended, warm-up included: every call sent (the time series' completions count
    // only OK and timed-out unary calls, and fast failures are none here).
    let completed: u64 = report
        .run
        .result
        .timeseries
        .iter()
        .map(|row| row.completed)
        .sum();
    assert_eq!(r.errors, 0, "no failures in this scenario");
    assert_eq!(live.ended(), completed);
    assert!(live.ended() >= r.ok, "{} < {}", live.ended(), r.ok);
    // The last p99 published is the summary's, to the histogram's precision.
    let p99_ms = live
        .p99_so_far()
        .expect("a p99 after the warm-up")
        .as_secs_f64()
        * 1e3;
    assert!(
        (p99_ms - r.p99_ms).abs() <= r.p99_ms * 1e-3,
        "{p99_ms} vs {}",
        r.p99_ms
    );
    assert!(live.run_time().as_secs_f64() >= 2.5);
}
