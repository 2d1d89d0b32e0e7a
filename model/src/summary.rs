//! What a run's summary says of its scenario ([`Scenario::run_head`]): the results schema lives a
//! floor down in `lblab_record`, which knows no scenarios, so the scenario hands it this.

use lblab_record::{FaultWindow, RunHead};

use crate::Scenario;

impl Scenario {
    /// What a [`RunSummary`](lblab_record::RunSummary) of a run of this scenario says before its
    /// rows: the name, seed, backends and fault windows, the warm-up and the measured time.
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
        }
    }
}
