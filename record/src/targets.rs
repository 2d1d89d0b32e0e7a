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

    /// The rows of several runs' `targets.csv` as one run's: calls and failures added per policy
    /// and target (by name and address, in first-seen order), each share over the policy's
    /// added calls.
    pub fn merge(runs: &[Vec<TargetRow>]) -> Vec<TargetRow> {
        let mut out: Vec<TargetRow> = Vec::new();
        for r in runs.iter().flatten() {
            match out
                .iter_mut()
                .find(|o| o.policy == r.policy && o.target == r.target && o.address == r.address)
            {
                Some(o) => {
                    o.sends += r.sends;
                    o.failures += r.failures;
                }
                None => out.push(r.clone()),
            }
        }
        let totals: Vec<(String, u64)> = out.iter().fold(Vec::new(), |mut t, r| {
            match t.iter_mut().find(|(p, _)| *p == r.policy) {
                Some(e) => e.1 += r.sends,
                None => t.push((r.policy.clone(), r.sends)),
            }
            t
        });
        for r in &mut out {
            let total = totals
                .iter()
                .find(|(p, _)| *p == r.policy)
                .map_or(0, |t| t.1);
            r.share = if total == 0 {
                "0.000000".into()
            } else {
                format!("{:.6}", r.sends as f64 / total as f64)
            };
        }
        out
    }

    /// Reads a `targets.csv`.
    pub fn read_csv(path: &std::path::Path) -> Result<Vec<TargetRow>, crate::FileError> {
        read_rows(path)
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

/// The rows of a CSV file of `T`s, with errors naming the file and line.
pub(super) fn read_rows<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
) -> Result<Vec<T>, crate::FileError> {
    let text = super::read_result_file(path)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    reader
        .deserialize()
        .collect::<Result<Vec<T>, csv::Error>>()
        .map_err(|e| crate::FileError::Parse {
            file: path.display().to_string(),
            field: None,
            position: e.position().map(|p| (p.line() as usize, 1)),
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(policy: &str, target: &str, sends: u64) -> TargetRow {
        TargetRow {
            policy: policy.into(),
            target: target.into(),
            address: target.into(),
            sends,
            share: String::new(),
            failures: 1,
        }
    }

    #[test]
    fn merged_rows_add_calls_and_share_them_again() {
        let a = vec![row("rr", "x", 30), row("rr", "y", 10)];
        let b = vec![row("rr", "x", 10), row("rr", "y", 50)];
        let m = TargetRow::merge(&[a, b]);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].sends, m[0].failures, m[0].share.as_str()),
            (40, 2, "0.400000")
        );
        assert_eq!((m[1].sends, m[1].share.as_str()), (60, "0.600000"));
    }
}
