//! `targets.csv` of a load-generator run: where each policy sent its calls, per target, after
//! the warm-up. A run against someone else's service has no fault windows to judge a policy by;
//! its traffic shares are what show whether a latency-aware policy steered away from a slow
//! instance.

use serde::{Deserialize, Serialize};

use super::PolicyResult;

/// One row of `targets.csv`: one policy, one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRow {
    /// Policy label.
    pub policy: String,
    /// The target as named (`host:port`, or a `dns:///` name with this address).
    pub target: String,
    /// The address connected to.
    pub address: String,
    /// Calls sent to it after the warm-up.
    pub sends: u64,
    /// Share of the policy's calls sent after the warm-up, with six decimals.
    pub share: String,
    /// Of its calls, those that failed (any non-OK status).
    pub failures: u64,
}

impl TargetRow {
    /// The rows of one policy's result, for targets named `(target, address)` in endpoint order.
    /// Calls to endpoints beyond the list (addresses that joined when a name was re-resolved) are
    /// in a last row `(joined later)` when there are any.
    pub fn of(result: &PolicyResult, targets: &[(String, String)]) -> Vec<TargetRow> {
        let total: u64 = result
            .summary
            .requests
            .saturating_sub(result.summary.dropped);
        let share = |n: u64| {
            if total == 0 {
                "0.000000".to_string()
            } else {
                format!("{:.6}", n as f64 / total as f64)
            }
        };
        let mut rows: Vec<TargetRow> = targets
            .iter()
            .enumerate()
            .map(|(i, (target, address))| {
                let sends = result.backend_sends.get(i).copied().unwrap_or(0);
                TargetRow {
                    policy: result.summary.policy.clone(),
                    target: target.clone(),
                    address: address.clone(),
                    sends,
                    share: share(sends),
                    failures: result.backend_failures.get(i).copied().unwrap_or(0),
                }
            })
            .collect();
        let attributed: u64 = rows.iter().map(|r| r.sends).sum();
        if total > attributed {
            rows.push(TargetRow {
                policy: result.summary.policy.clone(),
                target: "(joined later)".into(),
                address: String::new(),
                sends: total - attributed,
                share: share(total - attributed),
                failures: 0,
            });
        }
        rows
    }

    /// `targets.csv`'s text for `rows`.
    pub fn to_csv(rows: &[TargetRow]) -> Result<Vec<u8>, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows {
            w.serialize(r)?;
        }
        w.into_inner().map_err(|e| e.into_error().into())
    }
}
