//! The start barrier's protocol: one line of ASCII each way, over TCP.
//!
//! A pod sends `lblab-barrier/1 join <id>` ([`join_line`]) and keeps the connection open; the
//! starter answers once, when it can, and closes it ([`answer_line`]):
//!
//! | answer | meaning |
//! |---|---|
//! | `start <unix>` | every pod checked in: start at this Unix second |
//! | `late <unix>` | the others were released without it: they start at this Unix second |
//! | `gave-up <expected> <id>,<id>,…` | the starter's deadline passed: these pods had not checked in |
//! | `unknown <group>=<count>,…` | it is not one of the pods the starter waits for (these groups) |
//! | `error <text>` | the line it sent was not a check-in |

use super::{Answer, BarrierError, PodId};

/// The first word of a check-in: the protocol and its version.
pub const HELLO: &str = "lblab-barrier/1";
/// The longest check-in line a starter reads.
pub const MAX_JOIN_LINE: usize = 256;
/// The longest answer a pod reads (a `gave-up` line names every missing pod).
pub const MAX_ANSWER_LINE: usize = 4 << 20;

/// The line pod `id` sends to check in.
pub fn join_line(id: &PodId) -> String {
    format!("{HELLO} join {id}\n")
}

/// The pod a check-in line names; the error says what is wrong with it, for the `error` answer.
pub fn parse_join(line: &str) -> Result<PodId, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    let mut words = line.split(' ');
    match (words.next(), words.next(), words.next(), words.next()) {
        (Some(HELLO), Some("join"), Some(id), None) => id.parse().map_err(|e| format!("{e}")),
        _ => Err(format!("expected '{HELLO} join <group>-<index>'")),
    }
}

/// The line that carries `answer`.
pub fn answer_line(answer: &Answer) -> String {
    match answer {
        Answer::Start(at) => format!("start {at}\n"),
        Answer::Late(at) => format!("late {at}\n"),
        Answer::GaveUp { missing, expected } => {
            let ids: Vec<String> = missing.iter().map(PodId::to_string).collect();
            format!("gave-up {expected} {}\n", ids.join(","))
        }
        Answer::Unknown(groups) => format!("unknown {}\n", groups.replace(' ', "")),
    }
}

/// The answer a starter at `peer` sent; its `error` line is [`BarrierError::Refused`], and a line
/// that is no answer a protocol error.
pub fn parse_answer(peer: &str, line: &str) -> Result<Answer, BarrierError> {
    let line = line.trim_end_matches(['\r', '\n']);
    let bad = || BarrierError::Protocol {
        peer: peer.to_string(),
        line: line.chars().take(120).collect(),
    };
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    let unix = |s: &str| s.parse::<u64>().map_err(|_| bad());
    match word {
        "start" => Ok(Answer::Start(unix(rest)?)),
        "late" => Ok(Answer::Late(unix(rest)?)),
        "gave-up" => {
            let (expected, ids) = rest.split_once(' ').unwrap_or((rest, ""));
            let expected = expected.parse().map_err(|_| bad())?;
            let missing = ids
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::parse)
                .collect::<Result<Vec<PodId>, _>>()
                .map_err(|_| bad())?;
            Ok(Answer::GaveUp { missing, expected })
        }
        "unknown" => Ok(Answer::Unknown(rest.replace(',', ", "))),
        "error" => Err(BarrierError::Refused {
            peer: peer.to_string(),
            reason: rest.chars().take(240).collect(),
        }),
        _ => Err(bad()),
    }
}
