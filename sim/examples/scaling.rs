//! How the simulator's speed scales: one-slow with 20, 1,000 and 10,000 backends and with 1, 4 and
//! 100 clients, in simulated requests per second of the simulating thread's CPU time (median of 3
//! runs; setup included). Thread CPU time, unlike wall time, is not inflated when other work shares
//! the cores.
//!
//! The request rate grows with the fleet (100 requests/s per backend, the canonical one-slow's
//! utilization) so that every backend serves hundreds of requests and setup does not dominate:
//! 31 s at 2,000 requests/s for 20 backends, 3 s at 1,000,000 requests/s for 10,000.
//!
//! ```sh
//! cargo run --release -p lblab-sim --example scaling
//! cargo run --release -p lblab-sim --example scaling -- 10000 4 peak_ewma   # one configuration
//! ```

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's
use lblab_model::scenario::ScenarioFile;
use lblab_model::units::Dur;
use lblab_model::Scenario;

/// (backends, clients, seconds measured after 1 s of warm-up).
const CONFIGS: [(u32, u32, u64); 5] = [
    (20, 4, 30),
    (1000, 4, 10),
    (10_000, 4, 2),
    (20, 1, 30),
    (20, 100, 30),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let only = |i: usize, value: &str| args.get(i).is_none_or(|a| a == value);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/one-slow.toml"
    ))
    .expect("scenarios/one-slow.toml is readable");
    for (backends, clients, seconds) in CONFIGS {
        if !only(0, &backends.to_string()) || !only(1, &clients.to_string()) {
            continue;
        }
        let mut file: ScenarioFile = toml::from_str(&text).expect("one-slow parses");
        file.fleet[0].count = backends - 1;
        file.workload.clients = clients;
        file.workload.rate = 100.0 * f64::from(backends);
        file.workload.warmup = Dur(1_000_000_000);
        file.workload.duration = Dur(seconds * 1_000_000_000);
        let s = Scenario::validate(file).expect("the scaled scenario is valid");
        for name in ["round_robin", "peak_ewma"] {
            if !only(2, name) {
                continue;
            }
            let p = s.policies.iter().find(|p| p.name == name).expect("policy");
            let mut rates = vec![];
            let mut requests = 0;
            for _ in 0..3 {
                let r = lblab_sim::run_policy(&s, p, &Default::default()).expect("simulates");
                rates.push(
                    r.requests_per_cpu_sec()
                        .expect("thread CPU time is measured"),
                );
                requests = r.stats.requests;
            }
            rates.sort_by(f64::total_cmp);
            println!(
                "backends={backends:5} clients={clients:3} {name:12} median {:.2} M req/CPU-s (min {:.2} max {:.2}), {requests} requests",
                rates[1] / 1e6,
                rates[0] / 1e6,
                rates[2] / 1e6
            );
        }
    }
}
