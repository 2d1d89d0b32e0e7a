//! Sharded sweeps: `lblab sweep … --shard i/N` runs every `N`-th point of a scenario-space sweep
//! (those whose index is `i` modulo `N`) and writes them to a shard file; [`merge`] joins the `N`
//! shard files back into the points of the unsharded sweep, from which the very same writers
//! produce the very same files.
//!
//! A shard file ([`SHARD_JSON`]) keeps every number a sweep's files are computed from *exactly*:
//! each run's summary row, herd and time to fair share, and each point's rate and utilization, as
//! floating-point numbers written in Rust's shortest round-trip form (`0.1`, `NaN`, `inf`), so the
//! intervals recomputed from them ([`crate::space::summarize_points`]) are bit for bit those of
//! the unsharded run. What makes the sweep (the scenario file's text, the axes, seeds, policies,
//! chart axis and shard count) is recorded too, and [`merge`] refuses shards that differ in any of
//! it, a shard given twice, a missing one, and a shard whose points are not the ones its index
//! assigns.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use lblab_message::setting::{Names, Setting};
use lblab_model::vary::{Axis, Override};
use lblab_record::SummaryRow;
use lblab_stats::RunSample;
use serde::{Deserialize, Serialize};

use crate::space::{self, PointResult};

/// The name of a shard's file in its folder.
pub const SHARD_JSON: &str = "shard.json";

/// The shard file format this build writes and reads (2: each point has its `deadline_ms`).
pub const FORMAT: u32 = 2;

/// Most shards of one sweep (more than the point cap would leave shards empty).
pub const MAX_SHARDS: usize = 10_000;

/// What is wrong with a shard or a set of shards.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// A shard's text is not `i/N` with `0 <= i < N`.
    #[error("{text:?}: {message}")]
    Syntax {
        /// The flag's value.
        text: String,
        /// What is wrong.
        message: String,
    },
    /// A shard file could not be read or parsed.
    #[error("{file}: {message}")]
    File {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// Shards that cannot be merged into one sweep.
    #[error("{0}")]
    Mismatch(String),
}

/// `i/N`: shard `i` (from 0) of `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard's index, `0..count`.
    pub index: usize,
    /// How many shards the sweep is split into.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let err = |message: &str| ShardError::Syntax {
            text: text.to_string(),
            message: message.to_string(),
        };
        let (i, n) = text.split_once('/').ok_or_else(|| {
            err("write the shard's index from 0 and the shard count, e.g. 0/4 (an Indexed Job's $JOB_COMPLETION_INDEX/N)")
        })?;
        let i: usize = i
            .trim()
            .parse()
            .map_err(|_| err("the index before `/` must be a whole number from 0"))?;
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| err("the count after `/` must be a whole number from 1"))?;
        if n == 0 || n > MAX_SHARDS {
            return Err(err(&format!("the count must be 1 to {MAX_SHARDS}")));
        }
        if i >= n {
            return Err(err(&format!(
                "the index counts from 0, so it must be below the count ({n}): 0/{n} to {}/{n}",
                n - 1
            )));
        }
        Ok(Shard { index: i, count: n })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A float kept exactly: written in Rust's shortest round-trip form (which also spells `NaN`,
/// `inf` and `-inf`, which JSON numbers cannot), read back to the same bits.
#[derive(Debug, Clone, Copy)]
pub struct Exact(pub f64);

impl Serialize for Exact {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:?}", self.0))
    }
}

impl<'de> Deserialize<'de> for Exact {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Exact, D::Error> {
        let text = String::deserialize(d)?;
        text.parse::<f64>().map(Exact).map_err(|_| {
            serde::de::Error::custom(format!("{text:?} is not a number as a shard writes it"))
        })
    }
}

/// What makes a sweep: every shard of one sweep has the same, and a merge checks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepIdentity {
    /// The lblab version that ran the shard.
    pub lblab: String,
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file's text, as read (a shard run from another version of the file is refused).
    pub scenario_file: String,
    /// The scenario's seed (seed `k` of a point is this plus `k`).
    pub seed: u64,
    /// Seeds per point.
    pub seeds: u64,
    /// Each `--vary` axis: its points' overrides, `path=value` joined by `,`, points by `;`.
    pub axes: Vec<String>,
    /// The varied paths, in axis order (the first columns of `sweep.csv`).
    pub paths: Vec<String>,
    /// The charts' x axis.
    pub x: String,
    /// The policies that run, in scenario order.
    pub policies: Vec<String>,
    /// Points of the whole sweep.
    pub points: usize,
    /// Shards the sweep is split into.
    pub shards: usize,
}

impl SweepIdentity {
    /// The text of `axes` as [`SweepIdentity::axes`] records it.
    pub fn axes_text(axes: &[Axis]) -> Vec<String> {
        axes.iter()
            .map(|a| {
                a.points
                    .iter()
                    .map(|p| {
                        p.iter()
                            .map(|o| format!("{}={}", o.path, o.value))
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .collect()
    }
}

/// One run of a point, as a shard keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardRun {
    /// The run's seed.
    pub seed: u64,
    /// Its policy's label.
    pub policy: String,
    /// [`SummaryRow::requests`].
    pub requests: u64,
    /// [`SummaryRow::ok`].
    pub ok: u64,
    /// [`SummaryRow::errors`].
    pub errors: u64,
    /// [`SummaryRow::deadline_exceeded`].
    pub deadline_exceeded: u64,
    /// [`SummaryRow::dropped`].
    pub dropped: u64,
    /// [`SummaryRow::incidents`].
    pub incidents: u64,
    /// p50, p90, p99, p99.9, max and mean latency (ms), slow share, herd and time to fair share,
    /// in that order.
    pub values: [Exact; 9],
}

impl ShardRun {
    fn of(seed: u64, policy: &str, s: &RunSample) -> ShardRun {
        let r = &s.row;
        ShardRun {
            seed,
            policy: policy.to_string(),
            requests: r.requests,
            ok: r.ok,
            errors: r.errors,
            deadline_exceeded: r.deadline_exceeded,
            dropped: r.dropped,
            incidents: r.incidents,
            values: [
                r.p50_ms,
                r.p90_ms,
                r.p99_ms,
                r.p999_ms,
                r.max_ms,
                r.mean_ms,
                r.slow_share,
                s.herd,
                s.time_to_fair_s,
            ]
            .map(Exact),
        }
    }

    fn sample(&self) -> (u64, String, RunSample) {
        let v = self.values.map(|e| e.0);
        (
            self.seed,
            self.policy.clone(),
            RunSample {
                row: SummaryRow {
                    policy: self.policy.clone(),
                    requests: self.requests,
                    ok: self.ok,
                    errors: self.errors,
                    deadline_exceeded: self.deadline_exceeded,
                    dropped: self.dropped,
                    p50_ms: v[0],
                    p90_ms: v[1],
                    p99_ms: v[2],
                    p999_ms: v[3],
                    max_ms: v[4],
                    mean_ms: v[5],
                    slow_share: v[6],
                    incidents: self.incidents,
                },
                herd: v[7],
                time_to_fair_s: v[8],
            },
        )
    }
}

/// One point of a shard.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardPoint {
    /// Its index in the whole sweep.
    pub index: usize,
    /// Its overrides, `(path, value)`.
    pub overrides: Vec<(String, String)>,
    /// [`PointResult::backends`].
    pub backends: usize,
    /// [`PointResult::faulty_backends`].
    pub faulty_backends: usize,
    /// [`PointResult::rate`].
    pub rate: Exact,
    /// [`PointResult::utilization`].
    pub utilization: Exact,
    /// [`PointResult::deadline_ms`].
    pub deadline_ms: Exact,
    /// Whether a run of the point was cut short or not run.
    pub partial: bool,
    /// Every run, in the order the sweep ran them (seed, then policy).
    pub runs: Vec<ShardRun>,
}

/// A shard file: what makes the sweep, which shard this is, and its points.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardFile {
    /// [`FORMAT`].
    pub format: u32,
    /// This shard's index.
    pub shard: usize,
    /// What makes the sweep.
    pub sweep: SweepIdentity,
    /// This shard's points, in index order.
    pub points: Vec<ShardPoint>,
}

impl ShardFile {
    /// The shard file of shard `index` of the sweep `sweep`, holding `points`.
    pub fn new(sweep: SweepIdentity, index: usize, points: &[PointResult]) -> ShardFile {
        ShardFile {
            format: FORMAT,
            shard: index,
            sweep,
            points: points
                .iter()
                .map(|p| ShardPoint {
                    index: p.index,
                    overrides: p.override_pairs(),
                    backends: p.backends,
                    faulty_backends: p.faulty_backends,
                    rate: Exact(p.rate),
                    utilization: Exact(p.utilization),
                    deadline_ms: Exact(p.deadline_ms),
                    partial: p.partial,
                    runs: p
                        .runs
                        .iter()
                        .map(|(seed, policy, s)| ShardRun::of(*seed, policy, s))
                        .collect(),
                })
                .collect(),
        }
    }

    /// Reads a shard file; `name` names it in errors, `names` the settings its hints name.
    pub fn parse(name: &str, text: &str, names: Names) -> Result<ShardFile, ShardError> {
        let shard = names(Setting::Shard);
        let file = |message: String| ShardError::File {
            file: name.to_string(),
            message,
        };
        // The format first, so that a file of another format says so rather than which field
        // it lacks.
        #[derive(Deserialize)]
        struct Format {
            format: Option<u32>,
        }
        let f: Format = serde_json::from_str(text)
            .map_err(|e| file(format!("not a shard file of `lblab sweep {shard}`: {e}")))?;
        match f.format {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(file(format!(
                    "shard format {other}, but this lblab reads format {FORMAT}: merge with the \
                     lblab that ran the shards"
                )))
            }
            None => {
                return Err(file(format!(
                    "no `format` field: not a shard file of `lblab sweep {shard}`"
                )))
            }
        }
        serde_json::from_str(text).map_err(|e| file(format!("{e}")))
    }

    /// The file's text.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self).map(|t| t + "\n")
    }
}

/// Joins the shards of one sweep (`(name, file)` each, `name` for errors, e.g. the folder) into
/// its points, in index order, with their intervals computed as the unsharded sweep computes
/// them; and the sweep they make. Refuses shards of different sweeps (any field of
/// [`SweepIdentity`]), a shard given twice, a missing shard, and a shard whose points are not
/// those its index assigns. The settings its errors name are spelt by `names`.
pub fn merge(
    shards: &[(String, ShardFile)],
    names: Names,
) -> Result<(SweepIdentity, Vec<PointResult>), ShardError> {
    let Some((first_name, first)) = shards.first() else {
        return Err(ShardError::Mismatch(
            "no shard to merge: give the folders of every shard".into(),
        ));
    };
    let sweep = &first.sweep;
    for (name, s) in &shards[1..] {
        if let Some(field) = differs(&s.sweep, sweep, names) {
            let [shard, vary, seeds, policy, x] = [
                Setting::Shard,
                Setting::Vary,
                Setting::Seeds,
                Setting::Policy,
                Setting::X,
            ]
            .map(names);
            return Err(ShardError::Mismatch(format!(
                "{name} is a shard of another sweep than {first_name}: its {field} differs; \
                 merge only the shards of one `lblab sweep … {shard} i/N` command (the same \
                 scenario file, {vary}, {seeds}, {policy}, {x} and N)"
            )));
        }
    }
    let n = sweep.shards;
    let mut by_index: BTreeMap<usize, &str> = BTreeMap::new();
    for (name, s) in shards {
        if s.shard >= n {
            return Err(ShardError::File {
                file: name.clone(),
                message: format!(
                    "shard {} of {n}: the index must be below the count",
                    s.shard
                ),
            });
        }
        if let Some(earlier) = by_index.insert(s.shard, name) {
            return Err(ShardError::Mismatch(format!(
                "shard {}/{n} is given twice ({earlier} and {name}): its points would count \
                 twice; give each shard once",
                s.shard
            )));
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(ShardError::Mismatch(format!(
            "shard{} {} of the sweep of {} {} missing: a merge needs every shard, 0/{n} to {}/{n}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            sweep.scenario,
            if missing.len() == 1 { "is" } else { "are" },
            n - 1
        )));
    }
    let mut points: Vec<Option<PointResult>> = vec![None; sweep.points];
    for (name, s) in shards {
        let bad = |message: String| ShardError::File {
            file: name.clone(),
            message,
        };
        let expected = (s.shard..sweep.points).step_by(n).count();
        if s.points.len() != expected {
            return Err(bad(format!(
                "shard {}/{n} holds {} points, but its index assigns it {expected} of the \
                 sweep's {}",
                s.shard,
                s.points.len(),
                sweep.points
            )));
        }
        for p in &s.points {
            if p.index >= sweep.points || p.index % n != s.shard {
                return Err(bad(format!(
                    "point {} does not belong to shard {}/{n} of a sweep of {} points",
                    p.index, s.shard, sweep.points
                )));
            }
            let slot = &mut points[p.index];
            if slot.is_some() {
                return Err(bad(format!("point {} is listed twice", p.index)));
            }
            if !p.partial && p.runs.len() as u64 != sweep.seeds * sweep.policies.len() as u64 {
                return Err(bad(format!(
                    "point {} has {} runs, not one per seed and policy ({} × {})",
                    p.index,
                    p.runs.len(),
                    sweep.seeds,
                    sweep.policies.len()
                )));
            }
            *slot = Some(PointResult {
                index: p.index,
                overrides: p
                    .overrides
                    .iter()
                    .map(|(path, value)| Override {
                        path: path.clone(),
                        value: value.clone(),
                    })
                    .collect(),
                backends: p.backends,
                faulty_backends: p.faulty_backends,
                rate: p.rate.0,
                utilization: p.utilization.0,
                deadline_ms: p.deadline_ms.0,
                policies: Vec::new(),
                runs: p.runs.iter().map(ShardRun::sample).collect(),
                partial: p.partial,
            });
        }
    }
    let mut points: Vec<PointResult> = points.into_iter().flatten().collect();
    // Every slot is filled: each shard holds exactly its points, and every shard is here.
    if points.len() != sweep.points {
        return Err(ShardError::Mismatch(format!(
            "the shards hold {} of the sweep's {} points",
            points.len(),
            sweep.points
        )));
    }
    space::summarize_points(&mut points, &sweep.policies);
    Ok((sweep.clone(), points))
}

/// The first field in which two sweeps differ, if any (a setting's spelt by `names`).
fn differs(a: &SweepIdentity, b: &SweepIdentity, names: Names) -> Option<String> {
    let fields: [(String, bool); 10] = [
        ("lblab version".into(), a.lblab != b.lblab),
        ("scenario name".into(), a.scenario != b.scenario),
        ("scenario file".into(), a.scenario_file != b.scenario_file),
        ("seed".into(), a.seed != b.seed),
        (names(Setting::Seeds).into(), a.seeds != b.seeds),
        (
            format!("{} axes", names(Setting::Vary)),
            a.axes != b.axes || a.paths != b.paths,
        ),
        (names(Setting::X).into(), a.x != b.x),
        (
            format!("{} list", names(Setting::Policy)),
            a.policies != b.policies,
        ),
        ("point count".into(), a.points != b.points),
        ("shard count N".into(), a.shards != b.shards),
    ];
    fields.into_iter().find(|(_, d)| *d).map(|(f, _)| f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::tests::scenario;

    fn identity(points: usize, shards: usize) -> SweepIdentity {
        SweepIdentity {
            lblab: "0".into(),
            scenario: "t".into(),
            scenario_file: "name = \"t\"".into(),
            seed: 1,
            seeds: 2,
            axes: vec!["fleet.main.count=2;fleet.main.count=3;fleet.main.count=4".into()],
            paths: vec!["fleet.main.count".into()],
            x: "fleet.main.count".into(),
            policies: vec!["round_robin".into(), "peak_ewma".into()],
            points,
            shards,
        }
    }

    #[test]
    fn shard_syntax() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 4 }
        );
        for bad in ["4/4", "1", "-1/2", "0/0", "a/2", "1/x"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn floats_survive_exactly() {
        for v in [
            0.1,
            1.0 / 3.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            5e-324,
            f64::MAX,
        ] {
            let text = serde_json::to_string(&Exact(v)).unwrap();
            let back: Exact = serde_json::from_str(&text).unwrap();
            assert_eq!(back.0.to_bits(), v.to_bits(), "{v:?} as {text}");
        }
    }

    #[test]
    fn shards_merge_into_the_unsharded_points() {
        let s = scenario();
        let axis: Axis = "fleet.main.count=2,3,4".parse().unwrap();
        let plan = space::plan(&s, std::slice::from_ref(&axis), 2, &[]).unwrap();
        let whole = space::run(&plan, 2, None, &|_| {}).unwrap();
        let id = SweepIdentity {
            axes: SweepIdentity::axes_text(std::slice::from_ref(&axis)),
            ..identity(3, 2)
        };
        let shards: Vec<(String, ShardFile)> = (0..2)
            .map(|i| {
                let part = space::run(&plan.clone().shard(i, 2), 1, None, &|_| {}).unwrap();
                let file = ShardFile::new(id.clone(), i, &part);
                let text = file.to_json().unwrap();
                (
                    format!("s{i}"),
                    ShardFile::parse("s", &text, Setting::word).unwrap(),
                )
            })
            .rev()
            .collect();
        let (_, merged) = merge(&shards, Setting::word).unwrap();
        let shown = |p: &[PointResult]| {
            p.iter()
                .map(|p| format!("{} {:?} {:?} {:?}", p.index, p.policies, p.runs, p.rate))
                .collect::<Vec<_>>()
        };
        assert_eq!(shown(&merged), shown(&whole));

        // A missing shard, a shard twice, another sweep's shard.
        let one = &shards[..1];
        let e = merge(one, Setting::word).unwrap_err().to_string();
        assert!(e.contains("shard 0/2 of the sweep of t is missing"), "{e}");
        let twice = vec![shards[0].clone(), shards[0].clone()];
        let e = merge(&twice, Setting::word).unwrap_err().to_string();
        assert!(e.contains("given twice"), "{e}");
        let mut other = shards.clone();
        other[1].1.sweep.seeds = 3;
        let e = merge(&other, Setting::word).unwrap_err().to_string();
        assert!(e.contains("seeds differs"), "{e}");
        let mut wrong = shards.clone();
        wrong[0].1.points[0].index = 0;
        let e = merge(&wrong, Setting::word).unwrap_err().to_string();
        assert!(e.contains("does not belong to shard 1/2"), "{e}");
    }
}
