//! A small synthetic run, recorded with the real `Recorder`, for tests and the demo example.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use lblab_record::{FaultWindow, PolicyResult, Recorder, RequestResult, RunSummary};
use lblab_report::{write_heatmap, ReportError};

/// Policies of the synthetic run and how strongly each avoids a faulty backend (0 = not at all).
pub const POLICIES: [(&str, f64); 4] = [
    ("round_robin", 0.0),
    ("least_request_experimental", 0.5),
    ("peak_ewma_experimental", 0.85),
    ("peak_ewma+outlier_detection", 0.97),
];

const NS: u64 = 1_000_000_000;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.next_f64()).ln()
    }
}

/// A 30 s run at 300 requests/s over 5 backends with a 3 s warm-up: backend `b2` is 8× slower
/// from 10 s to 20 s, backend `b4` fails fast from 22 s to 26 s.
pub fn run() -> (RunSummary, Vec<PolicyResult>) {
    let backends: Vec<String> = (0..5).map(|b| format!("b{b}")).collect();
    let fault_windows = vec![
        FaultWindow {
            backend: 2,
            start_s: 10.0,
            end_s: 20.0,
        },
        FaultWindow {
            backend: 4,
            start_s: 22.0,
            end_s: 26.0,
        },
    ];
    let warmup = 3 * NS;
    let rate = 300u64;
    let duration = 30u64;
    let results: Vec<PolicyResult> = POLICIES
        .iter()
        .enumerate()
        .map(|(p, &(name, avoid))| {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (p as u64 + 1));
            let mut rec = Recorder::new(name, backends.len(), warmup);
            for i in 0..rate * duration {
                let sent = i * NS / rate;
                let t = sent as f64 / NS as f64;
                let faulty = |b: usize| {
                    fault_windows
                        .iter()
                        .any(|w| w.backend == b && t >= w.start_s && t < w.end_s)
                };
                let mut backend = (i % backends.len() as u64) as usize;
                if faulty(backend) && rng.next_f64() < avoid {
                    backend = (backend + 1) % backends.len();
                }
                let is_faulty = faulty(backend);
                rec.on_send(sent, backend, is_faulty);
                let base = 2_000_000.0 + rng.exp(1_500_000.0);
                let (latency, result) = match (is_faulty, backend) {
                    (true, 2) => (base * 8.0, RequestResult::Ok),
                    (true, _) => (200_000.0, RequestResult::Error),
                    _ => (base, RequestResult::Ok),
                };
                rec.on_result(sent, sent + latency as u64, result);
            }
            rec.finish()
        })
        .collect();
    let summary = RunSummary {
        scenario: "slow-backend".to_string(),
        mode: lblab_record::Mode::Sim,
        seed: 7,
        partial: false,
        backends,
        fault_windows,
        warmup_s: warmup as f64 / NS as f64,
        measured_s: 0.0,
        rows: results.iter().map(|r| r.summary.clone()).collect(),
        notes: Vec::new(),
        incidents: Vec::new(),
        rates: Vec::new(),
        configs: Vec::new(),
        experiment: None,
    };
    (summary, results)
}

/// A fresh, empty folder under the system temp dir, unique per test and process.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lblab-report-test-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        name
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes the heatmap of [`heatmap`] as `<dir>/sweep.{png,svg}`.
pub fn write_sweep_heatmap(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let (x, y, values) = heatmap();
    write_heatmap(
        &dir.join("sweep"),
        "slow-backend (sim) — p99 by decayTime and slowdown",
        "decayTime",
        &x,
        "slowdown of b2",
        &y,
        &values,
        "p99 latency (ms)",
    )
}

/// A decay-time × slowdown sweep grid with one missing cell.
fn heatmap() -> (Vec<String>, Vec<String>, Vec<Vec<f64>>) {
    let x: Vec<String> = ["1s", "2s", "5s", "10s", "30s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let y: Vec<String> = ["×2", "×4", "×8"].iter().map(|s| s.to_string()).collect();
    let values = vec![
        vec![4.1, 4.3, 4.8, 5.2, 6.9],
        vec![5.0, 5.6, f64::NAN, 8.8, 14.2],
        vec![6.2, 7.9, 11.5, 19.4, 42.0],
    ];
    (x, y, values)
}
