//! Parameter sweeps: a grid over `peak_ewma_experimental`'s parameters and ablation switches, run
//! in parallel on all cores. Each grid point is an independent, deterministic simulation, so the
//! results do not depend on the number of threads or on which thread ran what.

use std::sync::atomic::AtomicBool;

use lblab_model::scenario::{PolicyEntry, Scenario};
use lblab_policy::config::{PolicyConfig, Selected};
use lblab_policy::estimator::DecayMode;
use lblab_policy::p2c::Sampling;
use lblab_policy::peak_ewma::{Ablation, Config};
use lblab_policy::{duration, Nanos};
use lblab_record::{fixed, SummaryRow};

use crate::batch::Job;
use crate::SimError;

/// The grid to sweep.
#[derive(Debug, Clone)]
pub struct Grid {
    /// `decayTime` values, ns.
    pub decay_times: Vec<Nanos>,
    /// `choiceCount` values.
    pub choice_counts: Vec<u32>,
    /// `defaultRtt` values, ns.
    pub default_rtts: Vec<Nanos>,
    /// Ablation variants.
    pub ablations: Vec<Ablation>,
}

impl Grid {
    /// Every combination, in a fixed order (default RTT, ablation, choice count, decay time).
    pub fn points(&self) -> Vec<Point> {
        let mut v = Vec::new();
        for &default_rtt in &self.default_rtts {
            for &ablation in &self.ablations {
                for &choice_count in &self.choice_counts {
                    for &decay_time in &self.decay_times {
                        v.push(Point(Config {
                            choice_count,
                            decay_time,
                            default_rtt,
                            ablation,
                        }));
                    }
                }
            }
        }
        v
    }
}

/// All four decay × sampling variants: the proposal first. Streams stay ignored (the default):
/// the `streams` ablation only matters with streaming traffic, and the streaming scenarios
/// compare its modes as policies of their own.
pub fn all_ablations() -> Vec<Ablation> {
    let mut v = Vec::new();
    for decay in [DecayMode::TimeWeighted, DecayMode::OnRead] {
        for sampling in [Sampling::Distinct, Sampling::WithReplacement] {
            v.push(Ablation {
                decay,
                sampling,
                // Decay on read has one time constant and no error-aware cost.
                error_penalty: match decay {
                    DecayMode::OnRead => None,
                    DecayMode::TimeWeighted => Ablation::default().error_penalty,
                },
                ..Ablation::default()
            });
        }
    }
    v
}

/// Short name of an ablation variant, e.g. `time_weighted+with_replacement`: its
/// `lblabAblation` values, named where the policy parses them.
pub fn ablation_name(a: Ablation) -> String {
    a.decay_and_sampling()
}

/// One grid point: a peak-EWMA configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point(pub Config);

impl Point {
    /// A label that names every parameter.
    pub fn label(&self) -> String {
        let c = self.0;
        format!(
            "peak_ewma[decay={},choices={},rtt={},{}]",
            duration::format(c.decay_time),
            c.choice_count,
            duration::format(c.default_rtt),
            ablation_name(c.ablation)
        )
    }

    fn entry(&self) -> PolicyEntry {
        let cfg = PolicyConfig::PeakEwma(self.0);
        PolicyEntry {
            name: self.label(),
            config_json: serde_json_string(&cfg),
            selected: Selected::Policy(cfg),
        }
    }
}

fn serde_json_string(cfg: &PolicyConfig) -> String {
    format!("{{\"loadBalancingConfig\":[{}]}}", cfg.to_json())
}

/// One row of the grid's `sweep.csv`: a grid point's parameters and its summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GridRow {
    /// `decayTime`, as a proto3 duration (`1s`).
    pub decay_time: String,
    /// `choiceCount`.
    pub choice_count: u32,
    /// `defaultRtt`, as a proto3 duration.
    pub default_rtt: String,
    /// The decay ablation (`time_weighted`, ...).
    pub decay: String,
    /// The sampling ablation (`distinct`, ...).
    pub sampling: String,
    /// Requests measured.
    pub requests: u64,
    /// Completed OK.
    pub ok: u64,
    /// Failed.
    pub errors: u64,
    /// Median, ms.
    #[serde(serialize_with = "fixed::f3")]
    pub p50_ms: f64,
    /// 90th percentile, ms.
    #[serde(serialize_with = "fixed::f3")]
    pub p90_ms: f64,
    /// 99th percentile, ms.
    #[serde(serialize_with = "fixed::f3")]
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    #[serde(serialize_with = "fixed::f3")]
    pub p999_ms: f64,
    /// Maximum, ms.
    #[serde(serialize_with = "fixed::f3")]
    pub max_ms: f64,
    /// Mean, ms.
    #[serde(serialize_with = "fixed::f3")]
    pub mean_ms: f64,
    /// Share of picks to faulty backends.
    #[serde(serialize_with = "fixed::f5")]
    pub slow_share: f64,
    /// Whether the point's run was cut short.
    pub partial: bool,
}

impl GridRow {
    /// The row of one grid cell.
    pub fn of(cell: &Cell) -> GridRow {
        let (p, s) = (cell.point.0, &cell.summary);
        let ablation = ablation_name(p.ablation);
        let (decay, sampling) = ablation.split_once('+').unwrap_or((&ablation, ""));
        GridRow {
            decay_time: duration::format(p.decay_time),
            choice_count: p.choice_count,
            default_rtt: duration::format(p.default_rtt),
            decay: decay.to_string(),
            sampling: sampling.to_string(),
            requests: s.requests,
            ok: s.ok,
            errors: s.errors,
            p50_ms: s.p50_ms,
            p90_ms: s.p90_ms,
            p99_ms: s.p99_ms,
            p999_ms: s.p999_ms,
            max_ms: s.max_ms,
            mean_ms: s.mean_ms,
            slow_share: s.slow_share,
            partial: cell.partial,
        }
    }

    /// The grid's `sweep.csv` text for `rows`.
    pub fn to_csv(rows: &[GridRow]) -> Result<Vec<u8>, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows {
            w.serialize(r)?;
        }
        w.into_inner().map_err(|e| e.into_error().into())
    }
}

/// The result of one grid point.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The configuration.
    pub point: Point,
    /// Its summary row.
    pub summary: SummaryRow,
    /// Whether it was cut short by an interruption.
    pub partial: bool,
}

/// Runs every point on `jobs` threads. Points not started when `stop` is set are left out; the
/// returned cells are in grid order.
pub fn run(
    scenario: &Scenario,
    points: &[Point],
    jobs: usize,
    stop: Option<&AtomicBool>,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Vec<Cell>, SimError> {
    let entries: Vec<PolicyEntry> = points.iter().map(Point::entry).collect();
    let batch: Vec<Job> = entries
        .iter()
        .map(|policy| Job {
            scenario,
            policy,
            clock: None,
        })
        .collect();
    crate::batch::run(&batch, jobs, stop, progress, &|i, run| Cell {
        point: points[i],
        summary: run.result.summary,
        partial: run.stats.interrupted,
    })
    .into_iter()
    .flatten()
    .collect()
}
