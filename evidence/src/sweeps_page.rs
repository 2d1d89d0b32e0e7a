//! `results/sweeps/README.md`, and the one-line conclusion of each sweep.

use std::fmt::Write as _;

use lblab_model::scenario::ORACLE;
use lblab_stats::Interval;

use std::path::Path;

use lblab_report::ChartName;

use crate::fmt::{iv, num, param_pct, pct_iv};
use crate::links;
use crate::load::{Evidence, Sweep};
use crate::text::{surely_lower, PROPOSAL};

macro_rules! w {
    ($out:expr, $($arg:tt)*) => { let _ = writeln!($out, $($arg)*); };
}

/// What each committed sweep varies, by folder, and the column its points are read from.
const SWEEPS: [(&str, &str, &str); 6] = [
    (
        "sampling",
        "backends",
        "fleet size, with peak_ewma under both draws (100 req/s per backend)",
    ),
    (
        "fleet-size",
        "backends",
        "fleet size under every canonical policy (100 req/s per backend)",
    ),
    (
        "utilization",
        "utilization",
        "offered load as a share of the fleet's capacity at full speed",
    ),
    (
        "slowdown",
        "faults.0.factor",
        "how many times slower the slow backend is",
    ),
    (
        "slow-share",
        "faulty_backends",
        "how many of 100 backends are slow",
    ),
    (
        "clients",
        "workload.clients",
        "how many clients share the load, each with its own policy",
    ),
];

fn at(s: &Sweep, col: &str, point: &str, policy: &str, metric: &str) -> Option<Interval> {
    s.get(col, point, policy, metric)
}

/// Draws one sweep's conclusion from its table, or nothing when the table lacks a point.
type Conclude = fn(&Sweep) -> Option<String>;

/// The committed sweeps with a conclusion, by folder, each with the function that draws it.
const CONCLUSIONS: [(&str, Conclude); 5] = [
    ("fleet-size", fleet_size),
    ("utilization", utilization),
    ("slowdown", slowdown),
    ("slow-share", slow_share),
    ("clients", clients),
];

/// One sentence per committed sweep, each computed from its `sweep.csv`.
pub fn conclusions(ev: &Evidence) -> Vec<String> {
    CONCLUSIONS
        .iter()
        .filter_map(|(name, conclude)| conclude(ev.sweeps.get(*name)?))
        .collect()
}

/// Fleet size: how close peak_ewma stays to the oracle, and least_request and weighted_round_robin at the ends.
fn fleet_size(s: &Sweep) -> Option<String> {
    let pts = s.points("backends");
    if let (Some(first), Some(last)) = (pts.first(), pts.last()) {
        let worst = pts
            .iter()
            .filter_map(|p| at(s, "backends", p, PROPOSAL, "p99_vs_oracle"))
            .map(|i| i.median)
            .fold(f64::NAN, f64::max);
        let g = |p: &str, pt: &str| at(s, "backends", pt, p, "p99_vs_oracle");
        if let (Some(lr0), Some(lr1), Some(w0), Some(w1)) = (
            g("least_request", first),
            g("least_request", last),
            g("weighted_round_robin", first),
            g("weighted_round_robin", last),
        ) {
            return Some(format!(
                "**Fleet size** ({}, {first} to {last} \
                 backends): peak_ewma's p99 is within {}× of the oracle's at every size; \
                 least_request's is {}× at {first} backends and {}× at {last}, \
                 weighted_round_robin's {}× and {}×.",
                links::sweep_link("fleet-size"),
                num(worst),
                iv(lr0),
                iv(lr1),
                iv(w0),
                iv(w1)
            ));
        }
    }
    None
}

/// Load: where round_robin and weighted_round_robin break, and least_request and peak_ewma at the ends.
fn utilization(s: &Sweep) -> Option<String> {
    let pts = s.points("utilization");
    let breaks = |p: &str, m: &str| {
        pts.iter().find_map(|pt| {
            let v = at(s, "utilization", pt, p, m)?;
            let o = at(s, "utilization", pt, ORACLE, m)?;
            (v.lo > 10.0 * o.median).then(|| (pt.clone(), v))
        })
    };
    if let (Some(first), Some(last)) = (pts.first(), pts.last()) {
        let g = |p: &str, pt: &str, m: &str| at(s, "utilization", pt, p, m);
        let share = |pt: &str| pt.parse::<f64>().map_or("–".into(), param_pct);
        let mut line = format!(
            "**Load** ({}, {} to {} of capacity): ",
            links::sweep_link("utilization"),
            share(first),
            share(last)
        );
        if let Some((pt, v)) = breaks("round_robin", "p99_ms") {
            let _ = write!(
                line,
                "round_robin breaks first (p99 over 10× the oracle's from {}: {} ms), ",
                share(&pt),
                iv(v)
            );
        }
        if let Some((pt, v)) = breaks("weighted_round_robin", "p999_ms") {
            let _ = write!(
                line,
                "weighted_round_robin's p99.9 from {} ({} ms); ",
                share(&pt),
                iv(v)
            );
        }
        if let (Some(l0), Some(l1), Some(p0), Some(p1), Some(o1)) = (
            g("least_request", first, "p99_ms"),
            g("least_request", last, "p99_ms"),
            g(PROPOSAL, first, "p99_ms"),
            g(PROPOSAL, last, "p99_ms"),
            g(ORACLE, last, "p99_ms"),
        ) {
            let _ = write!(
                line,
                "least_request's p99 goes from {} to {} ms (queues make outstanding counts \
                 informative), peak_ewma's from {} to {} ms (oracle {} at {}).",
                iv(l0),
                iv(l1),
                iv(p0),
                iv(p1),
                num(o1.median),
                share(last)
            );
        }
        return Some(line);
    }
    None
}

/// Slowdown: from which factor peak_ewma is ahead of least_request.
fn slowdown(s: &Sweep) -> Option<String> {
    let col = "faults.0.factor";
    let pts = s.points(col);
    let g = |p: &str, pt: &str| at(s, col, pt, p, "p99_ms");
    let ahead = pts
        .iter()
        .find(|pt| match (g(PROPOSAL, pt), g("least_request", pt)) {
            (Some(a), Some(b)) => surely_lower(a, b),
            _ => false,
        });
    if let (Some(first), Some(last)) = (pts.first(), pts.last()) {
        let mut line = format!(
            "**Slowdown** ({}, {first}× to {last}×): ",
            links::sweep_link("slowdown")
        );
        if let (Some(a), Some(b)) = (g(PROPOSAL, first), g("least_request", first)) {
            let _ = write!(
                line,
                "at {first}× peak_ewma's p99 is {} ms against least_request's {} ms ({}); ",
                iv(a),
                iv(b),
                if surely_lower(a, b) {
                    "already lower"
                } else {
                    "no difference the intervals can tell"
                }
            );
        }
        if let Some(pt) = ahead {
            if let (Some(a), Some(b)) = (g(PROPOSAL, pt), g("least_request", pt)) {
                let _ = write!(
                    line,
                    "from {pt}× it is ahead ({} against {} ms); ",
                    iv(a),
                    iv(b)
                );
            }
        }
        if let (Some(a), Some(b), Some(o)) =
            (g(PROPOSAL, last), g("least_request", last), g(ORACLE, last))
        {
            let _ = write!(
                line,
                "at {last}× {} against {} ms, the oracle {}.",
                iv(a),
                iv(b),
                num(o.median)
            );
        }
        return Some(line);
    }
    None
}

/// Share of slow backends: up to which share peak_ewma leads, and where weighted_round_robin wins.
fn slow_share(s: &Sweep) -> Option<String> {
    let col = "faulty_backends";
    let pts = s.points(col);
    let share = |pt: &str| {
        let row = s
            .rows
            .iter()
            .find(|r| r.get(col).map(String::as_str) == Some(pt));
        let n: f64 = row
            .and_then(|r| r.get("backends"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        pt.parse::<f64>().map_or("–".into(), |k| param_pct(k / n))
    };
    let g = |p: &str, pt: &str| at(s, col, pt, p, "p99_ms");
    let cross = pts.iter().find(
        |pt| match (g("weighted_round_robin", pt), g(PROPOSAL, pt)) {
            (Some(w), Some(p)) => surely_lower(w, p),
            _ => false,
        },
    );
    let lead = pts
        .iter()
        .take_while(|pt| Some(*pt) != cross)
        .last()
        .cloned();
    let mut line = format!(
        "**Share of slow backends** ({}): ",
        links::sweep_link("slow-share")
    );
    if let Some(pt) = &lead {
        if let (Some(p), Some(w), Some(l)) = (
            g(PROPOSAL, pt),
            g("weighted_round_robin", pt),
            g("least_request", pt),
        ) {
            let _ = write!(
                line,
                "up to {} slow peak_ewma's p99 is {} ms against weighted_round_robin's {} and \
                 least_request's {}; ",
                share(pt),
                iv(p),
                num(w.median),
                num(l.median)
            );
        }
    }
    match cross {
        Some(pt) => {
            if let (Some(p), Some(w)) = (g(PROPOSAL, pt), g("weighted_round_robin", pt)) {
                let _ = write!(
                    line,
                    "from {} slow weighted_round_robin wins ({} against {} ms): two draws \
                     are both slow (k/n)² of the time.",
                    share(pt),
                    iv(w),
                    iv(p)
                );
            }
        }
        None => line.push_str("weighted_round_robin never has the lower p99."),
    }
    Some(line)
}

/// Clients: how peak_ewma (and the reference semantics) fare as the load is split over more client channels.
fn clients(s: &Sweep) -> Option<String> {
    let col = "workload.clients";
    let pts = s.points(col);
    if let (Some(first), Some(last)) = (pts.first(), pts.last()) {
        let g = |p: &str, pt: &str, m: &str| at(s, col, pt, p, m);
        let span = |p: &str, m: &str| Some((g(p, first, m)?, g(p, last, m)?));
        if let (Some(p999), Some(slow), Some(lr)) = (
            span(PROPOSAL, "p999_ms"),
            span(PROPOSAL, "slow_share"),
            span("least_request", "p99_ms"),
        ) {
            let mut line = format!(
                "**Clients** ({}, {first} to {last} client \
                 channels sharing the load, each its own policy instance): peak_ewma's p99.9 \
                 goes from {} to {} ms and its share to the slow backend from {} to {} \
                 (`p999.png`, `slow_share.png`)",
                links::sweep_link("clients"),
                iv(p999.0),
                iv(p999.1),
                pct_iv(slow.0),
                pct_iv(slow.1),
            );
            for (label, name) in [
                (
                    "peak_ewma(first_written)",
                    "the semantics as first written go",
                ),
                ("envoy_peak_ewma", "Envoy's algorithm goes"),
                ("finagle_peak_ewma", "Finagle's goes"),
            ] {
                if let (Some(a), Some(b)) = (span(label, "p999_ms"), span(label, "slow_share")) {
                    line.push_str(&format!(
                        "; {name} from {} to {} ms ({} to {})",
                        iv(a.0),
                        iv(a.1),
                        pct_iv(b.0),
                        pct_iv(b.1)
                    ));
                }
            }
            line.push_str(&format!(
                ". least_request's p99 goes from {} to {} ms as each client's counts get \
                 sparser.",
                num(lr.0.median),
                num(lr.1.median)
            ));
            return Some(line);
        }
    }
    None
}

/// Renders `results/sweeps/README.md`.
pub fn render(ev: &Evidence) -> String {
    let mut out = String::new();
    w!(out, "# Sweeps over the scenario space\n");
    w!(
        out,
        "Generated by `lblab report` from each folder's `sweep.csv`. Each folder varies one \
         thing about `one-slow` and runs every policy at every point in the simulator at full \
         length, over several seeds; `scripts/sweeps.sh` regenerates them (its comments give \
         each `lblab sweep … --vary …` command). Every folder has `sweep.csv` (per point and \
         policy: the median over seeds of each quantity with the ends of its interval as \
         `_lo`/`_hi`, of at least 95 % confidence: a {} with 6 seeds, a {} with 10), \
         `runs.csv` (every run), `sweep.json` and charts with one line per policy and its \
         interval as a band: `p99`, `p999`, `p99_vs_oracle`, `p999_vs_oracle`, `slow_share` \
         (to faulty backends, with the dashed (faulty/n)² line two independent draws cannot \
         avoid) and `herd` (the share of calls that waited for a worker while a backend without a fault had \
         one free: a herd stacks calls where others sit idle; the oracle scores lowest, 0 where \
         backends are alike).\n",
        crate::text::interval(6),
        crate::text::interval(10)
    );
    let lines = conclusions(ev);
    for line in &lines {
        // The sentences link from the evidence document (`sweeps/<name>/`); here the folders are
        // beside the page.
        w!(
            out,
            "- {}",
            line.replace(&format!("]({}/", links::SWEEPS), "](")
        );
    }
    out.push('\n');
    for (name, col, what) in SWEEPS {
        let Some(s) = ev.sweeps.get(name) else {
            continue;
        };
        let policies = s.points("policy");
        w!(out, "## [`{name}/`]({name}/): {what}\n");
        w!(
            out,
            "{} points × {} seeds. p99 ms, median [{}]:\n",
            s.points(col).len(),
            s.seeds(),
            crate::text::interval(s.seeds())
        );
        w!(out, "| {col} | {} |", policies.join(" | "));
        w!(out, "|---:|{}", "---:|".repeat(policies.len()));
        for pt in s.points(col) {
            let cells: Vec<String> = policies
                .iter()
                .map(|p| s.get(col, &pt, p, "p99_ms").map_or("–".into(), iv))
                .collect();
            w!(out, "| {pt} | {} |", cells.join(" | "));
        }
        w!(
            out,
            "\n![p99]({})\n![to faulty backends]({})\n",
            links::chart(Path::new(name), ChartName::SweepP99),
            links::chart(Path::new(name), ChartName::SweepSlowShare)
        );
    }
    out
}
