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
//! measured peak there, plus [`BASE`] for the process itself.

use crate::scenario::Arrival;
use crate::scenario::Scenario;

/// Bytes a run may use unless told otherwise: 8 GiB.
pub const DEFAULT_BUDGET: u64 = 8 << 30;

/// The process itself, whatever the scenario: the program, its runtime and thread stacks, and
/// the charts being drawn (measured: 21 MiB for three backends for ten seconds; see
/// `results/memory/`).
const BASE: u64 = 24 << 20;
/// Per second of the run and policy: the time-series row's fixed part and its interval histogram
/// (hlog line). Fit to a six-hour run (`results/memory/`).
const PER_SECOND: u64 = 1536;
/// Per second, policy and backend: one traffic share (8 bytes), its text in `timeseries.csv`
/// while that is written, and its point in the traffic-share chart.
const PER_SECOND_BACKEND: u64 = 24;
/// Per policy instance (client), client and backend: the endpoint's slot and connection state.
const PER_CLIENT_BACKEND: u64 = 256;
/// Per call that may be in flight in the simulator (the open loop's rate times the deadline,
/// which most calls do not stay: fit to 500,000 calls a second, `results/memory/`).
const PER_CALL_SIM: u64 = 24;
/// Per call in flight in the real load generator (its future, the HTTP/2 stream, buffers).
const PER_CALL_REAL: u64 = 4 << 10;
/// Per policy: its whole-run histogram and recorder, and its results while they are written.
const PER_POLICY: u64 = 2 << 20;

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

/// An estimate and its largest part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    /// Bytes in all.
    pub bytes: u64,
    /// What most of it is, for the message.
    pub largest: String,
}

impl Estimate {
    /// The sum of `parts` (bytes, what they are), naming the largest.
    fn of(parts: &[(u64, String)]) -> Estimate {
        Estimate {
            bytes: parts.iter().fold(0u64, |a, p| a.saturating_add(p.0)),
            largest: parts
                .iter()
                .max_by_key(|p| p.0)
                .map(|p| p.1.clone())
                .unwrap_or_default(),
        }
    }
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
    // Calls in flight at once: the closed loop's, or the open loop's rate times how long a call
    // can stay (its deadline, at most the run and its drain).
    let in_flight = if w.arrival == Arrival::Closed {
        clients.saturating_mul(u64::from(w.concurrency))
    } else {
        let stay = w.deadline.min(horizon_ns) as f64 / 1e9;
        (scenario.file.workload.rate * stay).ceil() as u64
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

/// `Err` with a message when the estimate `e` of `what` is above `budget`.
pub fn check_estimate(what: &str, e: &Estimate, budget: u64) -> Result<(), String> {
    if e.bytes <= budget {
        return Ok(());
    }
    Err(format!(
        "{what} would need about {} of memory (mostly {}), more than the budget of {}; make it \
         smaller, or raise the budget with --memory-budget",
        gib(e.bytes),
        e.largest,
        gib(budget)
    ))
}

/// The memory a merge of real runs needs ([`crate::results::merge_runs`]), roughly: `policies`
/// policies over `seconds` merged seconds of `backends` backends (a time-series row and interval
/// histograms each), and the `read_rows` time-series rows of the runs, read first.
pub fn merged(policies: usize, seconds: u64, backends: usize, read_rows: usize) -> Estimate {
    let (policies, backends) = (policies as u64, backends as u64);
    let per_second = PER_SECOND.saturating_add(backends.saturating_mul(PER_SECOND_BACKEND));
    let parts = [
        (
            policies.saturating_mul(seconds).saturating_mul(per_second),
            format!("{seconds} merged seconds × {backends} backends for {policies} policies"),
        ),
        (
            (read_rows as u64).saturating_mul(backends.saturating_mul(8).saturating_add(64)),
            format!("{read_rows} time-series rows of the runs"),
        ),
        (
            policies.saturating_mul(PER_POLICY),
            format!("{policies} policies' histograms"),
        ),
        (BASE, "the program itself".to_string()),
    ];
    Estimate::of(&parts)
}

/// `Err` with a message naming the scenario, the estimate, its largest part and the flag, when the
/// estimate is above `budget`.
pub fn check(scenario: &Scenario, policies: usize, mode: Mode, budget: u64) -> Result<(), String> {
    let e = estimate(scenario, policies, mode);
    if e.bytes <= budget {
        return Ok(());
    }
    Err(format!(
        "scenario {}: this run would need about {} of memory (mostly {}), more than the budget of \
         {}; shorten the run, use fewer backends, clients, policies or calls in flight, or raise \
         the budget with --memory-budget",
        scenario.file.name,
        gib(e.bytes),
        e.largest,
        gib(budget)
    ))
}

/// `bytes` as a size for messages, in GiB.
pub fn size(bytes: u64) -> String {
    gib(bytes)
}

/// `bytes` in the largest binary unit (TiB, GiB, MiB, KiB) it has at least one of, with one
/// decimal, so that a small size never prints as "0.0 GiB".
fn gib(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            return format!("{:.1} {unit}", bytes as f64 / scale as f64);
        }
    }
    format!("{bytes} B")
}

/// Parses a `--memory-budget` such as `1TiB`, `8GiB`, `512MiB`, `64KiB` or a number of bytes.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
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
                .map_err(|_| format!("`{text}` is not a size such as 8GiB or 512MiB"))?;
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("`{text}` must be a positive size"));
            }
            return Ok((v * scale as f64).min(u64::MAX as f64) as u64);
        }
    }
    t.parse::<u64>()
        .map_err(|_| format!("`{text}` is not a size such as 8GiB or 512MiB"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(workload: &str, count: u32) -> Scenario {
        Scenario::parse(&format!(
            "name = \"m\"\n[workload]\n{workload}\n[[fleet]]\nname = \"main\"\ncount = {count}\nservice_time = {{ dist = \"constant\", value = \"2ms\" }}\n[[policies]]\nname = \"rr\"\nconfig = '{{\"loadBalancingConfig\":[{{\"round_robin\":{{}}}}]}}'\n"
        ))
        .unwrap()
    }

    #[test]
    fn a_canonical_run_fits_and_the_known_exhausters_do_not() {
        let ok = scenario("rate = 2000\nwarmup = \"12s\"\nduration = \"50s\"", 20);
        assert!(check(&ok, 8, Mode::Sim { jobs: 2 }, DEFAULT_BUDGET).is_ok());
        assert!(estimate(&ok, 8, Mode::Sim { jobs: 2 }).bytes < 64 << 20);
        // One backend at a trickle for a year: rows only for the seconds with a call in them,
        // so it fits; at 400 calls a second every second has rows, and it does not.
        let year = scenario("rate = 0.001\nduration = \"8760h\"", 1);
        assert!(estimate(&year, 1, Mode::Sim { jobs: 1 }).bytes < 1 << 30);
        let busy_year = scenario("rate = 400\nduration = \"8760h\"", 1);
        let e = check(&busy_year, 1, Mode::Sim { jobs: 1 }, DEFAULT_BUDGET).unwrap_err();
        assert!(
            e.contains("--memory-budget") && e.contains("seconds"),
            "{e}"
        );
        // 100,000 backends for an hour.
        let wide = scenario("rate = 1000\nduration = \"1h\"", 100_000);
        assert!(check(&wide, 1, Mode::Sim { jobs: 1 }, DEFAULT_BUDGET).is_err());
        // 1e8 calls a second held for their deadline, in the real load generator.
        let flood = scenario("rate = 1e8\nduration = \"1s\"\ndeadline = \"1s\"", 2);
        let e = check(&flood, 1, Mode::Real, DEFAULT_BUDGET).unwrap_err();
        assert!(e.contains("calls in flight"), "{e}");
        // A closed loop with 10 million calls in flight.
        let closed = scenario(
            "clients = 5\narrival = \"closed\"\nconcurrency = 2000000\nduration = \"1s\"",
            2,
        );
        assert!(check(&closed, 1, Mode::Real, DEFAULT_BUDGET).is_err());
        // Raising the budget lets a run through.
        assert!(check(&wide, 1, Mode::Sim { jobs: 1 }, u64::MAX).is_ok());
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

    #[test]
    fn sizes_print_in_the_unit_they_have() {
        assert_eq!(size(8 << 30), "8.0 GiB");
        assert_eq!(size(3 << 39), "1.5 TiB");
        assert_eq!(size(20 << 20), "20.0 MiB");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(100), "100 B");
    }
}
