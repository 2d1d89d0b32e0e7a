//! The response body, watched for the trailers that end the call.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use lblab_policy::Status;
use lblab_wire::orca;

use super::completion::{status_class, Completion};

/// The response body of a [`PolicyService`](super::PolicyService) call: the connection's body, watched for the trailers
/// that end the call, and cut with DEADLINE_EXCEEDED when the request's deadline passes.
pub struct PolicyBody {
    pub(super) inner: hyper::body::Incoming,
    pub(super) completion: Completion,
    pub(super) deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl std::fmt::Debug for PolicyBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyBody")
            .field("done", &self.completion.ticket.is_none())
            .finish()
    }
}

impl Body for PolicyBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        if this.completion.ticket.is_some() {
            if let Some(sleep) = &mut this.deadline {
                if sleep.as_mut().poll(cx).is_ready() {
                    this.completion.finish(Status::DeadlineExceeded, None);
                    return Poll::Ready(Some(Err(tonic::Status::deadline_exceeded(
                        "deadline exceeded",
                    ))));
                }
            }
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let status = status_class(trailers).unwrap_or(Status::Error);
                    this.completion.finish(status, orca::from_headers(trailers));
                }
            }
            Poll::Ready(Some(Err(_))) => this.completion.finish(Status::Error, None),
            // The body ended without trailers: a protocol error for gRPC.
            Poll::Ready(None) => this.completion.finish(Status::Error, None),
            Poll::Pending => {}
        }
        polled.map_err(|e| {
            let mut status = tonic::Status::unavailable(format!("connection error: {e}"));
            status.set_source(Arc::new(e));
            status
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
