//! Test helpers (cargo feature `testing`): [`ScenarioBuilder`] writes the small scenarios tests
//! run, so that each test states only what it is about instead of a page of TOML.
//!
//! The builder writes TOML text and parses it with [`Scenario::parse`], the path every real
//! scenario takes, rather than filling [`ScenarioFile`](crate::scenario::ScenarioFile) by hand:
//! defaults, validation and error messages are then exactly those of a file.
//!
//! ```
//! use lblab_model::testing::ScenarioBuilder;
//! let scenario = ScenarioBuilder::new("doc").rate(200.0).duration("1s").build()?;
//! assert_eq!(scenario.backends.len(), 4);
//! assert_eq!(scenario.policies[0].name, "round_robin");
//! # Ok::<(), lblab_model::FileError>(())
//! ```

use std::fmt::Write as _;

use crate::{FileError, Scenario};

/// The service config of the gRPC policy `lb` with no options, as written in `[[policies]]`.
pub fn lb_config(lb: &str) -> String {
    format!(r#"{{"loadBalancingConfig":[{{"{lb}":{{}}}}]}}"#)
}

/// A constant service time of `value` (e.g. `"2ms"`), as a `[[fleet]]` group writes it.
pub fn constant(value: &str) -> String {
    format!(r#"{{ dist = "constant", value = "{value}" }}"#)
}

/// A log-normal service time of median `median` and 99th percentile `p99` (e.g. `"2ms"`,
/// `"8ms"`), as a `[[fleet]]` group writes it.
pub fn lognormal(median: &str, p99: &str) -> String {
    format!(r#"{{ dist = "lognormal", median = "{median}", p99 = "{p99}" }}"#)
}

/// An exponential service time of mean `mean` (e.g. `"2ms"`), as a `[[fleet]]` group writes it.
pub fn exponential(mean: &str) -> String {
    format!(r#"{{ dist = "exponential", mean = "{mean}" }}"#)
}

/// A scenario for tests. Unset, it is: `rate = 500`, `duration = "2s"`, one group `main` of 4
/// backends with a constant 2 ms service time, and one policy `round_robin`; the seed, the
/// warm-up and every other field keep the file format's defaults. Values are TOML as written in
/// a scenario file (durations as `"2s"` strings without the quotes, which the builder adds);
/// names are plain (letters, digits, `-`, `_`, `/`): they are quoted with Rust's escaping.
#[derive(Debug, Clone)]
pub struct ScenarioBuilder {
    name: String,
    seed: Option<u64>,
    /// `[workload]` keys and their TOML values, in the order set (a key set again replaces).
    workload: Vec<(String, String)>,
    /// `[[workload.methods]]` tables, as `(name, share, factor)`.
    methods: Vec<(String, f64, f64)>,
    /// `[[fleet]]` tables: the group's name and its other keys as TOML lines (`count = 4`).
    fleet: Vec<(String, Vec<String>)>,
    /// `[[faults]]` tables' keys as TOML lines (`kind = "slowdown"`).
    faults: Vec<Vec<String>>,
    /// `[[policies]]`: label and service config JSON.
    policies: Vec<(String, String)>,
}

impl ScenarioBuilder {
    /// A scenario named `name` with the defaults above.
    pub fn new(name: &str) -> Self {
        ScenarioBuilder {
            name: name.to_string(),
            seed: None,
            workload: vec![
                ("rate".into(), "500".into()),
                ("duration".into(), "\"2s\"".into()),
            ],
            methods: Vec::new(),
            fleet: Vec::new(),
            faults: Vec::new(),
            policies: Vec::new(),
        }
    }

    /// Renames the scenario.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Sets `seed`.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets `[workload] key = value`, `value` being TOML (`"\"1s\""`, `"0.5"`); `None` removes
    /// the key (as `rate` must go for a closed loop).
    pub fn workload(mut self, key: &str, value: Option<&str>) -> Self {
        let at = self.workload.iter().position(|(k, _)| k == key);
        match (at, value) {
            (Some(i), Some(v)) => self.workload[i].1 = v.to_string(),
            (Some(i), None) => {
                self.workload.remove(i);
            }
            (None, Some(v)) => self.workload.push((key.to_string(), v.to_string())),
            (None, None) => {}
        }
        self
    }

    /// Sets the total request rate (requests per second).
    pub fn rate(self, rate: f64) -> Self {
        self.workload("rate", Some(&rate.to_string()))
    }

    /// Sets the number of clients.
    pub fn clients(self, clients: u32) -> Self {
        self.workload("clients", Some(&clients.to_string()))
    }

    /// Sets the measured duration, e.g. `"4s"`.
    pub fn duration(self, duration: &str) -> Self {
        self.workload("duration", Some(&format!("{duration:?}")))
    }

    /// Sets the warm-up, e.g. `"1s"`.
    pub fn warmup(self, warmup: &str) -> Self {
        self.workload("warmup", Some(&format!("{warmup:?}")))
    }

    /// Sets the arrival process: `"poisson"` (the file format's default), `"constant"` or
    /// `"closed"` (see [`closed`](Self::closed)).
    pub fn arrival(self, arrival: &str) -> Self {
        self.workload("arrival", Some(&format!("{arrival:?}")))
    }

    /// Sets the per-call deadline, e.g. `"1s"`.
    pub fn deadline(self, deadline: &str) -> Self {
        self.workload("deadline", Some(&format!("{deadline:?}")))
    }

    /// A closed loop of `concurrency` calls in flight per client (and no `rate`).
    pub fn closed(self, concurrency: u32) -> Self {
        self.workload("rate", None)
            .arrival("closed")
            .workload("concurrency", Some(&concurrency.to_string()))
    }

    /// Adds a `[[workload.methods]]` entry.
    pub fn method(mut self, name: &str, share: f64, factor: f64) -> Self {
        self.methods.push((name.to_string(), share, factor));
        self
    }

    /// Adds a `[[fleet]]` group of `count` backends with `service_time` (TOML, e.g.
    /// `{ dist = "constant", value = "2ms" }`) and any further keys (`extra`, TOML lines such as
    /// `"workers = 8"`).
    pub fn group(mut self, name: &str, count: u32, service_time: &str, extra: &[&str]) -> Self {
        let mut lines = vec![
            format!("count = {count}"),
            format!("service_time = {service_time}"),
        ];
        lines.extend(extra.iter().map(|line| line.to_string()));
        self.fleet.push((name.to_string(), lines));
        self
    }

    /// Sets `key = value` (`value` TOML, as in [`workload`](Self::workload); any key but `name`)
    /// in the `[[fleet]]` group `group` added before, replacing the key's line if it has one: a
    /// variant of a shared scenario. Panics if there is no such group.
    ///
    /// ```
    /// use lblab_model::testing::ScenarioBuilder;
    /// let constant = r#"{ dist = "constant", value = "2ms" }"#;
    /// let base = ScenarioBuilder::new("doc").group("main", 4, constant, &[]);
    /// assert_eq!(base.clone().group_key("main", "count", "2").build()?.backends.len(), 2);
    /// assert!(base.group_key("main", "count", "0").build().is_err());
    /// # Ok::<(), lblab_model::FileError>(())
    /// ```
    pub fn group_key(mut self, group: &str, key: &str, value: &str) -> Self {
        let (_, lines) = self
            .fleet
            .iter_mut()
            .find(|(name, _)| name == group)
            .unwrap_or_else(|| panic!("no [[fleet]] group {group:?} to set {key} in"));
        set_key(lines, key, value);
        self
    }

    /// Adds a `[[faults]]` entry of `kind` on `targets`, with its further keys as TOML lines
    /// (`"factor = 10"`).
    pub fn fault(mut self, kind: &str, targets: &[&str], keys: &[&str]) -> Self {
        let mut lines = vec![format!("kind = {kind:?}"), format!("targets = {targets:?}")];
        lines.extend(keys.iter().map(|line| line.to_string()));
        self.faults.push(lines);
        self
    }

    /// Sets `key = value` (TOML) in the `index`th `[[faults]]` entry (from 0, as `--vary
    /// faults.0.factor` counts), replacing the key's line if it has one. Panics if there is no
    /// such entry.
    ///
    /// ```
    /// use lblab_model::testing::ScenarioBuilder;
    /// let slow = ScenarioBuilder::new("doc").fault("slowdown", &["main"], &["factor = 10"]);
    /// assert!(slow.build().is_ok());
    /// let nan = slow.fault_key(0, "factor", "nan").toml();
    /// assert!(nan.contains("factor = nan\n") && !nan.contains("factor = 10"));
    /// ```
    pub fn fault_key(mut self, index: usize, key: &str, value: &str) -> Self {
        let lines = self
            .faults
            .get_mut(index)
            .unwrap_or_else(|| panic!("no [[faults]] entry {index} to set {key} in"));
        set_key(lines, key, value);
        self
    }

    /// Adds a `[[policies]]` entry labelled `name` with the service config JSON `config`.
    pub fn policy(mut self, name: &str, config: &str) -> Self {
        self.policies.push((name.to_string(), config.to_string()));
        self
    }

    /// Adds the gRPC policy `lb` with no options, labelled `name` ([`lb_config`]).
    pub fn lb(self, name: &str, lb: &str) -> Self {
        let config = lb_config(lb);
        self.policy(name, &config)
    }

    /// The scenario as TOML text.
    pub fn toml(&self) -> String {
        let mut out = format!("name = {:?}\n", self.name);
        if let Some(seed) = self.seed {
            let _ = writeln!(out, "seed = {seed}");
        }
        out.push_str("[workload]\n");
        for (k, v) in &self.workload {
            let _ = writeln!(out, "{k} = {v}");
        }
        for (name, share, factor) in &self.methods {
            let _ = writeln!(
                out,
                "[[workload.methods]]\nname = {name:?}\nshare = {share}\nfactor = {factor}"
            );
        }
        if self.fleet.is_empty() {
            out.push_str(
                "[[fleet]]\nname = \"main\"\ncount = 4\nservice_time = { dist = \"constant\", value = \"2ms\" }\n",
            );
        }
        for (name, lines) in &self.fleet {
            let _ = writeln!(out, "[[fleet]]\nname = {name:?}");
            for line in lines {
                let _ = writeln!(out, "{line}");
            }
        }
        for lines in &self.faults {
            out.push_str("[[faults]]\n");
            for line in lines {
                let _ = writeln!(out, "{line}");
            }
        }
        if self.policies.is_empty() {
            let _ = writeln!(
                out,
                "[[policies]]\nname = \"round_robin\"\nconfig = '{}'",
                lb_config("round_robin")
            );
        }
        for (name, config) in &self.policies {
            // A literal string: JSON's double quotes need no escaping in it.
            let _ = writeln!(out, "[[policies]]\nname = {name:?}\nconfig = '{config}'");
        }
        out
    }

    /// The scenario parsed and validated ([`Scenario::parse`] of [`toml`](Self::toml)).
    pub fn build(&self) -> Result<Scenario, FileError> {
        Scenario::parse(&self.toml())
    }
}

/// Sets `key = value` in a table's TOML lines: replaces the line that sets `key`, or adds one.
fn set_key(lines: &mut Vec<String>, key: &str, value: &str) {
    let line = format!("{key} = {value}");
    let sets_key = |l: &String| l.split_once('=').is_some_and(|(k, _)| k.trim() == key);
    match lines.iter().position(sets_key) {
        Some(i) => lines[i] = line,
        None => lines.push(line),
    }
}
