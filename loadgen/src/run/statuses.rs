//! How the calls of one run ended, by gRPC status and message (ghz's status and error
//! distributions), counted as they end, warm-up included; the results schema's
//! [`StatusRow`]s at the end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use lblab_message::text::printable;
use lblab_record::{StatusRow, MESSAGES_PER_STATUS};

/// Longest message kept, in characters.
const MESSAGE_CHARS: usize = 300;

/// The statuses of one run's calls. OK calls cost an atomic increment; a failed call takes a
/// lock.
#[derive(Debug, Default)]
pub(super) struct StatusTally {
    ok: AtomicU64,
    failed: Mutex<Vec<Failed>>,
}

/// The calls that ended with one non-OK status.
#[derive(Debug)]
struct Failed {
    code: tonic::Code,
    /// The first distinct messages and their counts, in the order first seen.
    messages: Vec<(String, u64)>,
    /// Calls with any other message.
    other: u64,
}

impl StatusTally {
    /// A call that ended OK.
    pub(super) fn ok(&self) {
        self.ok.fetch_add(1, Ordering::Relaxed);
    }

    /// A call that ended with `status` (not OK).
    pub(super) fn failed(&self, status: &tonic::Status) {
        let message = if let Some(reason) = crate::balance::refused_by_client(status) {
            // What h2 and hyper said, without the status's own rendering of itself.
            let detail = std::error::Error::source(status)
                .map_or_else(|| status.message().to_string(), crate::balance::error_chain);
            format!(
                "the client refused the response (HTTP/2 {reason:?}, raised by this client, not \
                 the server): its headers or trailers (grpc-message, trailing metadata) are over \
                 the {} KiB this client accepts (SETTINGS_MAX_HEADER_LIST_SIZE), or malformed: \
                 {detail}",
                crate::balance::MAX_HEADER_LIST_SIZE >> 10,
            )
        } else if status.message().is_empty() {
            crate::balance::error_chain(status)
        } else {
            status.message().to_string()
        };
        self.record(status.code(), message);
    }

    /// A call that ended with `code` and `message`, kept as [`printable`] text: the server's
    /// words reach the terminal in the status table.
    pub(super) fn record(&self, code: tonic::Code, message: String) {
        let message: String = printable(&message).chars().take(MESSAGE_CHARS).collect();
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        let at = match failed.iter().position(|f| f.code == code) {
            Some(at) => at,
            None => {
                failed.push(Failed {
                    code,
                    messages: Vec::new(),
                    other: 0,
                });
                failed.len() - 1
            }
        };
        let entry = &mut failed[at];
        if let Some(m) = entry.messages.iter_mut().find(|(m, _)| *m == message) {
            m.1 += 1;
        } else if entry.messages.len() < MESSAGES_PER_STATUS {
            entry.messages.push((message, 1));
        } else {
            entry.other += 1;
        }
    }

    /// The rows of `policy`: `OK` first (also when no call succeeded), then each status in the
    /// order first seen, a row per message.
    pub(super) fn rows(&self, policy: &str) -> Vec<StatusRow> {
        let row = |status: &str, message: &str, count: u64| StatusRow {
            policy: policy.to_string(),
            status: status.to_string(),
            message: message.to_string(),
            count,
        };
        let mut out = vec![row(StatusRow::OK, "", self.ok.load(Ordering::Relaxed))];
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        for f in failed.iter() {
            let name = code_name(f.code);
            for (m, n) in &f.messages {
                out.push(row(&name, m, *n));
            }
            if f.other > 0 {
                out.push(row(&name, StatusRow::OTHER_MESSAGES, f.other));
            }
        }
        out
    }
}

/// gRPC's name of `code`, e.g. `DEADLINE_EXCEEDED`.
fn code_name(code: tonic::Code) -> String {
    let camel = format!("{code:?}");
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_statuses_and_their_first_messages() {
        let t = StatusTally::default();
        t.ok();
        for i in 0..(MESSAGES_PER_STATUS + 2) {
            t.failed(&tonic::Status::unavailable(format!("down {i}")));
        }
        t.failed(&tonic::Status::unavailable("down 0"));
        t.record(tonic::Code::DeadlineExceeded, "late".into());
        let rows = t.rows("p");
        assert_eq!((rows[0].status.as_str(), rows[0].count), ("OK", 1));
        assert_eq!(rows[1].status, "UNAVAILABLE");
        assert_eq!((rows[1].message.as_str(), rows[1].count), ("down 0", 2));
        let other = rows
            .iter()
            .find(|r| r.message == StatusRow::OTHER_MESSAGES)
            .unwrap();
        assert_eq!(other.count, 2);
        assert_eq!(rows.last().unwrap().status, "DEADLINE_EXCEEDED");
        assert_eq!(code_name(tonic::Code::Ok), "OK");
    }

    #[test]
    fn a_servers_control_characters_are_kept_escaped() {
        let t = StatusTally::default();
        t.failed(&tonic::Status::internal(
            "\u{1b}]0;owned\u{7}\u{1b}[2Jboom\r\nline 2",
        ));
        let rows = t.rows("p");
        assert_eq!(
            rows[1].message,
            "\\u{1b}]0;owned\\u{7}\\u{1b}[2Jboom\\r\\nline 2"
        );
        // A message of a megabyte keeps its first 300 characters.
        t.failed(&tonic::Status::internal("x".repeat(1 << 20)));
        assert_eq!(t.rows("p")[2].message.len(), MESSAGE_CHARS);
    }
}
