//! `compare.csv`: the simulator against the real harness, a [`CompareRow`] per policy, and the
//! one rule by which a real value agrees with a simulated one ([`agrees`]). `lblab compare`
//! writes the rows; the compare chart and the evidence documents read them and judge with the
//! same rule.

use serde::{Deserialize, Serialize};

use super::{fixed, SummaryRow};

/// Relative tolerance of sim-vs-real agreement.
pub const AGREEMENT_RELATIVE: f64 = 0.20;
/// Absolute tolerance (ms) of sim-vs-real agreement, for small values.
pub const AGREEMENT_ABSOLUTE_MS: f64 = 1.0;

/// Whether a real value agrees with the simulated one: within ±20 % or within 1 ms.
pub fn agrees(sim_ms: f64, real_ms: f64) -> bool {
    (real_ms - sim_ms).abs() <= (AGREEMENT_RELATIVE * sim_ms).max(AGREEMENT_ABSOLUTE_MS)
}

/// `real` relative to `sim`, %; NaN when `sim` is 0.
pub fn diff_pct(sim: f64, real: f64) -> f64 {
    if sim > 0.0 {
        100.0 * (real - sim) / sim
    } else {
        f64::NAN
    }
}

/// One row of `compare.csv`. Times in ms with three decimals, differences in % with one, shares
/// with four; the calibrated columns are empty when no floor was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// Policy label.
    pub policy: String,
    /// Simulated p50.
    #[serde(serialize_with = "fixed::f3")]
    pub sim_p50_ms: f64,
    /// Real p50.
    #[serde(serialize_with = "fixed::f3")]
    pub real_p50_ms: f64,
    /// Real p50 relative to the simulated one, %.
    #[serde(serialize_with = "fixed::f1")]
    pub p50_diff_pct: f64,
    /// Whether the p50s agree ([`agrees`]).
    pub p50_agrees: bool,
    /// Simulated p99.
    #[serde(serialize_with = "fixed::f3")]
    pub sim_p99_ms: f64,
    /// Real p99.
    #[serde(serialize_with = "fixed::f3")]
    pub real_p99_ms: f64,
    /// Real p99 relative to the simulated one, %.
    #[serde(serialize_with = "fixed::f1")]
    pub p99_diff_pct: f64,
    /// Whether the p99s agree.
    pub p99_agrees: bool,
    /// Requests simulated.
    pub sim_requests: u64,
    /// Requests made for real.
    pub real_requests: u64,
    /// Share sent to faulty backends, simulated.
    #[serde(serialize_with = "fixed::f4")]
    pub sim_slow_share: f64,
    /// Share sent to faulty backends, real.
    #[serde(serialize_with = "fixed::f4")]
    pub real_slow_share: f64,
    /// The harness floor's p50, added to every backend's network round trip for the calibrated
    /// simulation.
    #[serde(serialize_with = "fixed::opt_f3")]
    pub floor_p50_ms: Option<f64>,
    /// The calibrated simulation's p50.
    #[serde(serialize_with = "fixed::opt_f3")]
    pub calibrated_sim_p50_ms: Option<f64>,
    /// Whether the real p50 agrees with it.
    pub calibrated_p50_agrees: Option<bool>,
    /// The calibrated simulation's p99.
    #[serde(serialize_with = "fixed::opt_f3")]
    pub calibrated_sim_p99_ms: Option<f64>,
    /// Whether the real p99 agrees with it.
    pub calibrated_p99_agrees: Option<bool>,
    /// Whether the real run stopped early.
    pub real_partial: bool,
    /// Harness incidents marking the real row.
    pub real_incidents: u64,
}

impl CompareRow {
    /// The row of one policy: its simulated and real rows, and the calibrated simulation's row
    /// with the floor's p50 (ms) it was calibrated with, if the floor was measured. A policy the
    /// real run did not measure (an interrupted run stopped before it: no latency at all) has no
    /// difference (NaN, not -100 %) and agrees with nothing ([`CompareRow::measured`]).
    pub fn new(
        sim: &SummaryRow,
        real: &SummaryRow,
        calibrated: Option<(&SummaryRow, f64)>,
        real_partial: bool,
    ) -> CompareRow {
        let measured = real.ok + real.deadline_exceeded > 0;
        let diff = |s: f64, r: f64| if measured { diff_pct(s, r) } else { f64::NAN };
        let agree = |s: f64, r: f64| measured && agrees(s, r);
        let calibrated_agrees = |c: &SummaryRow, pick: fn(&SummaryRow) -> f64| {
            measured.then(|| agrees(pick(c), pick(real)))
        };
        CompareRow {
            policy: real.policy.clone(),
            sim_p50_ms: sim.p50_ms,
            real_p50_ms: real.p50_ms,
            p50_diff_pct: diff(sim.p50_ms, real.p50_ms),
            p50_agrees: agree(sim.p50_ms, real.p50_ms),
            sim_p99_ms: sim.p99_ms,
            real_p99_ms: real.p99_ms,
            p99_diff_pct: diff(sim.p99_ms, real.p99_ms),
            p99_agrees: agree(sim.p99_ms, real.p99_ms),
            sim_requests: sim.requests,
            real_requests: real.requests,
            sim_slow_share: sim.slow_share,
            real_slow_share: real.slow_share,
            floor_p50_ms: calibrated.map(|(_, floor)| floor),
            calibrated_sim_p50_ms: calibrated.map(|(c, _)| c.p50_ms),
            calibrated_p50_agrees: calibrated.and_then(|(c, _)| calibrated_agrees(c, |r| r.p50_ms)),
            calibrated_sim_p99_ms: calibrated.map(|(c, _)| c.p99_ms),
            calibrated_p99_agrees: calibrated.and_then(|(c, _)| calibrated_agrees(c, |r| r.p99_ms)),
            real_partial,
            real_incidents: real.incidents,
        }
    }

    /// Whether the real run measured this policy at all (an interrupted run may have stopped
    /// before it): a real p50 or p99 above 0.
    pub fn measured(&self) -> bool {
        self.real_p50_ms > 0.0 || self.real_p99_ms > 0.0
    }

    /// Whether p50 and p99 both agree.
    pub fn agrees(&self) -> bool {
        self.p50_agrees && self.p99_agrees
    }

    /// Whether both agree after calibration (`None`: no calibration).
    pub fn calibrated_agrees(&self) -> Option<bool> {
        Some(self.calibrated_p50_agrees? && self.calibrated_p99_agrees?)
    }

    /// `compare.csv`'s text for `rows`.
    pub fn to_csv(rows: &[CompareRow]) -> Result<Vec<u8>, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows {
            w.serialize(r)?;
        }
        w.into_inner().map_err(|e| e.into_error().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_tolerance_is_twenty_percent_or_one_ms() {
        assert!(agrees(10.0, 11.9));
        assert!(!agrees(10.0, 12.1));
        assert!(agrees(2.0, 2.9)); // within 1 ms
        assert!(!agrees(2.0, 3.1));
    }

    #[test]
    fn a_policy_the_real_run_did_not_reach_has_no_difference() {
        let row = |p50: f64, p99: f64, ok: u64| SummaryRow {
            p50_ms: p50,
            p99_ms: p99,
            ok,
            requests: ok,
            ..crate::recorder::latency_row("oracle", &crate::histogram::new_histogram())
        };
        let (sim, unmeasured) = (row(2.0, 8.0, 100), row(0.0, 0.0, 0));
        let r = CompareRow::new(&sim, &unmeasured, Some((&sim, 0.2)), true);
        assert!(!r.measured());
        assert!(r.p50_diff_pct.is_nan() && r.p99_diff_pct.is_nan(), "{r:?}");
        assert!(!r.p50_agrees && !r.p99_agrees);
        assert_eq!(r.calibrated_agrees(), None);
        let text = String::from_utf8(CompareRow::to_csv(&[r]).unwrap()).unwrap();
        assert!(!text.contains("-100"), "{text}");
        let measured = CompareRow::new(&sim, &row(2.1, 8.5, 90), None, false);
        assert!(measured.measured() && measured.agrees());
    }

    #[test]
    fn committed_rows_read_and_write_back_byte_for_byte() {
        let text = "policy,sim_p50_ms,real_p50_ms,p50_diff_pct,p50_agrees,sim_p99_ms,real_p99_ms,p99_diff_pct,p99_agrees,sim_requests,real_requests,sim_slow_share,real_slow_share,floor_p50_ms,calibrated_sim_p50_ms,calibrated_p50_agrees,calibrated_sim_p99_ms,calibrated_p99_agrees,real_partial,real_incidents\n\
            round_robin,2.001,2.330,16.4,true,33.227,35.127,5.7,true,20062,20062,0.0500,0.0500,0.242,2.251,true,33.686,true,false,0\n\
            oracle,2.000,0.000,NaN,false,8.000,0.000,-100.0,false,1,0,0.0000,0.0000,,,,,,true,2\n";
        let rows: Vec<CompareRow> = csv::Reader::from_reader(text.as_bytes())
            .deserialize()
            .collect::<Result<_, _>>()
            .expect("valid rows");
        assert_eq!(rows[0].calibrated_agrees(), Some(true));
        assert_eq!(rows[1].floor_p50_ms, None);
        assert_eq!(rows[1].calibrated_agrees(), None);
        let back = CompareRow::to_csv(&rows).expect("written");
        assert_eq!(String::from_utf8(back).unwrap(), text);
    }
}
