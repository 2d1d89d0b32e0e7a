//! Parameter sweeps: a grid over `peak_ewma_experimental`'s parameters and ablation switches, run
//! in parallel on all cores. Each grid point is an independent, deterministic simulation, so the
//! results do not depend on the number of threads or on which thread ran what.

use std::sync::atomic::AtomicBool;

use lblab_model::results::SummaryRow;
use lblab_model::scenario::{PolicyEntry, Scenario};
use lblab_policy::config::{PolicyConfig, Selected};
use lblab_policy::estimator::DecayMode;
use lblab_policy::p2c::Sampling;
use lblab_policy::peak_ewma::{Ablation, Config};
use lblab_policy::{duration, Nanos};

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
                ..Ablation::default()
            });
        }
    }
    v
}

/// Short name of an ablation variant, e.g. `time_weighted+with_replacement`.
pub fn ablation_name(a: Ablation) -> String {
    let d = match a.decay {
        DecayMode::TimeWeighted => "time_weighted",
        DecayMode::OnRead => "on_read",
    };
    let s = match a.sampling {
        Sampling::WithReplacement => "with_replacement",
        Sampling::Distinct => "distinct",
    };
    format!("{d}+{s}")
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
        .map(|policy| Job { scenario, policy })
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
