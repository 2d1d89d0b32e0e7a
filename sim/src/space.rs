//! Sweeps over the scenario space: every point of a crossed set of [`Axis`] variations, every
//! policy of the scenario, every seed, simulated in parallel and summarized as medians with 95 %
//! intervals across seeds ([`lblab_stats`]).
//!
//! Seeds: seed `k` of a point is the scenario's seed plus `k` (`k = 0..seeds`), so the first seed
//! of every point is the scenario's own and seed `k` means the same draw of arrivals in every
//! policy (which is what makes the ratios to a baseline paired).

use std::sync::atomic::AtomicBool;

use lblab_model::scenario::ORACLE;
use lblab_model::vary::{self, Axis, Override, VaryError};
use lblab_model::Scenario;
use lblab_policy::Nanos;
use lblab_stats::{self as stats, PolicyIntervals, RunSample};

/// `(backend, start, end)` of every fault window ([`Scenario::fault_windows`]).
type FaultWindows = Vec<(usize, Nanos, Nanos)>;
use serde::Serialize;

use crate::batch::{self, Job};
use crate::SimError;

/// Baselines every policy is compared with, when the scenario has them.
pub const BASELINES: &[&str] = &["round_robin", ORACLE];

/// What a sweep runs.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Per point: its overrides and one validated scenario per seed.
    pub points: Vec<PlannedPoint>,
    /// Labels of the policies that run (the simulator's, in scenario order).
    pub policies: Vec<String>,
    /// Seeds per point.
    pub seeds: u64,
}

/// One point of a [`Plan`].
#[derive(Debug, Clone)]
pub struct PlannedPoint {
    /// Its position among every point of the crossed axes (a shard's plan keeps the indices of
    /// the whole sweep's).
    pub index: usize,
    /// The overrides that make this point.
    pub overrides: Vec<Override>,
    /// The scenario at this point, one per seed.
    pub scenarios: Vec<Scenario>,
}

/// Builds the plan: every point of the crossed `axes` (no axes: the scenario itself), each with
/// `seeds` seeds, restricted to the policies in `only` (all the simulator runs when empty).
/// Every variation is validated here, before any work.
pub fn plan(
    scenario: &Scenario,
    axes: &[Axis],
    seeds: u64,
    only: &[String],
) -> Result<Plan, VaryError> {
    // Bounded before any point is built.
    let count = vary::check_size(axes, seeds)?;
    let mut points = Vec::with_capacity(count);
    for (index, overrides) in vary::cross(axes).into_iter().enumerate() {
        let varied = vary::apply(scenario, &overrides)?;
        let mut scenarios = Vec::with_capacity(seeds as usize);
        for k in 0..seeds.max(1) {
            let mut s = varied.clone();
            if k > 0 {
                s.file.seed = varied.file.seed.wrapping_add(k);
                s = Scenario::validate(s.file).map_err(|e| VaryError::Value {
                    path: "seed".into(),
                    value: varied.file.seed.wrapping_add(k).to_string(),
                    message: e.to_string(),
                })?;
            }
            scenarios.push(s);
        }
        points.push(PlannedPoint {
            index,
            overrides,
            scenarios,
        });
    }
    let policies = scenario
        .policies
        .iter()
        .filter(|p| p.runs_in_sim() && (only.is_empty() || only.contains(&p.name)))
        .map(|p| p.name.clone())
        .collect();
    Ok(Plan {
        points,
        policies,
        seeds: seeds.max(1),
    })
}

impl Plan {
    /// Simulations the plan runs.
    pub fn runs(&self) -> usize {
        self.points.len() * self.seeds as usize * self.policies.len()
    }

    /// Shard `index` of `count`: the points whose index is `index` modulo `count` (every
    /// `count`-th point, from the `index`-th), with all their seeds and policies. The assignment
    /// depends on nothing but the point's index, so every shard of one sweep agrees on it.
    pub fn shard(mut self, index: usize, count: usize) -> Plan {
        self.points
            .retain(|p| count > 0 && p.index % count == index);
        self
    }
}

/// The results of one point.
#[derive(Debug, Clone, Serialize)]
pub struct PointResult {
    /// The point's index in the whole sweep ([`PlannedPoint::index`]); not written.
    #[serde(skip)]
    pub index: usize,
    /// The overrides that make this point.
    #[serde(serialize_with = "overrides_as_map")]
    pub overrides: Vec<Override>,
    /// Backends at this point.
    pub backends: usize,
    /// Backends with a fault at some time.
    pub faulty_backends: usize,
    /// Offered rate, requests per second (open loop; 0 for a closed loop).
    pub rate: f64,
    /// `rate` over the fleet's capacity at full speed.
    pub utilization: f64,
    /// The calls' deadline at this point, ms: the latency a saturated policy's percentiles stop
    /// at (the sweep charts draw it).
    pub deadline_ms: f64,
    /// Per policy, the intervals across seeds.
    pub policies: Vec<PolicyIntervals>,
    /// Every run: seed, policy, sample.
    #[serde(skip)]
    pub runs: Vec<(u64, String, RunSample)>,
    /// Whether any run of this point was cut short or not run.
    pub partial: bool,
}

impl PointResult {
    /// The overrides that make this point as (field path, value) pairs, as the sweep and shard
    /// files write them.
    pub fn override_pairs(&self) -> Vec<(String, String)> {
        self.overrides
            .iter()
            .map(|o| (o.path.clone(), o.value.clone()))
            .collect()
    }
}

fn overrides_as_map<S: serde::Serializer>(o: &[Override], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(o.len()))?;
    for x in o {
        m.serialize_entry(&x.path, &x.value)?;
    }
    m.end()
}

/// Runs the plan on `threads` threads. Points are returned in plan order; a run not started
/// because of `stop` leaves its point partial, summarized over the seeds that ran.
pub fn run(
    plan: &Plan,
    threads: usize,
    stop: Option<&AtomicBool>,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Vec<PointResult>, SimError> {
    let mut jobs = Vec::with_capacity(plan.runs());
    // The point each job belongs to.
    let mut point_of = Vec::with_capacity(plan.runs());
    for (pi, point) in plan.points.iter().enumerate() {
        for s in &point.scenarios {
            for label in &plan.policies {
                let policy = s
                    .policies
                    .iter()
                    .find(|p| &p.name == label)
                    .expect("every variation keeps the scenario's policies");
                jobs.push(Job {
                    scenario: s,
                    policy,
                    clock: None,
                });
                point_of.push(pi);
            }
        }
    }
    let healthy: Vec<Vec<bool>> = plan
        .points
        .iter()
        .map(|p| healthy_backends(&p.scenarios[0]))
        .collect();
    // Each point's fault windows, backend count and run end, for the time to fair share.
    let windows: Vec<(FaultWindows, usize, Nanos)> = plan
        .points
        .iter()
        .map(|p| {
            let s = &p.scenarios[0];
            (s.fault_windows(), s.backends.len(), s.workload.end())
        })
        .collect();
    let results = batch::run(&jobs, threads, stop, progress, &|i, run| {
        let (windows, backends, end) = &windows[point_of[i]];
        (
            RunSample {
                herd: stats::herd(run.result.avoidable_waits, &run.result.backend_sends),
                time_to_fair_s: stats::time_to_fair_share(
                    &run.result.timeseries,
                    windows,
                    *backends,
                    *end,
                ),
                row: run.result.summary,
            },
            run.stats.interrupted,
        )
    });
    let mut out: Vec<PointResult> = plan
        .points
        .iter()
        .zip(&healthy)
        .map(|(p, healthy)| {
            let s = &p.scenarios[0];
            let faulty = healthy.iter().filter(|h| !**h).count();
            let rate = s.workload.rate;
            PointResult {
                index: p.index,
                overrides: p.overrides.clone(),
                backends: s.backends.len(),
                faulty_backends: faulty,
                rate,
                utilization: rate / vary::capacity(s),
                deadline_ms: s.workload.deadline as f64 / 1e6,
                policies: Vec::new(),
                runs: Vec::new(),
                partial: false,
            }
        })
        .collect();
    for ((result, job), pi) in results.into_iter().zip(&jobs).zip(&point_of) {
        let point = &mut out[*pi];
        match result {
            None => point.partial = true,
            Some(r) => {
                let (sample, interrupted) = r?;
                point.partial |= interrupted;
                point
                    .runs
                    .push((job.scenario.file.seed, job.policy.name.clone(), sample));
            }
        }
    }
    summarize_points(&mut out, &plan.policies);
    Ok(out)
}

/// Fills each point's [`PointResult::policies`] from its runs: per policy in `policies` order, the
/// samples of its seeds in the order they ran (a merge of shards calls this on the runs it read
/// back, so its intervals are those of the unsharded sweep).
pub fn summarize_points(points: &mut [PointResult], policies: &[String]) {
    for point in points {
        let per_policy: Vec<(String, Vec<RunSample>)> = policies
            .iter()
            .map(|label| {
                (
                    label.clone(),
                    point
                        .runs
                        .iter()
                        .filter(|(_, p, _)| p == label)
                        .map(|(_, _, s)| s.clone())
                        .collect(),
                )
            })
            .collect();
        point.policies = stats::summarize(&per_policy, BASELINES);
    }
}

/// The metrics of `sweep.csv`, each as `<m>,<m>_lo,<m>_hi` columns.
pub const CSV_METRICS: &[&str] = &[
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "mean_ms",
    "slow_share",
    "error_share",
    "herd",
    "time_to_fair_s",
    "p99_vs_round_robin",
    "p999_vs_round_robin",
    "p99_vs_oracle",
    "p999_vs_oracle",
];

/// The first columns of a point's rows: each varied path's value there.
fn point_columns(paths: &[String], point: &PointResult) -> Vec<String> {
    paths
        .iter()
        .map(|path| {
            point
                .overrides
                .iter()
                .find(|o| &o.path == path)
                .map_or_else(String::new, |o| o.value.clone())
        })
        .collect()
}

/// `sweep.csv`: one row per point and policy; a column per varied path, the point's fleet and
/// load, then each metric's median and interval (empty where a policy has no such metric, e.g.
/// round_robin's ratio to itself).
pub fn sweep_csv(paths: &[String], points: &[PointResult]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = paths.to_vec();
    header.extend(
        [
            "backends",
            "faulty_backends",
            "rate",
            "utilization",
            "policy",
            "seeds",
        ]
        .map(String::from),
    );
    for m in CSV_METRICS {
        header.extend([m.to_string(), format!("{m}_lo"), format!("{m}_hi")]);
    }
    header.push("partial".into());
    w.write_record(&header)?;
    for point in points {
        for pol in &point.policies {
            let mut row = point_columns(paths, point);
            row.extend([
                point.backends.to_string(),
                point.faulty_backends.to_string(),
                stats::num(point.rate),
                stats::num(point.utilization),
                pol.policy.clone(),
                pol.seeds.to_string(),
            ]);
            for m in CSV_METRICS {
                match pol.get(m) {
                    Some(i) => {
                        row.extend([stats::num(i.median), stats::num(i.lo), stats::num(i.hi)])
                    }
                    None => row.extend([String::new(), String::new(), String::new()]),
                }
            }
            row.push(point.partial.to_string());
            w.write_record(&row)?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// `runs.csv`: every run behind the intervals, one row per point, seed and policy.
pub fn runs_csv(paths: &[String], points: &[PointResult]) -> Result<Vec<u8>, csv::Error> {
    const COLUMNS: &str = "seed,policy,requests,ok,errors,deadline_exceeded,dropped,p50_ms,\
                           p90_ms,p99_ms,p999_ms,max_ms,mean_ms,slow_share,herd,time_to_fair_s";
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = paths.to_vec();
    header.extend(COLUMNS.split(',').map(String::from));
    w.write_record(&header)?;
    for point in points {
        for (seed, policy, s) in &point.runs {
            let r = &s.row;
            let mut row = point_columns(paths, point);
            row.extend([
                seed.to_string(),
                policy.clone(),
                r.requests.to_string(),
                r.ok.to_string(),
                r.errors.to_string(),
                r.deadline_exceeded.to_string(),
                r.dropped.to_string(),
            ]);
            row.extend(
                [r.p50_ms, r.p90_ms, r.p99_ms, r.p999_ms, r.max_ms, r.mean_ms]
                    .map(|v| format!("{v:.3}")),
            );
            row.extend([
                format!("{:.5}", r.slow_share),
                stats::num(s.herd),
                stats::num(s.time_to_fair_s),
            ]);
            w.write_record(&row)?;
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// Which backends never have a fault in `scenario`.
pub fn healthy_backends(scenario: &Scenario) -> Vec<bool> {
    let mut healthy = vec![true; scenario.backends.len()];
    for (b, _, _) in scenario.fault_windows() {
        if let Some(h) = healthy.get_mut(b) {
            *h = false;
        }
    }
    healthy
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use lblab_model::testing::ScenarioBuilder;

    /// Four backends and a slow one, round robin and peak EWMA, 2 s at 500 calls a second; the
    /// batch tests run it too.
    pub(crate) fn scenario() -> Scenario {
        let exp_2ms = r#"{ dist = "exponential", mean = "2ms" }"#;
        ScenarioBuilder::new("t")
            .group("main", 4, exp_2ms, &[])
            .group("slow", 1, exp_2ms, &[])
            .fault("slowdown", &["slow"], &["factor = 10"])
            .lb("round_robin", "round_robin")
            .lb("peak_ewma", "peak_ewma_experimental")
            .build()
            .unwrap()
    }

    #[test]
    fn every_point_seed_and_policy_runs_and_ratios_are_paired() {
        let s = scenario();
        let axis: Axis = "fleet.main.count=2,6".parse().unwrap();
        let plan = plan(&s, &[axis], 3, &[]).unwrap();
        assert_eq!(plan.runs(), 2 * 3 * 2);
        let out = run(&plan, 2, None, &|_| {}).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].backends, 7);
        assert_eq!(out[1].faulty_backends, 1);
        for p in &out {
            assert!(!p.partial);
            assert_eq!(p.runs.len(), 6);
            let pe = &p.policies[1];
            assert_eq!(pe.seeds, 3);
            let r = pe.get("p99_vs_round_robin").unwrap();
            assert!(
                r.median < 1.0,
                "peak_ewma beats round_robin with a 10x slow backend"
            );
            assert!(
                pe.get("slow_share").unwrap().median
                    < p.policies[0].get("slow_share").unwrap().median
            );
        }
        // Seeds are the scenario's, then the next ones.
        let seeds: Vec<u64> = out[0].runs.iter().map(|r| r.0).collect();
        assert_eq!(seeds, vec![1, 1, 2, 2, 3, 3]);
    }

    #[test]
    fn csv_fields_with_delimiters_quotes_and_line_breaks_read_back_unchanged() {
        let s = scenario();
        let axis: Axis = "fleet.main.count=2".parse().unwrap();
        let plan = plan(&s, &[axis], 1, &[]).unwrap();
        let mut out = run(&plan, 1, None, &|_| {}).unwrap();
        let awkward = "a,\"b\"\r\nc";
        let path = out[0].overrides[0].path.clone();
        out[0].overrides[0].value = awkward.into();
        out[0].policies[0].policy = awkward.into();
        out[0].runs[0].1 = awkward.into();
        for bytes in [
            sweep_csv(std::slice::from_ref(&path), &out).unwrap(),
            runs_csv(std::slice::from_ref(&path), &out).unwrap(),
        ] {
            let mut r = csv::Reader::from_reader(bytes.as_slice());
            let header = r.headers().unwrap().clone();
            let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
            assert_eq!(rows.len(), 2, "a row per policy, whatever the labels hold");
            let policy = header.iter().position(|h| h == "policy").unwrap();
            assert_eq!(&rows[0][0], awkward);
            assert_eq!(&rows[0][policy], awkward);
            assert!(rows.iter().all(|row| row.len() == header.len()));
        }
    }

    #[test]
    fn same_plan_same_numbers() {
        let s = scenario();
        let plan = plan(&s, &[], 2, &["peak_ewma".into()]).unwrap();
        let a = run(&plan, 1, None, &|_| {}).unwrap();
        let b = run(&plan, 2, None, &|_| {}).unwrap();
        // Compared as printed: a quantity that applies to no run is NaN, which equals nothing.
        let shown = |p: &[PolicyIntervals]| format!("{p:?}");
        assert_eq!(shown(&a[0].policies), shown(&b[0].policies));
        assert_eq!(a[0].policies.len(), 1);
    }
}
