//! The pods' shell scripts: files in `scripts/` built into the binary (`include_str!`), whose
//! `@NAME@` placeholders take the deployment's values ([`fill`]). The values are numbers, fixed
//! paths and the lines this module makes (the shards' and policies' `case` arms, the target
//! list), never text from outside; a policy's label is single-quoted for `sh` ([`sh_quote`]).

use crate::ShardLoad;

/// The fleet's pod: backend `JOB_COMPLETION_INDEX` of the scenario in each policy's slot.
const FLEET: &str = include_str!("scripts/fleet.sh");
/// A load generator's pod: shard `JOB_COMPLETION_INDEX` of the clients in each policy's slot.
const LOADGEN: &str = include_str!("scripts/loadgen.sh");
/// The load generator's targets: the fleet's headless Service, re-resolved.
const TARGETS_DNS: &str = include_str!("scripts/targets-dns.sh");
/// The load generator's targets: each fleet pod by its own name, in scenario order.
const TARGETS_PODS: &str = include_str!("scripts/targets-pods.sh");
/// The collector's pod: waits for every shard, merges each policy's shards.
const COLLECT: &str = include_str!("scripts/collect.sh");
/// A pod's check-in with the start barrier, the start kept for a restarted container.
const JOIN: &str = include_str!("scripts/join.sh");
/// A design search's pod: shard `JOB_COMPLETION_INDEX` of the sweep's points.
const SWEEP: &str = include_str!("scripts/sweep.sh");
/// A design search's collector: waits for every shard, merges them into one sweep.
const SWEEP_COLLECT: &str = include_str!("scripts/sweep-collect.sh");

/// What the fleet's script runs.
pub(crate) struct Fleet<'a> {
    /// The scenario's backends.
    pub backends: usize,
    /// The policies, one slot each.
    pub policies: usize,
    /// Seconds per slot.
    pub slot: u64,
    /// Seconds a fleet listens before its slot.
    pub lead: u64,
    /// The scenario file in the pod.
    pub scenario: &'a str,
    /// The port every backend listens on.
    pub port: u16,
    /// Its check-in with the start barrier ([`join`]), or nothing.
    pub join: &'a str,
}

/// The fleet's script.
pub(crate) fn fleet(f: &Fleet<'_>) -> String {
    fill(
        FLEET,
        &[
            ("BACKENDS", f.backends.to_string()),
            ("POLICIES", f.policies.to_string()),
            ("SLOT", f.slot.to_string()),
            ("LEAD", f.lead.to_string()),
            ("SCENARIO", f.scenario.to_string()),
            ("PORT", f.port.to_string()),
            ("JOIN", f.join.to_string()),
        ],
    )
}

/// How a pod checks in with the start barrier.
pub(crate) struct Join<'a> {
    /// The suffix of the pod's Job's name (`-fleet`): the starter's Service is named as the Job
    /// with `-start` in its place, so that a kustomize prefix or suffix renames both alike.
    pub job_suffix: &'a str,
    /// The pod's id, for `sh` (`fleet-$ordinal`).
    pub id: &'a str,
    /// The starter's port.
    pub port: u16,
    /// The starter's wait, seconds.
    pub wait: u64,
    /// Where the start is kept (on a volume that outlives the container).
    pub start_file: &'a str,
}

/// A pod's check-in with the start barrier: sets `START_AT` to the common start.
pub(crate) fn join(j: &Join<'_>) -> String {
    fill(
        JOIN,
        &[
            ("START_FILE", j.start_file.to_string()),
            ("JOB", j.job_suffix.to_string()),
            ("PORT", j.port.to_string()),
            ("ID", j.id.to_string()),
            ("WAIT", j.wait.to_string()),
        ],
    )
}

/// What a load generator's script runs.
pub(crate) struct Loadgen<'a> {
    /// The shards of the clients, by completion index.
    pub loads: &'a [ShardLoad],
    /// A closed loop: no rate is given.
    pub closed: bool,
    /// The policies' labels, one slot each in this order.
    pub policies: &'a [&'a str],
    /// Whether the fleet is found by `dns:///` rather than by each pod's name.
    pub dns: bool,
    /// The scenario's backends.
    pub backends: usize,
    /// The port every backend listens on.
    pub port: u16,
    /// Seconds per slot.
    pub slot: u64,
    /// The scenario file in the pod.
    pub scenario: &'a str,
    /// Where the results volume is mounted.
    pub results: &'a str,
    /// Its check-in with the start barrier ([`join`]), or nothing.
    pub join: &'a str,
}

/// A load generator's script.
pub(crate) fn loadgen(l: &Loadgen<'_>) -> String {
    let shard_cases: String = l
        .loads
        .iter()
        .enumerate()
        .map(|(i, load)| {
            let rate = if l.closed {
                String::new()
            } else {
                format!(" rate={}", load.rate)
            };
            format!(
                "  {i}) clients={}{rate} seed={} ;;\n",
                load.clients, load.seed
            )
        })
        .collect();
    let policy_cases: String = l
        .policies
        .iter()
        .enumerate()
        .map(|(k, label)| format!("    {k}) policy={} ;;\n", sh_quote(label)))
        .collect();
    let targets = fill(
        if l.dns { TARGETS_DNS } else { TARGETS_PODS },
        &[
            ("BACKENDS", l.backends.to_string()),
            ("PORT", l.port.to_string()),
        ],
    );
    // The rate is a flag of its own: a closed loop has none.
    let rate_flag = if l.closed { "" } else { " --rate \"$rate\"" };
    fill(
        LOADGEN,
        &[
            ("SHARD_CASES", shard_cases.trim_end().to_string()),
            ("SHARDS", l.loads.len().to_string()),
            ("TARGETS", targets.trim_end().to_string()),
            ("SLOT", l.slot.to_string()),
            ("POLICIES", l.policies.len().to_string()),
            ("POLICY_CASES", policy_cases.trim_end().to_string()),
            ("SCENARIO", l.scenario.to_string()),
            ("RATE_FLAG", rate_flag.to_string()),
            ("RESULTS", l.results.to_string()),
            ("JOIN", l.join.to_string()),
        ],
    )
}

/// What the collector's script runs.
pub(crate) struct Collect<'a> {
    /// The policies, one slot each.
    pub policies: usize,
    /// Seconds per slot.
    pub slot: u64,
    /// Seconds after the last slot until which it waits for unfinished shards.
    pub grace: u64,
    /// The load generators' shards.
    pub shards: usize,
    /// Where the results volume is mounted.
    pub results: &'a str,
    /// Its check-in with the start barrier ([`join`]), or nothing.
    pub join: &'a str,
}

/// The collector's script.
pub(crate) fn collect(c: &Collect<'_>) -> String {
    fill(
        COLLECT,
        &[
            ("RESULTS", c.results.to_string()),
            ("POLICIES", c.policies.to_string()),
            ("SLOT", c.slot.to_string()),
            ("GRACE", c.grace.to_string()),
            ("SHARDS", c.shards.to_string()),
            ("JOIN", c.join.to_string()),
        ],
    )
}

/// What a design search's shard runs.
pub(crate) struct Sweep<'a> {
    /// `lblab sweep`'s arguments after the scenario, each quoted for `sh` here.
    pub args: &'a [String],
    /// The shards.
    pub shards: usize,
    /// The scenario file in the pod.
    pub scenario: &'a str,
    /// Where the results volume is mounted.
    pub results: &'a str,
    /// The sweep's folder on the volume.
    pub folder: &'a str,
}

/// A design search's shard's script.
pub(crate) fn sweep(s: &Sweep<'_>) -> String {
    let args: Vec<String> = s.args.iter().map(|a| sh_quote(a)).collect();
    fill(
        SWEEP,
        &[
            ("SHARDS", s.shards.to_string()),
            ("RESULTS", s.results.to_string()),
            ("FOLDER", s.folder.to_string()),
            ("SCENARIO", s.scenario.to_string()),
            ("ARGS", args.join(" ")),
        ],
    )
}

/// What a design search's collector runs.
pub(crate) struct SweepCollect<'a> {
    /// The shards.
    pub shards: usize,
    /// Attempts of a shard before Kubernetes gives up on it.
    pub attempts: u32,
    /// The shards' Job.
    pub job: &'a str,
    /// Where the results volume is mounted.
    pub results: &'a str,
    /// The sweep's folder on the volume.
    pub folder: &'a str,
}

/// A design search's collector's script.
pub(crate) fn sweep_collect(c: &SweepCollect<'_>) -> String {
    fill(
        SWEEP_COLLECT,
        &[
            ("RESULTS", c.results.to_string()),
            ("FOLDER", c.folder.to_string()),
            ("ATTEMPTS", c.attempts.to_string()),
            ("SHARDS", c.shards.to_string()),
            ("JOB", c.job.to_string()),
        ],
    )
}

/// Single-quotes `s` for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `template` with each `@NAME@` whose `NAME` is in `values` replaced by its value, in one pass
/// (a value is never searched for placeholders); any other `@` is kept as it is.
fn fill(template: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(at) = rest.find('@') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let value = after.find('@').and_then(|end| {
            values
                .iter()
                .find(|(name, _)| *name == &after[..end])
                .map(|(name, value)| (name.len(), value))
        });
        match value {
            Some((len, value)) => {
                out.push_str(value);
                rest = &after[len + 1..];
            }
            None => {
                out.push('@');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `@NAME@` placeholders of `template`.
    fn placeholders(template: &str) -> Vec<&str> {
        template
            .split('@')
            .skip(1)
            .step_by(2)
            .filter(|name| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
            .collect()
    }

    #[test]
    fn every_placeholder_is_filled() {
        let loads = [ShardLoad {
            clients: 2,
            rate: 10.0,
            seed: 1,
        }];
        let joins = join(&Join {
            job_suffix: "-fleet",
            id: "fleet-$ordinal",
            port: 6,
            wait: 600,
            start_file: "/run/s",
        });
        let scripts = [
            fleet(&Fleet {
                backends: 3,
                policies: 2,
                slot: 90,
                lead: 20,
                scenario: "/s.toml",
                port: 5,
                join: &joins,
            }),
            loadgen(&Loadgen {
                loads: &loads,
                closed: false,
                policies: &["rr", "p'e"],
                dns: false,
                backends: 3,
                port: 5,
                slot: 90,
                scenario: "/s.toml",
                results: "/r",
                join: "",
            }),
            collect(&Collect {
                policies: 2,
                slot: 90,
                grace: 300,
                shards: 1,
                results: "/r",
                join: "",
            }),
            sweep(&Sweep {
                args: &["--vary".into(), "workload.rate=1,2".into()],
                shards: 2,
                scenario: "/s.toml",
                results: "/r",
                folder: "sweep-1",
            }),
            sweep_collect(&SweepCollect {
                shards: 2,
                attempts: 3,
                job: "lab-shards",
                results: "/r",
                folder: "sweep-1",
            }),
        ];
        for template in [
            FLEET,
            JOIN,
            LOADGEN,
            TARGETS_DNS,
            TARGETS_PODS,
            COLLECT,
            SWEEP,
            SWEEP_COLLECT,
        ] {
            assert!(!placeholders(template).is_empty(), "{template}");
        }
        for script in &scripts {
            assert!(placeholders(script).is_empty(), "{script}");
        }
        assert!(
            scripts[1].contains("    1) policy='p'\\''e' ;;\n  esac\n"),
            "{}",
            scripts[1]
        );
        assert!(
            scripts[0].contains(
                "starter=\"${JOB_NAME%-fleet*}-start${JOB_NAME##*-fleet}:6\"\n  START_AT=\"$(lblab \
                 barrier join \"$starter\" --id \"fleet-$ordinal\" --start-at \"$START_AT\" --wait \
                 600s)\""
            ),
            "{}",
            scripts[0]
        );
        assert!(
            scripts[3].contains(
                "lblab sweep /s.toml '--vary' 'workload.rate=1,2' --shard \"$i/2\" --out \"$dir/shard-$i\""
            ),
            "{}",
            scripts[3]
        );
    }

    #[test]
    fn a_value_is_not_searched_for_placeholders() {
        let filled = fill("a @X@ b @Y@ c@", &[("X", "@Y@".into()), ("Y", "y".into())]);
        assert_eq!(filled, "a @Y@ b y c@");
    }
}
