//! `harness.json`: the real harness's own numbers for one run (its floor, how precisely the fleet
//! gave its delays, how late the load generator sent, client CPU, how busy the machine was), in
//! one schema that the harness writes and the reports read.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Percentiles of a histogram of nanoseconds, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    /// Values recorded.
    pub count: u64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Maximum, µs.
    pub max_us: f64,
}

impl Quantiles {
    /// Summarizes `h` (values in ns).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Quantiles::default();
        }
        let us = |v: u64| v as f64 / 1e3;
        Quantiles {
            count: h.len(),
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// How precisely the fleet gave the service delays the model asked for: the distribution of
/// actual − requested completion time over every unary request, measured when the handler
/// resumed (so it includes waking the handler's task, not only the timer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayAccuracy {
    /// Requests measured.
    pub count: u64,
    /// Requests answered before their completion time (should be 0).
    pub early: u64,
    /// Median error, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// Maximum, µs.
    pub max_us: f64,
    /// Mean, µs.
    pub mean_us: f64,
}

impl DelayAccuracy {
    /// Summarizes a histogram of errors in ns.
    pub fn from_histogram(h: &Histogram<u64>, early: u64) -> Self {
        let us = |v: u64| v as f64 / 1e3;
        if h.is_empty() {
            return DelayAccuracy {
                early,
                ..DelayAccuracy::default()
            };
        }
        DelayAccuracy {
            count: h.len(),
            early,
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            mean_us: h.mean() / 1e3,
        }
    }
}

/// How busy the machine was during a run: the harness shares its cores with everything else, so
/// its precision figures mean little without this.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineLoad {
    /// 1-minute load average when the run started.
    pub loadavg_start: f64,
    /// 1-minute load average when it ended.
    pub loadavg_end: f64,
    /// Share of CPU time the hypervisor took from this machine during the run (steal), %.
    pub steal_pct: f64,
    /// Share of CPU time spent outside the idle task during the run, all processes, %.
    pub busy_pct: f64,
}

/// The machine a real run ran on: its figures mean little without it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// CPU model (`model name` in /proc/cpuinfo), empty where it cannot be read.
    pub cpu_model: String,
    /// Logical cores the process may use (0 where unknown, as in files written before this was
    /// recorded).
    pub logical_cores: usize,
    /// Kernel release (/proc/sys/kernel/osrelease), empty where it cannot be read.
    pub kernel: String,
}

impl Host {
    /// This machine.
    pub fn this() -> Host {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default();
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        Host {
            cpu_model,
            logical_cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kernel,
        }
    }
}

/// The harness's own numbers for one run, written next to the results as `harness.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessSummary {
    /// The machine it ran on (absent in files written before it was recorded).
    #[serde(default)]
    pub host: Host,
    /// Latency against zero-delay backends at the scenario's rate (round_robin), ms.
    pub floor: Option<FloorSummary>,
    /// Per policy: delay accuracy, dispatch lateness and client CPU.
    pub policies: Vec<PolicyHarness>,
}

/// The floor run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FloorSummary {
    /// Requests per second.
    pub rate: f64,
    /// Backends.
    pub backends: usize,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Requests measured.
    pub requests: u64,
    /// Dispatch lateness during the floor run.
    pub lateness: Quantiles,
}

/// Harness measurements of one policy's run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyHarness {
    /// Policy label.
    pub policy: String,
    /// Backend delay error (actual − requested service completion).
    pub delay_error: DelayAccuracy,
    /// Dispatch lateness (actual − intended send time).
    pub dispatch_lateness: Quantiles,
    /// Client CPU per call, µs (the load generator's runtime threads: RPC stack + policy).
    pub client_cpu_per_call_us: f64,
    /// Dispatcher CPU per call, µs (pacing, including spin-waits).
    pub dispatcher_cpu_per_call_us: f64,
    /// Calls made.
    pub calls: u64,
    /// How busy the machine was.
    pub machine: MachineLoad,
    /// Dispatch-lateness p99 (µs) of attempts discarded as disturbed by other work.
    pub discarded_attempts: Vec<f64>,
}
