//! How the simulator's speed scales: one-slow (31 s at 2,000 requests/s) with 20, 1,000 and
//! 10,000 backends and with 1, 4 and 100 clients, simulated requests per second of the
//! simulating thread's CPU time (median of 3 runs; setup included). Thread CPU time, unlike wall
//! time, is not inflated when other work shares the cores.
//!
//! ```sh
//! cargo run --release -p lblab-sim --example scaling
//! ```
use lblab_model::scenario::ScenarioFile;
use lblab_model::units::Dur;
use lblab_model::Scenario;
fn main() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/one-slow.toml"
    ))
    .unwrap();
    for (backends, clients) in [(20u32, 4u32), (1000, 4), (10_000, 4), (20, 1), (20, 100)] {
        let mut file: ScenarioFile = toml::from_str(&text).unwrap();
        file.fleet[0].count = backends - 1;
        file.workload.clients = clients;
        file.workload.warmup = Dur(1_000_000_000);
        file.workload.duration = Dur(30_000_000_000);
        let s = Scenario::validate(file).unwrap();
        for name in ["round_robin", "peak_ewma"] {
            let p = s.policies.iter().find(|p| p.name == name).unwrap();
            let mut rates = vec![];
            let mut requests = 0;
            for _ in 0..3 {
                let r = lblab_sim::run_policy(&s, p, &Default::default()).unwrap();
                rates.push(r.requests_per_cpu_sec().unwrap());
                requests = r.stats.requests;
            }
            rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!("backends={backends:5} clients={clients:3} {name:12} median {:.2} M req/CPU-s (min {:.2} max {:.2}), {requests} requests", rates[1] / 1e6, rates[0] / 1e6, rates[2] / 1e6);
        }
    }
}
