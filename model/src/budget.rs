//! How much memory a run of a scenario will need, estimated from the scenario before any work, so
//! that a small file asking for too much (a year at a trickle, 100,000 backends for an hour, 1e8
//! calls a second held for their whole deadline) is refused with a clear message instead of
//! exhausting the machine and losing everything.
//!
//! The estimate counts what grows with the scenario: per policy and second of the run in which a
//! call is sent or completes (at most twice the calls: a quiet second has no row), a row of
//! per-backend traffic shares and an interval histogram (kept until the results are written);
//! per policy instance, its state per client and backend; per call in flight, its request state.
//! The constants are fit to the peak resident memory of `lblab sim` measured on a few kinds of
//! input (many backends, a long run, many policies, a closed loop, a high rate:
//! `scripts/memory-estimates.sh`, `results/memory/`), so that the estimate is 1 to 1.5 times the
//! measured peak there, plus [`BASE`] for the process itself. The constants of what a run records,
//! which a merge of runs counts too, are [`lblab_record::memory`]'s.

use lblab_message::setting::{Named, Names, Setting};
pub use lblab_record::memory::{merged, size, Estimate};
use lblab_record::memory::{BASE, PER_POLICY, PER_SECOND, PER_SECOND_BACKEND};

use crate::fault::FaultSpec;
use crate::scenario::Arrival;
use crate::scenario::Scenario;

/// Bytes a run may use unless told otherwise: 8 GiB.
pub const DEFAULT_BUDGET: u64 = 8 << 30;

/// Per policy instance (client), client and backend: the endpoint's slot and connection state.
const PER_CLIENT_BACKEND: u64 = 256;
/// Per call that may be in flight in the simulator (the open loop's rate times the deadline, at
/// most what the backends have room for, [`sim_room`]; `results/memory/`).
const PER_CALL_SIM: u64 = 24;
/// Per call in flight in the real load generator (its future, the HTTP/2 stream, buffers).
const PER_CALL_REAL: u64 = 4 << 10;

/// Which side runs the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The simulator: `jobs` policies at once.
    Sim {
        /// Policies simulated at once.
        jobs: usize,
    },
    /// The real load generator: one policy at a time.
    Real,
}

/// How many unary calls the simulator can hold at once in an open loop, if that is bounded: a
/// backend holds at most its workers and its queue (more are refused at once) and the network
/// the calls of one round trip. Unbounded (`u64::MAX`) where calls can be held elsewhere until
/// their deadline or beyond: a black hole swallows them, a crash leaves them waiting at the
/// client, a stream holds no worker.
fn sim_room(scenario: &Scenario) -> u64 {
    let holds_elsewhere = scenario
        .file
        .faults
        .iter()
        .any(|f| matches!(f, FaultSpec::Crash { .. } | FaultSpec::BlackHole { .. }));
    if holds_elsewhere || scenario.workload.streaming_share > 0.0 {
        return u64::MAX;
    }
    let room = scenario
        .backends
        .iter()
        .map(|b| u64::from(b.params.workers) + u64::from(b.params.queue_limit))
        .fold(0u64, u64::saturating_add);
    let rtt = scenario
        .backends
        .iter()
        .map(|b| b.network_rtt)
        .max()
        .unwrap_or(0);
    let on_the_wire = (scenario.file.workload.rate * rtt as f64 / 1e9).ceil() as u64;
    room.saturating_add(on_the_wire)
}

/// The memory a run of `policies` policies of `scenario` needs, roughly (see the module docs).
pub fn estimate(scenario: &Scenario, policies: usize, mode: Mode) -> Estimate {
    let w = &scenario.workload;
    let backends = scenario.backends.len() as u64;
    let clients = u64::from(scenario.file.workload.clients.max(1));
    let horizon_ns = w.end() + w.drain();
    // Seconds with a row: every one, or at most a send's and a completion's second per call.
    let calls = match w.arrival {
        Arrival::Closed => u64::MAX,
        _ => (scenario.file.workload.rate * w.end() as f64 / 1e9).ceil() as u64,
    };
    let seconds = horizon_ns
        .div_ceil(1_000_000_000)
        .min(calls.saturating_mul(2).saturating_add(1));
    let policies = policies as u64;
    let live = match mode {
        Mode::Sim { jobs } => (jobs as u64).clamp(1, policies.max(1)),
        Mode::Real => 1,
    };
    let in_flight = match mode {
        Mode::Sim { .. } if w.arrival != Arrival::Closed => {
            in_flight(scenario).min(sim_room(scenario))
        }
        _ => in_flight(scenario),
    };
    let per_call = match mode {
        Mode::Sim { .. } => PER_CALL_SIM,
        Mode::Real => PER_CALL_REAL,
    };
    let parts = [
        (
            policies.saturating_mul(seconds).saturating_mul(
                PER_SECOND.saturating_add(backends.saturating_mul(PER_SECOND_BACKEND)),
            ),
            format!(
                "{seconds} seconds × {backends} backends of time series for {policies} policies"
            ),
        ),
        (
            live.saturating_mul(clients)
                .saturating_mul(backends)
                .saturating_mul(PER_CLIENT_BACKEND),
            format!("{clients} clients × {backends} backends of policy state, {live} at a time"),
        ),
        (
            live.saturating_mul(in_flight).saturating_mul(per_call),
            format!("{in_flight} calls in flight at once"),
        ),
        (
            policies.saturating_mul(PER_POLICY),
            format!("{policies} policies' histograms"),
        ),
        (BASE, "the program itself".to_string()),
    ];
    Estimate::of(&parts)
}

/// The calls of a run of `scenario` that may be in flight at once: the closed loop's clients ×
/// calls each, or the open loop's rate times how long a call can stay (its deadline, at most the
/// run and its drain).
pub fn in_flight(scenario: &Scenario) -> u64 {
    let w = &scenario.workload;
    if w.arrival == Arrival::Closed {
        let clients = u64::from(scenario.file.workload.clients.max(1));
        return clients.saturating_mul(u64::from(w.concurrency));
    }
    let stay = w.deadline.min(w.end() + w.drain()) as f64 / 1e9;
    (scenario.file.workload.rate * stay).ceil() as u64
}

/// Per client's connection to a backend process: its HTTP/2 state and buffers. Measured with
/// its calls (below): at most 65 KiB.
const PER_CONNECTION: u64 = 64 << 10;

/// The memory of one process serving one backend of `scenario` (`lblab backend --index k`, a
/// backend pod), roughly: the process itself ([`BASE`]), a connection per client, and every call
/// of the run that may be in flight at once ([`in_flight`]), which a backend may hold if a policy
/// sends it everything or a black hole keeps calls until their deadline, at the load generator's
/// cost per call. Measured (`results/memory/README.md`, release build): 9.4 MiB idle, 12.6 MiB
/// at 1,000 calls/s over 50 clients' connections, 15.1 MiB holding about 3,000 calls (2.0 KiB
/// each); the estimate errs high.
pub fn backend_process(scenario: &Scenario) -> Estimate {
    let clients = u64::from(scenario.file.workload.clients.max(1));
    let calls = in_flight(scenario);
    let parts = [
        (
            clients.saturating_mul(PER_CONNECTION),
            format!("{clients} clients' connections"),
        ),
        (
            calls.saturating_mul(PER_CALL_REAL),
            format!("{calls} calls in flight at once"),
        ),
        (BASE, "the program itself".to_string()),
    ];
    Estimate::of(&parts)
}

/// Per scenario a sweep plans (one per point and seed, held until the sweep ends): the scenario's
/// fixed part, its parsed file and its fault timelines.
const PER_PLANNED_SCENARIO: u64 = 8 << 10;
/// Per backend of a planned scenario.
const PER_PLANNED_BACKEND: u64 = 512;

/// The memory a sweep's plan needs before its first simulation: `scenarios` planned scenarios
/// (points × seeds) of about `backends` backends each.
pub fn sweep_plan(scenarios: u64, backends: usize) -> Estimate {
    let per =
        PER_PLANNED_SCENARIO.saturating_add((backends as u64).saturating_mul(PER_PLANNED_BACKEND));
    Estimate {
        bytes: scenarios.saturating_mul(per),
        largest: format!("{scenarios} planned scenarios (points × seeds) of {backends} backends"),
    }
}

/// A run over its memory budget, or a budget that is not a size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// A planned job (a sweep, a search) whose estimate is above the budget.
    #[error("{}", self.named(Setting::word))]
    Job {
        /// The job ("this sweep").
        what: String,
        /// Its estimate, bytes.
        needed: u64,
        /// The estimate's largest part, in words.
        largest: String,
        /// The budget, bytes.
        budget: u64,
    },
    /// A scenario's run whose estimate is above the budget.
    #[error("{}", self.named(Setting::word))]
    Run {
        /// The scenario's name.
        scenario: String,
        /// Its estimate, bytes.
        needed: u64,
        /// The estimate's largest part, in words.
        largest: String,
        /// The budget, bytes.
        budget: u64,
    },
    /// A budget that is not a size.
    #[error("`{0}` is not a size such as 8GiB or 512MiB")]
    NotASize(String),
    /// A budget of 0 or less.
    #[error("`{0}` must be a positive size")]
    NotPositive(String),
}

impl Named for BudgetError {
    /// The message, the budget's setting spelt by `names`.
    fn named(&self, names: Names) -> String {
        let setting = names(Setting::MemoryBudget);
        match self {
            BudgetError::Job {
                what,
                needed,
                largest,
                budget,
            } => format!(
                "{what} would need about {} of memory (mostly {largest}), more than the budget of \
                 {}; make it smaller, or raise the budget with {setting}",
                size(*needed),
                size(*budget)
            ),
            BudgetError::Run {
                scenario,
                needed,
                largest,
                budget,
            } => format!(
                "scenario {scenario}: this run would need about {} of memory (mostly {largest}), \
                 more than the budget of {}; shorten the run, use fewer backends, clients, \
                 policies or calls in flight, or raise the budget with {setting}",
                size(*needed),
                size(*budget)
            ),
            BudgetError::NotASize(given) => {
                format!("`{given}` is not a size such as 8GiB or 512MiB")
            }
            BudgetError::NotPositive(given) => format!("`{given}` must be a positive size"),
        }
    }
}

/// `Err` when the estimate `e` of `what` is above `budget`.
pub fn check_estimate(what: &str, e: &Estimate, budget: u64) -> Result<(), BudgetError> {
    if e.bytes <= budget {
        return Ok(());
    }
    Err(BudgetError::Job {
        what: what.to_string(),
        needed: e.bytes,
        largest: e.largest.clone(),
        budget,
    })
}

/// `Err` naming the scenario, the estimate and its largest part when the estimate is above
/// `budget`.
pub fn check(
    scenario: &Scenario,
    policies: usize,
    mode: Mode,
    budget: u64,
) -> Result<(), BudgetError> {
    let e = estimate(scenario, policies, mode);
    if e.bytes <= budget {
        return Ok(());
    }
    Err(BudgetError::Run {
        scenario: scenario.file.name.clone(),
        needed: e.bytes,
        largest: e.largest,
        budget,
    })
}

/// Parses a `--memory-budget` such as `1TiB`, `8GiB`, `512MiB`, `64KiB` or a number of bytes.
pub fn parse_bytes(text: &str) -> Result<u64, BudgetError> {
    let t = text.trim();
    let units: [(&str, u64); 5] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
        ("B", 1),
    ];
    for (suffix, scale) in units {
        if let Some(n) = t.strip_suffix(suffix) {
            let v: f64 = n
                .trim()
                .parse()
                .map_err(|_| BudgetError::NotASize(text.to_string()))?;
            if !(v.is_finite() && v > 0.0) {
                return Err(BudgetError::NotPositive(text.to_string()));
            }
            return Ok((v * scale as f64).min(u64::MAX as f64) as u64);
        }
    }
    t.parse::<u64>()
        .map_err(|_| BudgetError::NotASize(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ScenarioBuilder;

    /// One group `main` of `count` 2 ms backends and round robin, the workload set by `workload`.
    fn scenario(count: u32, workload: impl FnOnce(ScenarioBuilder) -> ScenarioBuilder) -> Scenario {
        workload(ScenarioBuilder::new("m"))
            .group(
                "main",
                count,
                r#"{ dist = "constant", value = "2ms" }"#,
                &[],
            )
            .lb("rr", "round_robin")
            .build()
            .unwrap()
    }

    #[test]
    fn a_canonical_run_fits_and_the_known_exhausters_do_not() {
        let ok = scenario(20, |b| b.rate(2000.0).warmup("12s").duration("50s"));
        assert!(check(&ok, 8, Mode::Sim { jobs: 2 }, DEFAULT_BUDGET).is_ok());
        assert!(estimate(&ok, 8, Mode::Sim { jobs: 2 }).bytes < 64 << 20);
        // One backend at a trickle for a year: rows only for the seconds with a call in them,
        // so it fits; at 400 calls a second every second has rows, and it does not.
        let year = scenario(1, |b| b.rate(0.001).duration("8760h"));
        assert!(estimate(&year, 1, Mode::Sim { jobs: 1 }).bytes < 1 << 30);
        let busy_year = scenario(1, |b| b.rate(400.0).duration("8760h"));
        let e = check(&busy_year, 1, Mode::Sim { jobs: 1 }, DEFAULT_BUDGET)
            .unwrap_err()
            .to_string();
        assert!(e.contains("memory_budget") && e.contains("seconds"), "{e}");
        // 100,000 backends for an hour.
        let wide = scenario(100_000, |b| b.rate(1000.0).duration("1h"));
        assert!(check(&wide, 1, Mode::Sim { jobs: 1 }, DEFAULT_BUDGET).is_err());
        // 1e8 calls a second held for their deadline, in the real load generator.
        let flood = scenario(2, |b| b.rate(1e8).duration("1s").deadline("1s"));
        let e = check(&flood, 1, Mode::Real, DEFAULT_BUDGET)
            .unwrap_err()
            .to_string();
        assert!(e.contains("calls in flight"), "{e}");
        // A closed loop with 10 million calls in flight.
        let closed = scenario(2, |b| b.clients(5).closed(2_000_000).duration("1s"));
        assert!(check(&closed, 1, Mode::Real, DEFAULT_BUDGET).is_err());
        // Raising the budget lets a run through.
        assert!(check(&wide, 1, Mode::Sim { jobs: 1 }, u64::MAX).is_ok());
    }

    #[test]
    fn the_simulator_holds_no_more_calls_than_its_backends_have_room_for() {
        // 500,000 calls a second with a 10 s deadline: 5 million if each waited its deadline,
        // but 2 backends of 4 workers and a queue of 1,000 refuse the rest at once.
        let flood = scenario(2, |b| b.rate(5e5).duration("1s").deadline("10s"));
        let sim = estimate(&flood, 1, Mode::Sim { jobs: 1 });
        assert!(sim.bytes < 64 << 20, "{sim:?}");
        // A black hole holds its calls to the deadline: no bound.
        let swallowed = scenario(2, |b| {
            b.rate(5e5)
                .duration("1s")
                .deadline("10s")
                .fault("black_hole", &["main"], &[])
        });
        let held = estimate(&swallowed, 1, Mode::Sim { jobs: 1 });
        assert!(
            held.bytes > sim.bytes + (100 << 20),
            "{held:?} against {sim:?}"
        );
    }

    #[test]
    fn a_backend_process_holds_its_connections_and_the_calls_in_flight() {
        // The canonical shape, 2,000 calls/s with a 1 s deadline: the base, four connections and
        // 2,000 calls.
        let canonical = scenario(20, |b| {
            b.clients(4).rate(2000.0).duration("50s").deadline("1s")
        });
        assert_eq!(in_flight(&canonical), 2000);
        let e = backend_process(&canonical);
        assert_eq!(e.bytes, BASE + 4 * PER_CONNECTION + 2000 * PER_CALL_REAL);
        assert_eq!(e.largest, "the program itself");
        // 100,000 calls/s held for a 10 s deadline: the calls are most of it.
        let held = scenario(2, |b| b.rate(1e5).duration("30s").deadline("10s"));
        let e = backend_process(&held);
        assert!(
            e.bytes > 3 << 30 && e.largest == "1000000 calls in flight at once",
            "{e:?}"
        );
        // A closed loop: its clients × calls each.
        let closed = scenario(2, |b| b.clients(5).closed(100).duration("1s"));
        assert_eq!(in_flight(&closed), 500);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("8GiB"), Ok(8 << 30));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("-1GiB").is_err());
        assert_eq!(parse_bytes("2TiB"), Ok(2 << 40));
        assert_eq!(parse_bytes("1.5 TiB"), Ok(3 << 39));
    }
}
