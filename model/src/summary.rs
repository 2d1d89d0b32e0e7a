//! What a run's summary says of its scenario ([`Scenario::run_head`]): the results schema lives a
//! floor down in `lblab_record`, which knows no scenarios, so the scenario hands it this.

use lblab_policy::config::Selected;
use lblab_record::{FaultWindow, PolicyConfigRow, RunHead};

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
                })
                .collect(),
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
    }
}
