//! Simulator throughput: simulated requests per wall-clock second on one core, for one-slow as
//! committed and scaled to 1,000 and 10,000 backends and to 100 clients.
//!
//! `cargo bench -p lblab-sim --bench engine`; criterion reports "elements/s" = requests/s.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lblab_model::scenario::ScenarioFile;
use lblab_model::units::Dur;
use lblab_model::Scenario;

fn one_slow(backends: u32, clients: u32) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/one-slow.toml");
    let text = std::fs::read_to_string(&path).expect("scenarios/one-slow.toml");
    let mut file: ScenarioFile = toml::from_str(&text).expect("valid scenario");
    file.fleet[0].count = backends - 1;
    file.workload.clients = clients;
    file.workload.warmup = Dur(1_000_000_000);
    file.workload.duration = Dur(10_000_000_000);
    Scenario::validate(file).expect("valid scenario")
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("one_slow");
    group.sample_size(10);
    for (backends, clients) in [(20, 4), (1000, 4), (10_000, 4), (20, 1), (20, 100)] {
        let scenario = one_slow(backends, clients);
        for policy in ["round_robin", "peak_ewma"] {
            let entry = scenario
                .policies
                .iter()
                .find(|p| p.name == policy)
                .expect("policy");
            // Expected request count (Poisson arrivals: within a fraction of a percent); computed,
            // not simulated, so filtering to one benchmark does not run the others' setup.
            let w = &scenario.workload;
            let requests = (w.rate * w.end() as f64 / 1e9) as u64;
            group.throughput(Throughput::Elements(requests));
            group.bench_function(
                format!("{policy}/backends={backends}/clients={clients}"),
                |b| {
                    b.iter(|| {
                        lblab_sim::run_policy(&scenario, entry, &Default::default()).expect("runs")
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
