//! `statuses.csv` of a load-generator run: how its calls ended, by gRPC status, with the first
//! distinct messages of each status (ghz's status and error distributions). A run whose calls
//! all fail says why here, not only that they failed.

use serde::{Deserialize, Serialize};

/// Distinct messages kept per policy and status; the calls with any other message are counted in
/// one row whose message is [`StatusRow::OTHER_MESSAGES`].
pub const MESSAGES_PER_STATUS: usize = 5;

/// One row of `statuses.csv`: one policy, one status, one message. Every call that ended counts,
/// the warm-up's included; calls never sent (dropped) do not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusRow {
    /// Policy label.
    pub policy: String,
    /// The gRPC status code's name, e.g. `OK`, `UNIMPLEMENTED`.
    pub status: String,
    /// The status message (empty for `OK`), or [`StatusRow::OTHER_MESSAGES`].
    pub message: String,
    /// Calls that ended with this status and message.
    pub count: u64,
}

impl StatusRow {
    /// The message of the row that counts a status's calls beyond its first
    /// [`MESSAGES_PER_STATUS`] distinct messages.
    pub const OTHER_MESSAGES: &'static str = "(other messages)";

    /// The `OK` row's status name.
    pub const OK: &'static str = "OK";

    /// `statuses.csv`'s text for `rows`.
    pub fn to_csv(rows: &[StatusRow]) -> Result<Vec<u8>, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows {
            w.serialize(r)?;
        }
        w.into_inner().map_err(|e| e.into_error().into())
    }

    /// The rows of several runs' `statuses.csv` as one run's: calls added per policy, status and
    /// message (first-seen order); a status's messages beyond the first
    /// [`MESSAGES_PER_STATUS`] go into its [`StatusRow::OTHER_MESSAGES`] row.
    pub fn merge(runs: &[Vec<StatusRow>]) -> Vec<StatusRow> {
        let mut out: Vec<StatusRow> = Vec::new();
        for r in runs.iter().flatten() {
            let same = |o: &&mut StatusRow| o.policy == r.policy && o.status == r.status;
            if let Some(o) = out.iter_mut().filter(same).find(|o| o.message == r.message) {
                o.count += r.count;
                continue;
            }
            let distinct = out
                .iter()
                .filter(|o| o.policy == r.policy && o.status == r.status)
                .filter(|o| o.message != Self::OTHER_MESSAGES)
                .count();
            let message = if distinct >= MESSAGES_PER_STATUS {
                Self::OTHER_MESSAGES.to_string()
            } else {
                r.message.clone()
            };
            match out.iter_mut().filter(same).find(|o| o.message == message) {
                Some(o) => o.count += r.count,
                None => out.push(StatusRow {
                    message,
                    ..r.clone()
                }),
            }
        }
        out
    }

    /// Reads a `statuses.csv`.
    pub fn read_csv(path: &std::path::Path) -> Result<Vec<StatusRow>, crate::FileError> {
        super::targets::read_rows(path)
    }

    /// Whether any of `rows` counts a call, and none an `OK` one: nothing succeeded.
    pub fn none_succeeded(rows: &[StatusRow]) -> bool {
        rows.iter().any(|r| r.count > 0)
            && !rows.iter().any(|r| r.status == Self::OK && r.count > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str, count: u64) -> StatusRow {
        StatusRow {
            policy: "p".into(),
            status: status.into(),
            message: String::new(),
            count,
        }
    }

    #[test]
    fn none_succeeded_needs_calls_and_no_ok() {
        assert!(!StatusRow::none_succeeded(&[]));
        assert!(StatusRow::none_succeeded(&[
            row("OK", 0),
            row("UNIMPLEMENTED", 3)
        ]));
        assert!(!StatusRow::none_succeeded(&[
            row("OK", 1),
            row("UNAVAILABLE", 3)
        ]));
        let merged = StatusRow::merge(&[
            vec![row("OK", 2)],
            vec![row("OK", 3), row("UNAVAILABLE", 1)],
        ]);
        assert_eq!(merged, vec![row("OK", 5), row("UNAVAILABLE", 1)]);
        let csv = String::from_utf8(StatusRow::to_csv(&[row("OK", 2)]).unwrap()).unwrap();
        assert_eq!(csv, "policy,status,message,count\np,OK,,2\n");
    }
}
