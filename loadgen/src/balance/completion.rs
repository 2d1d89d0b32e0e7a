//! A call's ticket, completed exactly once: at the response's trailers or a trailers-only error
//! with the class of its `grpc-status`, or on drop as DEADLINE_EXCEEDED or CANCELLED.

use std::sync::Arc;

use lblab_policy::{Nanos, Status, Ticket};

use super::shared::Shared;

/// Completes a call's ticket exactly once; on drop, as DEADLINE_EXCEEDED or CANCELLED.
pub(super) struct Completion {
    pub(super) shared: Arc<Shared>,
    pub(super) ticket: Option<Ticket>,
    pub(super) started: Nanos,
    pub(super) deadline: Option<tokio::time::Instant>,
}

/// Maps a `grpc-status` code to the policy's classes.
pub(super) fn status_class(headers: &http::HeaderMap) -> Option<Status> {
    let code: i32 = headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(match tonic::Code::from_i32(code) {
        tonic::Code::Ok => Status::Ok,
        tonic::Code::DeadlineExceeded => Status::DeadlineExceeded,
        tonic::Code::Cancelled => Status::Cancelled,
        _ => Status::Error,
    })
}

impl Completion {
    pub(super) fn finish(&mut self, status: Status, load: Option<lblab_policy::LoadReport>) {
        if let Some(t) = self.ticket.take() {
            self.shared.complete(t, self.started, status, load);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if self.ticket.is_some() {
            let expired = self
                .deadline
                .is_some_and(|d| tokio::time::Instant::now() >= d);
            self.finish(
                if expired {
                    Status::DeadlineExceeded
                } else {
                    Status::Cancelled
                },
                None,
            );
        }
    }
}
