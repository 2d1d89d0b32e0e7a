//! What a run's summary says of its scenario ([`Scenario::run_head`]): the results schema lives a
//! floor down in `lblab_record`, which knows no scenarios, so the scenario hands it this.

use lblab_policy::config::Selected;
use lblab_record::{Experiment, FaultWindow, PolicyConfigRow, RunHead};
use sha2::{Digest as _, Sha256};

use crate::scenario::Arrival;

use crate::Scenario;

impl Scenario {
    /// What a [`RunSummary`](lblab_record::RunSummary) of a run of this scenario says before its
    /// rows: the name, seed, backends and fault windows, the warm-up and the measured time, and
    /// every policy's normalized config.
    pub fn run_head(&self) -> RunHead {
        RunHead {
            scenario: self.file.name.clone(),
            seed: self.file.seed,
            backends: self.backends.iter().map(|b| b.name.clone()).collect(),
            fault_windows: self
                .fault_windows()
                .into_iter()
                .map(|(backend, s, e)| FaultWindow {
                    backend,
                    start_s: s as f64 / 1e9,
                    end_s: e as f64 / 1e9,
                })
                .collect(),
            warmup_s: self.workload.warmup as f64 / 1e9,
            measured_s: self.workload.duration as f64 / 1e9,
            policies: self
                .policies
                .iter()
                .map(|p| PolicyConfigRow {
                    policy: p.name.clone(),
                    config: match &p.selected {
                        Selected::Policy(c) => c.to_json(),
                        Selected::Extra { name, config } => serde_json::json!({ name: config }),
                    },
                    fingerprint: match &p.selected {
                        Selected::Policy(c) => Some(c.fingerprint()),
                        Selected::Extra { .. } => None,
                    },
                })
                .collect(),
            experiment: Some(self.experiment()),
        }
    }

    /// What makes this scenario's runs one experiment ([`Experiment`]): the hash of the
    /// scenario as it runs, in canonical JSON, with what load-generator shards differ in (seed,
    /// clients, rate, policies) cleared, and the rate per client.
    pub fn experiment(&self) -> Experiment {
        let mut canonical = self.file.clone();
        canonical.seed = 0;
        canonical.workload.clients = 0;
        canonical.workload.rate = 0.0;
        canonical.policies.clear();
        // Serializing plain data (no maps, no non-string keys) cannot fail; were it to, the
        // empty text still hashes the same for every shard.
        let json = serde_json::to_vec(&canonical).unwrap_or_default();
        let w = &self.file.workload;
        Experiment {
            scenario_sha256: format!("{:x}", Sha256::digest(&json)),
            rate_per_client: (w.arrival != Arrival::Closed)
                .then(|| w.rate / f64::from(w.clients.max(1))),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{constant, ScenarioBuilder};

    #[test]
    fn the_head_records_each_policy_as_the_parser_normalizes_it() {
        let scenario = ScenarioBuilder::new("configs")
            .group("main", 2, &constant("2ms"), &[])
            .lb("rr", "round_robin")
            .policy(
                "pe",
                r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{"decayTime":"5s"}}]}"#,
            )
            .build()
            .expect("valid scenario");
        let head = scenario.run_head();
        let labels: Vec<&str> = head.policies.iter().map(|p| p.policy.as_str()).collect();
        assert_eq!(labels, ["rr", "pe"]);
        let pe = &head.policies[1].config["peak_ewma_experimental"];
        // The defaults filled in, the lab-only semantics too: which algorithm ran.
        assert_eq!(pe["decayTime"], "5s");
        assert_eq!(pe["choiceCount"], 2);
        assert_eq!(pe["lblabAblation"]["peak"], "stalled");
        // And what the rules behind that config did, so a later version of them is told apart.
        let parsed = lblab_policy::config::parse_policy(
            "peak_ewma_experimental",
            pe,
            "peak_ewma_experimental",
        )
        .expect("parses back");
        assert_eq!(head.policies[1].fingerprint, Some(parsed.fingerprint()));
        assert_ne!(head.policies[0].fingerprint, head.policies[1].fingerprint);
    }

    #[test]
    fn the_experiment_ignores_what_shards_split_and_sees_what_changes_the_run() {
        let base = ScenarioBuilder::new("exp").clients(4).rate(400.0).group(
            "main",
            2,
            &constant("2ms"),
            &[],
        );
        let of = |b: ScenarioBuilder| b.build().expect("valid scenario").experiment();
        let whole = of(base.clone().lb("rr", "round_robin"));
        assert_eq!(whole.rate_per_client, Some(100.0));
        // A shard: a quarter of the clients and of the rate, its own seed and another policy.
        let shard = of(base
            .clone()
            .clients(1)
            .rate(100.0)
            .seed(9)
            .lb("pe", "peak_ewma_experimental"));
        assert_eq!(shard, whole);
        // Another deadline, a tenfold rate per client, another fleet: other experiments.
        let deadline = of(base.clone().deadline("2s").lb("rr", "round_robin"));
        assert_ne!(deadline.scenario_sha256, whole.scenario_sha256);
        let faster = of(base.clone().rate(4000.0).lb("rr", "round_robin"));
        assert_eq!(faster.scenario_sha256, whole.scenario_sha256);
        assert_eq!(faster.rate_per_client, Some(1000.0));
        let fleet = of(base.group_key("main", "count", "3").lb("rr", "round_robin"));
        assert_ne!(fleet.scenario_sha256, whole.scenario_sha256);
        assert_eq!(whole.scenario_sha256.len(), 64);
    }
}
